#!/usr/bin/env bats
# Connects made before libbackoff's constructor ran, from a plugin, or next to a crash reporter.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

HARDENING=$BUILD/hardening

setup() {
	require_build
	[[ -e $HARDENING/early.so ]] || fail "$HARDENING/early.so is missing: run make first"
}

# retried_then_succeeded LOG: the JSON log shows at least one retry, then a success.
retried_then_succeeded() {
	local retries
	retries=$(json_events "$1" retry | wc -l)
	((retries >= 1)) || fail "no retry in the log: $(cat "$1" 2>/dev/null)" || return
	assert_eq "$(json_events "$1" success call)" connect "success event"
}

@test "a blocking connect from another preloaded library's constructor, run before libbackoff's, is retried" {
	start_listener server 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB:$HARDENING/early.so" \
		EARLY_CONNECT="127.0.0.1:$PORT" BACKOFF_STATS=bogus BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" true
	assert_eq "$status" 0 "status"
	assert_eq "$output" "early: OK" "output of the constructor"
	# The hook set the library up on demand: the configuration was read (and
	# its problem reported) after the constructor started its connect.
	assert_eq "$(head -1 <<<"$stderr")" "early: connecting" "first line" || return
	assert_match "$(json_events "$T/log.json" config variable)" '^BACKOFF_STATS$' "config event"
	retried_then_succeeded "$T/log.json"
}

@test "a non-blocking connect from another library's constructor is retried inside its poll" {
	start_listener server 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB:$HARDENING/early.so" \
		EARLY_CONNECT="127.0.0.1:$PORT" EARLY_NONBLOCK=1 BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" true
	assert_eq "$status" 0 "status"
	assert_eq "$output" "early: OK" "output of the constructor"
	retried_then_succeeded "$T/log.json"
}

@test "a C++ static initialiser's connect is retried before main runs" {
	start_listener server 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" STATIC_CONNECT="127.0.0.1:$PORT" \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HARDENING/static-init"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" "static: OK" "output"
	retried_then_succeeded "$T/log.json"
}

@test "a connect from a dlopen()ed module is retried" {
	start_listener server 500
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" dlopen "$HARDENING/module.so" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" "dlopen OK" "output"
	retried_then_succeeded "$T/log.json"
}

@test "a crash reporter's fault handlers do not make an SA_RESTART signal end the wait" {
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB:$HARDENING/crash-handler.so" \
		BACKOFF_BASE=1500ms BACKOFF_JITTER=none BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --alarm 700 --sa-restart --read "127.0.0.1:$PORT"
	assert_eq "$output" "OK hello" "probe output"
	assert_eq "$status" 0 "probe status"
	assert_eq "$(json_events "$T/log.json" giveup)" "" "give-up events"
}
