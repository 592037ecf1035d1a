#!/usr/bin/env bats
# Many threads with event loops of their own, and fd numbers reused while a
# retry is pending: the library's table must neither hang a thread nor touch
# a socket that merely got the number of a managed one.
# shellcheck disable=SC2154,SC2030,SC2031 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	[[ -x $HELPERS/evloop ]] || fail "$HELPERS/evloop is missing: run make first"
}

# check_threads COUNT TEXT_OF_SERVER...: the evloop output has COUNT OK lines,
# thread I with the text of server I % (number of servers); each server
# accepted its share after it listened; the log has one success per thread,
# after retries, no sooner than its server listened, and no give-up.
check_threads() {
	local count=$1 i s n line listening
	shift
	local texts=("$@") nservers=$#
	for ((i = 0; i < count; i++)); do
		line=$(sed -n "$((i + 1))p" <<<"$output")
		assert_match "$line" "^thread $i OK ${texts[i % nservers]} connect_ms=[0-9]+$" \
			"line of thread $i" || return
	done
	assert_eq "$(count_lines "$output")" "$count" "output lines"
	assert_eq "$(json_events "$T/log.json" success | wc -l)" "$count" "success events"
	assert_eq "$(json_events "$T/log.json" giveup)" "" "give-up events"
	for ((s = 0; s < nservers; s++)); do
		n=$(grep -c '^accepted ' "$T/server$s.out" || true)
		assert_eq "$n" "$(((count - s + nservers - 1) / nservers))" "connections server$s accepted"
		listening=$(listener_mono "server$s" listening)
		local port
		port=$(<"$T/server$s.port")
		while read -r attempt mono; do
			assert_between "$attempt" 2 1000 "attempts of a connect to server$s" || return
			assert_between "$mono" "$listening" "$((listening + 300 + 1000))" \
				"success time of a connect to server$s" || return
		done < <(json_events "$T/log.json" success target attempt mono_ms |
			awk -v t="127.0.0.1:$port" '$1 == t { print $2, $3 }')
	done
}

@test "16 threads with an epoll loop each connect to four servers 1 to 1.5 s late" {
	local s addrs=() after=(1000 1200 1400 1500)
	for s in 0 1 2 3; do
		start_listener "server$s" "${after[s]}" --count 4 --send "from$s"
		addrs+=("127.0.0.1:$PORT")
	done
	# A state file of its own: a record an earlier test left on the same port number (bind
	# to port 0 hands the same low ephemeral ports out again) is not this destination's.
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=300ms \
		BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" "$HELPERS/evloop" --threads 16 --wait epoll-lt,epoll-et \
		--register before,before,after,after,after --timeout 10000 --elapsed "${addrs[@]}"
	assert_eq "$status" 0 "evloop status (stderr: $stderr)"
	check_threads 16 from0 from1 from2 from3
}

@test "16 threads, each in a different wait primitive, connect to one server 1 s late" {
	start_listener server0 1000 --count 16 --send hello
	# A state file of its own: a record an earlier test left on the same port number (bind
	# to port 0 hands the same low ephemeral ports out again) is not this destination's.
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=300ms \
		BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" "$HELPERS/evloop" --threads 16 --wait poll,ppoll,select,pselect,epoll-lt,epoll-et,epoll-et \
		--register after,before --detect sockopt --timeout 10000 --elapsed "127.0.0.1:$PORT"
	assert_eq "$status" 0 "evloop status (stderr: $stderr)"
	check_threads 16 hello
}

# reuse HOW WAIT LIVE(yes|no): evloop --reuse, with A's retry due 600 ms after
# its first attempt, the old address listening from 300 ms on (so that a
# retry that went to the new socket would be accepted there), and a look at
# the new socket at 900 ms.  Sets EXPECTED to the lines a correct library gives.
reuse() {
	local how=$1 wait=$2 live=$3 args=()
	start_listener dead 300
	DEAD_PORT=$PORT
	if [[ $live == yes ]]; then
		start_listener live 0 --send live
		args=(--live "127.0.0.1:$PORT")
	fi
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=600ms BACKOFF_JITTER=none \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/evloop" --reuse "$how" --wait "$wait" --dead "127.0.0.1:$DEAD_PORT" \
		"${args[@]}" --hold 900
	# While A's retry is pending: in progress, as the kernel answers mid-attempt.
	EXPECTED=("A connect: EINPROGRESS" "A wait: 0" "A again: EALREADY" "A SO_ERROR: 0"
		"A read: EAGAIN" "A closed: ${how%-back}" "B fd: same"
		"B poll: 1 OUT|HUP" "B SO_ERROR: 0" "B read: ENOTCONN")
	[[ $live == no ]] || EXPECTED+=("B connect: EINPROGRESS" "B connected: 0")
	[[ $wait != epoll* ]] || EXPECTED+=("B in epoll set: no")
	if [[ $live == yes ]]; then
		EXPECTED+=("B peer: 127.0.0.1:$PORT" "B data: live")
	else
		EXPECTED+=("B peer: ENOTCONN")
	fi
}

