#!/usr/bin/env bats
# "Try later" answers met by real clients of real servers: MariaDB, memcached,
# NATS and exim at their connection limits, redis-py while Redis loads or is
# full, mosquitto_sub refused by a broker that is not ready.  Each client is run
# without the library (what it gets: the refusal, at once) and under it (the
# answer it asked for, once the server can give it, the refusals met counted in
# the log); and a first answer that is not a refusal reaches the program byte
# for byte, whatever the sizes of its reads.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	LOGGED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
}

# --- MariaDB at max_connections ---

# start_mariadb: mariadbd on 127.0.0.1 (sets DB_PORT), its own data directory
# in $T, max_connections 10 (MariaDB's least), a user app (password pw) without
# SUPER: a SUPER user may take a connection past the limit.
start_mariadb() {
	require_command mariadb-install-db mariadbd mariadb
	local d=$T/mariadb
	mkdir -p "$d"
	DB_PORT=$(free_port)
	mariadb-install-db --no-defaults --datadir="$d/data" --user="$(id -un)" \
		--auth-root-authentication-method=normal --skip-test-db \
		--innodb-log-file-size=4M >"$d/install.log" 2>&1 ||
		fail "mariadb-install-db: $(tail -5 "$d/install.log")" || return
	start_bg mariadb mariadbd --no-defaults --datadir="$d/data" --user="$(id -un)" \
		--bind-address=127.0.0.1 --port="$DB_PORT" --socket="$d/sock" \
		--pid-file="$d/pid" --log-error="$d/error.log" --skip-name-resolve --skip-log-bin \
		--innodb-log-file-size=4M --innodb-buffer-pool-size=16M \
		--max-connections=10 --connect-timeout=30
	wait_for_port "$DB_PORT" 20 || fail "mariadbd does not listen: $(tail -5 "$d/error.log")" ||
		return
	mariadb --no-defaults -S "$d/sock" -uroot \
		-e "CREATE USER app@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON *.* TO app@'%';"
}

# A client that holds MariaDB's connections: argv[2] sessions logged in as
# app, then, with argv[3] "extra", one more connection left at its greeting (a
# client in the middle of its login), which takes the connection MariaDB keeps
# past max_connections; it says "holding" and keeps them until the file
# argv[4] exists (at most 30 s).
MARIADB_HOLDER='
import hashlib, os, socket, struct, sys, time
port, sessions, extra, release = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def packet(s):
    head = s.recv(4, socket.MSG_WAITALL)
    n = head[0] | head[1] << 8 | head[2] << 16
    return s.recv(n, socket.MSG_WAITALL)
def login():
    s = socket.create_connection(("127.0.0.1", port))
    g = packet(s)
    assert g[0] == 10, g
    at = g.index(b"\0", 1) + 5  # past the version and the connection id
    salt = g[at:at + 8] + g[at + 27:at + 39]
    p1 = hashlib.sha1(b"pw").digest()
    mask = hashlib.sha1(salt + hashlib.sha1(p1).digest()).digest()
    token = bytes(a ^ b for a, b in zip(p1, mask))
    caps = 0x200 | 0x8000 | 0x80000  # protocol 41, secure connection, plugin auth
    body = struct.pack("<IIB23x", caps, 1 << 24, 33) + b"app\0" + bytes([len(token)]) + \
        token + b"mysql_native_password\0"
    s.sendall(struct.pack("<I", len(body))[:3] + b"\1" + body)
    ok = packet(s)
    assert ok[0] == 0, ok
    return s
held = [login() for _ in range(sessions)]
if extra == "extra":
    held.append(socket.create_connection(("127.0.0.1", port)))
    assert packet(held[-1])[0] == 10
print("holding", flush=True)
deadline = time.monotonic() + 30
while not os.path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.01)
'

# hold_mariadb [extra]: start_mariadb, its max_connections held by MARIADB_HOLDER.
hold_mariadb() {
	start_mariadb || return
	start_bg holder "$PYTHON" -c "$MARIADB_HOLDER" "$DB_PORT" 10 "${1:--}" "$T/release"
	wait_for_line "$T/holder.out" holding 10 || fail "holder: $(cat "$T/holder.err")"
}

# mariadb_select [VAR=VALUE...]: the mariadb client, as app, running SELECT 1
# on DB_PORT under env with those variables.
mariadb_select() {
	timeout 20 env "$@" mariadb --no-defaults -h 127.0.0.1 -P "$DB_PORT" -u app -ppw \
		-N -e 'SELECT 1'
}

