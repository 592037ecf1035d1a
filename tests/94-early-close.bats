#!/usr/bin/env bats
# Early close: a connection that its peer ends before sending a byte (a front
# that accepts for a backend that is down) is a failed attempt of its
# destination.  A program that has sent nothing is connected again with
# backoff; one that has sent gets the end as without the library, and the next
# connect to that destination, from any process of the user, waits (damping).
# These are the fronts of a backend that is down, so every close here is taken
# for a front's refusal (BACKOFF_EARLY_CLOSE=refusal); what the default takes
# for a server's answer is in 94-early-close-answer.bats.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	SHARED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json" BACKOFF_EARLY_CLOSE=refusal)
}

@test "a server-first client whose connections end before a byte is connected again: python (blocking), FIN and RST" {
	local mode
	for mode in fin rst; do
		start_front "front-$mode" "$mode" 3
		run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}"
		assert_eq "$output" "b'hello\\n'" "what the client read ($mode): $stderr"
		assert_eq "$(json_events "$T/log.json" early attempt reason | tail -n 3 | tr '\n' ' ')" \
			"1 reconnect 2 reconnect 3 reconnect " "the early closes ($mode)"
		rm -f "$T/log.json" "$T/state"
	done
	# Without the library, the first end is the client's.
	start_front plain fin 3
	run --separate-stderr client reads timeout 20 env
	assert_eq "$output" "b''" "without the library: an end of file"
}

# start_socat_front BACKEND_PORT: socat forwarding a free port (sets FRONT) to
# BACKEND_PORT on 127.0.0.1, once it listens.
start_socat_front() {
	require_socat
	FRONT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	start_bg socat socat "TCP-LISTEN:$FRONT,fork,reuseaddr,bind=127.0.0.1" "TCP:127.0.0.1:$1"
	wait_for_port "$FRONT" 5 || fail "socat does not listen on $FRONT"
}

@test "nc behind a socat front whose backend starts 1.5 s late gets the banner; without the library nothing" {
	require_command nc
	start_listener back 1500 --send banner
	start_socat_front "$PORT"
	run --separate-stderr timeout 5 nc -d 127.0.0.1 "$FRONT"
	assert_eq "$output" "" "without the library: nothing ($stderr)"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" nc -d 127.0.0.1 "$FRONT"
	assert_eq "$output" "banner" "what nc read: $stderr"
	assert_between "$(json_events "$T/log.json" early | wc -l)" 1 20 "early closes met"
}

@test "a client that sent its request is never connected again: one connection, the request received once, the end its own" {
	start_front front read 1
	run --separate-stderr client sends timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}"
	assert_eq "$output" "b''" "the client's end of file: $stderr"
	assert_eq "$(cat "$T/front.out")" "conn 1 bytes=5" "the connections the server saw"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 sent" "the early close"
}

@test "curl behind an accept-then-close front: exit 52 as without the library, and the next curl waits" {
	require_command curl
	start_front front read -1
	# A first delay of exactly 1 s: the second curl starts well inside it.
	SHARED+=(BACKOFF_BASE=1s BACKOFF_JITTER=none)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" curl -sS "http://127.0.0.1:$PORT/"
	assert_eq "$status" 52 "curl's status: $stderr"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" curl -sS "http://127.0.0.1:$PORT/"
	assert_eq "$status" 52 "the second curl's status: $stderr"
	assert_match "$(json_events "$T/log.json" damped attempt wait_ms)" "^1 [5-9][0-9][0-9]$" \
		"the second curl waited after one early close, most of the 1 s"
	assert_eq "$(json_events "$T/log.json" early attempt reason | tr '\n' ' ')" "1 sent 2 sent " \
		"the early closes, each counted host-wide"
	assert_eq "$(grep -c 'bytes=[1-9]' "$T/front.out")" 2 "one request per curl, none replayed"
}

