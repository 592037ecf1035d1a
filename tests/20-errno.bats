#!/usr/bin/env bats
# After giving up, a program sees the errno it would see without the library;
# after a success, the errno it had before the call.
# shellcheck disable=SC2154,SC2030,SC2031 # status, output, stderr: set by bats run

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

# The first attempt fails with ENETUNREACH (tests/helpers/faultshim.c, preloaded
# after the library, fails the first connect), the real ones after it with
# ECONNREFUSED: the program sees the last.
@test "a give-up reports the errno of the last real attempt, not the first" {
	closed_port server
	run timeout 20 env LD_PRELOAD="$LIB:$HELPERS/faultshim.so" FAULT_CALL=connect FAULT_COUNT=1 \
		FAULT_ERRNO=ENETUNREACH BACKOFF_RETRIES=2 BACKOFF_BASE=10ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
	assert_eq "$status" 1 "probe status"
	assert_eq "$(json_events "$T/log.json" retry errno | tr '\n' ' ')" "ENETUNREACH ECONNREFUSED " \
		"retry events"
	assert_eq "$(json_events "$T/log.json" giveup errno attempt)" "ECONNREFUSED 3" "give-up event"
}

# check_errno_kept MODE: a connect to a server 300 ms late, retried until it
# listens, leaves errno as the probe set it before the call (EDOM).
check_errno_kept() {
	start_listener server 300
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --mode "$1" --errno "127.0.0.1:$PORT"
	assert_eq "$output" OK "probe output (stderr: $stderr)"
	assert_match "$(json_events "$T/log.json" success attempt)" '^[0-9]+$' "success event" || return
	assert_between "$(json_events "$T/log.json" success attempt)" 2 100 "attempts"
	assert_eq "$stderr" errno=EDOM "errno after the connect (stderr)"
}

@test "a blocking connect that succeeds after retries leaves errno as it was" {
	check_errno_kept blocking
}

@test "a non-blocking connect that succeeds after retries leaves errno as it was through poll and SO_ERROR" {
	check_errno_kept poll
}

# A connect on a socket that is connected already: the same address, another one, and an
# accepted socket, each a blocking TCP socket (on loopback, whose first attempt the library
# bounds with a send timeout of its own).
PY_ISCONN='
import errno, socket
def name(s, addr):
    try:
        s.connect(addr)
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen()
b = socket.socket(); b.bind(("127.0.0.1", 0)); b.listen()
c = socket.socket(); c.connect(a.getsockname())
d, _ = a.accept()
print(name(c, a.getsockname()), name(c, b.getsockname()), name(d, b.getsockname()))
'

@test "a connect on a blocking socket connected already gets EISCONN, as without the library, preloaded and under the launcher" {
	run timeout 20 "$PYTHON" -c "$PY_ISCONN"
	assert_eq "$output" "EISCONN EISCONN EISCONN" "without the library"
	run timeout 20 env LD_PRELOAD="$LIB" "$PYTHON" -c "$PY_ISCONN"
	assert_eq "$output" "EISCONN EISCONN EISCONN" "preloaded"
	run timeout 20 "$LAUNCHER" -- "$PYTHON" -c "$PY_ISCONN"
	assert_eq "$output" "EISCONN EISCONN EISCONN" "under the launcher"
}
