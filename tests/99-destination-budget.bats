#!/usr/bin/env bats
# The budget belongs to the destination, not to the call: a process's
# connects to one address share BACKOFF_TIMEOUT from its first failure, and
# once it is spent with no success the destination is known down: each
# connect makes one real attempt and gets the kernel's answer at once, so a
# program's own failover works; the first success clears it.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
}

# Four blocking connects in one python process; prints each outcome and its seconds.
FOUR_CONNECTS='
import socket, sys, time
for i in range(4):
    t = time.monotonic()
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
        r = "ok"
    except OSError as e:
        r = type(e).__name__
    print(r, round(time.monotonic() - t, 1), flush=True)
'

elapsed_ms() {
	local t0=$1
	echo $(($(date +%s%3N) - t0))
}

@test "four blocking connects to a dead address share one budget and end with the kernel's error" {
	closed_port dead
	local t0 plain
	run timeout 30 "$PYTHON" -c "$FOUR_CONNECTS" "$PORT"
	plain=$output
	t0=$(date +%s%3N)
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" "$PYTHON" -c "$FOUR_CONNECTS" "$PORT"
	assert_between "$(elapsed_ms "$t0")" 900 1800 "ms for the four connects"
	assert_eq "$(cut -d' ' -f1 <<<"$output")" "$(cut -d' ' -f1 <<<"$plain")" "outcomes"
	assert_eq "$(sed -n 1p <<<"$output")" "ConnectionRefusedError 1.0" "the first connect"
	assert_eq "$(json_events "$T/log.json" down | wc -l)" 1 "down events"
	assert_eq "$(json_events "$T/log.json" giveup | wc -l)" 1 "give-ups"
}

@test "connects that each stop at their retry count still spend one budget between them" {
	closed_port dead
	local t0
	t0=$(date +%s%3N)
	# Each call: 3 retries of 300 ms, 0.9 s; the second is cut at the 1 s budget, the
	# rest get the kernel's answer at once (with a budget per call: 1.8 s, then down).
	run timeout 30 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_RETRIES=3 BACKOFF_BASE=300ms \
		BACKOFF_CAP=300ms BACKOFF_JITTER=none BACKOFF_LOG=error "$PYTHON" -c "
import socket, sys
for i in range(8):
    try:
        socket.create_connection(('127.0.0.1', int(sys.argv[1])))
    except OSError as e:
        print(type(e).__name__)
" "$PORT"
	assert_between "$(elapsed_ms "$t0")" 900 1450 "ms for the eight connects"
	assert_eq "$(grep -c '^ConnectionRefusedError$' <<<"$output")" 8 "refused connects"
}

@test "with BACKOFF_SHARED=off each of the four connects has a budget of its own" {
	closed_port dead
	local t0
	t0=$(date +%s%3N)
	run timeout 30 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_SHARED=off BACKOFF_LOG=error \
		"$PYTHON" -c "$FOUR_CONNECTS" "$PORT"
	assert_between "$(elapsed_ms "$t0")" 3900 5500 "ms for the four connects"
	assert_eq "$(grep -c '^ConnectionRefusedError 1.0$' <<<"$output")" 4 "connects of 1 s"
}

@test "logger to a missing log socket ends within one budget, as it ends without the library" {
	command -v logger >/dev/null || fail "logger is not installed (apt-get install bsdutils)"
	local t0 plain_status
	run timeout 30 logger -u "$T/missing.sock" hello
	plain_status=$status
	t0=$(date +%s%3N)
	run timeout 30 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_LOG=error logger -u "$T/missing.sock" hello
	assert_between "$(elapsed_ms "$t0")" 900 1800 "ms logger took"
	assert_eq "$status" "$plain_status" "logger status"
}

@test "a success clears known down: the next failure gets a whole budget again" {
	closed_port dead
	stop_bg_all # the port is free again: the script listens on it itself
	run timeout 30 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_LOG=error "$PYTHON" -c '
import socket, sys, time
port = int(sys.argv[1])
def attempt():
    t = time.monotonic()
    try:
        socket.create_connection(("127.0.0.1", port)).close()
        r = "ok"
    except OSError as e:
        r = type(e).__name__
    return "%s %.1f" % (r, time.monotonic() - t)
print(attempt())          # the budget runs out: known down
print(attempt())          # known down: the kernel at once
srv = socket.create_server(("127.0.0.1", port))
print(attempt())          # a success clears it
srv.close()
print(attempt())          # a whole budget again
' "$PORT"
	assert_eq "$status" 0
	assert_eq "$output" "ConnectionRefusedError 1.0
ConnectionRefusedError 0.0
ok 0.0
ConnectionRefusedError 1.0"
}

@test "curl fetching twice from a dead address waits one budget, not two" {
	command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
	closed_port dead
	local t0 plain_status
	run timeout 30 curl -sS "http://127.0.0.1:$PORT/" "http://127.0.0.1:$PORT/"
	plain_status=$status
	t0=$(date +%s%3N)
	run timeout 30 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_LOG=error \
		curl -sS "http://127.0.0.1:$PORT/" "http://127.0.0.1:$PORT/"
	assert_between "$(elapsed_ms "$t0")" 900 1800 "ms curl took"
	assert_eq "$status" "$plain_status" "curl status"
}

# wait_port PORT: until something accepts on it, at most 10 s.
wait_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		"$PYTHON" -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),timeout=1).close()' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "nothing listens on $1"
}

@test "nginx with a pool whose first server is dead fails over at once after one budget" {
	command -v nginx >/dev/null || fail "nginx is not installed (apt-get install nginx)"
	closed_port dead
	local dead=$PORT be proxy i t0 first rest=0 ms
	be=$(free_port)
	start_nginx backend "server { listen 127.0.0.1:$be; location / { return 200 \"ok\\n\"; } }"
	proxy=$(free_port)
	# max_fails=0: nginx itself keeps trying the dead server on every other request.
	start_nginx proxy "upstream pool { server 127.0.0.1:$dead max_fails=0; server 127.0.0.1:$be max_fails=0; }
server { listen 127.0.0.1:$proxy; location / { proxy_pass http://pool; } }" \
		LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_LOG=error
	wait_port "$be"
	wait_port "$proxy"
	for ((i = 0; i < 11; i++)); do
		t0=$(date +%s%3N)
		run curl -sS --max-time 10 "http://127.0.0.1:$proxy/"
		ms=$(elapsed_ms "$t0")
		assert_eq "$output" "ok" "reply $i"
		if ((i == 0)); then first=$ms; else rest=$((rest + ms)); fi
	done
	assert_between "$first" 0 1800 "ms of the first request"
	assert_between "$rest" 0 2500 "ms of the ten requests after it"
}
