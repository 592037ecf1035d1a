#!/usr/bin/env bats
# Answers that mean "try later": a server that writes a refusal in place of its
# greeting (an FTP or SMTP 421, Redis at maxclients, memcached at its limit,
# MySQL's "too many connections", NATS's "maximum connections exceeded")
# refused the connection before it read anything, so the library connects
# again, within the budget, and the program never sees the refusal; the one
# that ends the budget reaches it byte for byte.  BACKOFF_PROTOCOLS chooses the
# protocols recognized.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	LOGGED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
}

# start_busy_vsftpd: vsftpd (start_vsftpd) that serves one client at a time
# (max_clients=1: a second gets "421 There are too many connected users"), with
# one client holding it until $T/release exists.
start_busy_vsftpd() {
	start_vsftpd max_clients=1 || return
	start_bg holder "$PYTHON" -c "$HOLDER" "$FTP_PORT" 220 - "$T/release"
	wait_for_line "$T/holder.out" holding 10
}

# A python client that reads the greeting @1 byte at a time, and prints it.
GREETING='
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
got = b""
while not got.endswith(b"\r\n"):
    b = s.recv(int(sys.argv[2]))
    if not b:
        break
    got += b
print(got)
'

@test "curl fetching from a vsftpd at its max_clients: the file once the other client leaves; without the library the 421 at once" {
	require_command curl
	local rel
	start_busy_vsftpd
	run --separate-stderr timeout 20 curl -sS "ftp://127.0.0.1:$FTP_PORT/hello.txt"
	[[ $status -ne 0 ]] || fail "curl without the library got the file: $output"
	release_after_refusal &
	rel=$!
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" curl -sS \
		"ftp://127.0.0.1:$FTP_PORT/hello.txt"
	wait "$rel"
	assert_eq "$status/$output" "0/hello" "curl under the library: $stderr"
	assert_match "$(json_events "$T/log.json" not-ready answer | head -1)" \
		'^a 421 greeting: service not available: "421 There are too many connected users' \
		"the answer named in the log, as the server wrote it"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "reconnect" \
		"connected again, nothing sent again"
}

@test "a client reading the greeting one byte at a time gets the greeting, not the 421" {
	local rel
	start_busy_vsftpd
	release_after_refusal &
	rel=$!
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		"$PYTHON" -c "$GREETING" "$FTP_PORT" 1
	wait "$rel"
	assert_match "$output" "^b'220" "the greeting: $stderr"
}

@test "the refusal that ends the budget reaches the program byte for byte" {
	local without
	start_busy_vsftpd
	without=$(timeout 20 "$PYTHON" -c "$GREETING" "$FTP_PORT" 100)
	assert_match "$without" "^b'421" "without the library"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_TIMEOUT=1s \
		"$PYTHON" -c "$GREETING" "$FTP_PORT" 100
	assert_eq "$output" "$without" "with the library, its budget spent: $stderr"
	assert_between "$(json_events "$T/log.json" not-ready | wc -l)" 1 100 "refusals met"
}

@test "BACKOFF_PROTOCOLS without ftp and smtp: the 421 reaches the program at once" {
	local start elapsed
	start_busy_vsftpd
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		BACKOFF_PROTOCOLS=-ftp,-smtp "$PYTHON" -c "$GREETING" "$FTP_PORT" 100
	elapsed=$(($(now_ms) - start))
	assert_match "$output" "^b'421" "the refusal: $stderr"
	assert_between "$elapsed" 0 2000 "ms"
	assert_eq "$(json_events "$T/log.json" not-ready)" "" "no refusal recognized"
}

# A python client that sends what argv[2] says in one write and prints the first answer.
RESP='
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
print(s.recv(200))
'

