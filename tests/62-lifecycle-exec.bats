#!/usr/bin/env bats
# vfork, posix_spawn and exec: each new program image sets libbackoff up from its own environment.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr
# shellcheck disable=SC2016 # the inner sh expands "$1", "$2"

load helper

setup() {
	require_build
}

# pids_that LOG EVENT: the distinct pids with EVENT objects in the JSON log, one per line.
pids_that() {
	json_events "$1" "$2" pid | sort -u
}

@test "a program started with vfork and exec retries its own connect" {
	start_listener server 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" vfork-exec "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" OK "output of the child"
	assert_eq "$(pids_that "$T/log.json" success | wc -l)" 1 "processes that succeeded"
}

@test "a vfork child closing fds before exec leaves its parent's non-blocking connect retried" {
	start_listener parent 500
	local parent_port=$PORT
	start_listener child 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" vfork-busy "127.0.0.1:$parent_port" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" $'OK\nparent OK' "output of the child, then the parent's"
	assert_eq "$(pids_that "$T/log.json" success | wc -l)" 2 "processes that succeeded"
}

@test "a program started with posix_spawn and file actions retries its own connect" {
	start_listener server 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" spawn "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" OK "output of the child"
	assert_eq "$(pids_that "$T/log.json" success | wc -l)" 1 "processes that succeeded"
}

# glibc's posix_spawn child shares its parent's memory until it execs, like a
# vfork child, and runs the file actions there (through its internal close,
# not the close() symbol, today): closing the parent's connecting socket in
# the child must leave the parent's records alone either way.
@test "a posix_spawn child whose file actions close its parent's connecting socket leaves that connect retried" {
	start_listener parent 500
	local parent_port=$PORT
	start_listener child 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" spawn-busy "127.0.0.1:$parent_port" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$(sort <<<"$output")" $'OK\nparent OK' "output of the child and the parent's"
	assert_eq "$(pids_that "$T/log.json" success | wc -l)" 2 "processes that succeeded"
	assert_eq "$(grep -c '^accepted ' "$T/parent.out" || true)" 1 "connections to the parent's server"
}

@test "exec passes the configuration on, and BACKOFF=off in a child's environment turns it off there" {
	closed_port server
	# A shell under the library runs one probe as it is, then one with BACKOFF=off.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_RETRIES=2 BACKOFF_BASE=20ms \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		sh -c '"$1" "$2"; BACKOFF=off exec "$1" --elapsed "$2"' sh \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$status" 1 "status of the second probe"
	assert_eq "$(grep -c ECONNREFUSED <<<"$output")" 2 "probes that failed"
	# The first probe inherited BACKOFF_RETRIES=2: two retries and a give-up, all
	# from one process; the second made a single attempt and logged nothing.
	assert_eq "$(json_events "$T/log.json" retry attempt | tr '\n' ' ')" "1 2 " "retries"
	assert_eq "$(json_events "$T/log.json" giveup attempt reason)" "3 retries" "give-up"
	assert_eq "$(pids_that "$T/log.json" retry | wc -l)" 1 "processes that retried"
	assert_match "$stderr" 'elapsed_ms=[0-9]+ ' "second probe timing" || return
	local elapsed=${stderr##*elapsed_ms=}
	assert_between "${elapsed%% *}" 0 15 "second probe's connect time in ms"
}

@test "BACKOFF=off set by a parent for its child turns off only the child" {
	start_listener first 500
	local first=$PORT
	closed_port second
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		sh -c 'env BACKOFF=off "$1" "$3"; exec "$1" "$2"' sh \
		"$HELPERS/probe" "127.0.0.1:$first" "127.0.0.1:$PORT"
	assert_eq "$output" $'ECONNREFUSED\nOK' "the child without, then the program with the library"
	assert_eq "$status" 0 "status"
	assert_eq "$(pids_that "$T/log.json" success | wc -l)" 1 "processes that retried"
}
