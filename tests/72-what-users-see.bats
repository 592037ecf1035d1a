#!/usr/bin/env bats
# What an operator sees: honest stats when the program's own timeout ends a
# call, and a word when local listeners cannot be looked for.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
}

@test "a call the program's own timeout ends counts as a give-up, and only the wait made counts" {
	require_command curl
	closed_port server
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_STATS=1 BACKOFF_CAP=3s \
		BACKOFF_SHARED=off curl -sS --connect-timeout 2 "http://127.0.0.1:$PORT/"
	assert_eq "$status" 28 "curl's status (its own timeout)"
	assert_match "$stderr" "stats: calls=1 retries=[0-9]+ giveups=1 waited_ms=[0-9]+" "the stats line"
	local waited
	waited=$(sed -n 's/.* waited_ms=\([0-9]*\).*/\1/p' <<<"$stderr")
	# curl waited 2 s in all: the planned waits it never made are not counted.
	assert_between "$waited" 1000 2050 "waited_ms"
}

@test "without AF_NETLINK (systemd's RestrictAddressFamilies) the prober says once that it cannot look, and the client still connects" {
	start_listener srv 1200 --count 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info BACKOFF_CAP=500ms \
		BACKOFF_SHARED="$T/state" "$HELPERS/deny-syscall" netlink-socket -- \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "the outcome"
	assert_eq "$(grep -c 'cannot look for local listeners' <<<"$stderr")" 1 "lines saying so"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_CAP=500ms \
		BACKOFF_SHARED="$T/state2" "$HELPERS/deny-syscall" netlink-socket -- \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$stderr" "" "nothing at the default level"
}