@test "redis-cli at redis-server's maxclients: PONG once a client leaves; a pipeline gets the refusal, as without the library" {
	require_program redis-server
	require_program redis-cli
	local port rel
	port=$(free_port)
	start_bg redis redis-server --port "$port" --bind 127.0.0.1 --maxclients 1 --save '' \
		--appendonly no
	wait_for_port "$port" 5 || fail "redis-server does not listen" || return
	start_bg holder "$PYTHON" -c "$HOLDER" "$port" +PONG 'PING\r\n' "$T/release"
	wait_for_line "$T/holder.out" holding 10
	run --separate-stderr timeout 20 redis-cli -p "$port" PING
	assert_match "$output" "max number of clients reached" "without the library"
	# Two commands in one write: not one command recorded, so not sent again.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "$PYTHON" -c "$RESP" "$port" \
		'*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n'
	assert_match "$output" "max number of clients reached" "a pipeline under the library"
	release_after_refusal &
	rel=$!
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		redis-cli -p "$port" PING
	wait "$rel"
	assert_eq "$output" "PONG" "under the library: $stderr"
	assert_match "$(json_events "$T/log.json" not-ready answer | head -1)" "^Redis" "the answer"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "replay" \
		"its one command sent again"
}

@test "redis-cli GET while redis-server loads its data set: the value, not LOADING; a pipeline gets LOADING, as without the library" {
	start_loading_redis
	run --separate-stderr timeout 20 redis-cli -p "$REDIS_PORT" GET key:1
	assert_match "$output" "^LOADING" "without the library"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "$PYTHON" -c "$RESP" "$REDIS_PORT" \
		'*2\r\n$3\r\nGET\r\n$5\r\nkey:1\r\n*1\r\n$4\r\nPING\r\n'
	assert_match "$output" "LOADING" "a pipeline under the library"
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		redis-cli -p "$REDIS_PORT" GET key:1
	assert_eq "$output" "value:1" "under the library: $stderr"
	assert_match "$(json_events "$T/log.json" not-ready answer | head -1)" '^Redis: "-LOADING ' \
		"the answer, as the server wrote it"
}

@test "BACKOFF_PROTOCOLS without redis: LOADING reaches redis-cli at once" {
	start_loading_redis
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		BACKOFF_PROTOCOLS=-redis redis-cli -p "$REDIS_PORT" GET key:1
	assert_match "$output" "^LOADING" "with the library, redis off"
}

# mqtt_pub VERSION: mosquitto_pub of VERSION (mqttv311, 5) against a broker refusing
# its first 2 CONNECTs, without the library then with it.
mqtt_pub() {
	local port
	require_program mosquitto_pub
	port=$(free_port)
	start_bg broker "$PYTHON" -c "$MQTT_BROKER" "$port" 1
	wait_for_line "$T/broker.out" listening 10
	run --separate-stderr timeout 20 mosquitto_pub -h 127.0.0.1 -p "$port" -t t -m plain -V "$1"
	[[ $status -ne 0 ]] || fail "mosquitto_pub without the library published: $stderr" || return
	assert_eq "$(grep -c published "$T/broker.out")" 0 "published without the library"
	stop_bg_all
	start_bg broker "$PYTHON" -c "$MQTT_BROKER" "$port" 2
	wait_for_line "$T/broker.out" listening 10
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		mosquitto_pub -h 127.0.0.1 -p "$port" -t t -m hello -V "$1"
	assert_eq "$status" 0 "mosquitto_pub under the library: $stderr"
	wait_for_line "$T/broker.out" "published t hello" 5
	assert_eq "$(grep -c refused "$T/broker.out")" 2 "CONNECTs refused"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "replay" \
		"the CONNECT sent again"
	local code=0x03
	[[ $1 != 5 ]] || code=0x88
	assert_eq "$(json_events "$T/log.json" not-ready answer | sort -u)" "MQTT: CONNACK $code" \
		"the answer, its code"
}

@test "mosquitto_pub (MQTT 3.1.1) against a broker refusing its first CONNECTs with code 3: published once accepted" {
	mqtt_pub mqttv311
}

@test "mosquitto_pub (MQTT 5) against a broker refusing its first CONNECTs with 0x88: published once accepted" {
	mqtt_pub 5
}

# --- HTTP: 429, 502, 503, 504 to a GET, HEAD or OPTIONS, with +http only ---

