#!/usr/bin/env bats
# Shared fate: processes of one user waiting for the same destination share
# one prober through a state file; a local destination is looked at about
# every 10 ms (a look for a listener, not an attempt), and waiters are woken
# when it is up.  The state file is a hint: a missing, hostile or foreign one
# means each connect backs off alone, with one warning.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	STATE=$T/state
}

# probes N ADDR NAME [ENV...]: N probe processes connecting to ADDR at once,
# each with stdout/stderr in $T/NAME.I.{out,err}; their pids in PROBES.
PROBES=()
probes() {
	local n=$1 addr=$2 name=$3 i
	shift 3
	for ((i = 1; i <= n; i++)); do
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_STATS=on "$@" \
			"$HELPERS/probe" --elapsed "$addr" >"$T/$name.$i.out" 2>"$T/$name.$i.err" 3>&- &
		PROBES+=("$!")
	done
}

wait_probes() {
	local pid rc=0
	for pid in "${PROBES[@]}"; do
		wait "$pid" || rc=1
	done
	PROBES=()
	return "$rc"
}

# sum_stat NAME KEY: KEY=N summed over the stats lines of $T/NAME.*.err.
sum_stat() {
	cat "$T/$1".*.err | sed -n "s/.* $2=\([0-9]*\).*/\1/p" | awk '{ s += $1 } END { print s + 0 }'
}

# max_elapsed NAME: the largest elapsed_ms of the probes NAME.
max_elapsed() {
	cat "$T/$1".*.err | sed -n 's/^elapsed_ms=\([0-9]*\).*/\1/p' | sort -n | tail -n 1
}

@test "20 processes waiting for one late TCP listener: one looks, the others wait, all connect within 250 ms of the listen" {
	start_listener srv 1500 --count 20
	probes 20 "127.0.0.1:$PORT" p BACKOFF_CAP=10s
	wait_probes || fail "a probe failed: $(cat "$T"/p.*.out)"
	assert_eq "$(cat "$T"/p.*.out | sort | uniq -c | sed 's/^ *//')" "20 OK" "outcomes"
	# Everyone started before the listen; the listen came at 1.5 s.
	assert_between "$(max_elapsed p)" 1400 1750 "ms until the last probe connected"
	# Attempts left to another: the policy's retries of 19 waiters at least.
	assert_between "$(sum_stat p waited)" 19 100000 "attempts left to the prober"
}

@test "failed attempts counted by the kernel: shared, at most a quarter of BACKOFF_SHARED=off" {
	require_unshare -n
	local run
	# In a network namespace of its own, TcpActiveOpens counts only these attempts.
	run=$(
		cat <<'EOF'
ip link set lo up || exit 9
"$HELPERS/late-listener" --tcp 127.0.0.1:4711 --after 1500 --count 20 >/dev/null 2>&1 &
i=0
while [ "$i" -lt 20 ]; do
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$MODE" "$HELPERS/probe" 127.0.0.1:4711 >/dev/null 2>&1 &
	i=$((i + 1))
done
wait
awk '/^Tcp:/ { n++; if (n == 1) for (i = 1; i <= NF; i++) col[$i] = i; else print $col["ActiveOpens"] }' /proc/net/snmp
EOF
	)
	local on off
	on=$(HELPERS=$HELPERS LIB=$LIB MODE=$STATE timeout 30 "${UNSHARE[@]}" sh -c "$run")
	off=$(HELPERS=$HELPERS LIB=$LIB MODE=off timeout 30 "${UNSHARE[@]}" sh -c "$run")
	[[ $on =~ ^[0-9]+$ && $off =~ ^[0-9]+$ ]] || fail "counts: on '$on' off '$off'"
	# 20 of the opens succeeded in each run; the rest were refused.
	assert_between "$((off - 20))" 60 100000 "failed attempts with sharing off"
	assert_between "$((on - 20))" 0 "$(((off - 20) / 4))" "failed attempts with sharing on"
}

