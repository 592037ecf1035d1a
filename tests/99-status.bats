#!/usr/bin/env bats
# backoff status: the user's destinations waited for or found down, read from
# the state file of shared fate.  It names a destination while clients wait
# for it, in a table, JSON lines and OpenMetrics text; a hostile, foreign or
# odd file is refused with one line and status 1, and nothing in a file's
# fields is believed beyond the library's own bounds.  Destinations named are
# shown alone, whatever their state; --processes lists the processes the
# library is in, by engine.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	[[ -x $BUILD/backoff-status ]] || fail "$BUILD/backoff-status is missing: run make"
	STATE=$T/state
}

# probes N ADDR NAME [ENV...]: N probe processes connecting to ADDR, sharing
# $STATE; stdout/stderr in $T/NAME.I.{out,err}; their pids in PROBES.
PROBES=()
probes() {
	local n=$1 addr=$2 name=$3 i
	shift 3
	for ((i = 1; i <= n; i++)); do
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" "$@" \
			"$HELPERS/probe" "$addr" >"$T/$name.$i.out" 2>"$T/$name.$i.err" 3>&- &
		PROBES+=("$!")
	done
}

stop_probes() {
	local pid
	for pid in "${PROBES[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	PROBES=()
}

teardown() {
	stop_probes
	stop_bg_all
	[[ -z ${OTHER_FILE:-} ]] || rm -f "$OTHER_FILE"
	return 0
}

# make_state PATH [KEY=VALUE...]: a state file of the current layout with every
# slot empty but slot 0, whose fields are set by KEY=VALUE (names as in
# struct share_slot; dest_* for the destination; mono_ago_ms=N: since_ns,
# probed_ns and looked_ns N ms before now; key=auto: the key the library
# computes for the destination; loopI=PID:COUNT:SECONDS: event loop word I,
# its lease ending SECONDS from now).
make_state() {
	"$PYTHON" - "$@" <<'PY'
import os, struct, sys, time
path, fields = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
f = {k: int(v, 0) for k, v in fields.items()
     if k not in ("dest_hex", "key") and not k.startswith("loop")}
loops = [0] * 8
for k, v in fields.items():
    if k.startswith("loop"):
        pid, count, secs = (int(x) for x in v.split(":"))
        lease = (time.monotonic_ns() // 10**9 + secs) & 0xffff
        loops[int(k[4:])] = pid << 32 | count << 16 | lease
M = (1 << 64) - 1
def key_of(family, port, abstract, data, netns):
    h = 0xcbf29ce484222325 ^ (netns * 0x9e3779b97f4a7c15 & M)
    h ^= family | port << 16 | abstract << 40
    for b in data:
        h = (h ^ b) * 0x100000001b3 & M
    h ^= h >> 29
    high = h & ~127 & M
    return high | (64 if family == 1 else port & 63) | (0 if high else 128)
if fields.get("key") == "auto":
    data = bytes.fromhex(fields.get("dest_hex", ""))
    fam = f.get("dest_family", 0)
    data = data[:f.get("dest_len", 0)] if fam == 1 else data[:4 if fam == 2 else 16]
    f["key"] = key_of(fam, f.get("dest_port", 0), f.get("dest_abstract", 0), data,
                      f.get("dest_netns", 0))
elif "key" in fields:
    f["key"] = int(fields["key"], 0)
now = time.monotonic_ns()
ago = f.pop("mono_ago_ms", None)
for k in ("since_ns", "probed_ns", "looked_ns"):
    if ago is not None and k not in f:
        f[k] = now - ago * 1000000
head = struct.pack("<QIIII", 0x316572616873626C, 7, 1024, 384, 0).ljust(576, b"\0")
slot = struct.pack("<QQQIIiIIiQQQQQiI32xQHHHBx",
    f.get("key", 0), f.get("probed_ns", 0), f.get("lease_ns", 0), 0, f.get("state", 0),
    f.get("prober", 0), f.get("err", 0), f.get("waiters", 0), 0, f.get("looked_ns", 0), 0,
    f.get("since_ns", 0), f.get("attempts", 0), f.get("saved", 0), f.get("prober_pid", 0), 0,
    f.get("dest_netns", 0), f.get("dest_family", 0), f.get("dest_port", 0),
    f.get("dest_len", 0), f.get("dest_abstract", 0))
slot += bytes.fromhex(fields.get("dest_hex", "")).ljust(112, b"\0")
slot += struct.pack("<8Q", *loops)
slot += b"\0" * 64  # the run's record
assert len(slot) == 384, len(slot)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, head + slot + b"\0" * 384 * 1023)
os.close(fd)
PY
}

@test "backoff status names a TCP destination while clients wait for it: state, error, prober, waiters" {
	closed_port dead
	probes 3 "127.0.0.1:$PORT" p BACKOFF_TIMEOUT=30s
	export BACKOFF_SHARED=$STATE
	# Until the three have joined: the prober and at least one asleep (a client that
	# starts late, under the sanitizers, may be seen before it waits).
	status_until "^127\.0\.0\.1:$PORT +waiting +[^ ]+ +[A-Z]+ +[^ ]+ +[23] " 5
	local line
	line=$(grep "^127\.0\.0\.1:$PORT " <<<"$STATUS_OUT")
	assert_match "$(head -n 1 <<<"$STATUS_OUT")" \
		"^DESTINATION +STATE +SINCE +LAST-ERROR +PROBER +WAITERS +ATTEMPTS +SAVED$" "header"
	# The prober is one of the three, by its pid and command name.
	assert_match "$line" " ECONNREFUSED +($(
		IFS='|'
		echo "${PROBES[*]}"
	))/probe " "prober of: $line"
	# Three clients: the prober and two asleep (the prober too, between its looks).
	read -r -a cols <<<"$line"
	assert_between "${cols[5]}" 2 3 "waiters in: $line"
	assert_between "${cols[6]}" 1 1000 "attempts in: $line"
	assert_eq "$(count_lines "$STATUS_OUT")" 2 "lines (one destination)"
}