@test "mariadb client at MariaDB's max_connections: connected once the holder leaves; without the library error 1040 at once" {
	local start elapsed rel
	# Sessions at the limit and one more connecting: MariaDB writes its ERR
	# packet 1040 (0xFF 0x10 0x04) in place of the greeting of the next connection.
	hold_mariadb extra
	start=$(now_ms)
	run --separate-stderr mariadb_select
	elapsed=$(($(now_ms) - start))
	assert_eq "$status" 1 "status without the library"
	assert_match "$stderr" "1040.*Too many connections" "without the library"
	assert_between "$elapsed" 0 2000 "ms without the library"
	release_after_refusal &
	rel=$!
	run --separate-stderr mariadb_select LD_PRELOAD="$LIB" "${LOGGED[@]}"
	wait "$rel"
	assert_eq "$status/$output" "0/1" "mariadb under the library: $stderr"
	assert_eq "$(json_events "$T/log.json" not-ready answer | sort -u)" \
		"MySQL: too many connections (1040)" "the answer named in the log"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "reconnect" \
		"connected again, nothing sent again"
}

@test "mariadb client with a wrong password: error 1045 at once under the library, as without it" {
	local start elapsed base_status base_err
	start_mariadb
	run --separate-stderr timeout 20 mariadb --no-defaults -h 127.0.0.1 -P "$DB_PORT" -u app \
		-pwrong -N -e 'SELECT 1'
	base_status=$status base_err=$stderr
	assert_eq "$base_status" 1 "status without the library"
	assert_match "$base_err" "ERROR 1045 " "without the library"
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" mariadb --no-defaults \
		-h 127.0.0.1 -P "$DB_PORT" -u app -pwrong -N -e 'SELECT 1'
	elapsed=$(($(now_ms) - start))
	assert_eq "$status" "$base_status" "status under the library"
	assert_eq "$stderr" "$base_err" "the error under the library"
	assert_between "$elapsed" 0 2000 "ms under the library"
	assert_eq "$(json_events "$T/log.json" not-ready)" "" "no refusal recognized"
}

@test "mariadb client at max_connections sessions: MariaDB's 1040 after the login reaches it at once, as without the library" {
	local start elapsed base_err
	# The last connection MariaDB accepts past the limit is greeted, and its
	# login answered by the ERR 1040 (sequence 2, "#08004"): the login hangs
	# on that greeting's scramble, so it cannot be sent again on a new
	# connection; the library leaves that answer to the program.
	hold_mariadb
	run --separate-stderr mariadb_select
	base_err=$stderr
	assert_eq "$status" 1 "status without the library"
	assert_match "$base_err" "ERROR 1040 .*Too many connections" "without the library"
	start=$(now_ms)
	run --separate-stderr mariadb_select LD_PRELOAD="$LIB" "${LOGGED[@]}"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$stderr" "1/$base_err" "under the library"
	assert_between "$elapsed" 0 2000 "ms under the library"
	assert_eq "$(json_events "$T/log.json" not-ready)" "" "no refusal recognized"
}

# --- memcached at its maxconns ---

# A client that holds all of memcached's connections: it opens them, each
# asked its version, until one is answered "ERROR Too many open connections"
# (that one closed by the server), says "holding" and keeps the others until
# the file argv[2] exists (at most 30 s).
MEMCACHED_HOLDER='
import os, socket, sys, time
port, release = int(sys.argv[1]), sys.argv[2]
held = []
while True:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"version\r\n")
    if s.recv(100).startswith(b"ERROR Too many open connections"):
        break
    held.append(s)
print("holding", len(held), flush=True)
deadline = time.monotonic() + 30
while not os.path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.01)
'

# start_busy_memcached: memcached on 127.0.0.1 (sets MC_PORT) holding k=hello,
# all its connections held by MEMCACHED_HOLDER until $T/release exists.
start_busy_memcached() {
	local user=()
	require_command memcached memccat
	MC_PORT=$(free_port)
	# memcached run by root must be told a user to switch to.
	((EUID != 0)) || user=(-u nobody)
	# -c 16 with one thread: a few connections (memcached keeps some of its
	# maxconns for itself); a connection past them is answered "ERROR Too
	# many open connections" at once, and closed.
	start_bg memcached memcached "${user[@]}" -l 127.0.0.1 -p "$MC_PORT" -U 0 -t 1 -c 16
	wait_for_port "$MC_PORT" 5 || fail "memcached does not listen: $(cat "$T/memcached.err")" ||
		return
	timeout 5 "$PYTHON" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"set k 0 0 5\r\nhello\r\n")
