#!/usr/bin/env bats
# A close on purpose is an answer.  A server that ends a connection before its
# first byte, the program having sent nothing, is by default taken at its word:
# the program gets its end at once, the server sees one connection, and a
# half-close stays a half-close.  It is taken for a front's refusal (the same
# socket connected again) only where the server speaks first: it greeted
# before (kept host-wide), or its port is a well-known server-first one, or
# BACKOFF_EARLY_CLOSE=refusal asks for it.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	LOGGED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
}

# answer_client MODE PORT: a python client of 127.0.0.1:PORT that sends nothing,
# reads (MODE blocking; nonblocking: after select says readable, within 5 s), then
# sends "late\n" on the same socket; prints what it read and the ms the read took,
# then "sent" or the send's error.
answer_client() {
	"$PYTHON" -c '
import select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
start = time.monotonic()
if sys.argv[1] == "nonblocking":
    s.setblocking(False)
    if not select.select([s], [], [], 5)[0]:
        sys.exit("not readable in 5 s")
try:
    data = repr(s.recv(100))
except OSError as e:
    data = type(e).__name__
print(data, int((time.monotonic() - start) * 1000))
s.setblocking(True)
try:
    s.sendall(b"late\n")
    print("sent")
except OSError as e:
    print(type(e).__name__)
' "$@"
}

# connections NAME: the connections start_front NAME accepted.
connections() {
	wc -l <"$T/$1.out"
}

@test "a server that closes before a byte, nothing sent: the end at once, one connection, blocking and non-blocking, preloaded and under the launcher" {
	local how mode n=0
	for how in preload launcher; do
		for mode in blocking nonblocking; do
			n=$((n + 1))
			start_front "front$n" fin -1
			if [[ $how == preload ]]; then
				run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
					bash -c "$(declare -f answer_client); PYTHON=$PYTHON answer_client $mode $PORT"
			else
				run --separate-stderr timeout 20 env "${LOGGED[@]}" "$LAUNCHER" -- \
					bash -c "$(declare -f answer_client); PYTHON=$PYTHON answer_client $mode $PORT"
			fi
			assert_match "${lines[0]}" "^b'' [0-9]+$" "what the client read ($how, $mode): $stderr"
			assert_between "${lines[0]#* }" 0 149 "ms until its end ($how, $mode)"
			assert_eq "$(connections "front$n")" 1 "connections the server accepted ($how, $mode)"
		done
	done
	assert_eq "$(json_events "$T/log.json" early-end reason | sort -u)" answer "the log"
	assert_eq "$(json_events "$T/log.json" early)" "" "no failed attempt"
}

@test "a server that half-closes before a byte, nothing sent: the program's later send reaches it on the first connection" {
	local mode n=0
	for mode in blocking nonblocking; do
		n=$((n + 1))
		start_front "half$n" half 1
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
			bash -c "$(declare -f answer_client); PYTHON=$PYTHON answer_client $mode $PORT"
		assert_match "${lines[0]}" "^b'' [0-9]+$" "what the client read ($mode): $stderr"
		assert_between "${lines[0]#* }" 0 149 "ms until its end ($mode)"
		assert_eq "${lines[1]}" sent "the client's send ($mode)"
		wait_for_line "$T/half$n.out" "^conn 1 " 5
		assert_eq "$(cat "$T/half$n.out")" "conn 1 bytes=5" "what the server got, and where ($mode)"
	done
}

@test "nc -d against a server that closes before a byte: its end at once and one connection, as without the library" {
	require_command nc
	local start elapsed
	start_front front fin -1
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" nc -d 127.0.0.1 "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/" "nc: $stderr"
	assert_between "$elapsed" 0 1000 "ms for nc"
	assert_eq "$(connections front)" 1 "connections the server accepted"
}

@test "BACKOFF_EARLY_CLOSE=refusal: the same server's closes are a front's refusals, connected again until it greets" {
	start_front front fin 2
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_EARLY_CLOSE=refusal \
		bash -c "$(declare -f answer_client); PYTHON=$PYTHON answer_client blocking $PORT"
	assert_match "${lines[0]}" "^b'hello\\\\n' [0-9]+$" "what the client read: $stderr"
	assert_eq "$(connections front)" 3 "connections the server accepted"
	assert_eq "$(json_events "$T/log.json" early attempt reason | tr '\n' ' ')" \
		"1 reconnect 2 reconnect " "the early closes"
}

@test "BACKOFF_EARLY_CLOSE=answer: even a server that greeted before is taken at its word" {
	start_front front fin 2,3
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}"
	assert_eq "$output" "b'hello\\n'" "the first client, greeted: $stderr"
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		BACKOFF_EARLY_CLOSE=answer
	assert_eq "$output" "b''" "the second client: $stderr"
	assert_eq "$(connections front)" 2 "connections the server accepted"
}

@test "a destination whose server greeted before: a later close before its greeting is a refusal, for another process too" {
	start_front front fin 2,3
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}"
	assert_eq "$output" "b'hello\\n'" "the first client, greeted: $stderr"
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}"
	assert_eq "$output" "b'hello\\n'" "the second client, after two closes: $stderr"
	assert_eq "$(connections front)" 4 "connections the server accepted"
	assert_eq "$(json_events "$T/log.json" early attempt reason | tr '\n' ' ')" \
		"1 reconnect 2 reconnect " "the early closes"
	# Without the shared state nothing is known of the destination: its close is its answer.
	start_front other fin 2,3
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_SHARED=off
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_SHARED=off
	assert_eq "$output" "b''" "the second client without the shared state: $stderr"
}