@test "the same address from two network namespaces is two rows, each naming its namespace, in every format" {
	require_unshare -n
	closed_port dead
	probes 1 "127.0.0.1:$PORT" host BACKOFF_TIMEOUT=30s
	# The same address from a new network namespace, its loopback down: ENETUNREACH there.
	"${UNSHARE[@]}" env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" BACKOFF_TIMEOUT=30s \
		"$HELPERS/probe" "127.0.0.1:$PORT" >"$T/ns.out" 2>"$T/ns.err" 3>&- &
	PROBES+=("$!")
	local host_ns other_ns
	status_until "ENETUNREACH" 5 --file "$STATE"
	status_until "ECONNREFUSED" 5 --file "$STATE"
	host_ns=$(readlink "/proc/${PROBES[0]}/ns/net")
	other_ns=$(readlink "/proc/${PROBES[1]}/ns/net")
	[[ $host_ns != "$other_ns" ]] || fail "the second client is in the host's namespace"
	assert_match "$(head -n 1 <<<"$STATUS_OUT")" \
		"^DESTINATION +NETNS +STATE +SINCE +LAST-ERROR +PROBER +WAITERS +ATTEMPTS +SAVED$" "header"
	assert_eq "$(count_lines "$STATUS_OUT")" 3 "lines (one destination in two namespaces)"
	local esc_host=${host_ns//[/\\[} esc_other=${other_ns//[/\\[}
	assert_match "$STATUS_OUT" $'\n'"127\\.0\\.0\\.1:$PORT +${esc_host//]/\\]} +waiting +[^ ]+ +ECONNREFUSED +${PROBES[0]}/probe " \
		"the host's row"
	assert_match "$STATUS_OUT" $'\n'"127\\.0\\.0\\.1:$PORT +${esc_other//]/\\]} +waiting +[^ ]+ +ENETUNREACH +${PROBES[1]}/probe " \
		"the other namespace's row"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_match "$output" "\"destination\":\"127.0.0.1:$PORT\",\"state\":\"waiting\",[^}]*\"last_error\":\"ECONNREFUSED\",[^}]*,\"netns\":${host_ns//[^0-9]/},\"user\":\"[^\"]+\"\\}" "JSON, the host's"
	assert_match "$output" "\"destination\":\"127.0.0.1:$PORT\",\"state\":\"waiting\",[^}]*\"last_error\":\"ENETUNREACH\",[^}]*,\"netns\":${other_ns//[^0-9]/},\"user\":\"[^\"]+\"\\}" "JSON, the other's"
	run --separate-stderr "$LAUNCHER" status --openmetrics --file "$STATE"
	assert_match "$output" "backoff_destination_waiting\\{destination=\"127.0.0.1:$PORT\",netns=\"${host_ns//[^0-9]/}\",user=\"[^\"]+\"\\} 1" "OpenMetrics, the host's"
	assert_match "$output" "backoff_destination_waiting\\{destination=\"127.0.0.1:$PORT\",netns=\"${other_ns//[^0-9]/}\",user=\"[^\"]+\"\\} 1" "OpenMetrics, the other's"
}

@test "a unix address of zero bytes (an empty socket path) is retried, alone, and never a row without a destination" {
	# A whole sockaddr_un of zeros (the probe's empty path), and the empty abstract name.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=300ms BACKOFF_BASE=20ms BACKOFF_STATS=on "$HELPERS/probe" unix:
	assert_eq "$output" ECONNREFUSED "the probe"
	assert_match "$stderr" "stats: .*retries=[1-9]" "the probe retried: $stderr"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=300ms BACKOFF_BASE=20ms BACKOFF_STATS=on "$PYTHON" -c '
import socket
try:
    socket.socket(socket.AF_UNIX).connect("\0")
except OSError as e:
    print(e.errno)'
	assert_eq "$output" 111 "the python client (ECONNREFUSED)"
	assert_match "$stderr" "stats: .*retries=[1-9]" "python retried: $stderr"
	[[ -s $STATE ]] || fail "no state file: the clients did not look for it"
	run --separate-stderr "$LAUNCHER" status --all --json --file "$STATE"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" "" "rows"
	# A slot an older or hostile writer left with such a destination, under
	# its right key, names none; a path under its right key is named.
	rm -f "$STATE"
	make_state "$STATE" key=auto state=1 dest_family=1 dest_len=3 dest_abstract=1 \
		dest_hex=000000 dest_netns=77 mono_ago_ms=10
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_match "$output" '^\{"destination":null,"state":"down",.*"netns":null,"user":"[^"]+"\}$' "a slot of no name"
	rm -f "$STATE"
	make_state "$STATE" key=auto state=1 dest_family=1 dest_len=3 dest_hex=2f6162 \
		dest_netns=77 mono_ago_ms=10
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_match "$output" '^\{"destination":"unix:/ab","state":"down",.*"netns":77,"user":"[^"]+"\}$' "a path"
}

# free_port_of: a TCP port free on 127.0.0.1 now.
free_port_of() {
	"$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# waiters_of DEST ARGS...: the waiters `backoff status --json ARGS` counts for
# DEST, summed over its rows ("" if no row): a port of this test may be a
# destination that an earlier test left in the same view, with no waiter.
waiters_of() {
	local dest=$1
	shift
	"$LAUNCHER" status --json "$@" | "$PYTHON" -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin]
mine = [r["waiters"] for r in rows if r["destination"] == sys.argv[1]]
if mine:
    print(sum(mine))' "$dest"
}

# waiters_until DEST LOW HIGH TIMEOUT_S ARGS...: until DEST's waiters are within [LOW, HIGH].
waiters_until() {
	local dest=$1 low=$2 high=$3 deadline=$(($(now_ms) + $4 * 1000)) n
	shift 4
	until n=$(waiters_of "$dest" "$@") && [[ -n $n ]] && ((n >= low && n <= high)); do
		(($(now_ms) < deadline)) ||
			fail "timed out waiting for $low..$high waiters of $dest (last: '$n')" || return
		sleep 0.05
	done
}

# An asyncio client of 127.0.0.1:PORT that prints "connected" and then stays,
# reading until the server closes.
asyncio_stayer=("$PYTHON" -c '
import asyncio, sys
async def main():
    reader, writer = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
    print("connected", flush=True)
    await reader.read()
asyncio.run(main())
')
# start_go_server NAME [http]: a server bound at once (refused), listening once
# $T/go exists; it sends "hello" to its one client and keeps it, or with http
# answers each request with a page and closes (sets PORT).
start_go_server() {
	# shellcheck disable=SC2016 # a python program
	start_bg "$1" "$PYTHON" -c '
import os, socket, sys, time
http = sys.argv[3] == "http"
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{srv.getsockname()[1]}\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
deadline = time.monotonic() + (30 if http else 20)
while not os.path.exists(sys.argv[2]) and time.monotonic() < deadline:
    time.sleep(0.01)
srv.listen(8)
while http:
    c, _ = srv.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")
    c.close()
c, _ = srv.accept()
c.sendall(b"hello\n")
time.sleep(30)
' "$T/$1.port" "$T/go" "${2:-}"
	wait_for_file "$T/$1.port" 5 || return
	PORT=$(<"$T/$1.port")
}

@test "an event loop's connect waiting for its retry is a waiter while it waits, and no more once it connected or died" {
	start_go_server srv
	export BACKOFF_SHARED=$STATE BACKOFF_TIMEOUT=30s
	# Two asyncio clients (non-blocking connects, epoll): each a waiter.
	start_bg c1 env LD_PRELOAD="$LIB" "${asyncio_stayer[@]}" "$PORT"
	start_bg c2 env LD_PRELOAD="$LIB" "${asyncio_stayer[@]}" "$PORT"
	waiters_until "127.0.0.1:$PORT" 2 2 10
	# One killed while it waits: its process is gone, so is its waiter.
	local c2=${BG_PIDS[-1]}
	kill -KILL "$c2"
	wait "$c2" || true
	waiters_until "127.0.0.1:$PORT" 1 1 5
	status_until "^127\.0\.0\.1:$PORT +waiting " 5
	# Connected, and still running: no longer a waiter.
	touch "$T/go"
	wait_for_line "$T/c1.out" '^connected$' 10
	waiters_until "127.0.0.1:$PORT" 0 0 5 --all
	run --separate-stderr "$LAUNCHER" status --all --json
	assert_match "$output" "^\\{\"destination\":\"127.0.0.1:$PORT\",\"state\":\"up\"," "up: $stderr"
	# A process alive whose lease is over (it exec'd with connects waiting)
	# counts nothing; one whose lease runs does; a lease beyond an hour is none.
	rm -f "$STATE"
	make_state "$STATE" key=0x5678 state=1 mono_ago_ms=10 loop0=$$:3:-2 loop1=$$:4:30 \
		loop2=$$:5:4000
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_match "$output" '"state":"waiting",.*"waiters":4,' "the lease that runs: $stderr"
}

@test "--json: one object per line that python parses, a unix path named with its state and since" {
	probes 2 "unix:$T/late.sock" u BACKOFF_TIMEOUT=30s
	closed_port dead
	probes 1 "127.0.0.1:$PORT" t BACKOFF_TIMEOUT=30s
	status_until "unix:$T/late.sock.*waiting" 5 --file "$STATE"
	status_until "127.0.0.1:$PORT.*waiting" 5 --file "$STATE"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	printf '%s\n' "$output" >"$T/status.json"
	run "$PYTHON" - "$T/status.json" "$T/late.sock" "$PORT" "${PROBES[*]}" <<'PY'
import json, sys
sock, port, pids = sys.argv[2], sys.argv[3], [int(p) for p in sys.argv[4].split()]
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 2, rows
by = {r["destination"]: r for r in rows}
u, t = by["unix:" + sock], by["127.0.0.1:" + port]
for r in (u, t):
    assert r["state"] == "waiting", r
    assert r["prober_pid"] in pids and r["prober_command"] == "probe", r
    assert r["since"].endswith("Z") and 0 <= r["since_ms_ago"] < 10000, r
    assert r["attempts"] >= 1 and r["attempts_saved"] >= 0, r
    assert 0 <= r["last_attempt_ms_ago"] < 10000, r
assert u["last_error"] == "ENOENT", u
assert t["last_error"] == "ECONNREFUSED", t
print("ok")
PY
	assert_eq "$output" "ok" "checked JSON"
}

@test "--openmetrics: gauges labelled by destination, each family together, ending with # EOF" {
	closed_port dead
	probes 2 "127.0.0.1:$PORT" p BACKOFF_TIMEOUT=30s
	status_until "waiting" 5 --file "$STATE"
	run --separate-stderr "$LAUNCHER" status --openmetrics --file "$STATE"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	printf '%s\n' "$output" >"$T/status.om"
	run "$PYTHON" - "$T/status.om" "127.0.0.1:$PORT" <<'PY'
import re, sys
dest = sys.argv[2]
lines = open(sys.argv[1]).read().split("\n")
assert lines[-2:] == ["# EOF", ""], lines[-3:]
families, seen, samples = [], set(), {}
for line in lines[:-2]:
    m = re.fullmatch(r"# (HELP|TYPE) ([a-z_]+) (.+)", line)
    if m:
        if m.group(1) == "TYPE":
            assert m.group(3) == "gauge", line
            assert m.group(2) not in seen, "family twice: " + line
            seen.add(m.group(2))
            families.append(m.group(2))
        continue
    m = re.fullmatch(r'([a-z_]+)\{destination="([^"\\]*)",netns="[0-9]+",user="[^"\\]*"((?:,[a-z_]+="[^"\\]*")*)\} ([0-9]+(?:\.[0-9]+)?)', line)
    assert m, "not a sample: " + line
    assert m.group(1) == families[-1], "sample outside its family: " + line
    samples[(m.group(1), m.group(2))] = (m.group(3), float(m.group(4)))
assert samples[("backoff_destination_info", dest)] == (
    ',state="waiting",last_error="ECONNREFUSED",prober_command="probe"', 1.0), samples
assert samples[("backoff_destination_waiting", dest)][1] == 1
assert 1 <= samples[("backoff_destination_waiters", dest)][1] <= 2
assert samples[("backoff_destination_attempts", dest)][1] >= 1
import time
assert abs(samples[("backoff_destination_down_since_seconds", dest)][1] - time.time()) < 30
print("ok")
PY
	assert_eq "$output" "ok" "checked OpenMetrics"
}

@test "after its clients gave up, a destination is down with its error, start and every real attempt counted" {
	closed_port dead
	probes 1 "127.0.0.1:$PORT" p BACKOFF_TIMEOUT=1s BACKOFF_BASE=50ms BACKOFF_CAP=100ms \
		BACKOFF_STATS=on
	local pid=${PROBES[0]}
	wait "$pid" || true
	PROBES=()
	assert_eq "$(cat "$T/p.1.out")" "ECONNREFUSED" "the client's outcome"
	local made
	made=$(sed -n 's/.* retries=\([0-9]*\).*/\1/p' "$T/p.1.err")
	[[ -n $made ]] || fail "no stats line: $(cat "$T/p.1.err")"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	run "$PYTHON" -c '
import json, sys
r = json.loads(sys.stdin.readline())
print(r["destination"], r["state"], r["last_error"], r["prober_pid"], r["waiters"], r["attempts"],
      800 <= r["since_ms_ago"] < 10000)' <<<"$output"
	# Its first attempt and each retry, all real: nobody else probed.
	assert_eq "$output" "127.0.0.1:$PORT down ECONNREFUSED None 0 $((made + 1)) True" "the row"
}

@test "hostile state files: one line on stderr naming the file, status 1, no output" {
	local kind want
	for kind in random truncated empty symlink mode fifo directory version; do
		rm -rf "$STATE"
		case $kind in
		random) head -c 393792 /dev/urandom >"$STATE" ;;
		truncated) make_state "$T/whole" && head -c 393000 "$T/whole" >"$STATE" ;;
		empty) : >"$STATE" ;;
		symlink) make_state "$T/real" && ln -s "$T/real" "$STATE" ;;
		mode) make_state "$STATE" && chmod 640 "$STATE" ;;
		fifo) mkfifo -m 600 "$STATE" ;;
		directory) mkdir -m 700 "$STATE" ;;
		version)
			make_state "$STATE"
			printf '\004' | dd of="$STATE" bs=1 seek=8 conv=notrunc status=none
			;;
		esac
		case $kind in
		random) want="not a libbackoff state file" ;;
		truncated | empty) want="wrong size" ;;
		symlink) want="cannot open: Too many levels of symbolic links" ;;
		mode) want="readable or writable by others" ;;
		fifo | directory) want="not a regular file" ;;
		version) want="another version's layout" ;;
		esac
		# Private to its owner, but the one file whose mode is the point.
		[[ ! -f $STATE || -L $STATE || $kind == mode ]] || chmod 600 "$STATE"
		run --separate-stderr timeout 5 "$LAUNCHER" status --file "$STATE"
		assert_eq "$status" 1 "status ($kind; stderr: $stderr)"
		assert_eq "$stderr" "backoff status: $STATE: $want" "stderr ($kind)"
		assert_eq "$output" "" "stdout ($kind)"
	done
	# The same refusal through BACKOFF_SHARED, and for a file that is not there.
	run --separate-stderr env BACKOFF_SHARED="$T/none" "$LAUNCHER" status
	assert_eq "$status" 1 "status (missing file)"
	assert_eq "$stderr" "backoff status: $T/none: no such file" "stderr (missing file)"
}

