#!/usr/bin/env bats
# psql (libpq: always non-blocking, poll() then SO_ERROR) against a real
# PostgreSQL server that the test starts late, over TCP and its unix socket.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

# One cluster for the file: initdb is the slow part.  PostgreSQL refuses to
# run as root, so as root it runs as nobody, in a directory nobody owns.
setup_file() {
	local bin dirs=(/usr/lib/postgresql/*/bin)
	bin=$(printf '%s\n' "${dirs[@]}" | sort -V | tail -n 1)
	if [[ -z $bin || ! -x $bin/initdb || ! -x $bin/pg_ctl ]] || ! command -v psql >/dev/null; then
		export PG_SKIP="PostgreSQL server binaries (/usr/lib/postgresql/*/bin) or psql not installed (apt-get install postgresql)"
		return 0
	fi
	PG_AS=()
	if ((EUID == 0)); then
		if ! command -v runuser >/dev/null || ! id nobody >/dev/null 2>&1; then
			export PG_SKIP="running as root, but runuser or the user nobody is missing"
			return 0
		fi
		PG_AS=(runuser -u nobody --)
	fi
	PG_DIR=$(mktemp -d /tmp/libbackoff-pg.XXXXXX)
	chmod 755 "$PG_DIR"
	mkdir "$PG_DIR/sock"
	((EUID != 0)) || chown -R nobody: "$PG_DIR"
	if ! "${PG_AS[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync \
		-E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1; then
		PG_SKIP="initdb failed: $(tail -n 3 "$PG_DIR/initdb.log" | tr '\n' ' ')"
		export PG_SKIP
		return 0
	fi
	# Trust for postgres; a password for alice, mallory rejected (an error as the first answer).
	printf '%s\n' "local all all trust" "host all alice 127.0.0.1/32 scram-sha-256" \
		"host all mallory 127.0.0.1/32 reject" "host all all 127.0.0.1/32 trust" >"$PG_DIR/hba.conf"
	export PG_BIN=$bin PG_DIR PG_AS_FLAT="${PG_AS[*]}"
}

teardown_file() {
	[[ -n ${PG_DIR:-} && -d $PG_DIR ]] || return 0
	pg_stop
	rm -rf "$PG_DIR"
}

setup() {
	require_build
	[[ -z ${PG_SKIP:-} ]] || skip "$PG_SKIP"
	read -r -a PG_AS <<<"$PG_AS_FLAT"
	# A port out of the kernel's ephemeral range, so that no client's source
	# port can take it between this check and the server's start.
	PG_PORT=$("$PYTHON" -c '
import random, socket
for _ in range(200):
    port = random.randrange(20000, 32000)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
')
	[[ -n $PG_PORT ]] || fail "no free port in 20000-32000"
	PG_SOCKET=$PG_DIR/sock/.s.PGSQL.$PG_PORT
}

teardown() {
	pg_stop
	stop_bg_all
}

pg_stop() {
	[[ -n ${PG_BIN:-} && -f $PG_DIR/data/postmaster.pid ]] || return 0
	read -r -a PG_AS <<<"${PG_AS_FLAT:-}"
	"${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 20 stop >/dev/null 2>&1 || true
}

# pg_start: the server on 127.0.0.1:$PG_PORT and in $PG_DIR/sock; its log
# lines start with the epoch time in ms (%n), for the listen time.
pg_start() {
	: >"$PG_DIR/server.log"
	((EUID != 0)) || chown nobody: "$PG_DIR/server.log"
	"${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 20 \
		-o "-p $PG_PORT -k $PG_DIR/sock -c listen_addresses=127.0.0.1 -c shared_buffers=1MB -c fsync=off -c log_line_prefix='%n ' -c hba_file=$PG_DIR/hba.conf ${PG_EXTRA:-}" \
		"${PG_WAIT:--w}" start
}

# pg_start_recovering: the server started in archive recovery whose
# restore_command takes a second a file, with hot standby off: it listens at
# once, and answers every start-up with SQLSTATE 57P03 ("the database system
# is not accepting connections") for about 3 s, until the recovery ends.
pg_start_recovering() {
	touch "$PG_DIR/data/recovery.signal"
	((EUID != 0)) || chown nobody: "$PG_DIR/data/recovery.signal"
	PG_EXTRA="-c restore_command='sleep 1; false' -c hot_standby=off" PG_WAIT=-W pg_start
}

# pg_ready_wall_ms: when the server logged that it accepts connections (wall ms).
pg_ready_wall_ms() {
	local line
	line=$(grep -F "ready to accept connections" "$PG_DIR/server.log" | tail -n 1)
	[[ $line =~ ^([0-9]+)\.([0-9]{3})\  ]] || fail "no 'ready to accept connections' in the server log" || return
	echo "$((BASH_REMATCH[1] * 1000 + 10#${BASH_REMATCH[2]}))"
}

# pg_start_after LOG ATTEMPT: starts the server as soon as the client's JSON
# LOG shows the retry of ATTEMPT.
pg_start_after() {
	wait_for_line "$1" "\"event\":\"retry\".*\"attempt\":$2," 20 && pg_start
}

# pg_listen_wall_ms WHAT: when the server logged "listening on WHAT", as
# wall-clock ms (the JSON log has wall-clock times too, in "time").
pg_listen_wall_ms() {
	local line
	line=$(grep -F "listening on $1" "$PG_DIR/server.log" | head -n 1)
	[[ $line =~ ^([0-9]+)\.([0-9]{3})\  ]] || fail "no 'listening on $1' in the server log" || return
	echo "$((BASH_REMATCH[1] * 1000 + 10#${BASH_REMATCH[2]}))"
}

# json_wall_ms LOG EVENT: the wall-clock ms of each EVENT of the JSON log.
json_wall_ms() {
	json_events "$1" "$2" time | "$PYTHON" -c '
import sys, datetime
for line in sys.stdin:
    t = datetime.datetime.strptime(line.strip(), "%Y-%m-%dT%H:%M:%S.%fZ")
    print(int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000))
'
}

