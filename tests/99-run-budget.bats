#!/usr/bin/env bats
# A budget per run.  The processes of one run (a launched command with all it
# starts, a shell after --print-env, or what BACKOFF_RUN names) share each
# destination's spent budget: once one of them has waited a destination's
# whole budget, the run's later calls there get the kernel's answer at once,
# until a success or the open time's end.  A new run starts with a whole
# budget; plain LD_PRELOAD without BACKOFF_RUN keeps a budget per process.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	STATE=$T/state
}

# clients N ADDR: N probe clients of ADDR in turn, one outcome a line.
clients() {
	local i
	for ((i = 1; i <= $1; i++)); do
		"$HELPERS/probe" "$2"
	done
}

@test "a run's ten clients in turn against a port nobody listens on: one budget for all (2 s, not 20 s); every outcome the kernel's ECONNREFUSED" {
	# The launcher preloads the default build, which the sanitizers' instrumented helpers cannot run under.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the launcher's library is the default build's"
	local start elapsed
	closed_port dead
	start=$(now_ms)
	run --separate-stderr timeout 60 env BACKOFF_SHARED="$STATE" HELPERS="$HELPERS" "$LAUNCHER" \
		--timeout 2s -- bash -c "$(declare -f clients); clients 10 127.0.0.1:$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$(sort <<<"$output" | uniq -c | sed 's/^ *//')" "10 ECONNREFUSED" "the outcomes: $stderr"
	assert_between "$elapsed" 1900 4500 "ms for the ten"
	assert_eq "$(grep -c 'giving up' <<<"$stderr")" 1 "give-up lines, the first client's: $stderr"
}

@test "the same run with the server listening at 1.5 s: ten of ten connect" {
	# The launcher preloads the default build, which the sanitizers' instrumented helpers cannot run under.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the launcher's library is the default build's"
	start_listener late 1500 --count 10
	run --separate-stderr timeout 60 env BACKOFF_SHARED="$STATE" HELPERS="$HELPERS" "$LAUNCHER" \
		--timeout 5s -- bash -c "$(declare -f clients); clients 10 127.0.0.1:$PORT"
	assert_eq "$(sort <<<"$output" | uniq -c | sed 's/^ *//')" "10 OK" "the outcomes: $stderr"
}

@test "two runs, and two processes without a run, each wait their whole budget" {
	# The launcher preloads the default build, which the sanitizers' instrumented helpers cannot run under.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the launcher's library is the default build's"
	local start
	closed_port dead
	start=$(now_ms)
	run --separate-stderr timeout 60 env BACKOFF_SHARED="$STATE" "$LAUNCHER" --timeout 1s -- \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	run --separate-stderr timeout 60 env BACKOFF_SHARED="$STATE" "$LAUNCHER" --timeout 1s -- \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the second run's outcome"
	assert_between "$(($(now_ms) - start))" 1900 6000 "ms for two runs of 1 s"
	start=$(now_ms)
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=1s HELPERS="$HELPERS" bash -c "$(declare -f clients); clients 2 127.0.0.1:$PORT"
	assert_eq "$output" "ECONNREFUSED
ECONNREFUSED" "plain LD_PRELOAD: $stderr"
	assert_between "$(($(now_ms) - start))" 1900 6000 "ms for two processes without a run"
}

@test "BACKOFF_RUN names a run across separate commands: the second call at once, another run with its budget, and the run connects once the server is up" {
	local start elapsed
	start_listener late 4000 --count 10
	# Budget 1 s: the first gives up; the open time is 0.8 to 1.2 s.
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=1s BACKOFF_RUN=job-1 "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the first"
	start=$(now_ms)
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=1s BACKOFF_RUN=job-1 "$HELPERS/probe" "127.0.0.1:$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" ECONNREFUSED "the second, in the open time"
	assert_between "$elapsed" 0 600 "ms for the second"
	# Another run is not held back.
	start=$(now_ms)
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=1s BACKOFF_RUN=job-2 "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_between "$(($(now_ms) - start))" 900 3000 "ms for another run"
	# The server, up at 4 s: the run's next call connects.
	wait_for_line "$T/late.out" "^listening " 10
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=1s BACKOFF_RUN=job-1 "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" OK "job-1 once the server is up: $stderr"
}

@test "a success ends a run's give-up: the destination gone again, the run's next call has its budget" {
	local start other
	# Another destination down in the same file: the run's own record, not the count, must end it.
	closed_port dead
	other=$PORT
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=200ms "$HELPERS/probe" "127.0.0.1:$other"
	assert_eq "$output" ECONNREFUSED "the other destination, down"
	# Budget 2 s: the give-up's open time is 1.6 to 2.4 s; the server listens at 2.3 s for one connection.
	start_listener once 2300 --count 1
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=2s BACKOFF_RUN=job "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the first gives up: $stderr"
	wait_for_line "$T/once.out" "^listening " 10
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=2s BACKOFF_RUN=job "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" OK "the second, its one attempt: $stderr"
	wait_for_line "$T/once.out" "^accepted " 10
	stop_bg_all
	start=$(now_ms)
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=2s BACKOFF_RUN=job "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the third"
	assert_between "$(($(now_ms) - start))" 1800 6000 "ms for the third: a whole budget"
}

@test "a bad BACKOFF_RUN gets one line naming it" {
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "BACKOFF_RUN=a b" sh -c 'echo out'
	assert_eq "$output" out "the program runs"
	assert_eq "$stderr" 'backoff: BACKOFF_RUN="a b": expected a name of 1 to 128 printable characters, no spaces' \
		"the line"
}
