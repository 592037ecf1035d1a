#!/usr/bin/env bats
# No server and the retries used up: each non-blocking client prints what it
# prints without the library, with the same exit status.  The last attempt is
# the kernel's own, so the program reads its genuine outcome.  (psql: in
# 91-postgresql.bats.)
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

GIVE_UP_VARS="BACKOFF_RETRIES=2 BACKOFF_BASE=20ms"

setup() {
	require_build
	closed_port server
}

# gives_up_alike COMMAND...: fails alike with and without the library, and
# the library said it gave up after 3 attempts (BACKOFF_RETRIES=2).
gives_up_alike() {
	assert_fails_alike "$GIVE_UP_VARS" "$@" || return
	local giveups
	giveups=$(grep -F "connect 127.0.0.1:$PORT: giving up after 3 attempts" <<<"$stderr" || true)
	assert_eq "$(count_lines "$giveups")" 1 "give-up lines of the library (stderr: $stderr)"
}

@test "curl gives up with its usual error when retries run out" {
	require_command curl
	gives_up_alike curl -sS "http://127.0.0.1:$PORT/"
	assert_match "$stderr" "curl: \(7\) Failed to connect to 127.0.0.1 port $PORT" "curl error"
}

@test "python create_connection with a timeout gives up with its usual error" {
	gives_up_alike "${PY_TIMEOUT_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_match "$stderr" 'ConnectionRefusedError: \[Errno 111\] Connection refused' "python error"
}

@test "python asyncio open_connection gives up with its usual error" {
	gives_up_alike "${PY_ASYNCIO_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_match "$stderr" 'ConnectionRefusedError: \[Errno 111\] Connect call failed' "python error"
}

@test "node net.connect gives up with its usual error" {
	require_command node
	gives_up_alike "${NODE_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_match "$stderr" "connect ECONNREFUSED 127.0.0.1:$PORT" "node error"
}

@test "nc -v gives up with its usual error" {
	require_command nc
	gives_up_alike nc -v 127.0.0.1 "$PORT" </dev/null
	assert_match "$stderr" "nc: connect to 127.0.0.1 port $PORT \(tcp\) failed: Connection refused" \
		"nc error"
}

@test "nc -v -w 5 gives up with its usual error" {
	require_command nc
	gives_up_alike nc -v -w 5 127.0.0.1 "$PORT" </dev/null
	assert_match "$stderr" "nc: connect to 127.0.0.1 port $PORT \(tcp\) failed: Connection refused" \
		"nc error"
}

@test "perl IO::Socket with a Timeout (select, then a second connect) gives up with its usual error" {
	require_command perl
	gives_up_alike "${PERL_TIMEOUT_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_match "$stderr" 'connect: Connection refused' "perl error"
}

@test "the probe gives up with ECONNREFUSED in every wait mode" {
	local mode
	for mode in poll ppoll select pselect epoll-lt epoll-et; do
		gives_up_alike "$HELPERS/probe" --mode "$mode" "127.0.0.1:$PORT"
		assert_eq "$output" ECONNREFUSED "probe --mode $mode output"
	done
}

@test "an event loop that checks with a second connect gives up with ECONNREFUSED" {
	local mode
	for mode in poll select epoll-lt epoll-et; do
		gives_up_alike "$HELPERS/evloop" --wait "$mode" --detect connect --timeout 5000 \
			"127.0.0.1:$PORT"
		assert_eq "$output" "thread 0 ECONNREFUSED" "evloop --wait $mode output"
	done
}
