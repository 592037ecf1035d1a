# Shared set-up for the bats files: paths, small asserts, background servers, log parsing.
# shellcheck shell=bash disable=SC2034 # its variables are for the bats files that load it

bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
BUILD=${TEST_BUILD_DIR:-$ROOT/build}
# What the tests put in LD_PRELOAD.  TEST_PRELOAD_FIRST comes before the
# library: the ASan runtime under make sanitize, which must be loaded first.
LIB=${TEST_PRELOAD_FIRST:+$TEST_PRELOAD_FIRST:}$BUILD/libbackoff.so
HELPERS=$BUILD/helpers
SCHEDULE=$BUILD/backoff-schedule
LAUNCHER=$ROOT/scripts/backoff
T=$BATS_TEST_TMPDIR

# Every variable the library reads, as listed in the interface contract.
BACKOFF_VARIABLES=(BACKOFF BACKOFF_POLICY BACKOFF_BASE BACKOFF_MULTIPLIER BACKOFF_CAP
	BACKOFF_JITTER BACKOFF_RETRIES BACKOFF_TIMEOUT BACKOFF_ATTEMPT_TIMEOUT BACKOFF_ERRORS BACKOFF_TARGETS
	BACKOFF_DESTINATIONS 	BACKOFF_NONBLOCK BACKOFF_SEND BACKOFF_DNS BACKOFF_NAMES BACKOFF_LOG BACKOFF_LOG_FILE
	BACKOFF_LOG_FORMAT BACKOFF_SEED BACKOFF_STATS BACKOFF_ENGINE BACKOFF_STRICT BACKOFF_SHARED
	BACKOFF_LOCAL_PROBE BACKOFF_REPLAY BACKOFF_EARLY_CLOSE BACKOFF_PROTOCOLS BACKOFF_RUN BACKOFF_PROGRAMS)

# A test sees only the variables it sets itself.
unset LD_PRELOAD "${BACKOFF_VARIABLES[@]}"

# The real interpreter, not a version-manager shim: the shim is a shell script
# that would run (and connect) under the preload too.  Cached for the run.
if [[ -s $BATS_RUN_TMPDIR/python ]]; then
	PYTHON=$(<"$BATS_RUN_TMPDIR/python")
else
	PYTHON=$(python3 -c 'import sys; print(sys.executable)')
	printf '%s\n' "$PYTHON" >"$BATS_RUN_TMPDIR/python"
fi

fail() {
	printf '%s\n' "$@" >&2
	return 1
}

# assert_eq ACTUAL EXPECTED [WHAT]
assert_eq() {
	[[ $1 == "$2" ]] ||
		fail "${3:-value} differs" "expected: '$2'" "     got: '$1'"
}

# assert_match ACTUAL REGEX [WHAT]
assert_match() {
	[[ $1 =~ $2 ]] ||
		fail "${3:-value} does not match" "   regex: '$2'" "     got: '$1'"
}

# assert_no_match ACTUAL REGEX [WHAT]
assert_no_match() {
	! [[ $1 =~ $2 ]] ||
		fail "${3:-value} matches what it must not" "   regex: '$2'" "     got: '$1'"
}

# assert_between VALUE LOW HIGH [WHAT]: integers, bounds included.
assert_between() {
	[[ $1 =~ ^-?[0-9]+$ ]] || fail "${4:-value} is not an integer: '$1'" || return
	((($1) >= ($2) && ($1) <= ($3))) ||
		fail "${4:-value} out of range" "expected: [$2, $3]" "     got: $1"
}

# require_build: the library and the helpers must have been built by make.
require_build() {
	local f
	for f in "$BUILD/libbackoff.so" "$HELPERS/late-listener" "$HELPERS/probe"; do
		[[ -e $f ]] || fail "$f is missing: run make first" || return
	done
}

# skip REASON: with BACKOFF_TEST_NO_SKIP=1 (.ci/run, where every program the
# suite needs is installed) a test that cannot run fails instead of skipping,
# so that no gap hides behind a skip; otherwise bats's own skip.  The setting
# moves to TEST_NO_SKIP: the library warns about a BACKOFF_* name it does not know.
if [[ -n ${BACKOFF_TEST_NO_SKIP+set} ]]; then
	export TEST_NO_SKIP=$BACKOFF_TEST_NO_SKIP