# late_psql HOST TARGET ERRNO LISTEN_WHAT: psql -h HOST started before the
# server gets 42 from it; the log shows the retries and the success.
#
# The schedule is deterministic (no jitter, 500 ms apart) and the server is
# started as the third attempt fails, about 1 s after the client: PostgreSQL
# listens a few ms before it accepts sessions ("the database system is
# starting up"); over the unix socket the library does not see that answer
# (it watches connections over IP), so the attempts are kept 500 ms away from
# that window: on the planned schedule alone (BACKOFF_LOCAL_PROBE=off), since
# a look for the listener would connect within 10 ms of the listen.  Over TCP
# the window is the not-ready test's, below.
late_psql() {
	local host=$1 target=$2 errno=$3 what=$4 listen success
	start_bg pgstart pg_start_after "$T/log.json" 3
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_LOCAL_PROBE=off \
		BACKOFF_BASE=500ms BACKOFF_CAP=500ms \
		BACKOFF_MULTIPLIER=1 BACKOFF_JITTER=none BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" psql -X -h "$host" -p "$PG_PORT" -U postgres -At \
		-c 'select 42'
	assert_eq "$status" 0 "psql status (stderr: $stderr)"
	assert_eq "$output" 42 "psql output"

	local retries
	retries=$(json_events "$T/log.json" retry target errno attempt delay_ms | tr '\n' ' ')
	assert_match "$retries" "^$target $errno 1 500 $target $errno 2 500 $target $errno 3 500 " \
		"retry events"
	assert_eq "$(json_events "$T/log.json" retry target | grep -cvxF "$target" || true)" 0 \
		"retry events of another target"
	local n
	n=$(json_events "$T/log.json" retry target | wc -l)
	assert_eq "$(json_events "$T/log.json" success target attempt)" "$target $((n + 1))" \
		"success event"
	listen=$(pg_listen_wall_ms "$what")
	success=$(json_wall_ms "$T/log.json" success)
	assert_between "$success" "$listen" "$((listen + 500 + 500))" "success time (wall ms)"
	# shellcheck disable=SC2034 # for record_matrix
	CONNECT_ATTEMPTS=$((n + 1)) CONNECT_AFTER_LISTEN_MS=$((success - listen))
}

@test "psql over TCP gets 42 from a PostgreSQL server started 1 s after it" {
	late_psql 127.0.0.1 "127.0.0.1:$PG_PORT" ECONNREFUSED "IPv4 address \"127.0.0.1\", port $PG_PORT"
	record_matrix "psql -h 127.0.0.1" "poll + SO_ERROR"
}

@test "psql over the unix socket gets 42 from a PostgreSQL server started 1 s after it" {
	late_psql "$PG_DIR/sock" "unix:$PG_SOCKET" ENOENT "Unix socket \"$PG_SOCKET\""
	record_matrix "psql -h /socket/dir" "poll + SO_ERROR (ENOENT at connect made in progress)"
}

