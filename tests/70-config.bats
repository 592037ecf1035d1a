#!/usr/bin/env bats
# Bad values in the environment or on the launcher's command line: one clear message, never a crash.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell

load helper

setup() {
	require_build
	LONG=$(printf 'x%.0s' {1..10240})
	VALUES=('' abc -5 99999999999999999999999 "$LONG")
	VALUE_NAMES=(empty abc -5 huge 10KB)
}

# Which values each variable must reject with exactly one message (1), and
# which it may accept, such as any string as a log file path (0).  An empty
# value may mean the default for every variable.
#                     empty abc  -5  huge 10KB
VALIDITY='
BACKOFF               0     1    1   1    1
BACKOFF_POLICY        0     1    1   1    1
BACKOFF_BASE          0     1    1   1    1
BACKOFF_MULTIPLIER    0     1    1   1    1
BACKOFF_CAP           0     1    1   1    1
BACKOFF_JITTER        0     1    1   1    1
BACKOFF_RETRIES       0     1    1   1    1
BACKOFF_TIMEOUT       0     1    1   1    1
BACKOFF_ATTEMPT_TIMEOUT 0   1    1   1    1
BACKOFF_ERRORS        0     1    1   1    1
BACKOFF_TARGETS       0     1    1   1    1
BACKOFF_DESTINATIONS  0     1    1   1    1
BACKOFF_NONBLOCK      0     1    1   1    1
BACKOFF_SEND          0     1    1   1    1
BACKOFF_DNS           0     1    1   1    1
BACKOFF_NAMES         0     0    0   0    1
BACKOFF_LOG           0     1    1   1    1
BACKOFF_LOG_FILE      0     0    0   0    0
BACKOFF_LOG_FORMAT    0     1    1   1    1
BACKOFF_SEED          0     1    1   1    1
BACKOFF_STATS         0     1    1   1    1
BACKOFF_ENGINE        0     1    1   1    1
BACKOFF_STRICT        0     1    1   1    1
BACKOFF_SHARED        0     1    1   1    1
BACKOFF_LOCAL_PROBE   0     1    1   1    1
BACKOFF_REPLAY        0     1    1   1    1
BACKOFF_EARLY_CLOSE   0     1    1   1    1
BACKOFF_PROTOCOLS     0     1    1   1    1
BACKOFF_RUN           0     0    0   0    1
BACKOFF_PROGRAMS      0     0    0   0    1
'

# run_program VAR=VALUE...: a shell printing "out" and exiting 3 under the
# library, in the test's directory (a log file path lands there); sets
# prog_status, prog_out (stdout) and prog_err (stderr).
run_program() {
	prog_status=0
	prog_out=$(cd "$T" && timeout 20 env LD_PRELOAD="$LIB" "$@" sh -c 'echo out; exit 3' \
		2>"$T/stderr") || prog_status=$?
	prog_err=$(<"$T/stderr")
}

# names_variable LINE VAR: LINE mentions VAR as a whole word.
names_variable() {
	[[ $1 =~ (^|[^A-Z_])$2([^A-Z_]|$) ]]
}

@test "the validity table covers every variable" {
	assert_eq "$(awk 'NF { print $1 }' <<<"$VALIDITY" | tr '\n' ' ')" "${BACKOFF_VARIABLES[*]} "
}

@test "a bad value never stops the program and gets at most one message naming its variable" {
	local var flags i problems=()
	while read -r var flags; do
		[[ -n $var ]] || continue
		read -ra flags <<<"$flags"
		for i in "${!VALUES[@]}"; do
			local what="$var=${VALUE_NAMES[i]}"
			run_program "$var=${VALUES[i]}"
			[[ $prog_status == 3 && $prog_out == out ]] ||
				problems+=("$what: status $prog_status, output '$prog_out'")
			local lines
			lines=$(count_lines "$prog_err")
			if ((flags[i])); then
				((lines == 1)) && names_variable "$prog_err" "$var" ||
					problems+=("$what: expected one message naming $var, got: ${prog_err:0:200}")
			else
				((lines == 0)) || { ((lines == 1)) && names_variable "$prog_err" "$var"; } ||
					problems+=("$what: expected nothing or one message naming $var, got: ${prog_err:0:200}")
			fi
		done
	done <<<"$VALIDITY"
	printf '%s\n' "${problems[@]}" >&2
	assert_eq "${#problems[@]}" 0 "problems"
}

