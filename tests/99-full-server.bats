#!/usr/bin/env bats
# A full server served at its own pace: a "try later" answer that means its
# connections are all taken (Redis's max number of clients here) puts the
# destination's blocking connects in a line, and each close of a connection
# held to it wakes the first in line; a connect that arrives while others wait
# joins the line rather than pass them.  Attempts are counted by the server.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	require_program redis-server
	require_program redis-cli
}

# A client: connects, PINGs, holds its connection 1 s once served, QUITs and
# closes; prints "ok", or "refused" and the answer.
CLIENT='
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"*1\r\n$4\r\nPING\r\n")
r = s.recv(100)
if not r.startswith(b"+PONG"):
    print("refused", r[:40], flush=True)
    sys.exit(1)
time.sleep(1)
s.sendall(b"*1\r\n$4\r\nQUIT\r\n")
s.recv(100)
s.close()
print("ok", flush=True)
'

# The same client in asyncio's event loop: a non-blocking connect, retried by the library's
# event loop, whose wait in line looks for a place freed.
# HOLDER: a client that says it holds its place, holds it 1 s, then ends it.
HOLDER='
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"*1\r\n$4\r\nPING\r\n")
if not s.recv(100).startswith(b"+PONG"):
    sys.exit(1)
print("held", flush=True)
time.sleep(1)
s.sendall(b"*1\r\n$4\r\nQUIT\r\n")
s.recv(100)
s.close()
'
ACLIENT='
import asyncio, sys
async def main(port):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"*1\r\n$4\r\nPING\r\n")
    await w.drain()
    got = await r.read(100)
    if not got.startswith(b"+PONG"):
        print("refused", got[:40], flush=True)
        sys.exit(1)
    await asyncio.sleep(1)
    w.write(b"*1\r\n$4\r\nQUIT\r\n")
    await w.drain()
    await r.read(100)
    w.close()
    print("ok", flush=True)
asyncio.run(main(int(sys.argv[1])))
'

# start_redis MAXCLIENTS: a redis-server on a free port (PORT), its
# connections counted so far in BASE.
start_redis() {
	PORT=$(free_port)
	start_bg redis redis-server --port "$PORT" --bind 127.0.0.1 --maxclients "$1" --save '' \
		--appendonly no
	wait_for_port "$PORT" 5 || fail "redis-server does not listen" || return
	BASE=$(redis_count)
}

# redis_count: the connections the server accepted (this one's included) and refused.
redis_count() {
	redis-cli -p "$PORT" info stats | tr -d '\r' |
		awk -F: '/^(total_connections_received|rejected_connections):/ { n += $2 } END { print n }'
}

# crowd FIRST COUNT [env...]: COUNT clients numbered from FIRST, started in
# turn without waiting, under the env given (none: without the library);
# CODE: the client (CLIENT by default).
crowd() {
	local first=$1 count=$2 i
	shift 2
	for ((i = first; i < first + count; i++)); do
		start_bg "c$i" env "$@" "$PYTHON" -c "${CODE:-$CLIENT}" "$PORT"
		CLIENTS+=("$!")
	done
}

# under_library I: the environment of client I under the library.
under_library() {
	printf '%s\n' LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_CAP=2s \
		BACKOFF_LOG_FILE="$T/c$1.log"
}

# served: the clients that printed ok.
served() {
	cat "$T"/c*.out | grep -c '^ok$' || true
}

# served_at_pace: 30 clients of CODE at redis-server --maxclients 5, without
# the library then under it.
served_at_pace() {
	local start elapsed attempts
	start_redis 5 || return
	CLIENTS=()
	crowd 1 30
	wait "${CLIENTS[@]}" || true
	assert_between "$(served)" 1 20 "served without the library"
	rm -f "$T"/c*.out
	BASE=$(redis_count)
	CLIENTS=()
	start=$(now_ms)
	# shellcheck disable=SC2046 # one word per variable
	crowd 1 30 $(under_library all)
	wait "${CLIENTS[@]}" || true
	elapsed=$(($(now_ms) - start))
	assert_eq "$(served)" 30 "served under the library: $(cat "$T"/c*.out "$T"/c*.err)"
	# The counting connection of redis_count is one of them.  Before the first close the line
	# has not moved: one connect per delay attempts, as a lone client would on its schedule.
	# Retried on the delays alone, such a crowd makes about twice as many.
	attempts=$(($(redis_count) - BASE - 1))
	assert_between "$attempts" 30 "${MAX_ATTEMPTS:-45}" "connection attempts for 30 clients: $(cat "$T/call.log")"
	# The pace: 30 / 5 x 1 s.
	assert_between "$elapsed" 5900 12000 "ms for the crowd"
	grep -q 'waiting in its line' "$T/call.log" || fail "no wait in line said: $(cat "$T/call.log")"
}

