#!/usr/bin/env bats
# What is not eligible makes exactly the system calls it makes without the library.

load helper

setup() {
	require_build
	require_strace
	LOG_ENV=(BACKOFF_RETRIES=3 BACKOFF_BASE=10ms BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
}

@test "a target included by BACKOFF_TARGETS is retried" {
	closed_port server
	run traced "$T/strace" env "${LOG_ENV[@]}" BACKOFF_TARGETS="127.0.0.1:$PORT" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
	assert_eq "$(strace_connects "$T/strace" "htons($PORT)")" 4 "connect calls"
	assert_eq "$(count_lines "$(json_events "$T/log.json" retry)")" 3 "retry events"
}

@test "a target excluded by BACKOFF_TARGETS is not retried" {
	closed_port server
	run traced "$T/strace" env "${LOG_ENV[@]}" BACKOFF_TARGETS="!127.0.0.1:$PORT" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"
	assert_eq "$(strace_connects "$T/strace" "htons($PORT)")" 1 "connect calls"
	assert_eq "$(json_events "$T/log.json" retry)" "" "retry events"
}

@test "a UDP connect makes one system call" {
	closed_port server
	run traced "$T/strace" env "${LOG_ENV[@]}" "$HELPERS/probe" --type dgram "127.0.0.1:$PORT"
	assert_eq "$output" OK "probe output"
	assert_eq "$(strace_connects "$T/strace" "htons($PORT)")" 1 "connect calls"
}

# A datagram connect to a bound port succeeds (the rule above is never reached):
# here the first connect fails with ENETUNREACH, a retryable errno, at the
# hands of tests/helpers/faultshim.c, preloaded after the library.
@test "a UDP connect that fails with a retryable errno is not retried" {
	closed_port server
	run timeout 20 env LD_PRELOAD="$LIB:$HELPERS/faultshim.so" FAULT_CALL=connect FAULT_COUNT=1 \
		FAULT_ERRNO=ENETUNREACH FAULT_REPORT="$T/faults" "${LOG_ENV[@]}" \
		"$HELPERS/probe" --type dgram "127.0.0.1:$PORT"
	assert_eq "$output" ENETUNREACH "probe output"
	assert_eq "$(<"$T/faults")" "connect calls=1 faults=1" "connect calls (faultshim report)"
	assert_eq "$(json_events "$T/log.json" retry)" "" "retry events"
	assert_eq "$(json_events "$T/log.json" pass reason)" "not-stream" "pass events"
}

@test "a UDP connect failing with ENETUNREACH is not retried" {
	require_unshare -n
	run traced "$T/strace" "${UNSHARE[@]}" env "${LOG_ENV[@]}" "$HELPERS/probe" --type dgram 127.0.0.1:9
	assert_eq "$output" ENETUNREACH "probe output"
	assert_eq "$(strace_connects "$T/strace" "htons(9)")" 1 "connect calls"
	assert_eq "$(json_events "$T/log.json" retry)" "" "retry events"
}

# A blocking one is retried (80-send.bats); a non-blocking one ends at once, nothing to manage.
@test "a non-blocking unix datagram connect failing with ENOENT is not retried" {
	run traced "$T/strace" env "${LOG_ENV[@]}" "$HELPERS/probe" --mode poll --type dgram \
		"unix:$T/missing.sock"
	assert_eq "$output" ENOENT "probe output"
	assert_eq "$(strace_connects "$T/strace" "$T/missing.sock")" 1 "connect calls"
	assert_eq "$(json_events "$T/log.json" retry)" "" "retry events"
}

@test "a successful connect makes one system call" {
	start_listener server 0
	wait_for_line "$T/server.out" '^listening' 5
	run traced "$T/strace" env "${LOG_ENV[@]}" "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" OK "probe output"
	assert_eq "$(strace_connects "$T/strace" "htons($PORT)")" 1 "connect calls"
	assert_eq "$(json_events "$T/log.json" success)" "" "success events (no retry happened)"
}

@test "glibc's nscd socket is never retried by the preload, even when BACKOFF_TARGETS names it" {
	local sock targets start
	for sock in /var/run/nscd/socket /run/nscd/socket; do
		[[ ! -e $sock ]] || skip "nscd is running here ($sock exists)"
		for targets in '*' 'unix:/*nscd*'; do
			rm -f "$T/log.json"
			start=$(now_ms)
			run traced "$T/strace" env "${LOG_ENV[@]}" BACKOFF_TARGETS="$targets" \
				"$HELPERS/probe" "unix:$sock"
			assert_eq "$output" ENOENT "probe output for $sock"
			assert_eq "$(strace_connects "$T/strace" "$sock")" 1 "connect calls to $sock"
			assert_eq "$(json_events "$T/log.json" retry)" "" "retry events for $sock"
			assert_between "$(($(now_ms) - start))" 0 5000 "elapsed ms"
		done
	done
}

@test "id under the launcher retries no connect of glibc's own, under either engine" {
	local engine start
	for engine in auto supervise preload; do
		start=$(now_ms)
		run --separate-stderr timeout 20 "$LAUNCHER" --engine "$engine" -v -- id -un
		assert_eq "$status" 0 "status under --engine $engine (stderr: $stderr)"
		assert_eq "$output" "$(id -un)" "id -un under --engine $engine"
		assert_eq "$stderr" "" "stderr under --engine $engine"
		assert_between "$(($(now_ms) - start))" 0 5000 "elapsed ms under --engine $engine"
	done
}