@test "with BACKOFF_STRICT=1 a bad value ends the program with status 2" {
	local var flags i problems=()
	while read -r var flags; do
		[[ -n $var && $var != BACKOFF_STRICT ]] || continue
		read -ra flags <<<"$flags"
		for i in "${!VALUES[@]}"; do
			((flags[i])) || continue
			local what="$var=${VALUE_NAMES[i]}"
			run_program BACKOFF_STRICT=1 "$var=${VALUES[i]}"
			[[ $prog_status == 2 && -z $prog_out ]] ||
				problems+=("$what: status $prog_status, output '$prog_out'")
			[[ $(count_lines "$prog_err") == 1 ]] && names_variable "$prog_err" "$var" ||
				problems+=("$what: expected one message naming $var, got: ${prog_err:0:200}")
		done
	done <<<"$VALIDITY"
	printf '%s\n' "${problems[@]}" >&2
	assert_eq "${#problems[@]}" 0 "problems"
}

@test "with BACKOFF_STRICT=1 a good configuration runs the program" {
	run_program BACKOFF_STRICT=1 BACKOFF_CAP=5s BACKOFF_JITTER=proportional:0.5
	assert_eq "$prog_status" 3 "program status"
	assert_eq "$prog_out" out "program output"
	assert_eq "$prog_err" "" "messages"
}

# check_launcher_usage BAD ARGS...: the launcher rejects ARGS with status 2, a
# usage line and a message quoting BAD, without running the command.
check_launcher_usage() {
	local bad=$1
	shift
	[[ -x $LAUNCHER ]] || fail "$LAUNCHER is missing" || return
	run --separate-stderr timeout 20 "$LAUNCHER" "$@" -- sh -c 'echo ran'
	assert_eq "$status" 2 "launcher status"
	assert_eq "$output" "" "launcher stdout"
	assert_match "$stderr" '(^|'$'\n'')[Uu]sage: ' "launcher stderr"
	[[ $stderr == *"$bad"* ]] || fail "launcher stderr does not quote '$bad': $stderr"
}

@test "the launcher rejects an unknown option with status 2" {
	check_launcher_usage --bogus --bogus
}

@test "the launcher's unknown option names the option it most likely misspells, and none when nothing is near" {
	check_launcher_usage "unknown option --timout (did you mean --timeout?)" --timout 5s
	check_launcher_usage "unknown option --replya=on (did you mean --replay?)" --replya=on
	check_launcher_usage "unknown option --stat (did you mean --stats?)" --stat
	check_launcher_usage --zzzzzz --zzzzzz
	[[ $stderr != *"did you mean"* ]] || fail "a suggestion for --zzzzzz: $stderr"
}

@test "the launcher rejects a malformed duration with status 2" {
	check_launcher_usage 10x --cap 10x
}

@test "a duration without its unit (0 aside) gets one line saying so, from the library and the launcher alike" {
	local want='BACKOFF_TIMEOUT="30": a duration needs its unit, such as 30s, 250ms or 2m (0 alone needs none)'
	run_program BACKOFF_TIMEOUT=30
	assert_eq "$prog_status/$prog_out" "3/out" "the program runs on"
	assert_eq "$prog_err" "backoff: $want" "the library's line"
	run --separate-stderr timeout 20 "$LAUNCHER" --timeout 30 -- sh -c 'echo ran'
	assert_eq "$status/$output" "2/" "launcher status and stdout"
	assert_eq "$(head -n 1 <<<"$stderr")" "backoff: $want" "the launcher's line"
	run_program BACKOFF_TIMEOUT=0 BACKOFF_BASE=250ms
	assert_eq "$prog_status/$prog_out/$prog_err" "3/out/" "0 and a duration with its unit"
}

@test "a bad value in the environment ends the launcher with one line naming it, and no usage line: the command line was right" {
	run --separate-stderr timeout 20 env BACKOFF_CAP=10x "$LAUNCHER" -- sh -c 'echo ran'
	assert_eq "$status" 2 "launcher status"
	assert_eq "$output" "" "launcher stdout"
	assert_eq "$stderr" 'backoff: BACKOFF_CAP="10x": expected a duration from 1ms to 24h, such as 250ms, 2s, 1m' \
		"launcher stderr"
}