fi
# No other BACKOFF_* name of the caller's environment reaches a test either.
for exported in $(compgen -e); do
	[[ $exported != BACKOFF_* ]] || unset "$exported"
done
if [[ ${TEST_NO_SKIP:-} == 1 ]]; then
	skip() {
		fail "cannot run: ${1:-no reason given}" \
			"(BACKOFF_TEST_NO_SKIP=1: a test that would be skipped fails)"
	}
fi

# require_program NAME [PACKAGE]: skip unless NAME is installed, naming the
# Debian package that has it (PACKAGE, default NAME).
require_program() {
	command -v "$1" >/dev/null || skip "$1 is not installed (apt-get install ${2:-$1})"
}

require_socat() {
	require_program socat
}

require_wget() {
	require_program wget
}

require_strace() {
	require_program strace
	strace -qq -e trace=none true 2>/dev/null || skip "strace cannot trace here (ptrace denied)"
}

# require_unshare FLAGS...: sets UNSHARE to a command creating those
# namespaces: unshare as root, else unshare -r in a user namespace.
require_unshare() {
	require_program unshare util-linux
	if ((EUID == 0)) && unshare "$@" true 2>/dev/null; then
		UNSHARE=(unshare "$@")
	elif unshare -r "$@" true 2>/dev/null; then
		UNSHARE=(unshare -r "$@")
	else
		skip "unshare $* needs root or unprivileged user namespaces"
	fi
}

# etc_overlay: the lines of a bash script, run as root in a mount namespace of its own,
# that lay a writable overlay on /etc: what the script writes there lands in $T/etc and
# goes with the namespace (the whole host's files: tests/75-host-wide.bats, 76-recipes.bats).
etc_overlay() {
	cat <<EOF
mkdir -p "$T/etc"
mount -t tmpfs tmpfs "$T/etc"
mkdir "$T/etc/upper" "$T/etc/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$T/etc/upper,workdir=$T/etc/work" /etc
EOF
}