@test "a unix socket that appears late: 10 waiting processes connect within 250 ms of it" {
	start_bg srv "$HELPERS/late-listener" --unix "$T/sock" --after 1200 --count 10
	probes 10 "unix:$T/sock" u
	wait_probes || fail "a probe failed: $(cat "$T"/u.*.out)"
	assert_eq "$(cat "$T"/u.*.out | sort | uniq -c | sed 's/^ *//')" "10 OK" "outcomes"
	assert_between "$(max_elapsed u)" 1100 1450 "ms until the last probe connected"
}

@test "a unix socket file left by a server that died: 5 waiting processes connect within 250 ms of its replacement" {
	start_bg srv "$HELPERS/late-listener" --unix "$T/sock" --stale --after 1200 --count 5
	wait_for_line "$T/srv.out" '^stale' 5
	# Refused at each look, which is an attempt (a unix one costs nothing): news for the
	# others, and the wait goes on; four planned retries at 1 s and more would not reach 1.2 s.
	probes 5 "unix:$T/sock" u BACKOFF_BASE=1s BACKOFF_CAP=5s BACKOFF_RETRIES=4
	wait_probes || fail "a probe failed: $(cat "$T"/u.*.out)"
	assert_eq "$(cat "$T"/u.*.out | sort | uniq -c | sed 's/^ *//')" "5 OK" "outcomes"
	assert_between "$(max_elapsed u)" 1000 1450 "ms until the last probe connected"
}

@test "the prober killed with SIGKILL: a waiter takes over and connects soon after the listen" {
	start_listener srv 1500
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_LOG=info "$HELPERS/probe" \
		"127.0.0.1:$PORT" >"$T/a.out" 2>"$T/a.err" 3>&- &
	local a=$!
	wait_for_line "$T/a.err" "retrying in" 5
	probes 1 "127.0.0.1:$PORT" b BACKOFF_CAP=10s
	sleep 0.3 # B is asleep on the slot; no event says so from outside
	kill -KILL "$a"
	wait "$a" || true
	wait_probes || fail "the waiter failed: $(cat "$T"/b.1.out)"
	assert_eq "$(cat "$T/b.1.out")" "OK" "the waiter's outcome"
	assert_between "$(max_elapsed b)" 1100 1600 "ms until the waiter connected"
}

@test "a waiter's own deadline: it makes a real attempt and returns the kernel's error" {
	closed_port dead
	probes 1 "127.0.0.1:$PORT" prober BACKOFF_TIMEOUT=20s
	wait_for_line "$T/prober.1.err" "" 1 || true
	sleep 0.2 # the prober holds its lease
	require_strace
	run --separate-stderr timeout 10 strace -f -qq -e trace=connect -o "$T/trace" \
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_TIMEOUT=1s BACKOFF_STATS=on \
		BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/waiter.json" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "ECONNREFUSED" "the waiter's outcome"
	assert_between "$(json_events "$T/waiter.json" stats waited)" 1 100 "attempts left to the prober"
	# Each says for whom: the prober's thread.
	assert_match "$(json_events "$T/waiter.json" waited reason | head -n 1)" \
		"^left to prober tid ${PROBES[0]}$" "a waited event"
	assert_eq "$(json_events "$T/waiter.json" giveup errno)" "ECONNREFUSED" "the give-up event"
	# Its first attempt was left to the prober; its last is its own.
	assert_between "$(grep -c "connect(.*$PORT" "$T/trace")" 1 3 "real attempts of the waiter"
	kill "${PROBES[@]}" 2>/dev/null || true
}

@test "hostile state files change nothing but the sharing, with one warning naming the file" {
	local kind
	for kind in random truncated symlink mode; do
		rm -f "$STATE"
		case $kind in
		random) head -c 65600 /dev/urandom >"$STATE" ;;
		truncated) head -c 100 /dev/zero >"$STATE" ;;
		symlink) ln -s "$T/elsewhere" "$STATE" ;;
		mode) : >"$STATE" && chmod 644 "$STATE" ;;
		esac
		start_listener "srv$kind" 600
		run --separate-stderr timeout 10 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
			"$HELPERS/probe" "127.0.0.1:$PORT"
		assert_eq "$output" "OK" "outcome with a $kind file"
		assert_match "$stderr" "BACKOFF_SHARED=\"$STATE\": state file not used" "warning ($kind)"
		assert_eq "$(grep -c 'state file' <<<"$stderr")" 1 "warnings ($kind)"
	done
	[[ ! -e $T/elsewhere ]] || fail "the symlink's target was created"
}