@test "a slot's fields are bounded as the library bounds them; a destination that does not hash to its key is not named" {
	# 127.0.0.1:80 in the slot, under a key it does not hash to; every other
	# field out of range or stale.
	make_state "$STATE" key=0x123456789a state=99 err=99999 waiters=7 prober=-5 \
		prober_pid=-7 lease_ns=0xffffffffffffffff attempts=12 saved=34 \
		dest_family=2 dest_port=80 dest_hex=7f000001 since_ns=0xfffffffffffffff0 mono_ago_ms=0
	run --separate-stderr "$LAUNCHER" status --all --json --file "$STATE"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_match "$output" '^\{"destination":null,"state":"waiting","since":null,"since_ms_ago":null,"last_attempt_ms_ago":[0-9]+,"last_error":null,"prober_pid":null,"prober_command":null,"waiters":7,"attempts":12,"attempts_saved":34,"early_closes":0,"in_line":null,"netns":null,"user":"[^"]+"\}$' "the row"
	run --separate-stderr "$LAUNCHER" status --all --file "$STATE"
	assert_match "$output" $'\nunnamed slot 0 +waiting +- +- +gone +7 +12 +34$' "the table"
	# A unix path longer than any, or a family the library never writes: no name.
	rm -f "$STATE"
	make_state "$STATE" key=0x5678 state=1 dest_family=1 dest_len=5000 mono_ago_ms=5000
	run --separate-stderr "$LAUNCHER" status --file "$STATE"
	assert_match "$output" $'\nunnamed slot 0 +down +5s +' "a long path"
	# Sleepers a killed process left behind are not believed after an hour:
	# read two hours later, in a time namespace whose clock is ahead.
	rm -f "$STATE"
	make_state "$STATE" key=0x5678 state=1 waiters=9 mono_ago_ms=0
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_match "$output" '"state":"waiting",.*"waiters":9,' "a count of sleepers of now"
	require_unshare -T --fork --monotonic 7200
	run --separate-stderr "${UNSHARE[@]}" "$LAUNCHER" status --json --file "$STATE"
	assert_eq "$output" "" "an outage of two hours ago, nobody there to see it: not shown"
	run --separate-stderr "${UNSHARE[@]}" "$LAUNCHER" status --all --json --file "$STATE"
	assert_match "$output" '"state":"past",.*"waiters":0,' "a count of sleepers from two hours ago"
}