# A scripted HTTP server (no packaged one answers 503 with a Retry-After on
# demand): 503 to the first N requests, with a Retry-After of its third
# argument ("-": none), then 200 "ok" (or, with a fourth argument "silent",
# nothing: it holds the connection); it prints each request's method.
H503='
import socket, sys
port, n, after = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
silent, held = sys.argv[4:] == ["silent"], []
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(16); print("listening", flush=True)
seen = 0
while True:
    c, _ = ls.accept()
    req = b""
    while b"\r\n\r\n" not in req:
        b = c.recv(4096)
        if not b: break
        req += b
    if not req: c.close(); continue
    seen += 1
    print("request", seen, req.split(b" ")[0].decode(), flush=True)
    if seen <= n:
        ra = "" if after == "-" else "Retry-After: %s\r\n" % after
        c.sendall(("HTTP/1.1 503 Service Unavailable\r\n%sContent-Length: 4\r\nConnection: close\r\n\r\nbusy" % ra).encode())
    elif silent:
        held.append(c)
        continue
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    c.close()
'

# start_h503 N RETRY_AFTER [silent]: the scripted server on HTTP_PORT.
start_h503() {
	HTTP_PORT=$(free_port)
	start_bg h503 "$PYTHON" -c "$H503" "$HTTP_PORT" "$@"
	wait_for_line "$T/h503.out" listening 10
}

@test "curl against a server answering 503 with Retry-After: 1 twice: the page with +http, after the waits it asked; 503 without" {
	require_command curl
	local start elapsed
	start_h503 2 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" curl -s -o /dev/null \
		-w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/"
	assert_eq "$output" "503" "the default: HTTP answers are the program's"
	stop_bg_all
	start_h503 2 1
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_STATS=1 \
		BACKOFF_PROTOCOLS=+http curl -s "http://127.0.0.1:$HTTP_PORT/"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/ok" "with +http: $stderr"
	# Two waits of at least the second the server asked for.
	assert_between "$elapsed" 1900 6000 "ms"
	assert_eq "$(grep -c '^request' "$T/h503.out")" 3 "requests the server received"
	assert_eq "$(json_events "$T/log.json" not-ready answer | sort -u)" \
		"HTTP 503, Retry-After 1 s" "the answer, and the wait it asked for"
	# Counted apart from early closes, in the stats line and its JSON.
	assert_match "$(grep '"event":"stats"' "$T/log.json")" '"try_later":2[,}]' "stats"
	assert_no_match "$(grep '"event":"stats"' "$T/log.json")" '"early":' "no early close"
}

@test "Retry-After as an HTTP-date is honoured; one past the budget gives the program the 503 at once" {
	require_command curl
	local start elapsed when
	when=$("$PYTHON" -c 'import email.utils, time; print(email.utils.formatdate(time.time() + 2, usegmt=True))')
	start_h503 1 "$when"
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http curl -s \
		"http://127.0.0.1:$HTTP_PORT/"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/ok" "after the date: $stderr"
	assert_between "$elapsed" 900 4000 "ms"
	stop_bg_all
	start_h503 5 30
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http \
		BACKOFF_TIMEOUT=5s curl -s -w ' %{http_code}' "http://127.0.0.1:$HTTP_PORT/"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "busy 503" "the answer past the budget, byte for byte"
	assert_between "$elapsed" 0 1000 "ms"
}

@test "a 503 without Retry-After, then the new connection held in silence: the program gets its 503 after one attempt's time, not the budget, with +http" {
	require_command curl
	local start elapsed
	start_h503 1 - silent
	start=$(now_ms)
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_PROTOCOLS=+http \
		BACKOFF_TIMEOUT=20s BACKOFF_ATTEMPT_TIMEOUT=1s curl -s -w ' %{http_code}' \
		"http://127.0.0.1:$HTTP_PORT/"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "busy 503" "the program's answer: $stderr"
	# The server's line (it said it is full) waited first, then one attempt of 1 s.
	assert_between "$elapsed" 900 6000 "ms, where the budget is 20 s"
	assert_eq "$(grep -c '^request' "$T/h503.out")" 2 "requests the server received"
}