# private_hosts: sets IN_HOSTS to a command prefix that runs a command in a
# private mount namespace whose /etc/hosts is $T/hosts (a copy of this host's)
# and whose resolver reads that file alone (hosts: files), so that an
# unknown name is "no such name" whatever DNS this host has.  A line written
# into $T/hosts from outside is seen by the next lookup: glibc reads the file
# at each one (measured: 2.36; a second bind mount over it works too).
private_hosts() {
	[[ -f /etc/hosts && -f /etc/nsswitch.conf ]] || skip "no /etc/hosts or /etc/nsswitch.conf to mount over"
	require_unshare -m
	cp /etc/hosts "$T/hosts"
	printf 'hosts: files\n' >"$T/nsswitch.conf"
	# shellcheck disable=SC2016 # expanded by the inner shell
	IN_HOSTS=("${UNSHARE[@]}" sh -c 'mount --bind "$1" /etc/hosts &&
		mount --bind "$2" /etc/nsswitch.conf && shift 2 && exec "$@"' sh "$T/hosts" "$T/nsswitch.conf")
}

# add_host_after SECONDS IP NAME: in the background, NAME appears in $T/hosts
# SECONDS from now (the scenario's delay, not a synchronisation); the
# monotonic ms it appeared at is written to $T/added.
add_host_after() {
	start_bg adder "$PYTHON" -c '
import sys, time
time.sleep(float(sys.argv[1]))
with open(sys.argv[2], "a") as f:
    f.write(sys.argv[3] + " " + sys.argv[4] + "\n")
with open(sys.argv[5], "w") as f:
    f.write(str(time.monotonic_ns() // 1000000) + "\n")
' "$1" "$T/hosts" "$2" "$3" "$T/added"
}

# now_ms: wall-clock milliseconds, for durations measured around a command.
now_ms() {
	local us=${EPOCHREALTIME//[!0-9]/}
	echo $((us / 1000))
}

# mono_ms: CLOCK_MONOTONIC in milliseconds, the clock of the log's mono_ms.
mono_ms() {
	"$PYTHON" -c 'import time; print(time.monotonic_ns() // 1000000)'
}

# wait_for_file FILE TIMEOUT_S: until FILE exists and is not empty.
wait_for_file() {
	local deadline=$(($(now_ms) + $2 * 1000))
	until [[ -s $1 ]]; do
		(($(now_ms) < deadline)) || fail "timed out after $2 s waiting for $1" || return
		sleep 0.01
	done
}

# wait_for_gone FILE TIMEOUT_S: until FILE no longer exists.
wait_for_gone() {
	local deadline=$(($(now_ms) + $2 * 1000))
	while [[ -e $1 ]]; do
		(($(now_ms) < deadline)) || fail "timed out after $2 s waiting for $1 to go" || return
		sleep 0.01
	done
}

# wait_for_line FILE REGEX TIMEOUT_S: until a line of FILE matches REGEX (grep -E).
wait_for_line() {
	local deadline=$(($(now_ms) + $3 * 1000))
	until grep -Eq -- "$2" "$1" 2>/dev/null; do
		(($(now_ms) < deadline)) || fail "timed out after $3 s waiting for /$2/ in $1" || return
		sleep 0.01
	done
}

# status_until REGEX TIMEOUT_S ARGS...: `backoff status ARGS` until its output
# matches REGEX (grep -E); the last output in STATUS_OUT.
status_until() {
	local regex=$1 deadline=$(($(now_ms) + $2 * 1000))
	shift 2
	until STATUS_OUT=$("$LAUNCHER" status "$@") && grep -Eq -- "$regex" <<<"$STATUS_OUT"; do
		(($(now_ms) < deadline)) ||
			fail "timed out after $deadline ms waiting for /$regex/ in:" "$STATUS_OUT" || return
		sleep 0.05
	done
}

# wait_for_port PORT TIMEOUT_S: until a TCP connection to 127.0.0.1:PORT succeeds.
wait_for_port() {
	"$PYTHON" - "$1" "$2" <<'EOF'
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.02)
sys.exit(1)
EOF
}

# start_bg NAME COMMAND...: runs COMMAND in the background, stdout in $T/NAME.out,
# stderr in $T/NAME.err, fd 3 closed (bats waits on it); teardown reaps it.
BG_PIDS=()
start_bg() {
	local name=$1
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err" 3>&- &
	BG_PIDS+=("$!")
	printf '%s\n' "$!" >"$T/$name.pid"
}

stop_bg_all() {
	local pid
	for pid in "${BG_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	BG_PIDS=()
}

teardown() {
	stop_bg_all
	return 0
}

# start_listener NAME AFTER_MS [late-listener options...]: a TCP listener on
# 127.0.0.1 with a free port, bound at once, listening after AFTER_MS; sets PORT.
start_listener() {
	start_listener_on 127.0.0.1 "$@"
}

# start_listener_on HOST NAME AFTER_MS [options...]: the same on HOST ([::1] for IPv6).
start_listener_on() {
	local host=$1 name=$2 after=$3
	shift 3
	start_bg "$name" "$HELPERS/late-listener" --tcp "$host:0" --after "$after" \
		--port-file "$T/$name.port" "$@"
	wait_for_file "$T/$name.port" 5 || return
	PORT=$(<"$T/$name.port")
}

# closed_port NAME: a port bound but never listened on, so it refuses every
# connection and no other process can take it during the test; sets PORT.
closed_port() {
	start_listener "$1" 3600000
}

# json_events FILE EVENT [KEY...]: one line per EVENT object of the JSON log,
# the values of KEYs separated by spaces (the whole object without KEYs).
# A missing file has no events; a line that is not JSON is an error.
json_events() {
	[[ -e $1 ]] || return 0
	"$PYTHON" - "$@" <<'EOF'
import json, sys
path, event, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path, encoding="utf-8", errors="replace") as f:
    for n, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            sys.exit(f"{path}:{n}: not JSON ({e}): {line!r}")
        if obj.get("event") != event:
            continue
        print(" ".join(str(obj.get(k)) for k in keys) if keys else line.rstrip("\n"))
EOF
}

# json_keys FILE EVENT: the keys of each EVENT object, in order, comma-separated.
json_keys() {
	"$PYTHON" - "$@" <<'PYEOF'
import json, sys
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        obj = json.loads(line)
        if obj.get("event") == sys.argv[2]:
            print(",".join(obj))
PYEOF
}

# count_lines TEXT: number of non-empty lines.
count_lines() {
	local n=0 line
	while IFS= read -r line; do
		[[ -z $line ]] || n=$((n + 1))
	done <<<"$1"
	echo "$n"
}

# without_backoff_lines: stdin without the library's own log lines.
without_backoff_lines() {
	local rc=0
	grep -Ev '^backoff(\[[0-9]+\])?: ' || rc=$?
	((rc <= 1))
}

# strace_connects FILE PATTERN: connect() calls in an strace -o FILE whose
# arguments contain PATTERN (fixed string), such as 'htons(8080)'.
strace_connects() {
	grep -F -- "$2" "$1" | grep -c 'connect(' || true
}

# traced OUT COMMAND...: runs COMMAND under the library with strace recording
# its connect() calls (and its children's) in OUT.  Variables for COMMAND go
# through env (traced OUT env BACKOFF_RETRIES=1 probe ...), not into strace.
traced() {
	local out=$1
	shift
	timeout 20 strace -f -qq -e trace=connect -e signal=none -o "$out" \
		-E LD_PRELOAD="$LIB" "$@"
}

# normalized_output TEXT: TEXT without the library's lines and without the parts
# of a program's messages that change from run to run (socat's time and pid).
normalized_output() {
	printf '%s\n' "$1" | without_backoff_lines |
		sed -E 's|^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9:]{8} socat\[[0-9]+\]|socat[PID]|'
}

# Clients used as they come, each reading what the server sends until EOF.
# Python's create_connection() without a timeout uses a blocking connect().
PY_CLIENT=("$PYTHON" -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
data = b""
while chunk := s.recv(4096):
    data += chunk
sys.stdout.write(data.decode())
')
WGET_CLIENT=(wget -nv -t 1 -O -)
SOCAT_CLIENT=(socat -u)
HTTP_REPLY=$'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello'

# ---- Non-blocking clients in their own event loops (tests/9N-*.bats) ----

# require_command NAME...: skip unless every NAME is installed.
require_command() {
	local c
	for c in "$@"; do
		case $c in
		nc) require_program nc netcat-openbsd ;;
		node) require_program node nodejs ;;
		psql | pg_ctl | initdb | postgres) require_program "$c" postgresql ;;
		etcd) require_program etcd etcd-server ;;
		etcdctl) require_program etcdctl etcd-client ;;
		*) require_program "$c" ;;
		esac
	done
}

