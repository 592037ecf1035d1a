#!/usr/bin/env bats
# BACKOFF_NONBLOCK=off: non-blocking connects pass straight through, failing
# at once exactly as without the library; blocking ones are still retried.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	closed_port server
	OFF_VARS="BACKOFF_NONBLOCK=off BACKOFF_BASE=50ms BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json"
	OFF_VARS+=" BACKOFF_LOG_FILE=$T/log.json"
}

# passes_through COMMAND...: fails alike with BACKOFF_NONBLOCK=off and without
# the library, at once (well before a first retry could even be due), and
# the library retried nothing.
passes_through() {
	local start elapsed
	start=$(now_ms)
	assert_fails_alike "$OFF_VARS" "$@" || return
	elapsed=$(($(now_ms) - start))
	assert_between "$elapsed" 0 3000 "both runs in ms" || return
	assert_eq "$(json_events "$T/log.json" retry)" "" "retry events" || return
	assert_eq "$(json_events "$T/log.json" giveup)" "" "give-up events"
}

@test "with BACKOFF_NONBLOCK=off curl fails at once as without the library" {
	require_command curl
	passes_through curl -sS "http://127.0.0.1:$PORT/"
	assert_match "$stderr" 'curl: \(7\)' "curl error"
}

@test "with BACKOFF_NONBLOCK=off python create_connection with a timeout fails as without the library" {
	passes_through "${PY_TIMEOUT_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_match "$stderr" 'ConnectionRefusedError' "python error"
}

@test "with BACKOFF_NONBLOCK=off python asyncio fails as without the library" {
	passes_through "${PY_ASYNCIO_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_match "$stderr" 'ConnectionRefusedError' "python error"
}

@test "with BACKOFF_NONBLOCK=off the probe fails with ECONNREFUSED in poll mode as without the library" {
	passes_through "$HELPERS/probe" --mode poll "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
}

@test "with BACKOFF_NONBLOCK=off psql fails as without the library" {
	require_command psql
	passes_through psql -X -h 127.0.0.1 -p "$PORT" -U postgres -c 'select 42'
	assert_match "$stderr" 'Connection refused' "psql error"
}

@test "with BACKOFF_NONBLOCK=off a blocking connect is still retried" {
	start_listener late 1000 --send hello
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_NONBLOCK=off BACKOFF_BASE=50ms \
		BACKOFF_CAP=300ms BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --mode blocking --read "127.0.0.1:$PORT"
	assert_eq "$status" 0 "probe status (stderr: $stderr)"
	assert_eq "$output" "OK hello" "probe output"
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono late listening)" 300
}