# check_reuse: the lines are EXPECTED, the old address listened in time but
# saw no connection, and the library had hidden A's failure and scheduled
# its retry (so that the test tested something) and never made it.
check_reuse() {
	assert_eq "$status" 0 "evloop status (stderr: $stderr)"
	assert_eq "$output" "$(printf '%s\n' "${EXPECTED[@]}")" "evloop lines"
	[[ -n $(listener_mono dead listening) ]] || fail "the old address never listened" || return
	assert_eq "$(grep -c '^accepted ' "$T/dead.out" || true)" 0 \
		"connections to the old address"
	assert_eq "$(json_events "$T/log.json" retry target attempt delay_ms)" \
		"127.0.0.1:$DEAD_PORT 1 600" "retry events"
	assert_eq "$(json_events "$T/log.json" success)" "" "success events"
}

@test "close() of a socket whose retry is pending leaves a new socket with its number alone (poll, connected elsewhere)" {
	reuse close poll yes
	check_reuse
}

@test "close() of a socket whose retry is pending leaves a new socket with its number alone (epoll, unconnected)" {
	reuse close epoll-lt no
	check_reuse
}

@test "close_range() of a socket whose retry is pending leaves a new socket with its number alone" {
	reuse close_range poll no
	check_reuse
}

@test "dup2() of a new socket onto a number whose retry is pending leaves that socket alone" {
	reuse dup2 epoll-lt yes
	check_reuse
}

@test "fclose() of a stream on a socket whose retry is pending leaves a new socket with its number alone" {
	# glibc's fclose closes the fd internally, past the close() hook: only
	# the inode check on the table entry tells the new socket from the old.
	reuse fclose poll yes
	check_reuse
}

# With -back, B is A's own socket put back on its number past every hook, so
# that the socket's identity cannot tell: only the close hook named can have
# ended the library's management of that number.
@test "close() of a socket whose retry is pending ends its management: the same socket put back on its number comes back unmanaged" {
	reuse close-back poll no
	check_reuse
}

@test "close_range() of a socket whose retry is pending ends its management: the same socket put back on its number comes back unmanaged" {
	reuse close_range-back poll no
	check_reuse
}

@test "dup2() onto a socket whose retry is pending ends its management: the same socket put back on its number comes back unmanaged" {
	reuse dup2-back poll yes
	check_reuse
}

# under_way HOW [unix]: evloop --reuse HOW --under-way: A's attempt to a
# destination that does not answer (a full accept queue) is under way when
# HOW closes it; B, a new socket on its number (with unix: a socketpair's
# end, made past the socket() hook), is left unconnected past A's attempt's
# deadline, then connected to a live server (unix: read from its pair).  B
# is the kernel's all along.
under_way() {
	local dead expected=("A connect: EINPROGRESS" "A closed: $1" "B fd: same")
	start_blackhole "dead-$1$2"
	dead=$PORT
	start_listener "live-$1$2" 0 --send live
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/evloop" --reuse "$1" --under-way ${2:+--unix-b} --dead "127.0.0.1:$dead" \
		--live "127.0.0.1:$PORT" --hold 600
	if [[ -n $2 ]]; then
		expected+=("B poll: 1 OUT" "B SO_ERROR: 0" "B data: pair")
	else
		expected+=("B poll: 1 OUT|HUP" "B SO_ERROR: 0" "B peer: ENOTCONN"
			"B connect: EINPROGRESS" "B data: live")
	fi
	assert_eq "$status" 0 "evloop status (stderr: $stderr)"
	assert_eq "$output" "$(printf '%s\n' "${expected[@]}")" "evloop lines"
}

@test "a socket made on the number of a connect under way closed past the hooks (fclose, a raw close) is the kernel's: never hidden, never connected elsewhere" {
	under_way fclose
	under_way syscall
	under_way syscall unix
}

