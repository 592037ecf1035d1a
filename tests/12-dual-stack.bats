#!/usr/bin/env bats
# A name with an IPv6 and an IPv4 address: only the last address of the list is retried.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

# The name resolves through a private /etc/hosts, bind-mounted in a mount
# namespace of the client's own.
setup() {
	require_build
	require_unshare -m
	[[ $(ip -6 addr show dev lo 2>/dev/null) == *"::1/128"* ]] || skip "lo has no ::1"
	printf '%s\n' '127.0.0.1 localhost' '::1 dualstack.test' '127.0.0.1 dualstack.test' >"$T/hosts"

	# glibc sorts the list (RFC 6724): find out which address comes last.
	local addrs
	addrs=$(in_hosts_ns getent ahosts dualstack.test | awk '$2 == "STREAM" { print $1 }')
	case $(tr '\n' ' ' <<<"$addrs") in
	'::1 127.0.0.1 ') FIRST='[::1]' LAST=127.0.0.1 ;;
	'127.0.0.1 ::1 ') FIRST=127.0.0.1 LAST='[::1]' ;;
	*) fail "dualstack.test resolves to: $addrs" ;;
	esac
}

# in_hosts_ns COMMAND...: COMMAND with $T/hosts as its /etc/hosts.
in_hosts_ns() {
	# shellcheck disable=SC2016 # expanded by the inner sh
	timeout 20 "${UNSHARE[@]}" sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' \
		sh "$T/hosts" "$@"
}

@test "a dual-stack name connects to its answering address with no added delay" {
	start_listener_on "$LAST" server 0 --send hello
	wait_for_line "$T/server.out" '^listening' 5
	local start elapsed
	start=$(now_ms)
	run --separate-stderr in_hosts_ns env LD_PRELOAD="$LIB" BACKOFF_BASE=1s BACKOFF_JITTER=none \
		BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"${PY_CLIENT[@]}" dualstack.test "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status" 0 "client status"
	assert_eq "$output" hello "client output"
	assert_eq "$(json_events "$T/log.json" retry target)" "" "retry events"
	local passes
	passes=$(json_events "$T/log.json" pass target reason)
	grep -qxF "$FIRST:$PORT not-last-address" <<<"$passes" ||
		fail "no pass-through event for $FIRST:$PORT, got: $passes"
	assert_between "$elapsed" 0 900 "run time in ms (a retry would add 1000)"
}

@test "with no server, a dual-stack name is retried on its last address only" {
	start_listener_on "$LAST" server 3600000
	run --separate-stderr in_hosts_ns env LD_PRELOAD="$LIB" BACKOFF_RETRIES=2 BACKOFF_BASE=10ms \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"${PY_CLIENT[@]}" dualstack.test "$PORT"
	assert_eq "$status" 1 "client status"
	assert_match "$stderr" 'ConnectionRefusedError' "client error"
	assert_eq "$(json_events "$T/log.json" retry target | tr '\n' ' ')" \
		"$LAST:$PORT $LAST:$PORT " "retry events"
	assert_eq "$(json_events "$T/log.json" giveup target attempt)" "$LAST:$PORT 3" "give-up event"
}