@test "a state file of another user is not used; the default file is per user" {
	[[ $EUID -eq 0 ]] || skip "needs root to make a file of another user"
	require_program setpriv util-linux
	: >"$STATE" && chmod 600 "$STATE" && chown nobody "$STATE"
	start_listener srv 400
	run --separate-stderr timeout 10 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "outcome"
	assert_match "$stderr" "owned by another user" "warning"
	# Another user's process maps a file of its own name, never root's.
	chmod 755 "$T" "$BATS_TEST_TMPDIR/.." 2>/dev/null || true
	start_listener srv2 400
	run --separate-stderr timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env LD_PRELOAD="$LIB" BACKOFF_STATS=on "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "outcome as nobody"
	[[ -e /dev/shm/libbackoff-65534.v7 || -e /tmp/libbackoff-65534.v7 ]] ||
		fail "no state file of nobody's own"
	assert_eq "$(stat -c %U /dev/shm/libbackoff-65534.v7 2>/dev/null || stat -c %U /tmp/libbackoff-65534.v7)" \
		nobody "owner of nobody's file"
}

# with_private_shm LISTING COMMAND...: COMMAND (at most 10 s) in a mount namespace
# whose /dev/shm (where the user's state file goes) is an empty tmpfs of its own;
# the names in it afterwards are written to LISTING.
with_private_shm() {
	timeout 10 "${UNSHARE[@]}" sh -c 'mount -t tmpfs tmpfs /dev/shm || exit 99
		listing=$1
		shift
		"$@"
		rc=$?
		ls -A /dev/shm >"$listing"
		exit "$rc"' sh "$@"
}

@test "BACKOFF_SHARED=off: no state file, no shared counts, every attempt made" {
	require_unshare -m
	start_listener srv 700
	run --separate-stderr with_private_shm "$T/shm.off" env LD_PRELOAD="$LIB" \
		BACKOFF_SHARED=off BACKOFF_STATS=on BACKOFF_BASE=50ms BACKOFF_CAP=50ms \
		BACKOFF_JITTER=none "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "outcome (stderr: $stderr)"
	assert_eq "$(<"$T/shm.off")" "" "files in /dev/shm"
	assert_no_match "$stderr" "probed=|waited=" "shared counts"
	# 50 ms apart for 700 ms: about 14 retries, each a real one.
	assert_match "$stderr" "retries=1[0-9] " "retries"
	# The same look sees the file that sharing makes.
	closed_port dead
	run --separate-stderr with_private_shm "$T/shm.on" env LD_PRELOAD="$LIB" \
		BACKOFF_RETRIES=0 "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "ECONNREFUSED" "outcome with sharing (stderr: $stderr)"
	assert_match "$(<"$T/shm.on")" "^libbackoff-[0-9]+\.v[0-9]+$" "files in /dev/shm with sharing"
}

# Python asyncio: N connects at once in one event loop to 127.0.0.1:PORT;
# prints the CLOCK_MONOTONIC ms of the last one connected.
ASYNCIO_MANY='
import asyncio, sys, time
async def one(port):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    t = time.monotonic_ns() // 1000000
    w.close()
    return t
async def main(port, n):
    print(max(await asyncio.gather(*[one(port) for _ in range(n)])))
asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
'

@test "python asyncio, 300 connects in one event loop to a late listener: released together within 250 ms" {
	start_listener srv 1200 --count 300 --backlog 512
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_STATS=on \
		"$PYTHON" -c "$ASYNCIO_MANY" "$PORT" 300
	assert_eq "$status" 0 "status (stderr: ${stderr:0:300})"
	local listen
	listen=$(listener_mono srv listening)
	# The planned attempts of most are seconds away: one looks, and releases the rest.
	assert_between "$((output - listen))" 0 250 "ms from the listen to the last connect"
	assert_match "$stderr" "waited=[1-9]" "stats"
}

