#!/usr/bin/env bats
# A signal during the library's wait: ends the call without SA_RESTART, not with it.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

@test "SIGALRM without SA_RESTART ends the wait at once with the last real errno" {
	closed_port server
	# The planned wait (BACKOFF_SHARED=off); the wait on a shared slot is tested below.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED=off BACKOFF_BASE=2s BACKOFF_JITTER=none \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --alarm 300 "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
	assert_eq "$status" 1 "probe status"
	assert_match "$stderr" '^elapsed_ms=[0-9]+ alarms=1$' "probe timing" || return
	local elapsed=${stderr#elapsed_ms=}
	elapsed=${elapsed%% *}
	# The alarm fires at 300 ms; the call must end within 50 ms of it.
	assert_between "$elapsed" 300 350 "connect time in ms"
	assert_eq "$(json_events "$T/log.json" giveup errno reason)" "ECONNREFUSED signal" "give-up event"
}

@test "SIGALRM with SA_RESTART lets the wait go on to a server that comes" {
	start_listener server 1000 --send hello
	# Planned attempts only: no look finds the listener before the wait ends.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED=off BACKOFF_BASE=1500ms BACKOFF_JITTER=none \
		BACKOFF_LOCAL_PROBE=off \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --alarm 700 --sa-restart --read "127.0.0.1:$PORT"
	assert_eq "$output" "OK hello" "probe output"
	assert_eq "$status" 0 "probe status"
	assert_match "$stderr" '^elapsed_ms=[0-9]+ alarms=1$' "probe timing" || return
	local elapsed=${stderr#elapsed_ms=}
	elapsed=${elapsed%% *}
	# One 1500 ms wait, neither cut short nor started again by the signal.
	assert_between "$elapsed" 1500 1900 "connect time in ms"
	assert_eq "$(json_events "$T/log.json" success attempt)" 2 "success event"
}

@test "SIGALRM with SA_RESTART during the looks for a local listener: connected when it listens" {
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=1500ms BACKOFF_JITTER=none \
		BACKOFF_SHARED="$T/state" "$HELPERS/probe" --alarm 700 --sa-restart --read "127.0.0.1:$PORT"
	assert_eq "$output" "OK hello" "probe output"
	assert_match "$stderr" '^elapsed_ms=[0-9]+ alarms=1$' "probe timing" || return
	# The listener is found by a look within 10 ms of listening, not at the planned
	# 1500 ms (500 ms after it): timed by the listener's own clock, since the probe
	# starts a little after the listener's 1000 ms count began.
	local listening accepted
	listening=$(listener_mono server listening)
	accepted=$(listener_mono server accepted)
	assert_between "$((accepted - listening))" 0 300 "ms from listening to the connection"
}

@test "SIGALRM without SA_RESTART during the looks ends the wait with the kernel's error" {
	closed_port dead
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=1500ms BACKOFF_JITTER=none \
		BACKOFF_SHARED="$T/state" "$HELPERS/probe" --alarm 300 "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
	local elapsed
	elapsed=$(sed -n 's/^elapsed_ms=\([0-9]*\).*/\1/p' <<<"$stderr")
	assert_between "$elapsed" 300 350 "connect time in ms"
}