@test "backoff status shows what is true now: a destination a process found down before it exited is past, shown only under --all" {
	closed_port dead
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		BACKOFF_TIMEOUT=300ms BACKOFF_BASE=20ms "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the probe"
	# Its last attempt a moment ago: down now (the default age is 5 minutes).
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_match "$output" "^\\{\"destination\":\"127.0.0.1:$PORT\",\"state\":\"down\"," "down: $stderr"
	# No attempt within --age 0 and no prober alive: past.
	run --separate-stderr "$LAUNCHER" status --age 0 --file "$STATE"
	assert_eq "$output" "no destination waited for or known down ($STATE)" "the table"
	run --separate-stderr "$LAUNCHER" status --age 0 --all --json --file "$STATE"
	assert_match "$output" "^\\{\"destination\":\"127.0.0.1:$PORT\",\"state\":\"past\",.*\"last_error\":\"ECONNREFUSED\"" \
		"past under --all: $stderr"
	run --separate-stderr "$LAUNCHER" status --age 5x --file "$STATE"
	assert_eq "$status" 2 "a bad --age"
	assert_match "$stderr" '^backoff status: --age "5x": expected a duration' "its message"
}

@test "another user's state file is refused; only root may name another user" {
	[[ $EUID -eq 0 ]] || skip "needs root to make a file of another user"
	require_program setpriv util-linux
	make_state "$STATE"
	chown nobody "$STATE"
	run --separate-stderr "$LAUNCHER" status --file "$STATE"
	assert_eq "$status" 1 "status (a file of nobody's)"
	assert_eq "$stderr" "backoff status: $STATE: owned by another user" "stderr"
	# Root names the user: nobody's file is then the one expected.
	run --separate-stderr "$LAUNCHER" status --user nobody --file "$STATE"
	assert_eq "$status" 0 "status (root naming nobody; stderr: $stderr)"
	assert_match "$output" "^no destination waited for or known down" "output"
	# A user with no state file: nothing waits.
	run --separate-stderr "$LAUNCHER" status --user 3999999 --json
	assert_eq "$status" 0 "status (no file; stderr: $stderr)"
	assert_eq "$output" "" "JSON of no file"
	# Anyone else names only themself.
	chmod 755 "$T" "$T/.." "$T/../.." 2>/dev/null || true
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$LAUNCHER" status --user root
	assert_eq "$status" 2 "status (nobody naming root)"
	assert_eq "$stderr" "backoff status: --user: only root may read another user's state file" \
		"stderr"
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$LAUNCHER" status --user nobody --file "$STATE"
	assert_eq "$status" 0 "status (nobody naming nobody; stderr: $stderr)"
}