assert s.recv(100) == b"STORED\r\n"
' "$MC_PORT"
	start_bg holder "$PYTHON" -c "$MEMCACHED_HOLDER" "$MC_PORT" "$T/release"
	wait_for_line "$T/holder.out" holding 10
}

@test "memccat at memcached's maxconns: the failure at once under the library by default, as without it (its get was sent before it read)" {
	local start elapsed
	start_busy_memcached
	# libmemcached writes "get k" before it reads: the refusal is its answer.
	# Quiet: "NOT FOUND" (it read the refusal) or a reset, said with -v only.
	start=$(now_ms)
	run --separate-stderr timeout 20 memccat --servers="127.0.0.1:$MC_PORT" k
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "1/" "without the library: $stderr"
	assert_between "$elapsed" 0 2000 "ms without the library"
	# Under the default what it sent is not recorded, so nothing is sent again.
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		memccat --servers="127.0.0.1:$MC_PORT" k
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "1/" "under the library, by default: $stderr"
	assert_between "$elapsed" 0 2000 "ms under the library, by default"
	assert_eq "$(json_events "$T/log.json" not-ready)" "" "no refusal retried"
}

# --- NATS at max_connections ---

# A NATS client as the protocol has it: it reads the server's INFO, sends
# CONNECT and PING, and prints the first line after INFO (PONG, or the error).
# It reads 0.3 s after it connected, when a refusal has followed the INFO.
NATS_PING='
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(0.3)
f = s.makefile("rb")
info = f.readline()
assert info.startswith(b"INFO "), info
try:
    s.sendall(b"CONNECT {\"verbose\":false}\r\nPING\r\n")
except OSError:
    pass
print(f.readline().decode().strip())
'

@test "a NATS client that reads once nats-server's refusal is there, at its max_connections: PONG once the holder leaves; without the library its -ERR at once" {
	# nats-server writes its INFO, then the -ERR, in two writes: a first read
	# that gets the INFO alone cannot tell (more is looked for without
	# waiting), the connection is the program's and so is the -ERR after it
	# (README).  This client reads once both are there; the library's next
	# attempt comes 300 ms later, once the holder has gone.
	require_command nats-server
	local port start elapsed rel
	port=$(free_port)
	printf 'listen: "127.0.0.1:%s"\nmax_connections: 1\n' "$port" >"$T/nats.conf"
	start_bg nats nats-server -c "$T/nats.conf"
	wait_for_port "$port" 5 || fail "nats-server does not listen: $(cat "$T/nats.err")" ||
		return
	start_bg holder "$PYTHON" -c "$HOLDER" "$port" INFO 'CONNECT {}\r\nPING\r\n' "$T/release"
	wait_for_line "$T/holder.out" holding 10
	start=$(now_ms)
	run --separate-stderr timeout 20 "$PYTHON" -c "$NATS_PING" "$port"
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "-ERR 'maximum connections exceeded'" "without the library: $stderr"
	assert_between "$elapsed" 0 2000 "ms without the library"
	release_after_refusal &
	rel=$!
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_BASE=300ms \
		BACKOFF_JITTER=none "$PYTHON" -c "$NATS_PING" "$port"
	wait "$rel"
	assert_eq "$status/$output" "0/PONG" "under the library: $stderr"
	assert_eq "$(json_events "$T/log.json" not-ready answer | sort -u)" \
		"NATS: maximum connections exceeded" "the answer named in the log"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "reconnect" \
		"connected again, nothing sent again"
}

# --- SMTP: exim at smtp_accept_max ---

