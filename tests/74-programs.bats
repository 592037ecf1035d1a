#!/usr/bin/env bats
# BACKOFF_PROGRAMS: the programs served, by name; every other one runs as without the library.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	require_program curl
	PY_NAME=$(basename "$PYTHON")
}

# curl_refused ENV...: curl to the refused port $PORT with ENV; sets status, stderr and
# elapsed_ms.
curl_refused() {
	local start
	start=$(now_ms)
	run --separate-stderr timeout 20 env "$@" curl -sS "http://127.0.0.1:$PORT/"
	elapsed_ms=$(($(now_ms) - start))
}

@test "with BACKOFF_PROGRAMS naming python, python waits for a late server while curl is refused at once as without the library" {
	local plain_err
	closed_port dead
	curl_refused
	assert_eq "$status" 7 "curl's status without the library"
	plain_err=$(normalized_output "$stderr")
	curl_refused LD_PRELOAD="$LIB" BACKOFF_PROGRAMS="$PY_NAME" BACKOFF_LOG=info
	assert_eq "$status" 7 "curl's status with the library serving $PY_NAME only"
	assert_eq "$(normalized_output "$stderr")" "$plain_err" "curl's stderr"
	assert_between "$elapsed_ms" 0 2000 "curl's time (ms)"

	start_listener server 800 --send hello
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS="curl,$PY_NAME" \
		BACKOFF_BASE=50ms BACKOFF_CAP=200ms "${PY_CLIENT[@]}" 127.0.0.1 "$PORT"
	assert_eq "$status" 0 "python's status"
	assert_eq "$output" hello "python's output"
}

@test "a program left out by ! or by a list that names others hears nothing of the library, not even a bad value" {
	local list
	for list in "!sh" "python3,curl" "curl,!sh,sh"; do
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS="$list" \
			BACKOFF_CAP=10x BACKOFF_TIMOUT=1s BACKOFF_STRICT=1 BACKOFF_STATS=1 \
			sh -c 'echo out; exit 3'
		assert_eq "$status/$output" "3/out" "sh's status and output with BACKOFF_PROGRAMS=$list"
		assert_eq "$stderr" "" "sh's stderr with BACKOFF_PROGRAMS=$list"
	done
	# Served, the same environment ends it with the lines.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS='!curl' \
		BACKOFF_CAP=10x BACKOFF_STRICT=1 sh -c 'echo out; exit 3'
	assert_eq "$status/$output" "2/" "sh's status and output when served"
	assert_match "$stderr" 'BACKOFF_CAP="10x"' "sh's stderr when served"
}

@test "a program is named as it was started, its whole name, not its interpreter's" {
	local long=a-client-named-past-fifteen-bytes
	closed_port dead
	cp "$HELPERS/probe" "$T/$long"
	# Cut at 15 bytes, as /proc/self/comm holds it, the name is another program's.
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS="${long:0:15}" BACKOFF_BASE=10ms \
		BACKOFF_RETRIES=2 BACKOFF_LOG=info "$T/$long" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the probe left out"
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS="$long" BACKOFF_BASE=10ms \
		BACKOFF_RETRIES=2 BACKOFF_LOG=info "$T/$long" "127.0.0.1:$PORT"
	assert_eq "$(grep -c 'retrying in' <<<"$output")" 2 "retry lines of the probe served: $output"
	# A script is its own name: the list that names its interpreter leaves it out.
	printf '#!/bin/sh\necho "$BACKOFF_PROGRAMS" >/dev/null\nexec "$@"\n' >"$T/wrapper"
	chmod +x "$T/wrapper"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS=sh \
		BACKOFF_CAP=10x "$T/wrapper" true
	assert_eq "$status/$stderr" "0/" "the script under a list naming sh"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROGRAMS=wrapper \
		BACKOFF_CAP=10x "$T/wrapper" true
	assert_match "$stderr" 'BACKOFF_CAP="10x"' "the script under a list naming it"
}

@test "the launcher's --programs sets the list, and refuses a path with status 2" {
	run --separate-stderr timeout 20 "$LAUNCHER" --programs 'python3,!curl' --print-env
	assert_eq "$status" 0 "launcher status"
	assert_match "$output" "export BACKOFF_PROGRAMS='python3,!curl'" "--print-env"
	run --separate-stderr timeout 20 "$LAUNCHER" --programs /usr/bin/curl -- sh -c 'echo ran'
	assert_eq "$status/$output" "2/" "launcher status and stdout for a path"
	assert_match "$stderr" 'BACKOFF_PROGRAMS="/usr/bin/curl": expected program names' "stderr"
}