@test "backoff status: usage errors exit 2, --help says the options, a command named status needs --" {
	run --separate-stderr "$LAUNCHER" status --bogus
	assert_eq "$status" 2 "status"
	assert_match "$stderr" "unexpected argument \"--bogus\"" "stderr"
	run --separate-stderr "$LAUNCHER" status --json --openmetrics
	assert_eq "$status" 2 "status (two formats)"
	run --separate-stderr "$LAUNCHER" --help
	assert_match "$output" "backoff status \[--json \| --openmetrics\]" "launcher help"
	run -127 --separate-stderr "$LAUNCHER" -- status
	assert_eq "$status" 127 "a command named status is run"
}

@test "root's view is every user's: a USER column, JSON and OpenMetrics name whose each row is; a file root cannot use is said and left out" {
	[[ $EUID -eq 0 ]] || skip "needs root to run a client as another user"
	require_program setpriv util-linux
	local file=/dev/shm/libbackoff-65534.v7 mine=/dev/shm/libbackoff-0.v7 made= made_mine=
	[[ -e $file ]] || made=1
	[[ -e $mine ]] || made_mine=1
	closed_port dead
	chmod 755 "$T" "$T/.." "$T/../.." 2>/dev/null || true
	# A client of nobody's and one of root's, each with its default state file,
	# each waiting for the same closed port.
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=30s "$HELPERS/probe" "127.0.0.1:$PORT" \
		>"$T/nobody.out" 2>"$T/nobody.err" 3>&- &
	PROBES+=("$!")
	env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=30s "$HELPERS/probe" "127.0.0.1:$PORT" \
		>"$T/root.out" 2>"$T/root.err" 3>&- &
	PROBES+=("$!")
	# Each client waiting, whichever of the two gets there first.
	status_until "^127\.0\.0\.1:$PORT +root +((-|net:\\[[0-9]+\\]) +)?waiting " 5
	status_until "^127\.0\.0\.1:$PORT +nobody +((-|net:\\[[0-9]+\\]) +)?waiting " 5
	assert_match "$(head -n 1 <<<"$STATUS_OUT")" "^DESTINATION +USER +(NETNS +)?STATE " "the header"
	assert_match "$STATUS_OUT" $'\n'"127\\.0\\.0\\.1:$PORT +root +((-|net:\\[[0-9]+\\]) +)?waiting " "root's row"
	run --separate-stderr "$LAUNCHER" status --json
	assert_match "$output" "\"destination\":\"127.0.0.1:$PORT\",\"state\":\"waiting\",.*\"user\":\"nobody\"\\}" \
		"JSON: $stderr"
	run --separate-stderr "$LAUNCHER" status --openmetrics
	assert_match "$output" "backoff_destination_waiting\\{destination=\"127.0.0.1:$PORT\",netns=\"[0-9]+\",user=\"nobody\"\\} 1" \
		"OpenMetrics"
	# One user's view: --user, no column; its own view for a user.
	run --separate-stderr "$LAUNCHER" status --user nobody
	assert_match "$(head -n 1 <<<"$output")" "^DESTINATION +(NETNS +)?STATE " "nobody's view: $stderr"
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$LAUNCHER" status
	assert_match "$output" $'\n'"127\\.0\\.0\\.1:$PORT +((-|net:\\[[0-9]+\\]) +)?waiting " "as nobody: $stderr"
	assert_no_match "$output" "root" "as nobody, no other user's row"
	stop_probes
	# A file of another user that root cannot use: said on stderr, left out, status 0.
	OTHER_FILE=/dev/shm/libbackoff-3999998.v7
	rm -f "$OTHER_FILE"
	make_state "$OTHER_FILE" key=0x5678 state=1 mono_ago_ms=10
	chown 3999998 "$OTHER_FILE"
	chmod 644 "$OTHER_FILE"
	run --separate-stderr "$LAUNCHER" status --all
	assert_eq "$status" 0 "status with a file refused"
	assert_eq "$stderr" "backoff status: $OTHER_FILE: readable or writable by others (not shown)" \
		"stderr"
	assert_no_match "$output" "3999998|unnamed" "its rows"
	# A file named by BACKOFF_SHARED or --file is that file alone.
	run --separate-stderr env BACKOFF_SHARED="$mine" "$LAUNCHER" status --all
	assert_no_match "$output" "nobody" "BACKOFF_SHARED's view"
	[[ -z $made ]] || rm -f "$file"
	[[ -z $made_mine ]] || rm -f "$mine"
}

