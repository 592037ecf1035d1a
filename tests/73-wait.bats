#!/usr/bin/env bats
# backoff wait: each target waited for until it is ready (a connection, or a protocol's
# answer that is not "not ready"), on the library's schedule and shared fate, then 0 or the
# command; 1 with one line at the timeout; 2 with one line for a bad target.
# shellcheck disable=SC2154 # status, output and stderr are set by bats run

load helper

# One PostgreSQL cluster for the file, made when a test first needs it: initdb is slow.
# As root the server runs as nobody, in a directory nobody owns (tests/91-postgresql.bats).
setup_file() {
	export PG_DIR=
}

teardown_file() {
	[[ -n ${PG_DIR:-} && -d $PG_DIR ]] || return 0
	pg_stop
	rm -rf "$PG_DIR"
}

setup() {
	require_build
	LOGGED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
}

teardown() {
	pg_stop
	stop_bg_all
}

# The monotonic ms at which the command after "--" runs: what the wait's end costs (a
# compiled helper: an interpreter's start-up would be counted against the wait).
MONO_NOW=("$HELPERS/mono-now")

# A scripted server on 127.0.0.1 (its port in argv[3]): "not ready" until argv[2] ms
# from its start (-1: never), then ready; it prints "ready mono_ms=N" first, then
# "not-ready" or "ready" for each connection.  http: 503, then 200 (a path
# /always/NNN: NNN every time); mysql: an ERR 1040 packet in place of the greeting,
# then a protocol 10 greeting.
SCRIPTED='
import os, socket, sys, time
mode, after, port_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
ready = time.monotonic_ns() // 1000000 + after if after >= 0 else None
print(f"ready mono_ms={ready if ready is not None else -1}", flush=True)
with open(port_file + ".tmp", "w") as f:
    f.write(f"{srv.getsockname()[1]}\n")
os.rename(port_file + ".tmp", port_file)
while True:
    c, _ = srv.accept()
    ok = ready is not None and time.monotonic_ns() // 1000000 >= ready
    if mode == "http":
        c.settimeout(2)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        path = data.split(b" ")[1].decode() if data.count(b" ") else "/"
        code = int(path[8:11]) if path.startswith("/always/") else 200 if ok else 503
        ok = code < 500
        c.sendall(b"HTTP/1.0 %d Scripted\r\nContent-Length: 0\r\n\r\n" % code)
    elif ok:
        payload = (b"\x0a5.7.0-scripted\x00" + b"\x01\x00\x00\x00" + b"abcdefgh\x00"
                   + b"\xff\xf7\x08\x02\x00\xff\x81\x15" + b"\x00" * 10 + b"ijklmnopqrst\x00"
                   + b"mysql_native_password\x00")
        c.sendall(len(payload).to_bytes(3, "little") + b"\x00" + payload)
    else:
        err = b"\xff" + (1040).to_bytes(2, "little") + b"#08004Too many connections"
        c.sendall(len(err).to_bytes(3, "little") + b"\x00" + err)
    print("ready" if ok else "not-ready", flush=True)
    c.close()
'

# start_scripted NAME MODE AFTER_MS: SCRIPTED in the background; sets PORT and READY_MONO.
start_scripted() {
	start_bg "$1" "$PYTHON" -c "$SCRIPTED" "$2" "$3" "$T/$1.port"
	wait_for_file "$T/$1.port" 5 || return
	PORT=$(<"$T/$1.port")
	READY_MONO=$(sed -n 's/^ready mono_ms=//p' "$T/$1.out")
}

# assert_ready_within DONE READY MAX WHAT: the wait ended no sooner than READY, at most MAX
# ms after; with TEST_MATRIX_FILE set, a "wait WHAT | ms" row is appended to it.
assert_ready_within() {
	assert_between "$(($1 - $2))" 0 "$3" "ms from readiness to the command ($4)" || return
	[[ -z ${TEST_MATRIX_FILE:-} ]] || printf 'wait %s | %s\n' "$4" "$(($1 - $2))" >>"$TEST_MATRIX_FILE"
}