@test "a log file the process cannot open gets one warning naming it and the reason, then stderr" {
	closed_port dead
	run --separate-stderr env LD_PRELOAD="$LIB" BACKOFF_BASE=10ms BACKOFF_RETRIES=3 \
		BACKOFF_LOG=info BACKOFF_LOG_FILE="$T/no/such/dir/log" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "ECONNREFUSED" "probe output"
	assert_eq "$(grep -c 'BACKOFF_LOG_FILE=' <<<"$stderr")" 1 "warnings (stderr: $stderr)"
	assert_match "$stderr" "BACKOFF_LOG_FILE=\"$T/no/such/dir/log\": cannot open it \(ENOENT\): logging to stderr"
	assert_eq "$(grep -c 'retrying in' <<<"$stderr")" 3 "retry lines on stderr"
}

@test "an unknown BACKOFF_ variable gets one warning naming the closest known name" {
	run_program BACKOFF_TIMOUT=3s
	assert_eq "$prog_status" 3 "program status"
	assert_eq "$prog_out" out "program output"
	assert_eq "$prog_err" "backoff: BACKOFF_TIMOUT: unknown variable (did you mean BACKOFF_TIMEOUT?)"
	run_program BACKOFF_FOO=1 BACKOFF_LOG_FORMAT=json
	assert_match "$prog_err" '"level":"warn","event":"config","variable":"BACKOFF_FOO","message":"unknown variable"}$'
	assert_eq "$(count_lines "$prog_err")" 1 "lines"
	# Read by the launcher or between the engines: known.
	run_program BACKOFF_LIBRARY="$LIB" BACKOFF_SUPERVISED=1
	assert_eq "$prog_err" "" "messages for the launcher's variables"
}

@test "with BACKOFF_STRICT=1 an unknown BACKOFF_ variable ends the program with status 2" {
	run_program BACKOFF_STRICT=1 BACKOFF_RETRY=3
	assert_eq "$prog_status" 2 "program status"
	assert_eq "$prog_out" "" "program output"
	assert_eq "$prog_err" "backoff: BACKOFF_RETRY: unknown variable (did you mean BACKOFF_RETRIES?)"
}

@test "under the launcher an unknown variable is warned about once, whatever the engine" {
	local engine
	for engine in auto preload supervise; do
		run --separate-stderr timeout 20 env BACKOFF_TIMOUT=3s \
			"$LAUNCHER" --engine "$engine" -- sh -c 'echo ran'
		assert_eq "$status" 0 "status under --engine $engine"
		assert_eq "$output" ran "output under --engine $engine"
		assert_eq "$stderr" "backoff: BACKOFF_TIMOUT: unknown variable (did you mean BACKOFF_TIMEOUT?)" \
			"stderr under --engine $engine"
		run --separate-stderr timeout 20 env BACKOFF_TIMOUT=3s \
			"$LAUNCHER" --strict --engine "$engine" -- sh -c 'echo ran'
		assert_eq "$status" 2 "status under --strict --engine $engine"
		assert_eq "$output" "" "output under --strict --engine $engine"
		assert_eq "$(grep -c 'BACKOFF_TIMOUT' <<<"$stderr")" 1 \
			"warnings under --strict --engine $engine: $stderr"
	done
	# The supervisor run by itself (not by the launcher) says it, once.
	run --separate-stderr timeout 20 env BACKOFF_TIMOUT=3s "$BUILD/backoff-supervise" -- \
		sh -c 'echo ran'
	assert_eq "$output" ran "output of the supervisor run by itself"
	assert_eq "$stderr" "backoff: BACKOFF_TIMOUT: unknown variable (did you mean BACKOFF_TIMEOUT?)" \
		"stderr of the supervisor run by itself"
	# One warning for the launched tree, however many preloaded programs it runs.
	run --separate-stderr timeout 20 env BACKOFF_TIMOUT=3s "$LAUNCHER" -- \
		sh -c 'sh -c "echo one"; sh -c "echo two"'
	assert_eq "$output" "one
two" "output of a tree of three shells"
	assert_eq "$stderr" "backoff: BACKOFF_TIMOUT: unknown variable (did you mean BACKOFF_TIMEOUT?)" \
		"stderr of a tree of three shells"
	run --separate-stderr timeout 20 env BACKOFF_TIMOUT=3s "$LAUNCHER" --schedule --attempts 1
	assert_eq "$status" 0 "status of --schedule"
	assert_eq "$stderr" "backoff: BACKOFF_TIMOUT: unknown variable (did you mean BACKOFF_TIMEOUT?)" \
		"stderr of --schedule"
}