# start_exim: exim in the foreground on 127.0.0.1 (sets SMTP_PORT), its own
# configuration, spool and logs in $T, accepting mail for anyone into its queue
# (never delivered), one SMTP connection at a time: a second is greeted "421
# Too many concurrent SMTP connections" and closed; one client holding it until
# $T/release exists.
start_exim() {
	require_program exim4 exim4-daemon-light
	local d=$T/exim
	mkdir -p "$d/spool" "$d/log"
	SMTP_PORT=$(free_port)
	cat >"$d/exim.conf" <<EOF
exim_path = $(command -v exim4)
spool_directory = $d/spool
log_file_path = $d/log/%slog
pid_file_path = $d/exim.pid
primary_hostname = localhost
local_interfaces = 127.0.0.1
exim_user = $(id -un)
exim_group = $(id -gn)
never_users =
keep_environment =
tls_advertise_hosts =
host_lookup =
rfc1413_hosts =
smtp_accept_max = 1
queue_only = true
acl_smtp_rcpt = accept_all
begin acl
accept_all:
  accept
begin routers
drop:
  driver = redirect
  data = :blackhole:
EOF
	start_bg exim exim4 -bdf -oX "$SMTP_PORT" -C "$d/exim.conf"
	wait_for_port "$SMTP_PORT" 10 || fail "exim does not listen: $(cat "$T/exim.err")" || return
	start_bg holder "$PYTHON" -c "$HOLDER" "$SMTP_PORT" 220 - "$T/release"
	wait_for_line "$T/holder.out" holding 10
}

@test "curl sending mail to exim at its smtp_accept_max: sent once the other client leaves; without the library the 421 at once" {
	require_command curl
	local start elapsed rel mail=(--mail-from a@example.org --mail-rcpt b@example.org)
	printf 'Subject: hi\r\n\r\nhello\r\n' >"$T/mail"
	start_exim
	start=$(now_ms)
	run --separate-stderr timeout 20 curl -sS "smtp://127.0.0.1:$SMTP_PORT" "${mail[@]}" -T "$T/mail"
	elapsed=$(($(now_ms) - start))
	[[ $status -ne 0 ]] || fail "curl without the library sent the mail" || return
	assert_between "$elapsed" 0 2000 "ms without the library"
	release_after_refusal &
	rel=$!
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		curl -sS "smtp://127.0.0.1:$SMTP_PORT" "${mail[@]}" -T "$T/mail"
	wait "$rel"
	assert_eq "$status" 0 "curl under the library: $stderr"
	wait_for_line "$T/exim/log/mainlog" ' <= a@example.org ' 5
	assert_eq "$(grep -c ' <= ' "$T/exim/log/mainlog")" 1 "messages exim received"
	assert_match "$(json_events "$T/log.json" not-ready answer | head -1)" "^a 421 greeting" \
		"the answer named in the log"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "reconnect" \
		"connected again, nothing sent again"
}

# --- redis-py while Redis loads its data set, and at maxclients ---

# require_redis_py: sets REDIS_PY to a python that has redis-py (python3-redis
# is the system python's, which may not be $PYTHON).
require_redis_py() {
	local py
	for py in "$PYTHON" /usr/bin/python3; do
		if "$py" -c 'import redis.asyncio' 2>/dev/null; then
			REDIS_PY=$py
			return
		fi
	done
	skip "redis-py is not installed (apt-get install python3-redis)"
}

# redis-py's GET key:1 on the port argv[2]: argv[1] "sync" (redis.Redis, a
# blocking socket) or "async" (redis.asyncio, non-blocking in asyncio's loop);
# prints the value, or the error's class and text.
REDIS_PY_GET='
import asyncio, sys, redis, redis.asyncio
mode, port = sys.argv[1], int(sys.argv[2])
async def get():
    r = redis.asyncio.Redis(host="127.0.0.1", port=port)
    try:
        return await r.get("key:1")
    finally:
        await r.close()
try:
    if mode == "sync":
        value = redis.Redis(host="127.0.0.1", port=port).get("key:1")
    else:
        value = asyncio.run(get())
    print(value.decode())
except redis.RedisError as e:
    print(type(e).__name__, e)
'

# redis_py_loading MODE: redis-py's GET in MODE while redis-server loads its
# data set, without the library then under it.
redis_py_loading() {
	local start elapsed
	require_redis_py
	start_loading_redis
	start=$(now_ms)
	run --separate-stderr timeout 20 "$REDIS_PY" -c "$REDIS_PY_GET" "$1" "$REDIS_PORT"
	elapsed=$(($(now_ms) - start))
	# redis-py (4.3) raises BusyLoadingError at once: it retries nothing by default.
	assert_match "$output" "^BusyLoadingError Redis is loading" "without the library: $stderr"
	assert_between "$elapsed" 0 2000 "ms without the library"
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		"$REDIS_PY" -c "$REDIS_PY_GET" "$1" "$REDIS_PORT"
	assert_eq "$status/$output" "0/value:1" "under the library: $stderr"
	assert_match "$(json_events "$T/log.json" not-ready answer | head -1)" "^Redis" "the answer"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "replay" \
		"its GET sent again"
}