@test "curl, nc and python started together before their server all get its answer" {
	require_program curl curl
	require_program nc netcat-openbsd
	mkdir "$T/www"
	echo "one answer for all" >"$T/www/hello.txt"
	start_http_server web 1000 "$T/www"
	local i pids=()
	for i in 1 2 3; do
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" curl -sS "http://127.0.0.1:$PORT/hello.txt" \
			>"$T/curl.$i" 2>&1 3>&- &
		pids+=("$!")
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" nc -z 127.0.0.1 "$PORT" \
			>"$T/nc.$i" 2>&1 3>&- &
		pids+=("$!")
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" "$PYTHON" -c "
import socket, sys
socket.create_connection(('127.0.0.1', int(sys.argv[1]))).close()
print('py ok')" "$PORT" >"$T/py.$i" 2>&1 3>&- &
		pids+=("$!")
	done
	local t0 rc=0
	t0=$(now_ms)
	for i in "${pids[@]}"; do
		wait "$i" || rc=1
	done
	assert_eq "$rc" 0 "exit statuses: $(cat "$T"/curl.* "$T"/nc.* "$T"/py.* | head -c 600)"
	assert_eq "$(cat "$T"/py.* | sort | uniq -c | sed 's/^ *//')" "3 py ok" "python outcomes"
	assert_eq "$(grep -l "one answer for all" "$T"/curl.* | wc -l)" 3 "curl responses"
	assert_between "$(($(now_ms) - t0))" 0 3000 "ms until all ended"
}

@test "a state file whose every slot holds a destination idle for a minute takes new ones" {
	# Every slot taken, each last used 2 minutes ago (CLOCK_MONOTONIC, as the library's).
	"$PYTHON" - "$STATE" <<'PY'
import os, struct, sys, time
path = sys.argv[1]
old = time.monotonic_ns() - 120 * 10**9
head = struct.pack("<QIIII", 0x316572616873626C, 7, 1024, 384, 0).ljust(576, b"\0")
slots = b"".join(struct.pack("<QQQIIiIIiQQ", 0x1000 + i, old, 0, 0, 1, 0, 111, 0, 0, old, 0)
                 .ljust(384, b"\0") for i in range(1024))
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, head + slots)
os.close(fd)
PY
	start_listener srv 1000 --count 10
	probes 10 "127.0.0.1:$PORT" r
	wait_probes || fail "a probe failed: $(cat "$T"/r.*.out)"
	assert_eq "$(cat "$T"/r.*.out | sort | uniq -c | sed 's/^ *//')" "10 OK" "outcomes"
	# They shared a slot: planned attempts were left to the prober, and all
	# connected at the listen, not at their own planned attempts.
	assert_between "$(sum_stat r waited)" 9 100000 "attempts left to the prober"
	assert_between "$(max_elapsed r)" 900 1300 "ms until the last probe connected"
}

# late_client CODE [ARG...]: python CODE (its arguments: PORT, then ARGs) under the
# library and strace; CODE calls ready() where the prober is to begin, and go() before
# its connect to PORT, which returns once the prober probes (`backoff status` says so,
# the quiet mark gone) and at least 300 ms after ready(), past a resting process's look.  The
# client must print OK with one real attempt to PORT, the one that connected: its first
# was left to the prober (its own planned attempt comes after the listen).
late_client() {
	local code=$1
	shift
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_BASE=5s BACKOFF_CAP=5s \
		BACKOFF_JITTER=none LATE_DIR="$T" strace -f -qq -e trace=connect -e signal=none \
		-o "$T/late.strace" "$PYTHON" -c "$LATE_SYNC$code" "$PORT" "$@" \
		>"$T/late.out" 2>"$T/late.err" 3>&- &
	PROBES+=("$!")
	wait_for_file "$T/late.ready" 20 || return
	probes 1 "127.0.0.1:$PORT" p
	# The prober has failed once and probes (its slot says so), and took the mark away.
	status_until ' waiting ' 10 --file "$STATE" "127.0.0.1:$PORT" || return
	wait_for_gone "$STATE.quiet" 10 || return
	echo go >"$T/late.go"
	wait_probes || fail "a client failed: $(cat "$T"/late.out "$T"/late.err)"
	assert_eq "$(<"$T/late.out")" "OK" "outcome of the late client"
	assert_eq "$(strace_connects "$T/late.strace" "htons($PORT)")" 1 \
		"real attempts of the late client: $(cat "$T/late.strace")"
}