@test "a reconnect loop against an accept-then-close front: at most 15 connections in 3 s (over 100 without)" {
	require_command nc
	local n
	start_front front fin -1
	timeout 3 sh -c "while :; do nc -N 127.0.0.1 $PORT </dev/null; done" >/dev/null 2>&1 || true
	n=$(wc -l <"$T/front.out")
	assert_between "$n" 100 1000000 "connections without the library"
	: >"$T/front.out"
	timeout 3 env LD_PRELOAD="$LIB" "${SHARED[@]}" \
		sh -c "while :; do nc -N 127.0.0.1 $PORT </dev/null; done" >/dev/null 2>&1 || true
	n=$(wc -l <"$T/front.out")
	assert_between "$n" 2 15 "connections with the library"
	# backoff status names the destination and its streak.
	run --separate-stderr "$BUILD/backoff-status" --file "$T/state" --json
	assert_match "$output" "^\\{\"destination\":\"127.0.0.1:$PORT\",\"state\":\"early\",.*\"early_closes\":[2-9][0-9]*," \
		"backoff status: $stderr"
}

@test "an event loop that ended its side before it looked: the connection made and closed is not a failed attempt (SO_ERROR 0, as without the library)" {
	# A non-blocking connect to an accept-then-close front, then shutdown(SHUT_WR) before
	# any poll: the kernel then takes the socket as connected, and the connection is
	# closed by both sides (TCP_CLOSE) when the program first looks.
	start_front front fin -1
	local prog='
import errno, select, socket, sys, time
def until(s, want):
    end = time.monotonic() + 5
    while s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] != want:
        if time.monotonic() > end:
            sys.exit("no TCP state %d" % want)
        time.sleep(0.005)
s = socket.socket()
s.setblocking(False)
print("connect", errno.errorcode.get(s.connect_ex(("127.0.0.1", int(sys.argv[1]))), "0"))
until(s, 8)  # CLOSE_WAIT: the front ended it
s.shutdown(socket.SHUT_WR)
until(s, 7)  # CLOSE: both sides
p = select.poll()
p.register(s, select.POLLOUT)
t = time.monotonic()
print("ready", len(p.poll(3000)), int((time.monotonic() - t) * 1000) < 500)
print("so_error", errno.errorcode.get(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR), "0"))
print("recv", repr(s.recv(10)))
'
	local want
	want=$(printf '%s\n' "connect EINPROGRESS" "ready 1 True" "so_error 0" "recv b''")
	run --separate-stderr timeout 20 "$PYTHON" -c "$prog" "$PORT"
	assert_eq "$output" "$want" "without the library: $stderr"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" "$PYTHON" -c "$prog" "$PORT"
	assert_eq "$output" "$want" "with the library: $stderr"
	# The destination answered: not down, no error of its own.
	run --separate-stderr "$BUILD/backoff-status" --file "$T/state" --json
	assert_no_match "$output" '"state":"down"|EISCONN' "backoff status"
}

@test "a healthy server that answers and closes: no early close, no wait, every answer" {
	require_command nc
	local i
	start_front front fin 0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		run --separate-stderr timeout 10 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_STATS=1 \
			nc -N 127.0.0.1 "$PORT" </dev/null
		assert_eq "$output" "hello" "answer $i: $stderr"
	done
	assert_eq "$(json_events "$T/log.json" early)$(json_events "$T/log.json" damped)" "" \
		"early closes and waits"
}

@test "the streak ends at a first byte: the next early close starts a new one" {
	start_front front fin 1,2,4
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}"
	assert_eq "$output" "b'hello\\n'" "the first client: $stderr"
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}"
	assert_eq "$output" "b'hello\\n'" "the second client: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt | tr '\n' ' ')" "1 2 1 " \
		"early closes: a streak of two, ended by connection 3's greeting, then a new one"
}

@test "a server that answered and closed, met by a failing send: not an early close" {
	start_front front fin 0
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" "$PYTHON" -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(0.5)
try:
    for _ in range(5):
        s.send(b"PING\n")
        time.sleep(0.1)
except OSError as e:
    print(type(e).__name__)
' "$PORT"
	assert_match "$output" "BrokenPipeError|ConnectionResetError" "the sends' end: $stderr"
	assert_eq "$(json_events "$T/log.json" early)" "" "early closes"
}

@test "BACKOFF_RETRIES bounds the reconnects; the program then sees the end" {
	start_front front fin -1
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_RETRIES=2
	assert_eq "$output" "b''" "the client's end of file: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason | tr '\n' ' ')" \
		"1 reconnect 2 reconnect 3 retries " "the early closes"
	assert_eq "$(wc -l <"$T/front.out")" 3 "connections"
}

@test "a blocking read with a timeout of its own (SO_RCVTIMEO) is not made to wait: it sees the end" {
	start_front front fin 1
	run --separate-stderr client timed timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}"
	assert_eq "$output" "b''" "the client's end of file: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 own-timeout" "the early close"
	assert_eq "$(wc -l <"$T/front.out")" 1 "connections"
}