@test "tcp: a listener that comes 700 ms late is waited for, and the command runs within 150 ms of its listen" {
	start_listener late 700
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 10s "tcp://127.0.0.1:$PORT" -- \
		"${MONO_NOW[@]}"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$stderr" "" "nothing said on the way"
	assert_ready_within "$output" "$(listener_mono late listening)" 150 tcp
}

@test "unix: a socket file created 700 ms late is waited for, and the command runs within 150 ms" {
	start_bg late "$HELPERS/late-listener" --unix "$T/sock" --after 700
	run --separate-stderr timeout 20 "$LAUNCHER" wait "unix:$T/sock" -- "${MONO_NOW[@]}"
	assert_eq "$status" 0 "status: $stderr"
	wait_for_line "$T/late.out" listening 5
	assert_ready_within "$output" "$(listener_mono late listening)" 150 unix
}

@test "a server never started: 1 at the timeout, one line naming the target and its last error, the command not run" {
	closed_port never
	local start elapsed
	start=$(now_ms)
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 1500ms "tcp://127.0.0.1:$PORT" -- \
		echo ran
	elapsed=$(($(now_ms) - start))
	assert_eq "$status" 1 "status"
	assert_eq "$output" "" "the command's output"
	assert_eq "$stderr" "backoff: wait: tcp://127.0.0.1:$PORT: not ready after 1.5s (connect: ECONNREFUSED)" \
		"the one line"
	assert_between "$elapsed" 1450 2500 "ms until the give-up"
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 300ms "unix:$T/none"
	assert_eq "$status $stderr" "1 backoff: wait: unix:$T/none: not ready after 300ms (connect: ENOENT)" \
		"a unix path never made"
}

@test "http: 503 answers are waited out, a 200 ends the wait within 150 ms, a 404 is ready, a 500 is not" {
	start_scripted web http 800
	run --separate-stderr timeout 20 env "${LOGGED[@]}" "$LAUNCHER" wait \
		"http://127.0.0.1:$PORT/health" -- "${MONO_NOW[@]}"
	assert_eq "$status" 0 "status: $stderr"
	assert_ready_within "$output" "$READY_MONO" 150 http
	assert_between "$(grep -c not-ready "$T/web.out")" 1 100 "503 answers before the 200"
	assert_match "$(json_events "$T/log.json" not-ready message | head -1)" \
		"^wait http://127.0.0.1:$PORT/health: not ready \(HTTP 503 Scripted\)$" "the log's not-ready line"
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 1s "http://127.0.0.1:$PORT/always/404"
	assert_eq "$status" 0 "a 404 is an answer below 500: $stderr"
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 500ms "http://127.0.0.1:$PORT/always/500"
	assert_eq "$status $stderr" \
		"1 backoff: wait: http://127.0.0.1:$PORT/always/500: not ready after 500ms (HTTP 500 Scripted)" \
		"a 500 is not ready"
}

@test "mysql: ERR 1040 greetings are waited out, a protocol 10 greeting ends the wait within 150 ms" {
	start_scripted db mysql 600
	run --separate-stderr timeout 20 "$LAUNCHER" wait "mysql://127.0.0.1:$PORT" -- "${MONO_NOW[@]}"
	assert_eq "$status" 0 "status: $stderr"
	assert_ready_within "$output" "$READY_MONO" 150 mysql
	assert_between "$(grep -c not-ready "$T/db.out")" 1 100 "1040 answers before the greeting"
	start_scripted busy mysql -1
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 400ms "mysql://127.0.0.1:$PORT"
	assert_eq "$status $stderr" \
		"1 backoff: wait: mysql://127.0.0.1:$PORT: not ready after 400ms (MySQL: too many connections (1040))" \
		"always 1040"
}

@test "redis: a server loading its data set (-LOADING) is waited for; once the wait returns, GET answers" {
	start_loading_redis
	run --separate-stderr timeout 30 env "${LOGGED[@]}" "$LAUNCHER" wait --timeout 20s \
		"redis://127.0.0.1:$REDIS_PORT" -- redis-cli -p "$REDIS_PORT" GET key:1
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "value:1" "GET right after the wait"
	assert_match "$(json_events "$T/log.json" not-ready message | head -1)" \
		"^wait redis://127.0.0.1:$REDIS_PORT: not ready \(-LOADING " "a LOADING answer met"
}

