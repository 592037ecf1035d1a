#!/usr/bin/env bats
# A front on a server-first port: a mariadb client through socat, whose MariaDB
# is down and starts late.  The client has sent nothing when the front ends the
# connection before MariaDB's greeting; on a well-known server-first port (3306)
# that close is a front's refusal, and the same socket is connected again until
# MariaDB greets.  On an ordinary port (3307) the default takes the same close
# for the server's answer: the client's error at once, as without the library,
# unless BACKOFF_EARLY_CLOSE=refusal asks otherwise.  Each test has a network
# namespace of its own, where those ports are free.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

# MariaDB's port inside the namespace, behind the front.
DB_PORT=3310

setup() {
	require_build
	require_command mariadb-install-db mariadbd mariadb nsenter
	require_socat
	require_unshare -n
	LOGGED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
}

# Run inside the namespace: waits (at most argv[2] s) until a TCP socket
# listens on port argv[1], as the namespace's /proc/net/tcp says (no connection
# is made), then prints "listening mono_ms=N".
LISTENING='
import sys, time
port, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
local = ":%04X" % port
while time.monotonic() < deadline:
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    if any(r[1].endswith(local) and r[3] == "0A" for r in rows):
        print("listening mono_ms=%d" % (time.monotonic_ns() // 1000000), flush=True)
        sys.exit(0)
    time.sleep(0.005)
sys.exit("nothing listens on port %d after %s s" % (port, sys.argv[2]))
'

# start_netns: a network namespace of the test's own, its loopback up, held by
# a background sleep; sets IN_NS, the command that runs a program inside it.
start_netns() {
	start_bg netns "${UNSHARE[@]}" sh -c 'ip link set lo up && echo up && exec sleep 120'
	wait_for_line "$T/netns.out" '^up$' 5 || fail "namespace: $(cat "$T/netns.err")" || return
	IN_NS=(nsenter -t "$(<"$T/netns.pid")" -n)
	# A user namespace too (unshare -r, not root): entered as the user, its root
	# there (that namespace denies setgroups, which nsenter would call otherwise).
	[[ ${UNSHARE[1]} != -r ]] ||
		IN_NS=(nsenter -t "$(<"$T/netns.pid")" -U --preserve-credentials -n)
}

# init_mariadb: MariaDB's data directory in $T (root@127.0.0.1 without a
# password), made outside the namespace beforehand, so that a mariadbd started
# later listens within a few tens of ms.
init_mariadb() {
	local d=$T/mariadb
	mkdir -p "$d"
	mariadb-install-db --no-defaults --datadir="$d/data" --user="$(id -un)" \
		--auth-root-authentication-method=normal --skip-test-db \
		--innodb-log-file-size=4M >"$d/install.log" 2>&1 ||
		fail "mariadb-install-db: $(tail -5 "$d/install.log")"
}

# start_socat_front PORT: socat in the namespace forwarding 127.0.0.1:PORT to
# MariaDB's port, each connection on its own, once it listens.  With MariaDB
# down it accepts, fails its own connect and ends the connection before a byte.
start_socat_front() {
	start_bg front "${IN_NS[@]}" socat "TCP-LISTEN:$1,fork,reuseaddr,bind=127.0.0.1" \
		"TCP:127.0.0.1:$DB_PORT"
	timeout 10 "${IN_NS[@]}" "$PYTHON" -c "$LISTENING" "$1" 5 >/dev/null ||
		fail "socat does not listen on $1: $(cat "$T/front.err")"
}

# start_mariadb_late SECONDS: mariadbd in the namespace on DB_PORT, started
# after SECONDS (the lateness of the test's server, not a wait for anything);
# the watcher "listened" prints "listening mono_ms=N" once it listens.
start_mariadb_late() {
	local d=$T/mariadb
	# shellcheck disable=SC2016 # expanded by the inner shell
	start_bg mariadb "${IN_NS[@]}" sh -c 'sleep "$0" && exec "$@"' "$1" \
		mariadbd --no-defaults --datadir="$d/data" --user=root \
		--bind-address=127.0.0.1 --port="$DB_PORT" --socket="$d/sock" \
		--pid-file="$d/pid" --log-error="$d/error.log" --skip-name-resolve --skip-log-bin \
		--innodb-log-file-size=4M --innodb-buffer-pool-size=16M --max-connections=10
	start_bg listened "${IN_NS[@]}" "$PYTHON" -c "$LISTENING" "$DB_PORT" 20
}

# mariadb_select PORT [VAR=VALUE...]: the mariadb client in the namespace, as
# root, running SELECT 1 through 127.0.0.1:PORT under env with those variables.
mariadb_select() {
	local port=$1
	shift
	timeout 20 "${IN_NS[@]}" env "$@" mariadb --no-defaults -h 127.0.0.1 -P "$port" -u root \
		-N -e 'SELECT 1'
}

# mariadb_error TEXT: TEXT with the errno that mariadb appends to ERROR 2013
# ("system error: N") as N: a stale one, EAGAIN (11) or EINPROGRESS (115) as
# the front's close comes before the client's first read or after it.
mariadb_error() {
	sed -E 's/system error: [0-9]+/system error: N/' <<<"$1"
}

# assert_connected_after_listen LOG PORT START ELAPSED: MariaDB, started with
# start_mariadb_late at START (mono_ms), listened about 1.5 s later, and the
# client that ran ELAPSED ms from START met the front's closes until then,
# each one taken for a refusal (reason reconnect), none given up.
assert_connected_after_listen() {
	local log=$1 port=$2 start=$3 elapsed=$4 listen first
	wait_for_line "$T/listened.out" '^listening ' 5 ||
		fail "MariaDB never listened: $(tail -5 "$T/mariadb/error.log")" || return
	listen=$(listener_mono listened listening)
	assert_between "$((listen - start))" 1300 3000 "ms until MariaDB listened" || return
	assert_between "$elapsed" "$((listen - start))" 20000 "ms until the client's answer" || return
	assert_between "$(json_events "$log" early | wc -l)" 2 50 "early closes met" || return
	assert_eq "$(json_events "$log" early target reason | sort -u)" "127.0.0.1:$port reconnect" \
		"the early closes: the same socket connected again" || return
	first=$(json_events "$log" early mono_ms | head -n 1)
	assert_between "$first" 0 "$((listen - 1))" "the first early close (before MariaDB listened)" ||
		return
	assert_eq "$(json_events "$log" early-end)$(json_events "$log" giveup)" "" \
		"early closes given up"
}

@test "a mariadb client through a front on port 3306 whose MariaDB starts 1.5 s late: connected, as the front's closes are refusals; without the library ERROR 2013 at once" {
	local start elapsed
	init_mariadb
	start_netns
	start_socat_front 3306
	start=$(now_ms)
	run --separate-stderr mariadb_select 3306
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "1/" "status and output without the library: $stderr"
	assert_match "$stderr" "^ERROR 2013 \\(HY000\\): Lost connection to server at 'handshake: reading initial communication packet'" \
		"without the library"
	assert_between "$elapsed" 0 500 "ms without the library"

	start=$(mono_ms)
	start_mariadb_late 1.4
	run --separate-stderr mariadb_select 3306 LD_PRELOAD="$LIB" "${LOGGED[@]}"
	elapsed=$(($(mono_ms) - start))
	assert_eq "$status/$output" "0/1" "mariadb under the library: $stderr"
	assert_connected_after_listen "$T/log.json" 3306 "$start" "$elapsed"
}

@test "the same front on an ordinary port (3307): the client's error at once as without the library, the close taken for an answer; connected with BACKOFF_EARLY_CLOSE=refusal" {
	local start elapsed base_status base_err
	init_mariadb
	start_netns
	start_socat_front 3307
	run --separate-stderr mariadb_select 3307
	base_status=$status base_err=$stderr
	assert_eq "$base_status/$output" "1/" "status and output without the library: $stderr"
	assert_match "$base_err" "^ERROR 2013 \\(HY000\\): Lost connection" "without the library"

	start=$(now_ms)
	run --separate-stderr mariadb_select 3307 LD_PRELOAD="$LIB" "${LOGGED[@]}"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "$base_status/" "status and output under the library: $stderr"
	assert_eq "$(mariadb_error "$stderr")" "$(mariadb_error "$base_err")" \
		"the error under the library"
	assert_between "$elapsed" 0 500 "ms under the library"
	assert_eq "$(json_events "$T/log.json" early-end target reason)" "127.0.0.1:3307 answer" \
		"the close, taken for the server's answer"
	assert_eq "$(json_events "$T/log.json" early)" "" "early closes taken for a refusal"

	# Asked for: the same front's closes are refusals until MariaDB greets.
	start=$(mono_ms)
	start_mariadb_late 1.4
	run --separate-stderr mariadb_select 3307 LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		BACKOFF_LOG_FILE="$T/refusal.json" BACKOFF_EARLY_CLOSE=refusal
	elapsed=$(($(mono_ms) - start))
	assert_eq "$status/$output" "0/1" "mariadb with BACKOFF_EARLY_CLOSE=refusal: $stderr"
	assert_connected_after_listen "$T/refusal.json" 3307 "$start" "$elapsed"
}