# listener_mono NAME WHAT: the mono_ms of the "WHAT mono_ms=N" line that the
# background server NAME printed (late-listener: listening, accepted).
listener_mono() {
	sed -n "s/^$2 mono_ms=//p" "$T/$1.out" | head -n 1
}

# assert_retried_then_connected LOG TARGET ERRNO LISTEN_MONO CAP_MS: the JSON
# LOG of a client started before its server shows retries of TARGET only,
# each failed with ERRNO, numbered 1..n, each waiting the delay it drew
# (at most CAP_MS), the first before the server listened at LISTEN_MONO; then
# one success at attempt n+1 no sooner than LISTEN_MONO and at most CAP_MS
# plus 500 ms of slack later; no give-up.  Sets CONNECT_ATTEMPTS and
# CONNECT_AFTER_LISTEN_MS (success time minus listen time).
assert_retried_then_connected() {
	local log=$1 target=$2 errno=$3 listen=$4 cap=$5 retries line n=0 first=
	local t e attempt delay wait mono
	retries=$(json_events "$log" retry target errno attempt delay_ms wait_ms mono_ms) || return
	[[ -n $retries ]] || fail "no retry event in $log" || return
	while read -r t e attempt delay wait mono; do
		n=$((n + 1))
		assert_eq "$t $e" "$target $errno" "target and errno of retry $n" || return
		assert_eq "$attempt" "$n" "attempt number of retry $n" || return
		assert_between "$delay" 0 "$cap" "delay_ms of retry $n" || return
		assert_eq "$wait" "$delay" "wait_ms of retry $n (no budget in play)" || return
		first=${first:-$mono}
	done <<<"$retries"
	assert_between "$first" 0 "$((listen - 1))" "first retry time (before the server listened)" ||
		return
	line=$(json_events "$log" success target attempt mono_ms)
	assert_match "$line" "^$target [0-9]+ [0-9]+$" "success event" || return
	read -r _ attempt mono <<<"$line"
	assert_eq "$attempt" "$((n + 1))" "attempts in the success event" || return
	assert_between "$mono" "$listen" "$((listen + cap + 500))" "success time" || return
	assert_eq "$(json_events "$log" giveup target)" "" "give-up events" || return
	CONNECT_ATTEMPTS=$attempt
	CONNECT_AFTER_LISTEN_MS=$((mono - listen))
}

