#!/usr/bin/env bats
# The launcher's command line: options into BACKOFF_* variables, --print-env, the errors
# that end it with status 2 and one line, and the command it becomes.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

USAGE='usage: backoff [options] [--] command [args...] (backoff --help for more)'

setup() {
	require_build
}

@test "--print-env writes LD_PRELOAD and the variables options set, in single quotes a shell reads back" {
	# The launcher prepends the library next to it, the default build's, not the sanitized one.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the launcher's library is the default build's"
	local lib
	lib=$(cd "$BUILD" && pwd -P)/libbackoff.so
	run --separate-stderr env BACKOFF_RUN=job-7 "$LAUNCHER" --cap 5s --log-file "/tmp/it's.log" \
		-v -v --json --names 'db,*.svc.cluster.local' --print-env
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "export LD_PRELOAD='$lib'
export LIBBACKOFF_SUPERVISOR='$(dirname "$lib")/backoff-supervise'
export BACKOFF_CAP='5s'
export BACKOFF_NAMES='db,*.svc.cluster.local'
export BACKOFF_LOG='debug'
export BACKOFF_LOG_FILE='/tmp/it'\\''s.log'
export BACKOFF_LOG_FORMAT='json'" "the export lines (the run named in the environment stays)"
	# What a shell makes of them: the values as given.
	# shellcheck disable=SC2016 # expanded by the inner shell
	run sh -c 'eval "$1"; printf "%s|%s\n" "$BACKOFF_LOG_FILE" "$BACKOFF_LOG"' sh "$output"
	assert_eq "$output" "/tmp/it's.log|debug" "the values read back"
	# Without one, a run of the shell's own is named.
	run --separate-stderr "$LAUNCHER" --print-env
	assert_match "$output" "export BACKOFF_RUN='run-[0-9]+-[0-9]+'" "the run's line"
}

@test "--print-env --off undoes --print-env in a shell: libbackoff out of LD_PRELOAD, the program's own entries kept, every variable unset" {
	# shellcheck disable=SC2016 # expanded by the inner shell
	run --separate-stderr env LD_PRELOAD=/opt/own.so LAUNCHER="$LAUNCHER" sh -c '
eval "$("$LAUNCHER" --cap 5s --print-env)" || exit 9
case $LD_PRELOAD in *libbackoff.so*) ;; *) echo "not preloaded: $LD_PRELOAD"; exit 9 ;; esac
eval "$("$LAUNCHER" --print-env --off)" || exit 9
printf "%s|%s|%s\n" "${LD_PRELOAD-unset}" "${BACKOFF_CAP-unset}" "${LIBBACKOFF_SUPERVISOR-unset}"
eval "$("$LAUNCHER" --print-env --off)" || exit 9
printf "%s\n" "${LD_PRELOAD-unset}"
LD_PRELOAD=$PWD/build/libbackoff.so
eval "$("$LAUNCHER" --print-env --off)" || exit 9
printf "%s\n" "${LD_PRELOAD-unset}"'
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "/opt/own.so|unset|unset
/opt/own.so
unset" "LD_PRELOAD and the variables after each undo"
}

@test "a relative --log-file and --shared file are made absolute; a --shared switch is not" {
	mkdir "$T/here"
	cd "$T/here"
	run --separate-stderr "$LAUNCHER" --log-file log.txt --shared ./state --print-env
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "export BACKOFF_LOG_FILE='$T/here/log.txt'" "the log file"
	assert_match "$output" "export BACKOFF_SHARED='$T/here/./state'" "the state file"
	run --separate-stderr "$LAUNCHER" --shared=off --print-env
	assert_match "$output" "export BACKOFF_SHARED='off'" "the switch"
}

@test "a command-line mistake ends the launcher with status 2, one line saying what, and the usage line" {
	local args expected
	while IFS='|' read -r args expected; do
		# shellcheck disable=SC2086 # the words of each case
		run --separate-stderr "$LAUNCHER" $args
		assert_eq "$status" 2 "status of backoff $args" || return
		assert_eq "$stderr" "backoff: $expected
$USAGE" "stderr of backoff $args" || return
		assert_eq "$output" "" "stdout of backoff $args" || return
	done <<'EOF'
--bogus -- true|unknown option --bogus
--cap|option --cap needs a value
--cap= -- true|option --cap needs a value
--json=yes -- true|option --json takes no value
--schedule --print-env|--schedule and --print-env cannot be combined
|no command given
--print-env true|--print-env runs nothing, but a command was given: true
--attempts 3 -- true|option --attempts needs --schedule
--cap 5x -- true|BACKOFF_CAP="5x": expected a duration from 1ms to 24h, such as 250ms, 2s, 1m
--names db,pg:5432 -- true|BACKOFF_NAMES="db,pg:5432": "pg:5432" is not a name pattern: expected host names with * wildcards, such as db, *.svc.cluster.local, postgres-*
EOF
}

@test "options end at -- or at the first word that is not one: the command's own options are its own" {
	run --separate-stderr "$LAUNCHER" -q sh -c 'echo "$BACKOFF_LOG" "$@"' sh -v --cap
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "error -v --cap" "the command's words"
	run -127 --separate-stderr "$LAUNCHER" -- -v
	assert_eq "$status" 127 "status of a command named -v"
}

@test "a command that cannot run: 127 when it is not found, 126 when it cannot be executed" {
	run -127 --separate-stderr "$LAUNCHER" -- "$T/none"
	assert_eq "$status" 127 "status of a missing command"
	assert_eq "$stderr" "backoff: $T/none: No such file or directory" "stderr"
	touch "$T/plain"
	run -126 --separate-stderr "$LAUNCHER" -- "$T/plain"
	assert_eq "$status" 126 "status of a file that is not executable"
	assert_eq "$stderr" "backoff: $T/plain: Permission denied" "stderr"
}

@test "--schedule and --version and backoff status run without a command" {
	run --separate-stderr "$LAUNCHER" --seed 1 --jitter none --schedule --attempts 2
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$(grep -v '^#' <<<"$output")" "$(printf '1 100 100 100 100 100\n2 200 200 200 300 300')" \
		"the planned delays"
	run "$LAUNCHER" --version
	assert_match "$output" "^backoff \(libbackoff\) [0-9]+\.[0-9]+\.[0-9]+$" "--version"
	run --separate-stderr "$LAUNCHER" status --help
	assert_eq "$status" 0 "backoff status --help: $stderr"
	assert_match "$output" "^usage: backoff-status " "backoff status --help"
}

@test "the launcher make builds is a program, not a script read at every start" {
	[[ -x $BUILD/backoff ]] || fail "$BUILD/backoff is missing: run make"
	assert_eq "$(head -c 4 "$BUILD/backoff" | od -An -c | tr -d ' ')" "177ELF" "its first bytes"
}
