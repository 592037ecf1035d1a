#!/usr/bin/env bats
# After giving up, a program sees the errno it would see without the library.

load helper

setup() {
	require_build
}

# check_errno ERRNO COMMAND-PREFIX... -- PROBE-ARGS...: the probe prints ERRNO
# with and without the library, and the library did retry it twice.
check_errno() {
	local errno=$1 prefix=()
	shift
	while [[ $1 != -- ]]; do
		prefix+=("$1")
		shift
	done
	shift
	run "${prefix[@]}" "$HELPERS/probe" "$@"
	assert_eq "$output" "$errno" "probe output without the library"
	assert_eq "$status" 1 "probe status without the library"

	run "${prefix[@]}" env LD_PRELOAD="$LIB" BACKOFF_RETRIES=2 BACKOFF_BASE=10ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" "$HELPERS/probe" "$@"
	assert_eq "$output" "$errno" "probe output with the library"
	assert_eq "$status" 1 "probe status with the library"
	assert_eq "$(json_events "$T/log.json" retry errno | tr '\n' ' ')" "$errno $errno " "retry events"
	assert_eq "$(json_events "$T/log.json" giveup errno attempt)" "$errno 3" "give-up event"
}

@test "a closed TCP port gives ECONNREFUSED after the retries" {
	closed_port server
	check_errno ECONNREFUSED timeout 20 -- "127.0.0.1:$PORT"
}

@test "a missing unix socket gives ENOENT after the retries" {
	check_errno ENOENT timeout 20 -- "unix:$T/missing.sock"
}

@test "an unreachable network gives ENETUNREACH after the retries" {
	require_unshare -n
	# A new network namespace has only lo, and lo is down.
	check_errno ENETUNREACH timeout 20 "${UNSHARE[@]}" -- 127.0.0.1:9
}