# record_matrix CLIENT DETECTION: with TEST_MATRIX_FILE set, appends one
# "client | detection path | attempts | ms from listen to connect" row with the
# figures of the last assert_retried_then_connected.
record_matrix() {
	[[ -n ${TEST_MATRIX_FILE:-} ]] || return 0
	printf '%s | %s | %s | %s\n' "$1" "$2" "${CONNECT_ATTEMPTS:-?}" \
		"${CONNECT_AFTER_LISTEN_MS:-?}" >>"$TEST_MATRIX_FILE"
}

# start_blackhole NAME [LIFT_MS]: a TCP listener on 127.0.0.1 whose accept queue is
# kept full, so that every new SYN is dropped and a client's connect() hangs until
# its own timeout (a server that never answers, without the library); sets PORT.
# With LIFT_MS the queue gets room LIFT_MS from now: it prints "room mono_ms=N" to
# $T/NAME.out, then accepts everything, sending "hello".
start_blackhole() {
	# shellcheck disable=SC2016 # a python program
	start_bg "$1" "$PYTHON" -c '
import os, socket, sys, time
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(0)
# One connection fills a backlog of 0; later SYNs are dropped, never refused.
filler = socket.create_connection(srv.getsockname())
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{srv.getsockname()[1]}\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
if len(sys.argv) < 3:
    time.sleep(120)
    sys.exit(0)
time.sleep(int(sys.argv[2]) / 1000)
# The time is read first: a client may connect before the print once there is room.
room = time.monotonic_ns() // 1000000
srv.accept()
print("room mono_ms=%d" % room, flush=True)
while True:
    c, _ = srv.accept()
    c.send(b"hello")
    c.close()
' "$T/$1.port" "${@:2}"
	wait_for_file "$T/$1.port" 5 || return
	PORT=$(<"$T/$1.port")
}

# assert_fails_alike VARS COMMAND...: COMMAND, with no server, fails with the
# same status, stdout and stderr (the library's own lines aside, and curl's
# "after N ms") under the library with the space-separated VAR=VALUE list
# VARS as it does without it.  Leaves the run under the library in
# status/output/stderr.
# shellcheck disable=SC2154 # status, output and stderr are set by bats run
assert_fails_alike() {
	local vars=$1 base_status base_out base_err
	shift
	run --separate-stderr timeout 20 "$@"
	base_status=$status base_out=$(failure_text "$output")
	base_err=$(failure_text "$stderr")
	assert_between "$base_status" 1 255 "status without the library" || return
	# shellcheck disable=SC2086 # VARS is a word list on purpose
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" $vars "$@"
	assert_eq "$status" "$base_status" "status with the library" || return
	assert_eq "$(failure_text "$output")" "$base_out" "stdout with the library" || return
	assert_eq "$(failure_text "$stderr")" "$base_err" "stderr with the library"
}

# failure_text TEXT: normalized_output, and curl's time to fail as "after N ms".
failure_text() {
	normalized_output "$1" | sed -E 's/ after [0-9]+ ms: / after N ms: /'
}

# start_http_server NAME AFTER_MS DIR: python's http.server (the handler that
# `python3 -m http.server` runs) serving DIR on 127.0.0.1, bound at once so
# that the port refuses connections, listening only after AFTER_MS; prints
# "listening mono_ms=N" to $T/NAME.out; sets PORT.
start_http_server() {
	# shellcheck disable=SC2016 # a python program
	start_bg "$1" "$PYTHON" -c '
import functools, http.server, os, sys, threading, time
port_file, after_ms, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
srv.server_bind()
with open(port_file + ".tmp", "w") as f:
    f.write(f"{srv.server_address[1]}\n")
os.rename(port_file + ".tmp", port_file)
time.sleep(after_ms / 1000)
listened = time.monotonic_ns() // 1000000  # before: a client may connect at once
srv.server_activate()
print(f"listening mono_ms={listened}", flush=True)
threading.Timer(60, srv.shutdown).start()  # never outlives an interrupted test for long
srv.serve_forever()
' "$T/$1.port" "$2" "$3"
	wait_for_file "$T/$1.port" 5 || return
	PORT=$(<"$T/$1.port")
}

