#!/usr/bin/env bats
# libbackoff holds no fd of its own: a program may close them all at start-up, as ssh does.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

@test "the library opens no fd of its own: a program starts with the same fds as without it" {
	start_listener server 0
	local without with
	without=$(timeout 20 "$HELPERS/lifecycle" close-range "127.0.0.1:$PORT" 2>&1 >/dev/null 3>&- |
		grep '^fds:')
	start_listener server2 0
	with=$(timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=debug BACKOFF_LOG_FILE="$T/log" \
		"$HELPERS/lifecycle" close-range "127.0.0.1:$PORT" 2>&1 >/dev/null 3>&- | grep '^fds:')
	assert_eq "$with" "$without" "open fds at start-up"
}

@test "after close_range(3, ~0U, 0) at start-up, connects are retried and logged to the log file" {
	start_listener server 500 --count 2
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" close-range "127.0.0.1:$PORT" 3>&-
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" $'blocking OK\nnonblocking OK' "output"
	# Both connects went through the library and their lines reached the file,
	# which is opened for each line: there was no fd of ours to lose.
	assert_eq "$(json_events "$T/log.json" success attempt | wc -l)" 1 "successes after retries" ||
		return
	local retries
	retries=$(json_events "$T/log.json" retry | wc -l)
	((retries >= 1)) || fail "no retry logged"
}