@test "a POST answered 503 reaches the server once and the program gets the 503, with +http" {
	require_command curl
	start_h503 5 1
	# With a body, and without one: neither is sent again.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http curl -s \
		-w ' %{http_code}' -d 'x=1' "http://127.0.0.1:$HTTP_PORT/"
	assert_eq "$output" "busy 503" "the program's answer"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http curl -s \
		-w ' %{http_code}' -X POST "http://127.0.0.1:$HTTP_PORT/"
	assert_eq "$output" "busy 503" "the program's answer, no body"
	assert_eq "$(grep -c '^request' "$T/h503.out")" 2 "requests the server received"
	assert_eq "$(grep -c POST "$T/h503.out")" 2 "the POSTs"
}

@test "curl, wget and python urllib through nginx whose backend starts late: the page with +http, 502 without" {
	command -v nginx >/dev/null || fail "nginx is not installed (apt-get install nginx)"
	require_command curl
	local be proxy
	be=$(free_port)
	proxy=$(free_port)
	start_nginx nginx "server { listen 127.0.0.1:$proxy; location / { proxy_pass http://127.0.0.1:$be; } }"
	wait_for_port "$proxy" 10 || fail "nginx does not listen" || return
	run --separate-stderr timeout 20 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$proxy/"
	assert_eq "$output" "502" "without the library"
	# The backend comes once the first client met its 502.
	start_bg backend sh -c 'until grep -q "\"event\":\"not-ready\"" "$1" 2>/dev/null; do sleep 0.01; done
		exec "$2" -m http.server --bind 127.0.0.1 --directory "$3" "$4"' sh "$T/log.json" \
		"$PYTHON" "$BATS_TEST_DIRNAME" "$be"
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		BACKOFF_PROTOCOLS=+http curl -s -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$proxy/helper.bash"
	assert_eq "$output" "200" "curl: $stderr"
	if command -v wget >/dev/null; then
		run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http \
			wget -q -O /dev/null "http://127.0.0.1:$proxy/helper.bash"
		assert_eq "$status" 0 "wget: $stderr"
	fi
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http "$PYTHON" -c \
		'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).status)' \
		"http://127.0.0.1:$proxy/helper.bash"
	assert_eq "$output" "200" "python urllib: $stderr"
}

@test "a client that writes before it reads gets the 421 under the default: what it sent was not recorded" {
	local start elapsed
	start_busy_vsftpd
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" "$PYTHON" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"NOOP\r\n")
print(s.recv(100)[:3])
' "$FTP_PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "b'421'" "the refusal: $stderr"
	assert_between "$elapsed" 0 2000 "ms"
	assert_eq "$(json_events "$T/log.json" not-ready)" "" "no refusal retried"
}

# A program with its own HTTP server in the thread that makes a GET to it (as a
# test suite's in-process server): the server answers 503 to the first
# connection, then takes no connection while the client reads.  Prints what the
# client read, then what each connection left queued at the listener carried.
INPROCESS='
import socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
cli = socket.create_connection(srv.getsockname())
cli.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
conn, _ = srv.accept()
conn.recv(4096)
conn.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy")
conn.close()
got = b""
while True:
    b = cli.recv(4096)
    if not b:
        break
    got += b
print("client", got.split(b"\r\n")[0].decode())
srv.setblocking(False)
while True:
    try:
        c, _ = srv.accept()
    except BlockingIOError:
        break
    c.settimeout(1)
    try:
        data = c.recv(4096)
    except OSError as e:
        data = type(e).__name__.encode()
    print("queued", repr(data[:16]))
'

@test "a GET answered 503 by the program's own server, in its own thread: the 503, and no request sent again that the server would serve to nobody" {
	run --separate-stderr timeout 20 "$PYTHON" -c "$INPROCESS"
	assert_eq "$output" "client HTTP/1.0 503 Service Unavailable" "without the library: $stderr"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_PROTOCOLS=+http "${LOGGED[@]}" \
		"$PYTHON" -c "$INPROCESS"
	assert_match "$output" "^client HTTP/1.0 503 Service Unavailable" "the program's answer: $stderr"
	# A connection made again may wait at the listener, but with nothing sent on it.
	assert_no_match "$output" "GET" "a request sent again to a server that could not take it"
	assert_eq "$(json_events "$T/log.json" not-ready reason)" "replay" \
		"the new connection was made to send the request again"
	assert_eq "$(json_events "$T/log.json" early-end reason)" "unaccepted" \
		"its end: the listener did not take it"
}