# reconnected_then_reused WAY: a python program (run preloaded, every close
# before a byte taken for a refusal, each new connection's time 100 ms) whose
# non-blocking socket A meets an early close; the library connects A again and
# the new connection is answered with "x".  A's life then ends by WAY (close,
# shutdown then close, close_range, dup2 of another socket over it, another
# thread's close, closefrom, dup3, or a close past every hook, the raw system
# call); after the
# new connection's time is over, socket B gets A's number and connects to a
# healthy server that sends "hello".  Prints "ok hello" when B reads it, else
# what went wrong.  The servers run without the library.
reconnected_then_reused() {
	local prog='
import ctypes, errno, os, select, socket, subprocess, sys, threading, time
way = sys.argv[1]
SERVER = r"""
import os, socket, sys, threading
def serve(ls, first):
    n = 0
    while True:
        c, _ = ls.accept()
        n += 1
        if first and n == 1:
            c.close()
            continue
        c.sendall(b"x" if first else b"hello")
        threading.Timer(20, c.close).start()
ls1, ls2 = socket.socket(), socket.socket()
for ls in ls1, ls2:
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
threading.Thread(target=serve, args=(ls1, True), daemon=True).start()
threading.Thread(target=serve, args=(ls2, False), daemon=True).start()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d %d\n" % (ls1.getsockname()[1], ls2.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
threading.Event().wait(60)
"""
# No pipe to the servers: closefrom must find none of the program'"'"'s own above A.
env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
ports = sys.argv[2]
srv = subprocess.Popen([sys.executable, "-c", SERVER, ports],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
end = time.monotonic() + 10
while not os.path.exists(ports):
    if time.monotonic() > end:
        sys.exit("the servers never listened")
    time.sleep(0.01)
with open(ports) as f:
    p1, p2 = map(int, f.read().split())
def wait(s, ev, secs):
    p = select.poll()
    p.register(s, ev)
    return p.poll(int(secs * 1000))
def connect(port):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    if not wait(s, select.POLLOUT, 5) or s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
        sys.exit("no connection to %d" % port)
    return s
def read(s, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        wait(s, select.POLLIN, end - time.monotonic())
        try:
            return s.recv(64)
        except BlockingIOError:
            pass
    return None
a = connect(p1)
fd = a.fileno()
time.sleep(0.05)  # the server has closed before the first read
got = read(a, 5)
if got != b"x":
    sys.exit("A read %r, not the new connection'"'"'s x" % got)
if way == "close":
    a.close()
elif way == "shutdown":
    a.shutdown(socket.SHUT_RDWR)
    a.close()
elif way == "close_range":
    a.detach()
    os.closerange(fd, fd + 1)
elif way == "dup2":
    other = socket.socket()
    os.dup2(other.fileno(), fd)
    other.close()
    a.detach()
    os.close(fd)
elif way == "thread":
    t = threading.Thread(target=a.close)
    t.start()
    t.join()
elif way == "dup3":
    other = socket.socket()
    os.dup2(other.fileno(), fd, inheritable=False)  # dup3(2) with O_CLOEXEC
    other.close()
    a.detach()
    os.close(fd)
elif way == "closefrom":
    a.detach()
    ctypes.CDLL(None).closefrom(fd)  # the preloaded closefrom first
elif way == "raw":
    a.detach()
    ctypes.CDLL(None, use_errno=True).syscall(3, fd)  # SYS_close on x86_64, past the hooks
time.sleep(0.4)  # the new connection'"'"'s time is over
b = connect(p2)
if b.fileno() != fd:
    sys.exit("B has fd %d, not %d" % (b.fileno(), fd))
data = read(b, 3)
print("ok hello" if data == b"hello" else "B read %r" % data)
srv.kill()
srv.wait(5)
'
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state" \
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		BACKOFF_EARLY_CLOSE=refusal BACKOFF_BASE=10ms BACKOFF_ATTEMPT_TIMEOUT=100ms \
		"$PYTHON" -c "$prog" "$1" "$T/ports-$1"
	assert_eq "$output" "ok hello" "$1: $stderr"
	# The library did connect A again (the test tested something) and ended nothing of B's.
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 reconnect" "$1: the early close"
	assert_eq "$(json_events "$T/log.json" early-end)" "" "$1: no end of a new connection"
}

@test "an fd whose early close the library connected again, then closed: a later socket on its number keeps its connection (close, shutdown then close, another thread)" {
	local way
	for way in close shutdown thread; do
		rm -f "$T/log.json" "$T/state"
		reconnected_then_reused "$way"
	done
}

@test "an fd whose early close the library connected again, then ended by close_range, closefrom, dup2 or dup3 over it or a close past the hooks: a later socket on its number keeps its connection" {
	local way
	for way in close_range closefrom dup2 dup3 raw; do
		rm -f "$T/log.json" "$T/state"
		reconnected_then_reused "$way"
	done
}