@test "a greeting heard from another server on the same port (a port reused) says nothing: the new server's close is its answer" {
	# Server A greets on PORT and stops; server B listens on the same PORT, ends its first
	# connection before a byte and holds later ones (an FTP data channel on a port
	# that a control port held before). Each accepted connection is a line of B's output.
	start_bg reuse "$PYTHON" -c '
import os, socket, sys, time
def listener(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    return s
a = listener(0)
port = a.getsockname()[1]
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{port}\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
c, _ = a.accept()
c.sendall(b"hello\n")
c.close()
while not os.path.exists(sys.argv[4]):
    time.sleep(0.01)
a.close()
b = listener(port)
open(sys.argv[2], "w").write("b\n")
held = []
while True:
    c, _ = b.accept()
    print("accepted", flush=True)
    if held or len(held) > 0 or os.path.exists(sys.argv[3]):
        held.append(c)
    else:
        open(sys.argv[3], "w").close()
        c.close()
' "$T/reuse.port" "$T/reuse.b" "$T/reuse.first" "$T/reuse.go"
	wait_for_file "$T/reuse.port" 5
	PORT=$(<"$T/reuse.port")
	run --separate-stderr client reads timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}"
	assert_eq "$output" "b'hello\\n'" "the client of server A: $stderr"
	# Server A stops only now: its greeting was heard while it listened.
	echo go >"$T/reuse.go"
	wait_for_file "$T/reuse.b" 5
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		bash -c "$(declare -f answer_client); PYTHON=$PYTHON answer_client blocking $PORT"
	assert_match "${lines[0]}" "^b'' [0-9]+$" "what the client of server B read: $stderr"
	assert_between "${lines[0]#* }" 0 149 "ms until its end"
	assert_eq "$(grep -c accepted "$T/reuse.out")" 1 "connections server B accepted"
	assert_eq "$(json_events "$T/log.json" early)" "" "no failed attempt"
}

@test "a well-known server-first port (3306, in a network namespace of the test's own): a close before the greeting is a refusal" {
	require_unshare -n
	local prog='
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(16)
print("listening", flush=True)
n = 0
while True:
    c, _ = srv.accept()
    n += 1
    if n > 2:
        c.sendall(b"hello\n")
    c.close()
    print("conn", n, flush=True)
'
	# shellcheck disable=SC2016 # expanded by the inner shell
	local run='ip link set lo up || exit 1
fronts=
for port in 3306 3307; do
	"$PYTHON" -c "$PROG" "$port" >"$T/front-$port.out" 3>&- &
	fronts="$fronts $!"
	i=0
	until grep -q listening "$T/front-$port.out" 2>/dev/null; do
		i=$((i + 1)); [ "$i" -lt 500 ] || exit 1; sleep 0.01
	done
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state-$port" "$PYTHON" -c "
import socket, sys
s = socket.create_connection((\"127.0.0.1\", $port))
print($port, repr(s.recv(100)))
"
done
kill $fronts 2>/dev/null
wait 2>/dev/null'
	run --separate-stderr timeout 30 env PYTHON="$PYTHON" PROG="$prog" LIB="$LIB" T="$T" \
		"${UNSHARE[@]}" sh -c "$run"
	assert_eq "${lines[0]}" "3306 b'hello\\n'" "port 3306: $stderr"
	assert_eq "${lines[1]}" "3307 b''" "port 3307, no well-known one: $stderr"
	assert_eq "$(grep -c conn "$T/front-3306.out")" 3 "connections on 3306"
	assert_eq "$(grep -c conn "$T/front-3307.out")" 1 "connections on 3307"
}

@test "while the library connects again, shutdown, getsockname and getpeername answer as on the connection the program believes it has" {
	start_front front fin -1
	local prog='
import errno, select, socket, sys, time
s = socket.socket()
s.setblocking(False)
s.connect_ex(("127.0.0.1", int(sys.argv[1])))
select.select([], [s], [], 5)
names = (s.getsockname(), s.getpeername())
time.sleep(0.2)  # the server has closed
try:
    print("first read", repr(s.recv(10)))
except OSError as e:
    print("first read", errno.errorcode[e.errno])
print("names", (s.getsockname(), s.getpeername()) == names)
try:
    s.shutdown(socket.SHUT_RDWR)
    print("shutdown 0")
except OSError as e:
    print("shutdown", errno.errorcode[e.errno])
print("ready", len(select.select([s], [], [], 5)[0]))
print("read", repr(s.recv(10)))
'
	run --separate-stderr timeout 20 "$PYTHON" -c "$prog" "$PORT"
	assert_eq "$output" "$(printf '%s\n' "first read b''" "names True" "shutdown 0" "ready 1" "read b''")" \
		"without the library: $stderr"
	: >"$T/front.out"
	# A first delay of 1 s: the new connection is not made before the program ends it.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_EARLY_CLOSE=refusal \
		BACKOFF_BASE=1s BACKOFF_JITTER=none "$PYTHON" -c "$prog" "$PORT"
	assert_eq "$output" "$(printf '%s\n' "first read EAGAIN" "names True" "shutdown 0" "ready 1" "read b''")" \
		"with the library: $stderr"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 reconnect" "the early close"
	assert_eq "$(connections front)" 1 "connections the server accepted"
}