# Non-blocking clients as they come, each printing what the server sends until EOF.
# Python with a timeout: poll() then SO_ERROR.
PY_TIMEOUT_CLIENT=("$PYTHON" -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
data = b""
while chunk := s.recv(4096):
    data += chunk
sys.stdout.write(data.decode())
')
# asyncio: epoll, the socket added after connect(), then SO_ERROR.  An optional
# third argument bounds the connect with asyncio.wait_for(..., SECONDS); a
# fourth names a file that gets the milliseconds the connect took.
PY_ASYNCIO_CLIENT=("$PYTHON" -c '
import asyncio, sys, time
async def main():
    start = time.monotonic()
    try:
        opening = asyncio.open_connection(sys.argv[1], int(sys.argv[2]))
        if len(sys.argv) > 3:
            opening = asyncio.wait_for(opening, float(sys.argv[3]))
        reader, writer = await opening
    finally:
        if len(sys.argv) > 4:
            with open(sys.argv[4], "w") as f:
                f.write(f"{int((time.monotonic() - start) * 1000)}\n")
    sys.stdout.write((await reader.read()).decode())
    writer.close()
asyncio.run(main())
')
# node (libuv): epoll_pwait, the socket added after connect(), then SO_ERROR.
NODE_CLIENT=(node -e '
const s = require("net").connect(Number(process.argv[2]), process.argv[1]);
s.on("data", (d) => process.stdout.write(d));
s.on("error", (e) => { console.error(e.message); process.exit(1); });
')
# perl with a Timeout: select(), then a second connect() says how it went.
# shellcheck disable=SC2016 # a perl program
PERL_TIMEOUT_CLIENT=(perl -MIO::Socket::INET -e '
my $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => $ARGV[1], Timeout => 5)
    or die "connect: $@\n";
print while <$s>;
')

# start_front NAME MODE COUNT [THEN]: a TCP server on 127.0.0.1 (sets PORT)
# whose first COUNT connections are ended before a byte: MODE fin (closed at
# once), rst (reset at once), rst1 (the first reset, the others closed), read
# (closed after reading what the client sent) or half (its side shut at once,
# then what the client sends read until the client's end); every later one
# gets "hello" and is closed.  COUNT -1: every connection is ended; a list (1,2,4): those
# connections are ended, the others greeted.  THEN, after the COUNT-th: greet
# (the default, as said), keep (keeps listening but accepts no more: a new
# connection waits in its queue), silent (accepts every later connection and
# holds it without a byte) or exit (stops listening before it ends the
# COUNT-th connection, then exits).
# It appends "conn N bytes=B" for each connection to $T/NAME.out, B the bytes
# the client had sent when it was ended or greeted.
start_front() {
	# shellcheck disable=SC2016 # a python program
	start_bg "$1" "$PYTHON" -c '
import os, socket, struct, sys, time
path, mode, then = sys.argv[1], sys.argv[2], sys.argv[4]
ended = [int(x) for x in sys.argv[3].split(",")] if "," in sys.argv[3] else []
count = int(sys.argv[3]) if not ended else -2
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(128)
with open(path + ".tmp", "w") as f:
    f.write(f"{srv.getsockname()[1]}\n")
os.rename(path + ".tmp", path)
n = 0
while True:
    c, _ = srv.accept()
    n += 1
    got = b""
    if count == -1 or (count >= 0 and n <= count) or n in ended:
        if mode == "read":
            c.settimeout(2)
            try:
                got = c.recv(4096)
            except OSError:
                pass
        elif mode == "half":
            c.shutdown(socket.SHUT_WR)
            c.settimeout(5)
            try:
                while True:
                    more = c.recv(4096)
                    if not more:
                        break
                    got += more
            except OSError:
                pass
        elif mode == "rst" or (mode == "rst1" and n == 1):
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        c.settimeout(0.2)
        try:
            got = c.recv(4096)
        except OSError:
            pass
        c.sendall(b"hello\n")
    print(f"conn {n} bytes={len(got)}", flush=True)
    last = n == count and then != "greet"
    if last and then == "exit":
        srv.close()  # no listener left when the connection ends
    c.close()
    if last and then == "exit":
        sys.exit(0)
    if last and then == "keep":
        time.sleep(3600)
    if last and then == "silent":
        held = []
        while True:
            c, _ = srv.accept()
            n += 1
            held.append(c)
            print(f"conn {n} bytes=0", flush=True)
' "$T/$1.port" "$2" "$3" "${4:-greet}"
	wait_for_file "$T/$1.port" 5 || return
	PORT=$(<"$T/$1.port")
}

# client FIRST COMMAND...: python clients of start_front's PORT, run by
# COMMAND: "reads" reads first (a server-first protocol), "sends" sends PING
# first (a client-first one), "timed" reads first with an SO_RCVTIMEO of 5 s,
# "alarmed" reads first with a SIGALRM handler (no SA_RESTART: python's) and a
# timer of 0.3 s; each prints what it received, or the error, and "alarmed"
# then the ms since it began until the handler ran (-1: never) and in all.
client() {
	local first=$1
	shift
	"$@" "$PYTHON" -c '
import signal, socket, struct, sys, time
start = time.monotonic()
ran = []
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
if sys.argv[1] == "sends":
    s.sendall(b"PING\n")
if sys.argv[1] == "timed":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 5, 0))
if sys.argv[1] == "alarmed":
    signal.signal(signal.SIGALRM, lambda *_: ran.append(time.monotonic() - start))
    signal.setitimer(signal.ITIMER_REAL, 0.3)
try:
    data = s.recv(100)
    out = repr(data)
except OSError as e:
    out = type(e).__name__
if sys.argv[1] == "alarmed":
    out += " %d %d" % (int(ran[0] * 1000) if ran else -1, int((time.monotonic() - start) * 1000))
print(out)
' "$first" "$PORT"
}

# start_vsftpd [LINE...]: vsftpd on 127.0.0.1 (sets FTP_PORT), anonymous,
# read-only, its root with an empty directory, an empty file and a small one;
# passive and active data connections, all on loopback; each LINE added to its
# configuration (max_clients=1, say).
start_vsftpd() {
	require_program vsftpd
	local root=$T/ftp/root
	mkdir -p "$root/empty" "$T/ftp/chroot"
	: >"$root/empty.txt"
	printf 'hello\n' >"$root/hello.txt"
	chmod 755 "$root"
	FTP_PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$T/ftp/vsftpd.conf" <<EOF
listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=$FTP_PORT
background=NO
run_as_launching_user=YES
anonymous_enable=YES
no_anon_password=YES
anon_root=$root
local_enable=NO
write_enable=NO
pasv_enable=YES
pasv_address=127.0.0.1
connect_from_port_20=NO
seccomp_sandbox=NO
secure_chroot_dir=$T/ftp/chroot
xferlog_enable=NO
EOF
	printf '%s\n' "$@" >>"$T/ftp/vsftpd.conf"
	start_bg vsftpd vsftpd "$T/ftp/vsftpd.conf"
	wait_for_port "$FTP_PORT" 5 || fail "vsftpd does not listen: $(cat "$T/vsftpd.err")"
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
	"$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_nginx NAME BODY [VAR=VALUE...]: nginx with one worker and the http
# BODY, in the foreground of a background job, environment as given.
start_nginx() {
	local name=$1 body=$2 d=$T/$1
	shift 2
	mkdir -p "$d"
	cat >"$d/nginx.conf" <<EOF
daemon off; worker_processes 1; pid $d/nginx.pid; error_log $d/error.log warn;
events { worker_connections 256; }
http { access_log off; client_body_temp_path $d; proxy_temp_path $d;
fastcgi_temp_path $d; uwsgi_temp_path $d; scgi_temp_path $d;
$body
}
EOF
	start_bg "$name" env "$@" nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf"
}

# A client that holds one of a server's connections: it connects until the
# server's first answer (to argv[3], sent unless it is "-") begins with
# argv[2], says "holding", and keeps the connection until the file argv[4]
# exists (at most 30 s).
HOLDER='
import os, socket, sys, time
port, want, send, release = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3], sys.argv[4]
deadline = time.monotonic() + 30
while True:
    s = socket.create_connection(("127.0.0.1", port))
    if send != "-":
        s.sendall(send.encode().decode("unicode_escape").encode("latin-1"))
    if s.recv(100).startswith(want):
        break
    s.close()
    time.sleep(0.02)
print("holding", flush=True)
while not os.path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.01)
s.close()
'