@test "psql -h NAME gets 42 once NAME is in /etc/hosts 3 s after it started, with BACKOFF_NAMES; without a pattern its error at once" {
	private_hosts
	pg_start
	local start
	start=$(now_ms)
	run --separate-stderr timeout 20 "${IN_HOSTS[@]}" env LD_PRELOAD="$LIB" psql -X -h pg-late \
		-p "$PG_PORT" -U postgres -At -c 'select 42'
	assert_eq "$status" 2 "psql status without a pattern"
	assert_match "$stderr" 'could not translate host name "pg-late" to address' "psql's error"
	assert_between "$(($(now_ms) - start))" 0 2000 "ms until psql's error"

	add_host_after 3 127.0.0.1 pg-late
	run --separate-stderr timeout 20 "${IN_HOSTS[@]}" env LD_PRELOAD="$LIB" \
		BACKOFF_NAMES='pg-*,*.svc.cluster.local' BACKOFF_CAP=500ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" psql -X -h pg-late -p "$PG_PORT" \
		-U postgres -At -c 'select 42'
	assert_eq "$status" 0 "psql status (stderr: $stderr)"
	assert_eq "$output" 42 "psql output"
	assert_eq "$(json_events "$T/log.json" retry call target errno | sort -u)" \
		"getaddrinfo pg-late EAI_NONAME" "retry events"
	local found added
	found=$(json_events "$T/log.json" success mono_ms)
	added=$(<"$T/added")
	# Within a capped delay (500 ms) of its appearance.
	assert_between "$((found - added))" 0 1000 "ms from the name's appearance to its lookup"
}

@test "psql connect_timeout=2 still ends after 2 s while the library retries" {
	# Without the library, at the same time: a server that never answers
	# (SYNs dropped), so that psql's own timeout fires.
	start_blackhole silent
	local silent_port=$PORT start elapsed base_status=0
	start_bg base timeout 20 psql -X "host=127.0.0.1 port=$silent_port user=postgres connect_timeout=2" \
		-c 'select 42'

	# With it, against a port that refuses: retried until psql's own timeout.
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_RETRIES=1000 BACKOFF_BASE=50ms \
		BACKOFF_CAP=300ms BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		psql -X "host=127.0.0.1 port=$PG_PORT user=postgres connect_timeout=2" -c 'select 42'
	elapsed=$(($(now_ms) - start))
	wait "$(<"$T/base.pid")" || base_status=$?

	assert_eq "$base_status" 2 "psql status without the library"
	assert_eq "$status" 2 "psql status with the library"
	assert_eq "$(normalized_output "$stderr" | sed "s/\b$PG_PORT\b/PORT/g")" \
		"$(sed "s/\b$silent_port\b/PORT/g" "$T/base.err")" "psql error with the library"
	assert_match "$stderr" 'timeout expired' "psql error"
	assert_between "$elapsed" 1700 2300 "run time in ms"
	assert_between "$(json_events "$T/log.json" retry | wc -l)" 3 1000 "retry events"
	assert_eq "$(json_events "$T/log.json" retry target | sort -u)" "127.0.0.1:$PG_PORT" \
		"retry targets"
}

@test "psql over TCP gives up with its usual error when retries run out" {
	assert_fails_alike "BACKOFF_RETRIES=2 BACKOFF_BASE=20ms" \
		psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 'select 42'
	assert_match "$stderr" 'Connection refused' "psql error"
	assert_match "$stderr" "giving up after 3 attempts" "library give-up line"
}

@test "psql over the unix socket gives up with its usual error when retries run out" {
	assert_fails_alike "BACKOFF_RETRIES=2 BACKOFF_BASE=20ms" \
		psql -X -h "$PG_DIR/sock" -p "$PG_PORT" -U postgres -c 'select 42'
	assert_match "$stderr" 'No such file or directory' "psql error"
	assert_match "$stderr" "giving up after 3 attempts" "library give-up line"
}

@test "psql (TCP, local look on) against a PostgreSQL that answers 'not accepting connections' for 3 s: 42 once it does; without the library its FATAL" {
	pg_start_recovering
	wait_for_line "$PG_DIR/server.log" "listening on IPv4" 20
	run --separate-stderr timeout 20 psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select 42'
	assert_eq "$status" 2 "psql status without the library: $output"
	assert_match "$stderr" "not accepting connections|starting up" "psql error without the library"
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_CAP=500ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" BACKOFF_SHARED="$T/state" \
		psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select 42'
	local done_ms ready
	done_ms=$(now_ms)
	assert_eq "$status $output" "0 42" "psql with the library: $stderr"
	assert_between "$(json_events "$T/log.json" not-ready | wc -l)" 2 100 "not-ready answers met"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "replay" \
		"each start-up made again"
	ready=$(pg_ready_wall_ms)
	assert_between "$((done_ms - ready))" 0 1500 "ms from the server's readiness to psql's answer"
}