@test "root's view while nginx, its workers running as nobody, waits for a late upstream: the destination, nobody's, with its waiters" {
	[[ $EUID -eq 0 ]] || skip "needs root to run nginx's workers as nobody"
	require_command nginx curl
	local file=/dev/shm/libbackoff-65534.v7 made= d=$T/nginx front up
	[[ -e $file ]] || made=1
	# The upstream: bound at once (refused), serving once $T/go exists.
	start_go_server up http
	up=$PORT
	front=$(free_port_of)
	chmod 755 "$T" "$T/.." "$T/../.." 2>/dev/null || true
	mkdir -p "$d"
	chmod 777 "$d"
	cat >"$d/nginx.conf" <<EOF
daemon off; worker_processes 1; user nobody nogroup; pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 64; }
http { access_log off; client_body_temp_path $d; proxy_temp_path $d; fastcgi_temp_path $d;
uwsgi_temp_path $d; scgi_temp_path $d;
server { listen 127.0.0.1:$front; location / { proxy_pass http://127.0.0.1:$up; } } }
EOF
	start_bg nginx env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=30s nginx -p "$d" -e "$d/error.log" \
		-c "$d/nginx.conf"
	wait_for_port "$front" 10 || fail "nginx did not listen: $(cat "$d/error.log")"
	start_bg curl curl -sS --max-time 25 "http://127.0.0.1:$front/"
	# Root's default view: nginx's worker waits, in nobody's file, non-blocking.
	status_until "^127\\.0\\.0\\.1:$up +nobody +((-|net:\\[[0-9]+\\]) +)?waiting " 10
	waiters_until "127.0.0.1:$up" 1 1 5
	touch "$T/go"
	wait_for_line "$T/curl.out" '^hello$' 15
	# Connected: nginx still runs, and waits for nothing.
	waiters_until "127.0.0.1:$up" 0 0 5 --all
	[[ -z $made ]] || rm -f "$file"
}

@test "a give-up, then a first-try success from another process: up at once in every format; a new outage counts from its own first failure" {
	local pid
	start_listener back 2500 --count 10
	probes 1 "127.0.0.1:$PORT" p BACKOFF_TIMEOUT=1s BACKOFF_BASE=50ms BACKOFF_CAP=100ms
	pid=${PROBES[0]}
	wait "$pid" || true
	PROBES=()
	assert_eq "$(cat "$T/p.1.out")" "ECONNREFUSED" "the first client gives up"
	status_until '"state":"down"' 5 --json --file "$STATE"
	wait_for_line "$T/back.out" "^listening " 10
	# One connect, made at once: a first attempt that succeeds.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$STATE" \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "the second client: $stderr"
	run --separate-stderr "$LAUNCHER" status --file "$STATE"
	assert_match "$output" "^no destination waited for or known down" "the text, without --all: $stderr"
	run --separate-stderr "$LAUNCHER" status --all --json --file "$STATE"
	assert_match "$output" "\"destination\":\"127.0.0.1:$PORT\",\"state\":\"up\"" "the JSON row"
	run --separate-stderr "$LAUNCHER" status --all --openmetrics --file "$STATE"
	assert_no_match "$output" "state=\"down\"" "OpenMetrics"
	# The server goes away: a new outage, its start its own.
	stop_bg_all
	probes 1 "127.0.0.1:$PORT" p2 BACKOFF_TIMEOUT=1s BACKOFF_BASE=50ms BACKOFF_CAP=100ms
	pid=${PROBES[0]}
	wait "$pid" || true
	PROBES=()
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	run "$PYTHON" -c '
import json, sys
r = json.loads(sys.stdin.readline())
print(r["state"], r["since_ms_ago"] < 2000)' <<<"$output"
	assert_eq "$output" "down True" "the second outage's start"
}

@test "backoff status DEST shows the rows of the destinations named alone: one waited for among two, in the table, JSON and OpenMetrics" {
	local one two
	closed_port dead1
	one=$PORT
	closed_port dead2
	two=$PORT
	probes 1 "127.0.0.1:$one" a BACKOFF_TIMEOUT=30s
	probes 1 "127.0.0.1:$two" b BACKOFF_TIMEOUT=30s
	status_until "^127\\.0\\.0\\.1:$one +waiting " 5 --file "$STATE"
	status_until "^127\\.0\\.0\\.1:$two +waiting " 5 --file "$STATE"
	run --separate-stderr "$LAUNCHER" status --file "$STATE" "127.0.0.1:$one"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_match "$(head -n 1 <<<"$output")" "^DESTINATION +STATE " "the header"
	assert_match "$output" $'\n'"127\\.0\\.0\\.1:$one +waiting +[^ ]+ +ECONNREFUSED " "the row named"
	assert_eq "$(count_lines "$output")" 2 "lines (the header, one row): $output"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE" "127.0.0.1:$one"
	assert_eq "$status" 0 "status, JSON (stderr: $stderr)"
	assert_match "$output" "^\\{\"destination\":\"127.0.0.1:$one\",\"state\":\"waiting\"," "JSON: the row named"
	assert_eq "$(count_lines "$output")" 1 "JSON: one line"
	run --separate-stderr "$LAUNCHER" status --openmetrics --file "$STATE" "127.0.0.1:$one"
	assert_eq "$status" 0 "status, OpenMetrics (stderr: $stderr)"
	assert_match "$output" "backoff_destination_waiting\\{destination=\"127.0.0.1:$one\",[^}]*\\} 1" "OpenMetrics: the row named"
	assert_no_match "$output" "127\\.0\\.0\\.1:$two" "OpenMetrics: the other destination"
	assert_match "$output" $'\n# EOF$' "OpenMetrics: its end"
	# Both named, the second as a pattern: both rows.
	run --separate-stderr "$LAUNCHER" status --file "$STATE" "127.0.0.1:$one" "*:$two"
	assert_eq "$status" 0 "status, both (stderr: $stderr)"
	assert_eq "$(count_lines "$output")" 3 "lines, both named: $output"
}

@test "backoff status DEST shows a destination named whatever its state: up, or past, which only --all shows otherwise" {
	make_state "$STATE" key=auto state=2 dest_family=2 dest_port=6379 dest_hex=7f000001 \
		mono_ago_ms=10
	run --separate-stderr "$LAUNCHER" status --file "$STATE"
	assert_eq "$output" "no destination waited for or known down ($STATE)" "unnamed, an up destination"
	run --separate-stderr "$LAUNCHER" status --file "$STATE" 127.0.0.1:6379
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_match "$output" $'\n''127\.0\.0\.1:6379 +up +' "named, up"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE" 127.0.0.1:6379
	assert_match "$output" '^\{"destination":"127.0.0.1:6379","state":"up",' "named, up, JSON"
	# An IPv6 destination found down ten minutes ago by a process gone: past.
	rm -f "$STATE"
	make_state "$STATE" key=auto state=1 err=111 dest_family=10 dest_port=80 \
		dest_hex=00000000000000000000000000000001 mono_ago_ms=600000
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE"
	assert_eq "$output" "" "unnamed, a past destination"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE" '[::1]:80'
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_match "$output" '^\{"destination":"\[::1\]:80","state":"past",.*"last_error":"ECONNREFUSED",' "named, past"
}

@test "backoff status DEST without a row: 'DEST: no record', status 3, on stderr under --json; a DEST that is no address is a usage error" {
	make_state "$STATE" key=auto state=1 dest_family=2 dest_port=6379 dest_hex=7f000001 \
		mono_ago_ms=10
	run --separate-stderr "$LAUNCHER" status --file "$STATE" unix:/run/none.sock
	assert_eq "$status" 3 "status (stderr: $stderr)"
	assert_eq "$output" "unix:/run/none.sock: no record" "the line"
	# One with a row and one without: the row, the line, status 3.
	run --separate-stderr "$LAUNCHER" status --file "$STATE" 127.0.0.1:6379 unix:/run/none.sock
	assert_eq "$status" 3 "status, one of two (stderr: $stderr)"
	assert_match "$output" $'^DESTINATION [^\n]*\n127\\.0\\.0\\.1:6379 +down [^\n]*\nunix:/run/none\\.sock: no record$' "the table and the line"
	run --separate-stderr "$LAUNCHER" status --json --file "$STATE" unix:/run/none.sock
	assert_eq "$status" 3 "status, JSON"
	assert_eq "$output" "" "JSON: stdout"
	assert_eq "$stderr" "backoff status: unix:/run/none.sock: no record" "JSON: stderr"
	run --separate-stderr "$LAUNCHER" status --openmetrics --file "$STATE" '[::1]:6379'
	assert_eq "$status" 3 "status, OpenMetrics"
	assert_eq "$stderr" "backoff status: [::1]:6379: no record" "OpenMetrics: stderr"
	run --separate-stderr "$LAUNCHER" status --file "$STATE" 127.0.0.1:6379
	assert_eq "$status" 0 "status, its row found"
	local bad
	for bad in db.example:5432 '!127.0.0.1:6379' 127.0.0.1:6379,127.0.0.1:80 ::1:80 ''; do
		run --separate-stderr "$LAUNCHER" status --file "$STATE" "$bad"
		assert_eq "$status" 2 "status, \"$bad\""
		assert_match "$stderr" "^backoff status: \"$(sed 's/[][\.*]/\\&/g' <<<"$bad")\": " "stderr, \"$bad\""
	done
}

# A command under a seccomp filter of its own (one that allows everything),
# not the supervisor's: the filter set with prctl, then the command exec'd.
SECCOMP_ALLOW=("$PYTHON" -c '
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
insn = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000))  # RET ALLOW
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
prog = Prog(1, ctypes.addressof(insn))
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(prog), 0, 0):  # NO_NEW_PRIVS, SECCOMP
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
')