# start_loading_redis: redis-server (REDIS_PORT) loading a data set of 20000 keys
# for about 2 s, answering -LOADING meanwhile; returns once it has answered so.
start_loading_redis() {
	require_program redis-server
	require_program redis-cli
	REDIS_PORT=$(free_port)
	mkdir -p "$T/redis"
	start_bg seed redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$T/redis" \
		--save '' --appendonly no --enable-debug-command yes
	wait_for_port "$REDIS_PORT" 5 || fail "redis-server does not listen" || return
	redis-cli -p "$REDIS_PORT" DEBUG POPULATE 20000 >/dev/null
	redis-cli -p "$REDIS_PORT" SAVE >/dev/null
	redis-cli -p "$REDIS_PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
	wait_for_line "$T/seed.out" "ready to exit" 10
	start_bg redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$T/redis" \
		--save '' --appendonly no --key-load-delay 100 \
		--loading-process-events-interval-bytes 1024
	local deadline=$(($(now_ms) + 10000))
	until [[ $(redis-cli -p "$REDIS_PORT" GET key:1 2>&1) == LOADING* ]]; do
		(($(now_ms) < deadline)) || fail "redis-server never answered LOADING" || return
	done
}

# A scripted MQTT broker (no packaged broker refuses on demand), on port
# argv[1]: it refuses the first argv[2] CONNECTs with CONNACK "server
# unavailable" (3.1.1: code 3; 5: 0x88), then accepts; it prints each
# PUBLISH's topic and payload ("published TOPIC PAYLOAD"), answers a
# SUBSCRIBE with its SUBACK and publishes "hello" to the topic ("subscribed
# TOPIC"), and prints "refused N" for each refusal.
MQTT_BROKER='
import socket, sys
port, refuse = int(sys.argv[1]), int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(16)
print("listening", flush=True)
def packet(c):
    h = c.recv(1)
    if not h: return None, b""
    n, mul = 0, 1
    while True:
        b = c.recv(1)[0]; n += (b & 0x7F) * mul; mul *= 128
        if not b & 0x80: break
    body = b""
    while len(body) < n: body += c.recv(n - len(body))
    return h[0], body