@test "psql against a PostgreSQL at max_connections ('too many clients', 53300): 42 once a session ends; without the library its FATAL at once" {
	local i deadline
	PG_EXTRA="-c max_connections=3 -c superuser_reserved_connections=0 -c max_wal_senders=0 -c log_connections=on" \
		pg_start
	for i in 1 2 3; do
		start_bg "holder$i" psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select pg_sleep(3)'
	done
	deadline=$(($(now_ms) + 20000))
	until (($(grep -c "connection authorized" "$PG_DIR/server.log") >= 3)); do
		(($(now_ms) < deadline)) || fail "the three sessions never started: $(tail -5 "$PG_DIR/server.log")" || return
		sleep 0.02
	done
	run --separate-stderr timeout 20 psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select 42'
	assert_eq "$status" 2 "psql status without the library: $output"
	assert_match "$stderr" "too many clients" "psql error without the library"
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_CAP=500ms BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" BACKOFF_SHARED="$T/state" \
		psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select 42'
	assert_eq "$status $output" "0 42" "psql with the library: $stderr"
	assert_between "$(json_events "$T/log.json" not-ready | wc -l)" 1 100 "refusals met"
	assert_eq "$(json_events "$T/log.json" not-ready answer | sort -u)" \
		"PostgreSQL: SQLSTATE 53300 (too many connections)" "the answer, named"
	assert_eq "$(json_events "$T/log.json" not-ready reason | sort -u)" "replay" \
		"each start-up made again"
}

@test "9 psql clients at once against max_connections=3 (each session 1 s): all 9 answer as sessions end; once one has ended, each start-up is tried about once; without the library 3 or so" {
	local i start elapsed tried base late
	PG_EXTRA="-c max_connections=3 -c superuser_reserved_connections=0 -c max_wal_senders=0 -c log_connections=on -c log_disconnections=on" \
		pg_start
	for i in 1 2 3 4 5 6 7 8 9; do
		start_bg "plain$i" psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select pg_sleep(1), 42'
	done
	wait "${BG_PIDS[@]}" || true
	assert_between "$(cat "$T"/plain*.out | grep -c '|42$')" 1 6 "answers without the library"
	base=$(wc -l <"$PG_DIR/server.log")
	BG_PIDS=()
	start=$(now_ms)
	for i in 1 2 3 4 5 6 7 8 9; do
		start_bg "c$i" env LD_PRELOAD="$LIB" BACKOFF_CAP=2s BACKOFF_LOG=info \
			BACKOFF_LOG_FILE="$T/crowd.log" BACKOFF_SHARED="$T/state" \
			psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -At -c 'select pg_sleep(1), 42'
	done
	wait "${BG_PIDS[@]}" || true
	elapsed=$(($(now_ms) - start))
	assert_eq "$(cat "$T"/c*.out | grep -c '|42$')" 9 "answers under the library: $(cat "$T"/c*.err)"
	tail -n "+$((base + 1))" "$PG_DIR/server.log" >"$T/crowd-server.log"
	tried=$(grep -c 'connection received' "$T/crowd-server.log")
	# Start-ups met by "too many clients" once the first session had ended: the line moves as
	# sessions end, each close admitting one (a start-up may still meet the backend of the
	# session that just ended, not yet gone). None measured; on the delays alone, 6 to 8.
	late=$(awk '/disconnection:/ { ended = 1 } ended && /too many clients/ { n++ } END { print n + 0 }' \
		"$T/crowd-server.log")
	assert_between "$late" 0 4 "start-ups refused after the first session ended: $(cat "$T/crowd.log")"
	# Before it ended: the nine's first tries, then one scout per delay, more of them the
	# longer the first sessions take on a loaded machine (15 measured; 25 to 28 on the delays
	# alone, which the count above tells apart).
	assert_between "$tried" 9 30 "connections tried: $(cat "$T/crowd.log")"
	# The pace: 9 / 3 x 1 s, and psql's start-ups.
	assert_between "$elapsed" 2900 7000 "ms for the nine"
	grep -q 'waiting in its line' "$T/crowd.log" || fail "no wait in line: $(cat "$T/crowd.log")"
}