@test "a program's own timeout holds while its non-blocking read waits for a new connection: python settimeout(2)" {
	local start elapsed
	start_front front fin -1
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" "$PYTHON" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(2)
try:
    print(repr(s.recv(100)))
except OSError as e:
    print(type(e).__name__)
' "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "TimeoutError" "the client's own timeout: $stderr"
	assert_between "$elapsed" 1900 4000 "ms until it ended"
	assert_between "$(wc -l <"$T/front.out")" 2 20 "connections made meanwhile"
}

@test "nc behind HAProxy (mode tcp, retries 3) whose backend starts 5 s late gets the banner; without the library nothing" {
	require_program haproxy
	require_command nc
	local front
	start_listener back 5000 --send banner
	front=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$T/haproxy.cfg" <<CFG
global
	maxconn 100
defaults
	mode tcp
	timeout connect 1s
	timeout client 20s
	timeout server 20s
	retries 3
frontend front
	bind 127.0.0.1:$front
	default_backend back
backend back
	server back 127.0.0.1:$PORT
CFG
	start_bg haproxy haproxy -db -f "$T/haproxy.cfg"
	# HAProxy ends a client's connection after its own retries fail: about 3 s.
	run --separate-stderr timeout 10 nc -d 127.0.0.1 "$front"
	assert_eq "$output" "" "without the library: nothing ($stderr)"
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${SHARED[@]}" nc -d 127.0.0.1 "$front"
	assert_eq "$output" "banner" "what nc read: $stderr"
	assert_between "$(json_events "$T/log.json" early | wc -l)" 1 10 "early closes met"
}

@test "while a destination is damped, a datagram socket connected to the same port does not wait" {
	local start elapsed
	start_front front fin -1
	SHARED+=(BACKOFF_BASE=2s BACKOFF_JITTER=none)
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_RETRIES=0
	assert_eq "$output" "b''" "the client's end of file: $stderr"
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" "$PYTHON" -c '
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("127.0.0.1", int(sys.argv[1])))
print("connected")
' "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "connected" "the datagram connect: $stderr"
	assert_between "$elapsed" 0 1500 "ms it took (the TCP streak's wait is 2 s)"
	assert_eq "$(json_events "$T/log.json" damped)" "" "waits"
}

@test "BACKOFF_REPLAY=on: a client that sent its request gets the answer; each connection received the request once" {
	start_front front read 2
	run --separate-stderr client sends timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_REPLAY=on
	assert_eq "$output" "b'hello\\n'" "what the client read: $stderr"
	wait_for_line "$T/front.out" "^conn 3 " 5
	assert_eq "$(tr '\n' ' ' <"$T/front.out")" "conn 1 bytes=5 conn 2 bytes=5 conn 3 bytes=5 " \
		"the connections the server saw, and what each received"
	assert_eq "$(json_events "$T/log.json" early attempt reason | tr '\n' ' ')" "1 replay 2 replay " \
		"the early closes"
}

# late_socat_curl REPLAY: curl for /page through a socat front whose python
# http.server backend listens 1.5 s late; sets status, output, stderr.
late_socat_curl() {
	require_command curl
	mkdir -p "$T/www"
	echo "the page" >"$T/www/page"
	start_http_server back 1500 "$T/www"
	start_socat_front "$PORT"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_REPLAY="$1" \
		curl -sS "http://127.0.0.1:$FRONT/page"
}

@test "curl (non-blocking) with BACKOFF_REPLAY=on behind a socat front whose backend starts 1.5 s late gets the page, requested once" {
	late_socat_curl on
	assert_eq "$status $output" "0 the page" "curl: $stderr"
	assert_eq "$(grep -c '"GET /page' "$T/back.err")" 1 "requests the backend received"
	assert_between "$(json_events "$T/log.json" early attempt reason | grep -c replay)" 1 20 "replays"
}

@test "curl with BACKOFF_REPLAY off (the default) behind the same front: exit 52 as without the library, nothing replayed" {
	late_socat_curl off
	assert_eq "$status" 52 "curl: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 sent" "the early close"
}

