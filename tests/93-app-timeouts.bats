#!/usr/bin/env bats
# A program's own connect timeout still ends its wait on time while the
# library retries a server that never comes, with the error it prints when
# its timeout expires without the library.  (psql connect_timeout: in
# 91-postgresql.bats.)
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	# Without the library: a server that never answers, so the timeout fires.
	start_blackhole silent
	SILENT_PORT=$PORT
	# With it: a port that refuses, retried until the program gives up.
	closed_port server
	RETRY_ENV=(LD_PRELOAD="$LIB" BACKOFF_RETRIES=1000 BACKOFF_BASE=50ms BACKOFF_CAP=300ms
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# same_but_port TEXT PORT: TEXT without the library's lines, PORT as "PORT"
# and curl's "after N ms" as "after N ms".
same_but_port() {
	normalized_output "$1" | sed -E -e "s/\b$2\b/PORT/g" -e 's/after [0-9]+ ms/after N ms/'
}

# check_retried_until_timeout: the library kept retrying the refused port.
check_retried_until_timeout() {
	assert_between "$(json_events "$T/log.json" retry | wc -l)" 3 1000 "retry events"
	assert_eq "$(json_events "$T/log.json" retry target | sort -u)" "127.0.0.1:$PORT" \
		"retry targets"
	assert_eq "$(json_events "$T/log.json" success)" "" "success events"
}

@test "curl --connect-timeout 2 ends after 2 s with its timeout error while the library retries" {
	require_command curl
	local cmd=(curl -sS --connect-timeout 2) start elapsed base_status=0
	start_bg base timeout 20 "${cmd[@]}" "http://127.0.0.1:$SILENT_PORT/"

	start=$(now_ms)
	run --separate-stderr timeout 20 env "${RETRY_ENV[@]}" "${cmd[@]}" "http://127.0.0.1:$PORT/"
	elapsed=$(($(now_ms) - start))
	wait "$(<"$T/base.pid")" || base_status=$?

	assert_eq "$base_status" 28 "curl status without the library"
	assert_eq "$status" 28 "curl status with the library"
	assert_eq "$(same_but_port "$stderr" "$PORT")" \
		"$(same_but_port "$(<"$T/base.err")" "$SILENT_PORT")" "curl error with the library"
	assert_match "$stderr" 'Timeout was reached' "curl error"
	assert_eq "$output" "" "curl output"
	assert_between "$elapsed" 1700 2300 "run time in ms"
	check_retried_until_timeout
}

@test "asyncio.wait_for(open_connection, 2) times out after 2 s while the library retries" {
	local start base_status=0
	start_bg base timeout 20 "${PY_ASYNCIO_CLIENT[@]}" 127.0.0.1 "$SILENT_PORT" 2 "$T/base.ms"

	run --separate-stderr timeout 20 env "${RETRY_ENV[@]}" "${PY_ASYNCIO_CLIENT[@]}" 127.0.0.1 \
		"$PORT" 2 "$T/lib.ms"
	wait "$(<"$T/base.pid")" || base_status=$?

	assert_eq "$base_status" 1 "python status without the library"
	assert_eq "$status" 1 "python status with the library"
	assert_eq "$(same_but_port "$stderr" "$PORT")" \
		"$(same_but_port "$(<"$T/base.err")" "$SILENT_PORT")" "python error with the library"
	assert_match "$stderr" 'TimeoutError' "python error"
	assert_between "$(<"$T/base.ms")" 1700 2300 "connect time without the library in ms"
	assert_between "$(<"$T/lib.ms")" 1700 2300 "connect time with the library in ms"
	check_retried_until_timeout
}