@test "a wrong password, an unknown database and a pg_hba.conf reject reach psql at once, unchanged, without a retry" {
	pg_start
	psql -X -h "$PG_DIR/sock" -p "$PG_PORT" -U postgres -qc "create role alice login password 'right'" ||
		fail "create role"
	local what start elapsed base_status base_err
	for what in "user=alice password=wrong dbname=postgres" "user=postgres dbname=nosuch" \
		"user=mallory dbname=postgres"; do
		run --separate-stderr timeout 20 psql -X "host=127.0.0.1 port=$PG_PORT $what" -c 'select 42'
		base_status=$status base_err=$stderr
		start=$(now_ms)
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
			BACKOFF_LOG_FILE="$T/log.json" BACKOFF_SHARED="$T/state" \
			psql -X "host=127.0.0.1 port=$PG_PORT $what" -c 'select 42'
		elapsed=$(($(now_ms) - start))
		assert_eq "$status" "$base_status" "psql status ($what)"
		assert_eq "$stderr" "$base_err" "psql error ($what)"
		assert_between "$elapsed" 0 1000 "ms ($what)"
	done
	assert_match "$base_err" "rejects connection" "the rejected user's error"
	assert_eq "$(json_events "$T/log.json" not-ready; json_events "$T/log.json" early)" "" \
		"not-ready or early-close events"
}

@test "pgbouncer (preloaded) with PostgreSQL started late: the first query within 1 s of PostgreSQL being ready; without the library its server_login_retry (15 s)" {
	require_program pgbouncer
	local pgb_port mode done_ms ready
	pgb_port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$PG_DIR/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$PG_PORT dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgb_port
auth_type = any
pool_mode = session
unix_socket_dir =
server_login_retry = 15
logfile = $PG_DIR/pgbouncer.log
INI
	((EUID != 0)) || chown nobody: "$PG_DIR/pgbouncer.ini"
	for mode in with without; do
		local env=(env)
		[[ $mode == without ]] ||
			env+=(LD_PRELOAD="$LIB" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$PG_DIR/bo.json")
		start_bg "pgbouncer-$mode" "${PG_AS[@]}" "${env[@]}" pgbouncer "$PG_DIR/pgbouncer.ini"
		wait_for_port "$pgb_port" 5 || fail "pgbouncer does not listen"
		# shellcheck disable=SC2016 # a script for sh
		start_bg "query-$mode" sh -c 'psql -X -h 127.0.0.1 -p "$1" -U postgres -At -c "select 42"; echo "status $? at $(date +%s%3N)"' \
			sh "$pgb_port"
		sleep 1 # PostgreSQL starts late: the query waits for it
		pg_start
		wait_for_line "$T/query-$mode.out" "^status" 30
		read -r _ _ _ done_ms < <(grep '^status' "$T/query-$mode.out")
		ready=$(pg_ready_wall_ms)
		assert_eq "$(head -n 1 "$T/query-$mode.out")" 42 "the query's answer ($mode the library)"
		if [[ $mode == with ]]; then
			assert_between "$((done_ms - ready))" 0 1000 "ms from PostgreSQL's readiness to the answer"
		else
			assert_between "$((done_ms - ready))" 5000 20000 "ms from PostgreSQL's readiness to the answer"
		fi
		pg_stop
		kill "$(<"$T/pgbouncer-$mode.pid")" 2>/dev/null || true
		wait "$(<"$T/pgbouncer-$mode.pid")" 2>/dev/null || true
	done
}

@test "psql behind a socat front whose PostgreSQL starts late gets 42 by default, its start-up made again; without the library the front's end" {
	require_socat
	local front
	front=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	start_bg socat socat "TCP-LISTEN:$front,fork,reuseaddr,bind=127.0.0.1" "TCP:127.0.0.1:$PG_PORT"
	wait_for_port "$front" 5 || fail "socat does not listen on $front"
	run --separate-stderr timeout 20 psql -X -h 127.0.0.1 -p "$front" -U postgres -At -c 'select 42'
	assert_eq "$status" 2 "psql status without the library: $output"
	assert_match "$stderr" "closed the connection unexpectedly" "psql error without the library"
	# shellcheck disable=SC2016 # a script for sh
	start_bg psql env LD_PRELOAD="$LIB" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" BACKOFF_SHARED="$T/state" \
		sh -c 'psql -X -h 127.0.0.1 -p "$1" -U postgres -At -c "select 42"; echo "status $?"' sh "$front"
	# The server starts once psql has met the front's end.
	wait_for_line "$T/log.json" '"event":"early"' 20
	pg_start
	wait_for_line "$T/psql.out" "^status" 30
	assert_eq "$(tr '\n' ' ' <"$T/psql.out")" "42 status 0 " "psql with the library: $(cat "$T/psql.err")"
	assert_eq "$(json_events "$T/log.json" early reason | sort -u)" "replay" \
		"each early close made the start-up again"
}