LATE_SYNC='
import os, time
_ready_at = None
def ready():
    global _ready_at
    _ready_at = time.monotonic()
    with open(os.environ["LATE_DIR"] + "/late.ready", "w") as f:
        f.write("ready\n")
def go():
    deadline = time.monotonic() + 20
    while not os.path.exists(os.environ["LATE_DIR"] + "/late.go"):
        if time.monotonic() > deadline:
            raise SystemExit("no go within 20 s")
        time.sleep(0.01)
    time.sleep(max(0.0, _ready_at + 0.3 - time.monotonic()))
'

@test "while nothing is down or probed, a healthy nc maps no state file (the quiet mark); a give-up takes the mark away" {
	require_strace
	local live dead
	start_listener live 0 --count 10
	live=$PORT
	closed_port dead
	dead=$PORT
	# The first process maps the file, finds nothing a connect must see, and leaves the mark.
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" nc -z 127.0.0.1 "$live" ||
		fail "nc -z to a listener failed"
	[[ -f $STATE.quiet ]] || fail "no quiet mark after a healthy first process: $(ls -la "$T")"
	# The next one looks at the mark alone: the state file is not opened.
	env BACKOFF_SHARED="$STATE" timeout 20 strace -f -qq -e trace=openat,newfstatat,statx \
		-e signal=none -o "$T/quiet.strace" -E LD_PRELOAD="$LIB" nc -z 127.0.0.1 "$live" ||
		fail "nc -z under strace failed"
	grep -qF "\"$STATE.quiet\"" "$T/quiet.strace" || fail "the mark not looked at: $(cat "$T/quiet.strace")"
	assert_eq "$(grep -cF "\"$STATE\"," "$T/quiet.strace")" 0 "state file opened while the mark stood"
	# A client gives up on a port nobody listens on: a slot down, the mark gone.  (No
	# look for a listener: no prober's lease outlives it, the slot down is all there is.)
	run env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_TIMEOUT=300ms \
		BACKOFF_LOCAL_PROBE=off nc -z 127.0.0.1 "$dead"
	assert_eq "$status" 1 "nc -z to a port nobody listens on"
	[[ ! -e $STATE.quiet ]] || fail "the quiet mark stayed after a destination went down"
	# Now a healthy process maps the file again (it must see what is down).
	env BACKOFF_SHARED="$STATE" timeout 20 strace -f -qq -e trace=openat -e signal=none \
		-o "$T/stirred.strace" -E LD_PRELOAD="$LIB" nc -z 127.0.0.1 "$live" ||
		fail "nc -z under strace failed"
	assert_eq "$(grep -cF "\"$STATE\"," "$T/stirred.strace")" 1 "state file opened with a slot down"
	[[ ! -e $STATE.quiet ]] || fail "a mark made while a slot is down"
}

@test "a process that found the quiet mark looks again: its later connect leaves its first attempt to a prober that began since" {
	require_strace
	local live
	start_listener live 0 --count 10
	live=$PORT
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" nc -z 127.0.0.1 "$live" ||
		fail "nc -z to a listener failed"
	[[ -f $STATE.quiet ]] || fail "no quiet mark after a healthy first process"
	start_listener srv 2500 --count 2
	# Its first connect finds the mark (nothing down yet); once another probes, and past
	# its rest, its second connect's first attempt is left to the prober.
	late_client '
import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[2]))).close()
ready()
go()
socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
print("OK")
' "$live"
}

@test "a process loaded before the destination's first failure still leaves its first attempt to the prober" {
	require_strace
	start_listener srv 2500 --count 2
	# Loaded while nothing had failed; it connects once another probes.  Its own planned
	# attempt comes after the listen: only a first attempt can be refused.
	late_client '
import socket, sys
ready()
go()
socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
print("OK")
'
}
