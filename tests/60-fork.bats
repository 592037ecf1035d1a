#!/usr/bin/env bats
# Processes forked after load draw their own jitter, unless a seed is set.

load helper

setup() {
	require_build
}

# delays_by_pid: "PID d1 d2 d3" per process, from the retry events of the log.
delays_by_pid() {
	json_events "$T/log.json" retry pid delay_ms |
		awk '{ d[$1] = d[$1] " " $2 } END { for (p in d) print p d[p] }' | sort
}

@test "children forked after load wait different delays" {
	closed_port server
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_RETRIES=3 BACKOFF_BASE=100ms \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --fork 2 "127.0.0.1:$PORT"
	assert_eq "$output" $'ECONNREFUSED\nECONNREFUSED' "probe output"
	assert_eq "$status" 1 "probe status"
	local lines
	mapfile -t lines < <(delays_by_pid)
	assert_eq "${#lines[@]}" 2 "processes that retried" || return
	assert_match "${lines[0]}" '^[0-9]+( [0-9]+){3}$' "first child's delays"
	assert_match "${lines[1]}" '^[0-9]+( [0-9]+){3}$' "second child's delays"
	[[ ${lines[0]#* } != "${lines[1]#* }" ]] ||
		fail "both children waited ${lines[0]#* }"
}

@test "children forked after load wait the same delays with BACKOFF_SEED" {
	closed_port server
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SEED=42 BACKOFF_RETRIES=3 BACKOFF_BASE=100ms \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --fork 2 "127.0.0.1:$PORT"
	assert_eq "$output" $'ECONNREFUSED\nECONNREFUSED' "probe output"
	local lines
	mapfile -t lines < <(delays_by_pid)
	assert_eq "${#lines[@]}" 2 "processes that retried" || return
	assert_match "${lines[0]}" '^[0-9]+( [0-9]+){3}$' "first child's delays"
	assert_eq "${lines[1]#* }" "${lines[0]#* }" "second child's delays"
}