@test "redis-cli PING with BACKOFF_REPLAY=on behind a socat front whose redis-server starts 1.5 s late: PONG" {
	require_command redis-cli
	require_program redis-server
	local port
	port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	start_socat_front "$port"
	start_bg redis sh -c 'sleep 1.5; exec redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no' sh "$port"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_REPLAY=on \
		redis-cli -p "$FRONT" PING
	assert_eq "$status $output" "0 PONG" "redis-cli: $stderr"
	assert_between "$(json_events "$T/log.json" early attempt reason | grep -c replay)" 1 20 "replays"
}

@test "redis-cli behind a front that closes after its command, BACKOFF_REPLAY off: the command is not sent again, the end as without the library" {
	require_command redis-cli
	local port plain
	port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	start_socat_front "$port"
	run --separate-stderr timeout 20 redis-cli -p "$FRONT" INCR n
	plain=$status
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" \
		redis-cli -p "$FRONT" INCR n
	assert_eq "$status" "$plain" "redis-cli: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 sent" "the early close"
}

@test "BACKOFF_REPLAY=on never replays bytes it did not see: a send, then sendfile(2); one connection" {
	start_front front read 1
	printf 'ING\n' >"$T/rest"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_REPLAY=on "$PYTHON" -c '
import os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.send(b"P")
with open(sys.argv[2], "rb") as f:
    os.sendfile(s.fileno(), f.fileno(), 0, 4)
try:
    print(repr(s.recv(100)))
except OSError as e:
    print(type(e).__name__)
' "$PORT" "$T/rest"
	assert_match "$output" "^(b''|ConnectionResetError)$" "the client's end: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 sent" "the early close"
	assert_eq "$(wc -l <"$T/front.out")" 1 "connections"
}

@test "BACKOFF_REPLAY=on never replays a connection the program ended its side of: its end of file, one connection" {
	start_front front read 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_REPLAY=on \
		"$PYTHON" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"PING\n")
s.shutdown(socket.SHUT_WR)
print(repr(s.recv(100)))
' "$PORT"
	assert_eq "$output" "b''" "what the client read: $stderr"
	assert_eq "$(cat "$T/front.out")" "conn 1 bytes=5" "the connections the server saw"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 sent" "the early close"
}

@test "BACKOFF_REPLAY=on never replays more than 64 KiB: a 70000-byte request, one connection" {
	start_front front read 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}" BACKOFF_REPLAY=on "$PYTHON" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
try:
    s.sendall(b"x" * 70000)
    print(repr(s.recv(100)))
except OSError as e:
    print(type(e).__name__)
' "$PORT"
	assert_match "$output" "^(b''|ConnectionResetError|BrokenPipeError)$" "the client's end: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 sent" "the early close"
	assert_eq "$(wc -l <"$T/front.out")" 1 "connections"
}

@test "a signal during a reconnect's wait: its handler runs at once, and the program sees the end it met" {
	start_front front fin -1
	SHARED+=(BACKOFF_BASE=2s BACKOFF_JITTER=none)
	run --separate-stderr client alarmed timeout 20 env LD_PRELOAD="$LIB" "${SHARED[@]}"
	local got handler total
	read -r got handler total <<<"$output"
	assert_eq "$got" "b''" "what the read returned: $stderr"
	assert_between "$handler" 250 800 "ms until the handler ran (the wait is 2 s)"
	assert_between "$total" 250 1000 "ms until the read returned"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 reconnect" "the early close"
}

@test "a client-first reconnect loop inside one process against an accept-then-close front: at most 15 connections in 3 s (over 100 without)" {
	local mode n
	for mode in without with; do
		start_front "front-$mode" fin -1
		local env=(env)
		[[ $mode == without ]] || env+=(LD_PRELOAD="$LIB" "${SHARED[@]}")
		run --separate-stderr timeout 20 "${env[@]}" "$PYTHON" -c '
import socket, sys, time
end = time.monotonic() + 3
s = None
while time.monotonic() < end:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    try:
        s.sendall(b"CONNECT\n")  # a client-first protocol (MQTT): never replayed
        s.recv(100)
    except OSError:
        pass
    s.close()
print("done")
' "$PORT"
		assert_eq "$output" "done" "the loop ($mode the library): $stderr"
		n=$(wc -l <"$T/front-$mode.out")
		if [[ $mode == without ]]; then
			assert_between "$n" 100 1000000 "connections in 3 s without the library"
		else
			assert_between "$n" 2 15 "connections in 3 s with the library"
		fi
	done
}
