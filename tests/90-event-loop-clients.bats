#!/usr/bin/env bats
# Stock non-blocking clients started before their server connect once it
# listens: the library retries inside their own poll/select/epoll loops.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CAP_MS=300

setup() {
	require_build
	LATE_ENV=(LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP="${CAP_MS}ms"
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# late_client CLIENT DETECTION COMMAND...: runs COMMAND (a client of the
# "server" late-listener, 1.5 s late, that sends "hello") and checks that it
# got the data through retries logged as ECONNREFUSED on 127.0.0.1:$PORT.
late_client() {
	local client=$1 detection=$2
	shift 2
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "$@"
	assert_eq "$status" 0 "$client status (stderr: $stderr)" || return
	assert_eq "$output" hello "$client output" || return
	check_server_accepted || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS" || return
	record_matrix "$client" "$detection"
}

# check_server_accepted: the server accepted one connection, after it listened
# and within the cap (plus slack) of it.
check_server_accepted() {
	local listening accepted
	listening=$(listener_mono server listening)
	accepted=$(listener_mono server accepted)
	[[ -n $listening && -n $accepted ]] || fail "the server never accepted" || return
	assert_between "$accepted" "$listening" "$((listening + CAP_MS + 500))" "accept time"
}

@test "curl fetches from python's http.server that listens 1.5 s after it starts" {
	require_command curl
	mkdir "$T/www"
	printf 'served by http.server\n' >"$T/www/page.txt"
	start_http_server server 1500 "$T/www"
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" curl -sS "http://127.0.0.1:$PORT/page.txt"
	assert_eq "$status" 0 "curl status (stderr: $stderr)"
	assert_eq "$output" "served by http.server" "curl output"
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
	record_matrix "curl 127.0.0.1" "poll + SO_ERROR"
}

@test "curl to a dual-stack name retries 127.0.0.1 only, after trying ::1 once" {
	require_command curl
	require_unshare -m
	[[ $(ip -6 addr show dev lo 2>/dev/null) == *"::1/128"* ]] || skip "lo has no ::1"
	printf '%s\n' '127.0.0.1 localhost' '::1 dualstack.test' '127.0.0.1 dualstack.test' >"$T/hosts"
	# shellcheck disable=SC2016 # expanded by the inner sh
	local in_ns=(timeout 20 "${UNSHARE[@]}" sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"'
		sh "$T/hosts")
	local order
	order=$("${in_ns[@]}" getent ahosts dualstack.test | awk '$2 == "STREAM" { print $1 }' |
		tr '\n' ' ')
	[[ $order == '::1 127.0.0.1 ' ]] ||
		skip "dualstack.test resolves to '$order' here; the test needs ::1 first"
	mkdir "$T/www"
	printf 'dual stack\n' >"$T/www/page.txt"
	start_http_server server 1500 "$T/www"

	run --separate-stderr "${in_ns[@]}" env "${LATE_ENV[@]}" \
		curl -sS -v "http://dualstack.test:$PORT/page.txt"
	assert_eq "$status" 0 "curl status (stderr: $stderr)"
	assert_eq "$output" "dual stack" "curl output"
	# curl tried ::1 first, was refused at once and moved on, as without the library.
	assert_match "$stderr" "Trying \[::1\]:$PORT" "curl trace"
	assert_match "$stderr" "connect to ::1 port $PORT failed: Connection refused" "curl trace"
	assert_eq "$(json_events "$T/log.json" retry target | grep -cF '[::1]' || true)" 0 \
		"retry events for [::1]"
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
	record_matrix "curl dual-stack name" "poll + SO_ERROR"
}

@test "python create_connection with a timeout gets the data from a server 1.5 s late" {
	start_listener server 1500 --send hello
	late_client "python create_connection(timeout=5)" "poll + SO_ERROR" \
		"${PY_TIMEOUT_CLIENT[@]}" 127.0.0.1 "$PORT"
}

@test "python asyncio open_connection gets the data from a server 1.5 s late" {
	start_listener server 1500 --send hello
	late_client "python asyncio open_connection" "epoll (added after connect) + SO_ERROR" \
		"${PY_ASYNCIO_CLIENT[@]}" 127.0.0.1 "$PORT"
}

@test "node net.connect gets the data from a server 1.5 s late" {
	require_command node
	start_listener server 1500 --send hello
	late_client "node net.connect" "epoll_pwait (added after connect) + SO_ERROR" \
		"${NODE_CLIENT[@]}" 127.0.0.1 "$PORT"
}

@test "nc gets the data from a server 1.5 s late" {
	require_command nc
	start_listener server 1500 --send hello
	late_client "nc" "select + SO_ERROR" nc 127.0.0.1 "$PORT" </dev/null
}

@test "nc -w 5 gets the data from a server 1.5 s late" {
	require_command nc
	start_listener server 1500 --send hello
	late_client "nc -w 5" "select (timeout) + SO_ERROR" nc -w 5 127.0.0.1 "$PORT" </dev/null
}

@test "perl IO::Socket with a Timeout gets the data from a server 1.5 s late" {
	require_command perl
	start_listener server 1500 --send hello
	late_client "perl IO::Socket::INET Timeout" "select + second connect()" \
		"${PERL_TIMEOUT_CLIENT[@]}" 127.0.0.1 "$PORT"
}
