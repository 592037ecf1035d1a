#!/usr/bin/env bats
# Stock programs started before their server connect once it listens.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CAP_MS=300

setup() {
	require_build
	LATE_ENV=(LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP="${CAP_MS}ms"
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# check_late_connect TARGET ERRNO: the log of a client that connected to a
# server listening late (the "server" listener) shows retries with ERRNO and a
# success no sooner than the server listened and not much later.
check_late_connect() {
	local target=$1 errno=$2 listening accepted retries line attempt mono
	listening=$(sed -n 's/^listening mono_ms=//p' "$T/server.out")
	accepted=$(sed -n 's/^accepted mono_ms=//p' "$T/server.out")
	[[ -n $listening && -n $accepted ]] || fail "server never accepted" || return
	assert_between "$accepted" "$listening" "$((listening + CAP_MS + 500))" "accept time"

	retries=$(json_events "$T/log.json" retry target errno)
	[[ -n $retries ]] || fail "no retry event in the log" || return
	while IFS= read -r line; do
		assert_eq "$line" "$target $errno" "retry event" || return
	done <<<"$retries"

	line=$(json_events "$T/log.json" success target attempt mono_ms)
	assert_match "$line" "^$target [0-9]+ [0-9]+$" "success event" || return
	read -r _ attempt mono <<<"$line"
	assert_eq "$attempt" "$(($(count_lines "$retries") + 1))" "attempts in the success event"
	assert_between "$attempt" 2 1000 "attempts"
	assert_between "$mono" "$listening" "$((listening + CAP_MS + 500))" "success time"
}

# check_off_passthrough COMMAND...: with BACKOFF=off, COMMAND fails as it does
# without the library (the server listens only after both runs).
check_off_passthrough() {
	local base_status base_out base_err
	run --separate-stderr timeout 20 "$@"
	base_status=$status base_out=$(normalized_output "$output")
	base_err=$(normalized_output "$stderr")
	assert_between "$base_status" 1 123 "status without the library"

	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF=off "$@"
	assert_eq "$status" "$base_status" "status with BACKOFF=off"
	assert_eq "$(normalized_output "$output")" "$base_out" "stdout with BACKOFF=off"
	assert_eq "$(normalized_output "$stderr")" "$base_err" "stderr with BACKOFF=off"
}

@test "python create_connection started 1.5 s before its server gets the data" {
	start_listener server 1500 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "${PY_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_eq "$status" 0 "python status"
	assert_eq "$output" hello "python output"
	check_late_connect "127.0.0.1:$PORT" ECONNREFUSED
}

@test "wget started 1.5 s before its server gets the page" {
	require_wget
	start_listener server 1500 --send "$HTTP_REPLY"
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "${WGET_CLIENT[@]}" "http://127.0.0.1:$PORT/"
	assert_eq "$status" 0 "wget status"
	assert_eq "$output" hello "wget output"
	check_late_connect "127.0.0.1:$PORT" ECONNREFUSED
}

@test "socat over TCP started 1.5 s before its server gets the data" {
	require_socat
	start_listener server 1500 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "${SOCAT_CLIENT[@]}" "TCP:127.0.0.1:$PORT" STDOUT
	assert_eq "$status" 0 "socat status"
	assert_eq "$output" hello "socat output"
	check_late_connect "127.0.0.1:$PORT" ECONNREFUSED
}

@test "socat to a unix socket created 1.5 s later gets the data" {
	require_socat
	start_bg server "$HELPERS/late-listener" --unix "$T/sock" --after 1500 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "${SOCAT_CLIENT[@]}" "UNIX-CONNECT:$T/sock" STDOUT
	assert_eq "$status" 0 "socat status"
	assert_eq "$output" hello "socat output"
	check_late_connect "unix:$T/sock" ENOENT
}

@test "python with BACKOFF=off fails as it does without the library" {
	start_listener server 5000 --send hello
	check_off_passthrough "${PY_CLIENT[@]}" 127.0.0.1 "$PORT"
}

@test "wget with BACKOFF=off fails as it does without the library" {
	require_wget
	start_listener server 5000 --send "$HTTP_REPLY"
	check_off_passthrough "${WGET_CLIENT[@]}" "http://127.0.0.1:$PORT/"
}

@test "socat over TCP with BACKOFF=off fails as it does without the library" {
	require_socat
	start_listener server 5000 --send hello
	check_off_passthrough "${SOCAT_CLIENT[@]}" "TCP:127.0.0.1:$PORT" STDOUT
}

@test "socat to a unix socket with BACKOFF=off fails as it does without the library" {
	require_socat
	start_bg server "$HELPERS/late-listener" --unix "$T/sock" --after 5000 --send hello
	check_off_passthrough "${SOCAT_CLIENT[@]}" "UNIX-CONNECT:$T/sock" STDOUT
}
