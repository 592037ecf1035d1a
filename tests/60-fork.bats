#!/usr/bin/env bats
# Processes forked after load draw their own jitter, unless a seed is set, and
# leave the connects their parent is retrying to the parent.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

# parent_pid: the pid of the first retry event: the parent's own connect
# (probe --first) is retried before it forks.
parent_pid() {
	json_events "$T/log.json" retry pid | head -n 1
}

# delays_by_pid: "PID d1 d2 ..." per process, from the retry events of the log.
delays_by_pid() {
	json_events "$T/log.json" retry pid delay_ms |
		awk '{ d[$1] = d[$1] " " $2 } END { for (p in d) print p d[p] }' | sort
}

# The parent draws a delay of its own first (probe --first against the closed
# port): children that were not reseeded would go on with its sequence, and
# both draw the same delays.
@test "children forked after their parent drew wait different delays" {
	closed_port server
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_RETRIES=3 \
		BACKOFF_BASE=100ms BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --first "127.0.0.1:$PORT" --fork 2 "127.0.0.1:$PORT"
	assert_eq "$output" $'ECONNREFUSED\nECONNREFUSED' "probe output"
	# Given 100 ms, its three retries end it with ECONNREFUSED when their
	# delays (full jitter: up to 100, 200, 400 ms) add up to less (about 2 %).
	assert_match "$stderr" "^first: (ETIMEDOUT|ECONNREFUSED)$" "the parent's own connect (stderr)"
	assert_eq "$status" 1 "probe status"
	local lines
	mapfile -t lines < <(delays_by_pid | grep -v "^$(parent_pid) ")
	assert_eq "${#lines[@]}" 2 "children that retried" || return
	assert_match "${lines[0]}" '^[0-9]+( [0-9]+){3}$' "first child's delays"
	assert_match "${lines[1]}" '^[0-9]+( [0-9]+){3}$' "second child's delays"
	[[ ${lines[0]#* } != "${lines[1]#* }" ]] ||
		fail "both children waited ${lines[0]#* }"
}

@test "children forked after their parent drew wait the same delays with BACKOFF_SEED" {
	closed_port server
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SEED=42 BACKOFF_RETRIES=3 \
		BACKOFF_BASE=100ms \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --first "127.0.0.1:$PORT" --fork 2 "127.0.0.1:$PORT"
	assert_eq "$output" $'ECONNREFUSED\nECONNREFUSED' "probe output"
	local lines parent
	parent=$(parent_pid)
	mapfile -t lines < <(delays_by_pid | grep -v "^$parent ")
	assert_eq "${#lines[@]}" 2 "children that retried" || return
	assert_match "${lines[0]}" '^[0-9]+( [0-9]+){3}$' "first child's delays"
	assert_eq "${lines[1]#* }" "${lines[0]#* }" "second child's delays"
	# Each child starts the seeded sequence afresh, as a new process would.
	local first
	first=$(json_events "$T/log.json" retry pid delay_ms | awk -v p="$parent" '$1 == p { print $2; exit }')
	assert_match "${lines[0]#* }" "^$first " "first child's first delay, the parent's first"
}

# The parent's connect is pending (its failure hidden, its retry due at
# 500 ms) when it forks: the child sees the socket it inherited as the kernel
# does, and makes no attempt of its own; the parent connects when the server
# comes.
@test "a child forked during a retried non-blocking connect leaves it to its parent" {
	start_listener server 1200
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=500ms BACKOFF_JITTER=none \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/lifecycle" fork-busy "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$output" $'child read: ENOTCONN\nchild poll: 1\nparent OK' \
		"the child's view of the inherited socket, then the parent's outcome"
	assert_eq "$(json_events "$T/log.json" retry pid | sort -u)" "$(json_events "$T/log.json" success pid)" \
		"processes that retried, and the one that connected"
	assert_eq "$(grep -c '^accepted ' "$T/server.out" || true)" 1 "connections the server accepted"
}

# A child forked while its parent's connections await their first byte: the
# watch is the parent's (the child's copy of the table is cleared), whichever
# socket it is, the process's first or a later one.  Each connection of the
# second server ends without a byte, the first after 0.5 s; a connection made
# again would be answered "again".
FORK_WATCH='
import os, socket, sys, time
def serve(ls, first_close):
    ls.settimeout(5)  # ends with the test, at the latest
    n = 0
    try:
        while True:
            c, _ = ls.accept()
            n += 1
            if n == 1 and first_close:
                time.sleep(first_close)
            elif first_close:
                c.sendall(b"again\n")
            else:
                c.sendall(b"hello\n")
            c.close()
    finally:
        os._exit(0)
a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen(8)
b = socket.socket(); b.bind(("127.0.0.1", 0)); b.listen(8)
A, B = a.getsockname(), b.getsockname()
servers = [os.fork()]
if servers[0] == 0:
    serve(b, 0.5)
servers.append(os.fork())
if servers[1] == 0:
    serve(a, 0)
a.close(); b.close()
s1 = socket.create_connection(A); s1.recv(16)
s2 = socket.create_connection(B)
pid = os.fork()
if pid == 0:
    s3 = socket.create_connection(A)  # watched too, until read
    print("child read", repr(s2.recv(16)), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
for p in servers:
    os.kill(p, 9)
'

@test "a child forked while its parent's later connection awaits its first byte does not make it again" {
	run --separate-stderr timeout 20 "$PYTHON" -c "$FORK_WATCH"
	assert_eq "$output" "child read b''" "without the library: $stderr"
	# Every close taken for a refusal: a watch the child kept would make the connection again.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state" \
		BACKOFF_EARLY_CLOSE=refusal "$PYTHON" -c "$FORK_WATCH"
	assert_eq "$output" "child read b''" "with the library: $stderr"
}