# ---- PostgreSQL ----

pg_init() {
	local bin dirs=(/usr/lib/postgresql/*/bin)
	bin=$(printf '%s\n' "${dirs[@]}" | sort -V | tail -n 1)
	[[ -n $bin && -x $bin/initdb && -x $bin/pg_ctl ]] && command -v psql >/dev/null ||
		skip "PostgreSQL server binaries or psql not installed (apt-get install postgresql)"
	PG_AS=()
	if ((EUID == 0)); then
		command -v runuser >/dev/null && id nobody >/dev/null 2>&1 ||
			skip "running as root, but runuser or the user nobody is missing"
		PG_AS=(runuser -u nobody --)
	fi
	PG_BIN=$bin
	PG_DIR=$(mktemp -d /tmp/libbackoff-pg.XXXXXX)
	chmod 755 "$PG_DIR"
	((EUID != 0)) || chown -R nobody: "$PG_DIR"
	"${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync -E UTF8 \
		--locale=C >"$PG_DIR/initdb.log" 2>&1 || fail "initdb: $(tail -n 3 "$PG_DIR/initdb.log")"
	PG_PORT=$(free_port)
}

pg_stop() {
	[[ -n ${PG_BIN:-} && -f $PG_DIR/data/postmaster.pid ]] || return 0
	"${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 20 stop >/dev/null 2>&1 || true
}

# pg_start_recovering: the server in archive recovery (restore_command takes a second a
# file, hot standby off): it listens at once and answers 57P03 for about 3 s.
pg_start_recovering() {
	: >"$PG_DIR/server.log"
	touch "$PG_DIR/data/recovery.signal"
	((EUID != 0)) || chown nobody: "$PG_DIR/server.log" "$PG_DIR/data/recovery.signal"
	"${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -W \
		-o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c shared_buffers=1MB -c fsync=off -c log_line_prefix='%n ' -c restore_command='sleep 1; false' -c hot_standby=off" \
		start >/dev/null
}

# pg_log_wall_ms TEXT: when the server logged TEXT first (wall ms).
pg_log_wall_ms() {
	local line
	line=$(grep -F "$1" "$PG_DIR/server.log" | head -n 1)
	[[ $line =~ ^([0-9]+)\.([0-9]{3})\  ]] || fail "no '$1' in the server log" || return
	echo "$((BASH_REMATCH[1] * 1000 + 10#${BASH_REMATCH[2]}))"
}

@test "postgres: a server in recovery (57P03) is not ready; the wait ends once it accepts sessions, within 150 ms, not at its listen" {
	pg_init
	pg_start_recovering
	wait_for_line "$PG_DIR/server.log" "listening on IPv4" 20
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 500ms "postgres://127.0.0.1:$PG_PORT"
	assert_eq "$status" 1 "status while in recovery: $stderr"
	assert_match "$stderr" \
		"^backoff: wait: postgres://127.0.0.1:$PG_PORT: not ready after 500ms \(SQLSTATE 57P03: the database system is (not accepting connections|starting up)\)$" \
		"the one line"
	run --separate-stderr timeout 30 env "${LOGGED[@]}" "$LAUNCHER" wait --timeout 20s \
		"postgres://127.0.0.1:$PG_PORT" -- bash -c 'echo "$EPOCHREALTIME"; psql -X -h 127.0.0.1 -p "$1" -U postgres -At -c "select 42"' bash "$PG_PORT"
	assert_eq "$status" 0 "status: $stderr"
	local done_ms ready listen
	done_ms=$(head -n 1 <<<"$output" | tr -d .)
	done_ms=$((done_ms / 1000))
	assert_eq "$(tail -n 1 <<<"$output")" 42 "psql right after the wait"
	ready=$(pg_log_wall_ms "ready to accept connections")
	listen=$(pg_log_wall_ms "listening on IPv4")
	assert_between "$((ready - listen))" 1000 20000 "ms the server was not ready while listening"
	assert_ready_within "$done_ms" "$ready" 150 postgres
	assert_between "$(json_events "$T/log.json" not-ready | wc -l)" 2 1000 "not-ready answers met"
}

@test "postgres: a server never started is 1 at the timeout, with one line" {
	local port start elapsed
	port=$(free_port)
	start=$(now_ms)
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 1s "postgres://127.0.0.1:$port"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status $stderr" \
		"1 backoff: wait: postgres://127.0.0.1:$port: not ready after 1s (connect: ECONNREFUSED)" "the one line"
	assert_between "$elapsed" 950 2000 "ms until the give-up"
}

# ---- the command line ----

@test "a bad target: status 2 and one line saying what targets look like" {
	local target
	for target in ftp://x tcp://127.0.0.1 tcp://127.0.0.1:0 tcp://127.0.0.1:99999 tcp://:80 \
		unix:relative postgres://127.0.0.1:5432/db 'tcp://[::1' redis://h:6379x; do
		run --separate-stderr "$LAUNCHER" wait "$target" -- echo ran
		assert_eq "$status" 2 "status for $target" || return
		assert_eq "$stderr" "backoff: wait: \"$target\": expected tcp://HOST:PORT, unix:/PATH, http://HOST:PORT/PATH, postgres://HOST:PORT, redis://HOST:PORT or mysql://HOST:PORT" \
			"stderr for $target" || return
		assert_eq "$output" "" "the command did not run for $target" || return
	done
	run --separate-stderr "$LAUNCHER" wait -- echo ran
	assert_eq "$status" 2 "status without a target"
	assert_eq "$stderr" "backoff: wait: no target given
usage: backoff [options] wait TARGET... [-- command [args...]] (backoff wait --help for more)" \
		"stderr without a target"
}

@test "the command after -- runs once every target is ready, with its own exit status; options go before or after wait" {
	start_listener a 0
	local a=$PORT
	start_listener b 300
	run --separate-stderr timeout 20 "$LAUNCHER" --base 10ms --cap 50ms wait "tcp://127.0.0.1:$a" \
		--timeout 10s "tcp://localhost:$PORT" -- sh -c 'echo "ran $BACKOFF_CAP $BACKOFF_TIMEOUT"; exit 7'
	assert_eq "$status" 7 "the command's status: $stderr"
	assert_eq "$output" "ran 50ms 10s" "the command ran, with the options' variables"
	run --separate-stderr "$LAUNCHER" wait --help
	assert_eq "$status" 0 "backoff wait --help"
	assert_match "${lines[0]}" "^usage: backoff \[options\] wait TARGET\.\.\. " "its usage"
}

@test "the timeout bounds the whole wait, not each target" {
	start_listener late 600
	local late=$PORT start elapsed
	closed_port never
	start=$(now_ms)
	run --separate-stderr timeout 20 "$LAUNCHER" wait --timeout 1s "tcp://127.0.0.1:$late" \
		"tcp://127.0.0.1:$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status $stderr" "1 backoff: wait: tcp://127.0.0.1:$PORT: not ready after 1s (connect: ECONNREFUSED)" \
		"the one line, of the second target"
	assert_between "$elapsed" 950 1450 "ms for a target 600 ms late and one that never comes"
}

@test "a waiting backoff wait is a waiter of its destination in backoff status, its prober" {
	closed_port never
	export BACKOFF_SHARED=$T/state
	start_bg wait "$LAUNCHER" wait --timeout 10s "tcp://127.0.0.1:$PORT"
	local line
	status_until "^127\.0\.0\.1:$PORT +waiting" 5 || return
	line=$(grep "^127\.0\.0\.1:$PORT " <<<"$STATUS_OUT")
	assert_match "$line" "^127\.0\.0\.1:$PORT +waiting +[^ ]+ +ECONNREFUSED +$(<"$T/wait.pid")/backoff +1 " \
		"backoff status while the wait waits"
}