@test "redis-py GET (redis.Redis) while redis-server loads its data set: the value; without the library BusyLoadingError at once" {
	redis_py_loading sync
}

@test "redis-py GET (redis.asyncio) while redis-server loads its data set: the value; without the library BusyLoadingError at once" {
	redis_py_loading async
}

# redis_py_maxclients MODE: redis-py's GET in MODE at redis-server's maxclients,
# held by one client, without the library then under it.
redis_py_maxclients() {
	local port start elapsed rel
	require_redis_py
	require_program redis-server
	port=$(free_port)
	start_bg redis redis-server --port "$port" --bind 127.0.0.1 --maxclients 1 --save '' \
		--appendonly no
	wait_for_port "$port" 5 || fail "redis-server does not listen" || return
	redis-cli -p "$port" SET key:1 value:1 >/dev/null
	start_bg holder "$PYTHON" -c "$HOLDER" "$port" +PONG 'PING\r\n' "$T/release"
	wait_for_line "$T/holder.out" holding 10
	start=$(now_ms)
	run --separate-stderr timeout 20 "$REDIS_PY" -c "$REDIS_PY_GET" "$1" "$port"
	elapsed=$(($(now_ms) - start))
	# redis-py says "Connection not ready" when its look met the refusal.
	assert_match "$output" "^ConnectionError (max number of clients reached|Connection not ready)\$" \
		"without the library: $stderr"
	assert_between "$elapsed" 0 2000 "ms without the library"
	release_after_refusal &
	rel=$!
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		"$REDIS_PY" -c "$REDIS_PY_GET" "$1" "$port"
	wait "$rel"
	assert_eq "$status/$output" "0/value:1" "under the library: $stderr"
	assert_eq "$(json_events "$T/log.json" not-ready answer | sort -u)" \
		"Redis: max number of clients" "the answer named in the log"
}

@test "redis-py GET (redis.asyncio) at redis-server's maxclients: the value once the holder leaves; without the library the refusal at once" {
	redis_py_maxclients async
}

# --- mosquitto_sub refused by a broker that is not ready ---


# mqtt_sub VERSION: mosquitto_sub of VERSION (mqttv311, 5), for one message,
# against a broker refusing its first CONNECT, without the library; then
# against one refusing its first 2, under the library.
mqtt_sub() {
	local port start elapsed
	require_program mosquitto_sub mosquitto-clients
	port=$(free_port)
	start_bg broker "$PYTHON" -c "$MQTT_BROKER" "$port" 1
	wait_for_line "$T/broker.out" listening 10
	start=$(now_ms)
	run --separate-stderr timeout 20 mosquitto_sub -h 127.0.0.1 -p "$port" -t t -C 1 -V "$1"
	elapsed=$(($(now_ms) - start))
	[[ $status -ne 0 && -z $output ]] ||
		fail "mosquitto_sub without the library: status $status, '$output'" || return
	assert_between "$elapsed" 0 2000 "ms without the library"
	assert_eq "$(grep -c subscribed "$T/broker.out")" 0 "subscriptions without the library"
	stop_bg_all
	start_bg broker "$PYTHON" -c "$MQTT_BROKER" "$port" 2
	wait_for_line "$T/broker.out" listening 10
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		mosquitto_sub -h 127.0.0.1 -p "$port" -t t -C 1 -V "$1"
	assert_eq "$status/$output" "0/hello" "mosquitto_sub under the library: $stderr"
	assert_eq "$(grep -c refused "$T/broker.out")" 2 "CONNECTs refused"
	assert_eq "$(grep -c 'subscribed t' "$T/broker.out")" 1 "subscriptions"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "replay" \
		"the CONNECT sent again"
	assert_eq "$(json_events "$T/log.json" not-ready | wc -l)" 2 "refusals met"
}

@test "mosquitto_sub (MQTT 3.1.1) against a broker refusing its first CONNECTs with code 3: subscribed, its one message received once accepted" {
	mqtt_sub mqttv311
}

@test "mosquitto_sub (MQTT 5) against a broker refusing its first CONNECTs with 0x88: subscribed, its one message received once accepted" {
	mqtt_sub 5
}

# --- Any other first answer reaches the program unchanged ---