@test "backoff status --processes lists the processes the library is in by pid: a preloaded one, a supervised one, its supervisor; not a plain one, nor one under another filter" {
	local user pre sup plain other
	user=$(id -un)
	start_bg pre env LD_PRELOAD="$LIB" sleep 30
	pre=${BG_PIDS[-1]}
	start_bg sup "$LAUNCHER" --engine supervise -- sleep 30
	sup=${BG_PIDS[-1]}
	start_bg plain sleep 30
	plain=${BG_PIDS[-1]}
	# Under a filter, saying a supervisor runs it (pid 1, none), with none there to do so.
	start_bg other env BACKOFF_SUPERVISED=1 "${SECCOMP_ALLOW[@]}" sleep 30
	other=${BG_PIDS[-1]}
	status_until "^ *$pre +$user +preload +sleep$" 5 --processes
	status_until "^ *$sup +$user +supervise +sleep$" 5 --processes
	assert_match "$(head -n 1 <<<"$STATUS_OUT")" "^ +PID +USER +ENGINE +COMMAND$" "the header"
	assert_match "$STATUS_OUT" $'\n'" *[0-9]+ +$user +supervisor +backoff"$'(\n|$)' "a supervisor"
	# Each row's process as it is now: sleep, the other under its filter.
	local deadline=$(($(now_ms) + 5000))
	until [[ $(<"/proc/$other/comm") == sleep ]]; do
		(($(now_ms) < deadline)) || fail "the filtered sleep did not start: $(cat "$T/other.err")" || return
		sleep 0.01
	done
	assert_match "$(grep '^Seccomp:' "/proc/$other/status")" $'\t2$' "the other's filter"
	run --separate-stderr "$LAUNCHER" status --processes
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_no_match "$output" $'\n'" *($plain|$other) " "a plain process, or one under another's filter"
	tail -n +2 <<<"$output" | awk '{ print $1 }' | sort -n -c || fail "not sorted by pid: $output"
	# JSON: one object per process and line, the same processes.
	run --separate-stderr "$LAUNCHER" status --processes --json
	assert_eq "$status" 0 "status, JSON (stderr: $stderr)"
	run "$PYTHON" -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin]
