#!/usr/bin/env bats
# A server that never comes: the same error as without the library, within the budget.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

# check_gives_up TARGET COMMAND...: with BACKOFF_TIMEOUT=2s, COMMAND ends
# within [2.0 s, 2.5 s] with the status and messages it has without the
# library, plus one give-up line of the library about TARGET.
check_gives_up() {
	local target=$1 base_status base_out base_err start elapsed giveups
	shift
	run --separate-stderr timeout 20 "$@"
	base_status=$status base_out=$(normalized_output "$output")
	base_err=$(normalized_output "$stderr")
	assert_between "$base_status" 1 123 "status without the library"

	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=2s "$@"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status" "$base_status" "status with the library"
	assert_eq "$(normalized_output "$output")" "$base_out" "stdout with the library"
	assert_eq "$(normalized_output "$stderr")" "$base_err" "stderr with the library"
	assert_between "$elapsed" 2000 2500 "run time in ms"
	giveups=$(grep -F "connect $target: giving up after " <<<"$stderr" || true)
	assert_eq "$(count_lines "$giveups")" 1 "give-up lines of the library"
	assert_match "$giveups" '^backoff\[[0-9]+\]: ' "give-up line"
}

@test "python gives up after BACKOFF_TIMEOUT=2s with its usual error" {
	closed_port server
	check_gives_up "127.0.0.1:$PORT" "${PY_CLIENT[@]}" 127.0.0.1 "$PORT"
}

@test "wget gives up after BACKOFF_TIMEOUT=2s with its usual error" {
	require_wget
	closed_port server
	check_gives_up "127.0.0.1:$PORT" "${WGET_CLIENT[@]}" "http://127.0.0.1:$PORT/"
}

@test "socat over TCP gives up after BACKOFF_TIMEOUT=2s with its usual error" {
	require_socat
	closed_port server
	check_gives_up "127.0.0.1:$PORT" "${SOCAT_CLIENT[@]}" "TCP:127.0.0.1:$PORT" STDOUT
}

@test "socat to a unix socket gives up after BACKOFF_TIMEOUT=2s with its usual error" {
	require_socat
	check_gives_up "unix:$T/missing.sock" "${SOCAT_CLIENT[@]}" "UNIX-CONNECT:$T/missing.sock" STDOUT
}

@test "BACKOFF_RETRIES=3 gives up after exactly 4 attempts" {
	require_strace
	closed_port server
	run traced "$T/strace" env BACKOFF_RETRIES=3 BACKOFF_BASE=10ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
	assert_eq "$status" 1 "probe status"
	assert_eq "$(strace_connects "$T/strace" "htons($PORT)")" 4 "connect calls"
	assert_eq "$(json_events "$T/log.json" retry attempt errno | tr '\n' ' ')" \
		"1 ECONNREFUSED 2 ECONNREFUSED 3 ECONNREFUSED " "retry events"
	assert_eq "$(json_events "$T/log.json" giveup attempt errno reason)" \
		"4 ECONNREFUSED retries" "give-up event"
}