# A scripted server that gives every connection the same first answer, argv[3]
# (escapes as in HOLDER), then closes it: argv[2] "first" sends it at once (a
# greeting), "answer" once the client's request has come (a line, or an HTTP
# head).  Scripted, not the real servers: a real MariaDB greeting holds a
# scramble of its own each time, and the bytes are compared whole.
FIXED='
import socket, sys
port, when, answer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
answer = answer.encode().decode("unicode_escape").encode("latin-1")
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(16)
print("listening", flush=True)
while True:
    c, _ = ls.accept()
    req = b""
    while when == "answer" and not req.endswith(b"\r\n"):
        b = c.recv(4096)
        if not b: break
        req += b
    c.sendall(answer)
    c.close()
'

# A client that sends argv[3] ("-": nothing), then reads argv[2] bytes at a
# time until the end, and prints all it got.
READ_ALL='
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
if sys.argv[3] != "-":
    s.sendall(sys.argv[3].encode().decode("unicode_escape").encode("latin-1"))
got = b""
while chunk := s.recv(int(sys.argv[2])):
    got += chunk
print(repr(got))
'

# assert_unchanged WHEN ANSWER REQUEST: the FIXED server's ANSWER (sent WHEN,
# to REQUEST) read by READ_ALL 1, 5 and 4096 bytes at a time reaches it byte for
# byte and at once under the library, every protocol recognized (http too), as
# without it; no refusal in the log.
assert_unchanged() {
	local port size without start elapsed
	port=$(free_port)
	start_bg fixed "$PYTHON" -c "$FIXED" "$port" "$1" "$2"
	wait_for_line "$T/fixed.out" listening 10
	for size in 1 5 4096; do
		without=$(timeout 20 "$PYTHON" -c "$READ_ALL" "$port" "$size" "$3")
		assert_eq "$without" "$("$PYTHON" -c 'import sys
print(repr(sys.argv[1].encode().decode("unicode_escape").encode("latin-1")))' "$2")" \
			"without the library, $size bytes a read"
		start=$(now_ms)
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
			BACKOFF_PROTOCOLS=+http "$PYTHON" -c "$READ_ALL" "$port" "$size" "$3"
		elapsed=$(($(now_ms) - start))
		assert_eq "$status/$output" "0/$without" "under the library, $size bytes a read: $stderr"
		assert_between "$elapsed" 0 2000 "ms under the library, $size bytes a read"
	done
	assert_eq "$(json_events "$T/log.json" not-ready)" "" "no refusal recognized"
	stop_bg_all
}

@test "greetings that are not refusals reach a client unchanged, read 1, 5 or 4096 bytes at a time: FTP 220, MariaDB's, a MySQL ERR 1129, NATS INFO, a 421 inside a line" {
	assert_unchanged first '220 (vsFTPd 3.0.3)\r\n' -
	# MariaDB 10.11's greeting (protocol 10), its scramble made up.
	assert_unchanged first 'd\x00\x00\x00\x0a5.5.5-10.11.19-MariaDB-0+deb12u1\x00\x04\x00\x00\x00TNiHka$.\x00\xfe\xf7\x08\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00Z]Bp/:qNog6X\x00mysql_native_password\x00' -
	# An ERR packet in place of the greeting, but not "try later": host blocked.
	assert_unchanged first '\x23\x00\x00\x00\xff\x69\x04Host is blocked, try flush-hosts' -
	assert_unchanged first 'INFO {"server_id":"N1","max_payload":1048576} \r\n' -
	assert_unchanged first '220 mail ready; 421 is for later\r\n' -
}

@test "Redis and memcached errors that are not refusals reach a client unchanged, read 1, 5 or 4096 bytes at a time" {
	assert_unchanged answer "-ERR unknown command 'FOO', with args beginning with: \\r\\n" \
		'*1\r\n$3\r\nFOO\r\n'
	assert_unchanged answer '-ERR max number of keys\r\n' '*1\r\n$4\r\nPING\r\n'
	assert_unchanged answer 'ERROR\r\n' 'foo\r\n'
}

@test "HTTP 200, 404 and 500 reach a client unchanged with +http, read 1, 5 or 4096 bytes at a time" {
	local get='GET / HTTP/1.1\r\nHost: x\r\n\r\n' code
	for code in '200 OK' '404 Not Found' '500 Internal Server Error'; do
		assert_unchanged answer "HTTP/1.1 $code\\r\\nRetry-After: 1\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok" "$get"
	done
}
