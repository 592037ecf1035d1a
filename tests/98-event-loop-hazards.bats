#!/usr/bin/env bats
# The event-loop machinery where a careless library hangs, loses an event or
# changes errno: hooks called from signal handlers, cancelled threads, a race
# between masking and the timeout clamp, epoll data shared by two fds, huge
# timeouts, no /proc, and thousands of connects in flight.
# shellcheck disable=SC2154 # status, output: set by bats run

load helper

setup() {
	require_build
	[[ -x $HELPERS/hazards ]] || fail "$HELPERS/hazards is missing: run make first"
}

# hazard MODE ADDR [VAR=VALUE...]: run hazards MODE under the library, bounded.
hazard() {
	local mode=$1 addr=$2
	shift 2
	run timeout 30 env LD_PRELOAD="$LIB" "$@" "$HELPERS/hazards" "$mode" "$addr"
}

@test "a 50 us SIGALRM whose handler writes and closes while a managed connect is polled: it connects" {
	start_listener server 800 --send hello
	hazard signals "127.0.0.1:$PORT" BACKOFF_BASE=20ms BACKOFF_CAP=100ms
	assert_eq "$status" 0 "status (output: $output)"
	assert_eq "$output" "signals: connected"
}

@test "a thread cancelled inside its poll loop leaves nothing held: the next connects go on" {
	closed_port dead
	hazard cancel "127.0.0.1:$PORT" BACKOFF_BASE=1ms BACKOFF_CAP=2ms
	assert_eq "$status" 0 "status (output: $output)"
	assert_eq "$output" "cancel: survived"
}

@test "a poll with a 20 s timeout wakes for its hidden connect while other threads run the retries" {
	local i
	for i in 1 2 3; do
		start_listener "server$i" 700 --send hello
		hazard race "127.0.0.1:$PORT" BACKOFF_BASE=1ms BACKOFF_CAP=2ms
		assert_eq "$status" 0 "status of round $i (output: $output)"
		assert_match "$output" "^race: connected after [0-9]+ ms$"
	done
}

@test "a pipe sharing epoll data 0 with a hidden socket gets its events, and the failure stays hidden" {
	closed_port dead
	hazard shared-data "127.0.0.1:$PORT" BACKOFF_BASE=5s BACKOFF_JITTER=none
	assert_eq "$status" 0 "status (output: $output)"
	assert_eq "$(grep -c "event(s), the pipe's in" <<<"$output")" 5 "rounds with the pipe's event"
}

@test "select, ppoll and epoll_pwait2 with a 2^62 s timeout wait for the fd, not return 0" {
	closed_port dead
	hazard huge-timeout "127.0.0.1:$PORT" BACKOFF_BASE=5s BACKOFF_JITTER=none
	assert_eq "$status" 0 "status (output: $output)"
	assert_eq "$(grep -c 'returned 1 after' <<<"$output")" 3 "waits that returned the pipe"
}

@test "adding a hidden fd, and one in progress, to five more epoll sets succeeds with errno untouched" {
	closed_port dead
	hazard errno-ctl "127.0.0.1:$PORT" BACKOFF_BASE=5s BACKOFF_JITTER=none
	assert_eq "$status" 0 "status (output: $output)"
	assert_eq "$(grep -c 'rc 0 errno 4242' <<<"$output")" 10 "epoll_ctl calls"
}

@test "without /proc a refused connect registered in epoll before connect() reports ECONNREFUSED" {
	command -v unshare >/dev/null || fail "unshare is not installed (util-linux)"
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: ASan reads /proc at start-up"
	closed_port dead
	run --separate-stderr timeout 30 unshare -rm sh -c 'mount -t tmpfs none /proc && exec "$@"' \
		sh env LD_PRELOAD="$LIB" BACKOFF_BASE=10ms BACKOFF_RETRIES=2 \
		"$HELPERS/evloop" --wait epoll-lt --register before --timeout 5000 "127.0.0.1:$PORT"
	assert_eq "$status" 1 "status (stderr: $stderr)"
	assert_eq "$output" "thread 0 ECONNREFUSED"
	assert_match "$stderr" "giving up after 3 attempts"
}

@test "300 threads each connect non-blocking to a server 1.5 s late: all 300 get the greeting" {
	start_listener server 1500 --count 300 --send hello
	run timeout 60 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=500ms \
		"$HELPERS/hazards" threads 300 "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (output: $output)"
	assert_eq "$output" "threads: 300 of 300 got the greeting"
}

@test "python asyncio with 5000 connects to a server 1.5 s late: all 5000 connect" {
	ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
	(($(ulimit -n) >= 10100)) || fail "cannot raise the fd limit to 10100 (hard limit $(ulimit -Hn))"
	local port
	port=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	start_bg server "$PYTHON" -c '
import asyncio, sys, time
async def main():
    await asyncio.sleep(1.5)
    async def serve(r, w):
        w.write(b"hello"); await w.drain(); w.close()
    srv = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]), backlog=8192)
    print("listening", flush=True)
    await asyncio.sleep(40)
asyncio.run(main())' "$port"
	run timeout 60 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=500ms BACKOFF_STATS=on \
		"$PYTHON" -c '
import asyncio, sys
async def one(port):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    data = await r.read()
    w.close()
    return data
async def main():
    port = int(sys.argv[1])
    res = await asyncio.gather(*(one(port) for _ in range(5000)), return_exceptions=True)
    ok = sum(1 for x in res if x == b"hello")
    errs = {type(x).__name__ for x in res if isinstance(x, BaseException)}
    print(ok, "of", len(res), "connected", *sorted(errs))
asyncio.run(main())' "$port"
	assert_eq "$status" 0 "status (output: $output)"
	assert_match "$output" "^5000 of 5000 connected"
}