seen = 0
while True:
    c, _ = ls.accept()
    kind, body = packet(c)
    if kind != 0x10: c.close(); continue
    level = body[6]
    seen += 1
    if seen <= refuse:
        c.sendall(b"\x20\x03\x00\x88\x00" if level == 5 else b"\x20\x02\x00\x03")
        print("refused", seen, flush=True); c.close(); continue
    c.sendall(b"\x20\x03\x00\x00\x00" if level == 5 else b"\x20\x02\x00\x00")
    while True:
        kind, body = packet(c)
        if kind is None or kind & 0xF0 == 0xE0: break
        if kind & 0xF0 == 0x80:
            pid, off = body[:2], 2
            if level == 5:
                off += 1 + body[off]  # properties (length < 128)
            tl = body[off] << 8 | body[off + 1]
            topic = body[off + 2:off + 2 + tl]
            c.sendall(b"\x90" + (b"\x04" + pid + b"\x00\x00" if level == 5 else b"\x03" + pid + b"\x00"))
            print("subscribed", topic.decode(), flush=True)
            payload = bytes([0, len(topic)]) + topic + (b"\x00" if level == 5 else b"") + b"hello"
            c.sendall(bytes([0x30, len(payload)]) + payload)
        if kind & 0xF0 == 0x30:
            tl = body[0] << 8 | body[1]; off = 2 + tl
            if level == 5:
                off += 1 + body[off]  # properties (length < 128)
            print("published", body[2:2+tl].decode(), body[off:].decode(), flush=True)
        if kind & 0xF0 == 0xC0:
            c.sendall(b"\xd0\x00")  # PINGRESP
    c.close()
'

# release_after_refusal: the holder of a "try later" test lets go ($T/release)
# once the client under the library met its first refusal ($T/log.json).
release_after_refusal() {
	wait_for_line "$T/log.json" '"event":"not-ready"' 20 && : >"$T/release"
}