@test "30 clients against redis-server --maxclients 5 (each holds 1 s): all served as places free, at most 45 connection attempts, within twice the server's pace; without the library 5 or so" {
	served_at_pace
}

@test "30 asyncio clients against redis-server --maxclients 5: the event loop's connects in line are served as places free too, at most 50 attempts, within twice the pace" {
	# An event loop's connect learns of a freed place at its next look, not at once.
	CODE=$ACLIENT MAX_ATTEMPTS=50 served_at_pace
}

@test "a client that arrives while others wait in the full server's line joins it: no attempt of its own before a place frees; backoff status says full, with its line" {
	local attempts i
	start_redis 3 || return
	CLIENTS=()
	# shellcheck disable=SC2046 # one word per variable
	crowd 1 5 $(under_library first)
	# Two wait in line: the server said it is full to each.
	wait_for_line "$T/cfirst.log" 'waiting in its line' 10 ||
		fail "nobody waits in line: $(cat "$T/cfirst.log")" || return
	# backoff status says so while they wait: full, its line among the waiters.
	run --separate-stderr timeout 5 "$LAUNCHER" status --file "$T/state" --json
	assert_match "$output" '"destination":"127\.0\.0\.1:'"$PORT"'","state":"full"' "the status: $stderr"
	assert_match "$output" '"in_line":[12],' "the line in the status"
	for i in 6 7 8 9 10 11; do
		# shellcheck disable=SC2046 # one word per variable
		crowd "$i" 1 $(under_library "late$i")
	done
	wait "${CLIENTS[@]}" || true
	assert_eq "$(served)" 11 "served: $(cat "$T"/c*.out "$T"/c*.err)"
	# 11 served, 2 refused in the first crowd, a few attempts while the line had not moved.
	attempts=$(($(redis_count) - BASE - 1))
	assert_between "$attempts" 11 19 "connection attempts: $(cat "$T"/c*.log)"
	# Each late client's first act was to wait in line, behind others: no attempt of its own.
	for i in 6 7 8 9 10 11; do
		assert_match "$(head -n 1 "$T/clate$i.log")" 'waiting in its line .*\([1-9][0-9]* ahead' \
			"late client $i's first line"
	done
}

@test "a close frees a place at once: a client in a full server's line connects a moment after the holder closes, not at its planned delay, though their policies differ" {
	local start elapsed
	start_redis 1 || return
	# A first client finds nothing down and leaves the quiet mark: the holder, after it,
	# does not map the state file at its connect, and must look again at its close.
	# shellcheck disable=SC2046 # one word per variable
	env $(under_library pre) redis-cli -p "$PORT" ping >"$T/pre.out" 2>&1 ||
		fail "redis-cli ping: $(cat "$T/pre.out")"
	[[ -f $T/state.quiet ]] || fail "no quiet mark after a healthy client"
	# The holder, under the library (a cap of 2 s): its close is what frees the place.
	# shellcheck disable=SC2046 # one word per variable
	start_bg hold env $(under_library hold) "$PYTHON" -c "$HOLDER" "$PORT"
	wait_for_line "$T/hold.out" '^held$' 10 || return
	start=$(now_ms)
	# The one in line, on a longer policy: refused, then its planned delay would be 5 s.
	# shellcheck disable=SC2046 # one word per variable
	start_bg c1 env $(under_library 1) BACKOFF_BASE=5s BACKOFF_CAP=10s BACKOFF_JITTER=none \
		"$PYTHON" -c "$CLIENT" "$PORT"
	wait_for_line "$T/c1.out" '^(ok|refused)' 15 || return
	elapsed=$(($(now_ms) - start))
	assert_eq "$(cat "$T/c1.out")" ok "the client in line: $(cat "$T/c1.err" "$T/c1.log")"
	grep -q 'waiting in its line' "$T/c1.log" || fail "no wait in line said: $(cat "$T/c1.log")"
	# The holder closes 1 s after it held: the client is through within a moment of that
	# (and holds 1 s itself), far from the 5 s its delay would have made it wait.
	assert_between "$elapsed" 1000 4000 "ms until the client in line was served"
}
