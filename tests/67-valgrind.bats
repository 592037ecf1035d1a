#!/usr/bin/env bats
# valgrind memcheck over the probe under the library: no error, blocking or in an event loop.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	require_program valgrind
	# The sanitizers' runtime and valgrind do not share a process.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
}

# memcheck MODE: the probe in MODE connecting to a server 3 s late (valgrind itself takes
# a while to start), under memcheck.
memcheck() {
	start_listener "server-$1" 3000 --send hello
	# valgrind hands LD_PRELOAD on to the program, after its own preloads.
	run --separate-stderr timeout 60 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log-$1.json" \
		valgrind --tool=memcheck --error-exitcode=99 --track-origins=yes \
		--leak-check=full --errors-for-leak-kinds=definite --log-file="$T/memcheck-$1.log" \
		"$HELPERS/probe" --mode "$1" --read "127.0.0.1:$PORT"
	assert_eq "$output" "OK hello" "probe output (memcheck: $(tail -5 "$T/memcheck-$1.log"))"
	assert_eq "$status" 0 "status"
	assert_match "$(cat "$T/memcheck-$1.log")" 'ERROR SUMMARY: 0 errors from 0 contexts' \
		"memcheck summary"
	local retries
	retries=$(json_events "$T/log-$1.json" retry | wc -l)
	((retries >= 1)) || fail "the probe connected without a retry: the test proves nothing"
}

@test "memcheck finds no error in a blocking connect retried by the library" {
	memcheck blocking
}

@test "memcheck finds no error in a non-blocking connect retried inside poll" {
	memcheck poll
}

@test "memcheck finds no error in a non-blocking connect retried inside select" {
	memcheck select
}

@test "memcheck finds no error in a non-blocking connect retried inside epoll" {
	memcheck epoll-lt
}
