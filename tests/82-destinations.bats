#!/usr/bin/env bats
# BACKOFF_DESTINATIONS: some destinations get a policy of their own, the first
# matching entry's, in both engines; the rest keep the global one.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
}

# The answer a late backend sends each connection (before the request: nginx reads it after).
REPLY=$'HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n'

# A blocking python client: one connect to 127.0.0.1:argv[1], prints what the server sends.
CLIENT='
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print(s.recv(100).decode())
'

@test "a python client waits 3 s for a backend its entry gives 2 minutes, past the global 1 s; another port keeps the 1 s" {
	start_listener late 3000 --send hello
	late=$PORT
	closed_port dead
	dead=$PORT
	export LD_PRELOAD=$LIB BACKOFF_TIMEOUT=1s BACKOFF_LOG=error
	export BACKOFF_DESTINATIONS="*:1 retries=0; 127.0.0.1:$late timeout=2m cap=200ms"
	run --separate-stderr timeout 20 "$PYTHON" -c "$CLIENT" "$late"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" "hello"
	t0=$(now_ms)
	run --separate-stderr timeout 20 "$PYTHON" -c "$CLIENT" "$dead"
	assert_match "$stderr" "ConnectionRefusedError"
	assert_between "$(($(now_ms) - t0))" 700 5000 "ms to the refusal under the global 1 s"
}

@test "nginx: a late local backend given 2 minutes is waited for past the global 1 s; a refusing one given 2 s answers 502 within 2.5 s" {
	require_program nginx
	require_program curl
	start_listener local 3000 --send "$REPLY" --count 2
	local_be=$PORT
	closed_port remote
	remote_be=$PORT
	proxy=$(free_port)
	start_nginx proxy "server { listen 127.0.0.1:$proxy;
location /local { proxy_pass http://127.0.0.1:$local_be; }
location /remote { proxy_pass http://127.0.0.1:$remote_be; } }" \
		LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_LOG=error \
		"BACKOFF_DESTINATIONS=127.0.0.1:$local_be timeout=2m cap=200ms; 127.0.0.1:$remote_be timeout=2s"
	wait_for_port "$proxy" 5 || fail "nginx does not listen: $(cat "$T/proxy.err")"
	run curl -sS --max-time 20 "http://127.0.0.1:$proxy/local"
	assert_eq "$status" 0 "curl's status"
	assert_eq "$output" "ok" "the local backend's answer"
	t0=$(now_ms)
	run curl -sS -o /dev/null -w '%{http_code}' --max-time 20 "http://127.0.0.1:$proxy/remote"
	ms=$(($(now_ms) - t0))
	assert_eq "$output" "502" "the refusing backend's answer"
	# Its entry's 2 s, not the global 1 s (nor nginx's own 60 s).
	assert_between "$ms" 1200 2500 "ms to the 502"
}

@test "under the supervisor a Go client waits 3 s for a backend its entry gives 2 minutes, past the global 1 s" {
	local dial=$BUILD/go/dial-nocgo
	[[ -x $dial ]] || fail "$dial is missing: run make (with go installed)"
	start_listener late 3000 --send hello
	run --separate-stderr timeout 20 "$LAUNCHER" --engine supervise --timeout 1s --log error \
		--destinations "127.0.0.1:$PORT timeout=2m cap=200ms" -- "$dial" tcp "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_match "$output" $'connected after_ms=[0-9]+\nhello$'
}

@test "a bad BACKOFF_DESTINATIONS gets one line naming the variable, in the launcher and the library; the global policy serves" {
	run --separate-stderr "$LAUNCHER" --destinations '*:443 timout=2s' -- true
	assert_eq "$status" 2 "the launcher's status"
	assert_eq "${stderr%%$'\n'*}" 'backoff: BACKOFF_DESTINATIONS="*:443 timout=2s": entry 1: no setting "timout" (did you mean timeout?)'
	closed_port dead
	run --separate-stderr env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=0 \
		BACKOFF_DESTINATIONS="127.0.0.1:$PORT timeout=2" "$PYTHON" -c "$CLIENT" "$PORT"
	assert_match "$stderr" "ConnectionRefusedError"
	assert_eq "$(grep -c 'backoff: BACKOFF_DESTINATIONS=' <<<"$stderr")" 1 "lines naming it"
	assert_match "$stderr" 'entry 1: timeout=2: a duration needs its unit'
}

@test "backoff --schedule --for ADDRESS prints the schedule of the entry that serves it, and says which" {
	export BACKOFF_DESTINATIONS='127.0.0.1:5432 timeout=2m cap=1s retries=3; *:443 retries=1'
	run --separate-stderr "$LAUNCHER" --seed 1 --timeout 5s --schedule --for 127.0.0.1:5432
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "${lines[0]}" "# for=127.0.0.1:5432: entry 1 of BACKOFF_DESTINATIONS"
	assert_match "${lines[1]}" " cap=1000ms retries=3 timeout=120000ms "
	assert_eq "${#lines[@]}" 6 "lines: the entry's 3 retries"
	run --separate-stderr "$LAUNCHER" --seed 1 --timeout 5s --schedule --for '[::1]:6379'
	assert_eq "${lines[0]}" "# for=[::1]:6379: no entry of BACKOFF_DESTINATIONS, the global policy"
	assert_match "${lines[1]}" " cap=10000ms retries=inf timeout=5000ms "
	run --separate-stderr "$LAUNCHER" --schedule --for db:5432
	assert_eq "$status" 2 "status for a name"
	assert_match "$stderr" '^backoff-schedule: --for "db:5432": expected an address'
}

@test "backoff status names the entry of BACKOFF_DESTINATIONS that serves each destination it shows" {
	closed_port dead
	dead=$PORT
	closed_port other
	other=$PORT
	export BACKOFF_SHARED=$T/state
	# Each gives up (one retry, within 300 ms): its destination is left down.
	for port in "$dead" "$other"; do
		run --separate-stderr env LD_PRELOAD="$LIB" BACKOFF_RETRIES=1 BACKOFF_CAP=50ms \
			BACKOFF_LOG=error "$PYTHON" -c "$CLIENT" "$port"
		assert_match "$stderr" "ConnectionRefusedError"
	done
	export BACKOFF_DESTINATIONS="127.0.0.1:$dead timeout=2m"
	run --separate-stderr "$LAUNCHER" status --file "$T/state"
	assert_match "${lines[0]}" " SAVED  POLICY$" "header"
	assert_match "$output" $'\n'"127\.0\.0\.1:$dead +down .* entry 1($|"$'\n'")"
	assert_match "$output" $'\n'"127\.0\.0\.1:$other +down .* global($|"$'\n'")"
	run --separate-stderr "$LAUNCHER" status --json --file "$T/state"
	assert_match "$output" "\"destination\":\"127\.0\.0\.1:$dead\".*\"destinations_entry\":1\}"
	assert_match "$output" "\"destination\":\"127\.0\.0\.1:$other\".*\"destinations_entry\":null\}"
	unset BACKOFF_DESTINATIONS
	run --separate-stderr "$LAUNCHER" status --file "$T/state"
	assert_match "${lines[0]}" " SAVED$" "header without BACKOFF_DESTINATIONS"
}