by = {r["pid"]: r for r in rows}
pre, sup, plain, other = (int(a) for a in sys.argv[1:5])
assert [r["pid"] for r in rows] == sorted(by), rows
assert by[pre] == {"pid": pre, "user": sys.argv[5], "engine": "preload", "command": "sleep"}, by[pre]
assert by[sup] == {"pid": sup, "user": sys.argv[5], "engine": "supervise", "command": "sleep"}, by[sup]
assert plain not in by and other not in by, rows
assert any(r["engine"] == "supervisor" for r in rows), rows
print("ok")' "$pre" "$sup" "$plain" "$other" "$user" <<<"$output"
	assert_eq "$output" "ok" "checked JSON"
	run --separate-stderr "$LAUNCHER" status --processes --all
	assert_eq "$status" 2 "--processes with an option of the destinations' view"
}

@test "backoff status --processes: root sees every user's processes, or one user's with --user; a user sees their own alone" {
	[[ $EUID -eq 0 ]] || skip "needs root to run a process as another user"
	require_program setpriv util-linux
	local mine theirs
	chmod 755 "$T" "$T/.." "$T/../.." 2>/dev/null || true
	start_bg mine env LD_PRELOAD="$LIB" sleep 30
	mine=${BG_PIDS[-1]}
	start_bg theirs setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env LD_PRELOAD="$LIB" sleep 30
	theirs=${BG_PIDS[-1]}
	status_until "^ *$theirs +nobody +preload +sleep$" 5 --processes
	status_until "^ *$mine +root +preload +sleep$" 5 --processes
	run --separate-stderr "$LAUNCHER" status --processes --user nobody
	assert_eq "$status" 0 "status, --user nobody (stderr: $stderr)"
	assert_match "$output" $'\n'" *$theirs +nobody +preload +sleep"$'(\n|$)' "nobody's, by root"
	assert_no_match "$output" " root " "root's, with --user nobody"
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$LAUNCHER" status --processes
	assert_eq "$status" 0 "status, as nobody (stderr: $stderr)"
	assert_match "$output" $'\n'" *$theirs +nobody +preload +sleep"$'(\n|$)' "nobody's own"
	assert_no_match "$output" " root " "root's, as nobody"
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$LAUNCHER" status --processes --user root
	assert_eq "$status" 2 "status, nobody naming root"
	assert_eq "$stderr" "backoff status: --user: only root may see another user's processes" "stderr"
}
