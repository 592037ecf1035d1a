#!/usr/bin/env bats
# Silence: a destination that drops the SYNs (a full accept queue on loopback)
# gets backoff too, and no call outlives its budget: every client ends within
# BACKOFF_TIMEOUT with the kernel's ETIMEDOUT meaning, where without the
# library it hangs for the kernel's two minutes.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
	start_blackhole silent
	QUIET=(BACKOFF_TIMEOUT=3s BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# ends_within LOW HIGH COMMAND...: runs COMMAND under the preload with QUIET;
# its status is not 0 and it ends between LOW and HIGH ms (ELAPSED).
ends_within() {
	local low=$1 high=$2 start
	shift 2
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${QUIET[@]}" "$@"
	ELAPSED=$(($(now_ms) - start))
	assert_between "$status" 1 123 "status of $1 (stderr: $stderr)" || return
	assert_between "$ELAPSED" "$low" "$high" "ms until $1 ended"
}

# hangs_without COMMAND...: without the library COMMAND is still waiting after 4 s.
hangs_without() {
	run --separate-stderr timeout 4 "$@"
	assert_eq "$status" 124 "status without the library (killed by timeout 4)"
}

@test "python create_connection (blocking) to a silent server ends after BACKOFF_TIMEOUT with TimeoutError" {
	local code="import socket; socket.create_connection(('127.0.0.1', $PORT))"
	hangs_without "$PYTHON" -c "$code"
	ends_within 2900 3500 "$PYTHON" -c "$code"
	assert_match "$stderr" "TimeoutError: \[Errno 110\] Connection timed out" "python's error"
	assert_eq "$(json_events "$T/log.json" giveup errno reason)" "ETIMEDOUT timeout" "the give-up"
}

@test "curl without --connect-timeout to a silent server ends after BACKOFF_TIMEOUT with its connect error" {
	require_command curl
	hangs_without curl -sS "http://127.0.0.1:$PORT/"
	ends_within 2900 3400 curl -sS "http://127.0.0.1:$PORT/"
	assert_eq "$status" 28 "curl's status (a timeout)"
	assert_match "$stderr" "Failed to connect to 127.0.0.1 port $PORT after 3[0-9]{3} ms" "curl's error"
}

@test "nc without -w to a silent server ends after BACKOFF_TIMEOUT" {
	require_command nc
	hangs_without nc 127.0.0.1 "$PORT" </dev/null
	ends_within 2900 3400 nc 127.0.0.1 "$PORT" </dev/null
	assert_eq "$(json_events "$T/log.json" giveup errno)" "ETIMEDOUT" "the give-up's errno"
}

@test "psql with no connect_timeout to a silent server ends after BACKOFF_TIMEOUT with its timeout error" {
	require_command psql
	hangs_without psql -h 127.0.0.1 -p "$PORT" -U nobody -c 'select 1' postgres
	ends_within 2900 3500 psql -h 127.0.0.1 -p "$PORT" -U nobody -c 'select 1' postgres
	assert_match "$stderr" "Connection timed out" "psql's error"
}

@test "the C event loops (poll, ppoll, select, pselect, epoll LT and ET) get ETIMEDOUT from SO_ERROR after BACKOFF_TIMEOUT" {
	local mode
	for mode in blocking poll ppoll select pselect epoll-lt epoll-et; do
		ends_within 2950 3300 "$HELPERS/probe" --mode "$mode" "127.0.0.1:$PORT"
		assert_eq "$output" "ETIMEDOUT" "the outcome ($mode)"
	done
}

@test "attempts to a silent loopback destination are cut after 20 ms, whatever BACKOFF_ATTEMPT_TIMEOUT, and retried on the policy's schedule, each counted as ETIMEDOUT" {
	QUIET=(BACKOFF_TIMEOUT=5s BACKOFF_ATTEMPT_TIMEOUT=1200ms BACKOFF_BASE=100ms BACKOFF_CAP=200ms
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
	ends_within 4900 5400 "$HELPERS/probe" --mode epoll-et "127.0.0.1:$PORT"
	assert_eq "$output" "ETIMEDOUT" "the outcome"
	assert_eq "$(json_events "$T/log.json" retry errno | sort -u)" "ETIMEDOUT" "retried errors"
	# 5 s of 20 ms attempts and delays of at most 200 ms; 1.2 s attempts would make 4.
	assert_between "$(json_events "$T/log.json" retry | wc -l)" 20 250 "retries"
}

@test "a Go client and a static client under the launcher get their timeout error after BACKOFF_TIMEOUT" {
	local start elapsed
	for client in "$BUILD/go/dial-nocgo tcp 127.0.0.1:$PORT" \
		"$BUILD/static/raw-connect --tcp 127.0.0.1:$PORT" \
		"$BUILD/static/raw-connect --nonblock --tcp 127.0.0.1:$PORT"; do
		start=$(now_ms)
		# shellcheck disable=SC2086 # the client's words
		run --separate-stderr timeout 20 "$LAUNCHER" --timeout 3s -- $client
		elapsed=$(($(now_ms) - start))
		assert_eq "$status" 1 "status of $client"
		assert_match "$stderr" "(connection timed out|Connection timed out)" "its error ($client)"
		assert_between "$elapsed" 2900 3500 "ms until $client ended"
	done
}

@test "the program's own shorter timeouts stay exact: SO_SNDTIMEO 1 s, curl --connect-timeout 1, Go's Dialer 1 s" {
	local start elapsed
	ends_within 900 1300 "$HELPERS/probe" --sndtimeo 1000 "127.0.0.1:$PORT"
	assert_eq "$output" "EINPROGRESS" "a blocking connect with SO_SNDTIMEO, as without the library"
	ends_within 900 1300 curl -sS --connect-timeout 1 "http://127.0.0.1:$PORT/"
	assert_eq "$status" 28 "curl's status"
	start=$(now_ms)
	run --separate-stderr timeout 20 "$LAUNCHER" --timeout 3s -- \
		"$BUILD/go/dial-nocgo" -timeout 1s tcp "127.0.0.1:$PORT"
	elapsed=$(($(now_ms) - start))
	assert_match "$stderr" "i/o timeout" "Go's own timeout error"
	assert_between "$elapsed" 900 1400 "ms until Go gave up"
}

@test "a TCP_USER_TIMEOUT the program set is what it reads back after a retried connect" {
	start_listener srv 800 --count 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_CAP=200ms "$PYTHON" -c "
import socket
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 7000)
s.settimeout(None)
s.connect(('127.0.0.1', $PORT))
print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
      s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, 16) == bytes(16))"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "7000 True" "TCP_USER_TIMEOUT and SO_SNDTIMEO after the connect"
}

@test "no late handshake: the attempts given up are aborted, not left to complete later" {
	# The socket stays open after the give-up: an abandoned attempt would still be SYN_SENT.
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=2s \
		BACKOFF_ATTEMPT_TIMEOUT=1200ms "$PYTHON" -c "
import errno, socket
s = socket.socket()
s.bind(('127.0.0.1', 0))
me = s.getsockname()[1]
try:
    s.connect(('127.0.0.1', $PORT))
    print('connected')
except OSError as e:
    print(errno.errorcode[e.errno])
states = [l.split()[3] for l in open('/proc/net/tcp').readlines()[1:]
          if int(l.split()[1].split(':')[1], 16) == me]
print('states', *states)"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "ETIMEDOUT
states" "the outcome, and the states of the client's port (02: SYN_SENT)"
}

@test "a refusing server 128 ms away: the budget's end gives the kernel's ECONNREFUSED, not our deadline's ETIMEDOUT; a budget of 0 cuts nothing" {
	require_unshare -n
	require_program tc iproute2
	local run
	# A loopback slowed to about 128 ms a packet (a token bucket of 8 kbit/s), in a namespace of its own.
	run=$(
		cat <<'EOF2'
ip link set lo up || exit 9
tc qdisc add dev lo root tbf rate 8kbit burst 100 mtu 1500 limit 30000 || exit 9
for mode in blocking poll epoll-et; do
	printf '%s ' "$mode"
	env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=1s BACKOFF_SHARED=off "$HELPERS/probe" --mode "$mode" 127.0.0.1:81
done
"$HELPERS/late-listener" --tcp 127.0.0.1:82 --after 0 --count 1 >"$T/zero.out" 2>&1 &
i=0
until grep -q '^listening' "$T/zero.out"; do
	i=$((i + 1))
	[ "$i" -lt 1000 ] || exit 8
	sleep 0.01
done
printf 'zero '
env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=0 BACKOFF_SHARED=off "$HELPERS/probe" --mode poll 127.0.0.1:82
wait
EOF2
	)
	run --separate-stderr timeout 60 env HELPERS="$HELPERS" LIB="$LIB" T="$T" "${UNSHARE[@]}" sh -c "$run"
	# An event loop's last refusal that comes after the budget's end is left in the
	# socket for the program, unread: its line cannot name it.
	assert_eq "$(grep -cE 'giving up after .*: (ECONNREFUSED|connection failed) \(time budget spent\)' <<<"$stderr")" 3 \
		"give-up lines, none naming our deadline's ETIMEDOUT: $stderr"
	assert_eq "$output" "blocking ECONNREFUSED
poll ECONNREFUSED
epoll-et ECONNREFUSED
zero OK" "the outcomes (status $status)"
}


@test "a full local accept queue is down to the look: when it gets room, blocking and event-loop clients connect within 30 ms" {
	local mode room connected
	for mode in blocking poll epoll-et; do
		start_blackhole "lift-$mode" 1500
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state-$mode" \
			BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/$mode.json" \
			"$HELPERS/probe" --mode "$mode" "127.0.0.1:$PORT"
		assert_eq "$output" "OK" "the outcome ($mode): $stderr"
		room=$(listener_mono "lift-$mode" room)
		connected=$(json_events "$T/$mode.json" success mono_ms)
		assert_between "$((connected - room))" 0 30 "ms from the room to the connect ($mode)"
		# Each attempt into the full queue was cut after a loopback's 20 ms, not 5 s.
		assert_between "$(json_events "$T/$mode.json" retry | wc -l)" 2 40 "retries ($mode)"
	done
}

@test "a retry due sooner than the next look, into a full local accept queue, is cut short too" {
	local mode room connected
	# Retries 1 ms apart: each is due before a look could tell the queue is full.
	for mode in blocking epoll-et; do
		start_blackhole "soon-$mode" 300
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state-$mode" \
			BACKOFF_BASE=1ms BACKOFF_MULTIPLIER=1 BACKOFF_JITTER=none \
			BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/$mode.json" \
			"$HELPERS/probe" --mode "$mode" "127.0.0.1:$PORT"
		assert_eq "$output" "OK" "the outcome ($mode): $stderr"
		room=$(listener_mono "soon-$mode" room)
		connected=$(json_events "$T/$mode.json" success mono_ms)
		assert_between "$((connected - room))" 0 30 "ms from the room to the connect ($mode)"
	done
}

# in_silent_net SCRIPT: SCRIPT under sh in a network namespace of its own where
# 10.9.9.2 is a host that is gone: its packets leave by a veth pair whose other end
# has no address (a fixed neighbour entry, so no ARP), and no answer ever comes.
# The script sees HELPERS, LIB, PYTHON, LAUNCHER and the test's directory T.
in_silent_net() {
	require_unshare -n
	run --separate-stderr timeout 60 env HELPERS="$HELPERS" LIB="$LIB" PYTHON="$PYTHON" \
		LAUNCHER="$LAUNCHER" T="$T" "${UNSHARE[@]}" sh -c "ip link add name gone0 type veth peer name gone1 &&
			ip addr add 10.9.9.1/24 dev gone0 && ip link set gone0 up &&
			ip link set gone1 up && ip link set lo up &&
			ip neigh replace 10.9.9.2 lladdr 02:00:00:00:00:02 nud permanent dev gone0 ||
			exit 9
		$1"
}

@test "a host that is gone (remote silence): blocking python ends at the budget, attempts aborted at BACKOFF_ATTEMPT_TIMEOUT and re-planned with jitter" {
	in_silent_net '
start=$(date +%s%N)
env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=3s "$PYTHON" -c "import socket; socket.create_connection((\"10.9.9.2\", 80))" 2>&1 | tail -n 1
echo "python_ms=$((($(date +%s%N) - start) / 1000000))"
env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=4s BACKOFF_ATTEMPT_TIMEOUT=1s BACKOFF_LOG=info "$HELPERS/probe" --mode epoll-lt 10.9.9.2:80'
	assert_match "$output" "TimeoutError: \[Errno 110\] Connection timed out" "python's error: $output"
	local ms
	ms=$(sed -n 's/^python_ms=//p' <<<"$output")
	assert_between "$ms" 2900 3600 "ms until python ended"
	assert_match "$output" "ETIMEDOUT$" "the event loop's outcome"
	assert_between "$(grep -c 'ETIMEDOUT (attempt [0-9]*), retrying' <<<"$stderr")" 2 4 \
		"attempts aborted and retried: $stderr"
}

# opens: the kernel's count of connects made in the namespace (each a SYN sent), for in_silent_net.
OPENS='opens() { awk '\''/^Tcp:/ { n++; if (n == 1) for (i = 1; i <= NF; i++) col[$i] = i; else print $col["ActiveOpens"] }'\'' /proc/net/snmp; }'

@test "processes waiting together for a host that is gone leave their attempts to one: five make about the attempts of one, not five times as many" {
	in_silent_net "$OPENS"'
# together NAME N STATE MODE: N probes at once, sharing STATE; prints NAME and the attempts they made.
together() {
	before=$(opens) i=0
	while [ "$i" -lt "$2" ]; do
		i=$((i + 1))
		env LD_PRELOAD="$LIB" BACKOFF_SHARED="$3" BACKOFF_TIMEOUT=3s BACKOFF_ATTEMPT_TIMEOUT=300ms \
			BACKOFF_LOG=off "$HELPERS/probe" --mode "$4" --elapsed 10.9.9.2:80 \
			>"$T/$1.$i.out" 2>"$T/$1.$i.err" &
	done
	wait
	echo "$1 $(($(opens) - before))"
}
together one 1 "$T/state-one" blocking
together five 5 "$T/state-five" blocking
together loops 5 "$T/state-loops" epoll-lt
together off 5 off blocking'
	local one five loops off
	one=$(sed -n 's/^one //p' <<<"$output")
	five=$(sed -n 's/^five //p' <<<"$output")
	loops=$(sed -n 's/^loops //p' <<<"$output")
	off=$(sed -n 's/^off //p' <<<"$output")
	assert_eq "$(cat "$T"/*.out | sort | uniq -c | sed 's/^ *//')" "16 ETIMEDOUT" "outcomes: $output"
	local ms
	ms=$(cat "$T"/*.err | sed -n 's/^elapsed_ms=\([0-9]*\).*/\1/p' | sort -n)
	assert_between "$(head -n 1 <<<"$ms")" 2900 3500 "ms until the first probe ended"
	assert_between "$(tail -n 1 <<<"$ms")" 2900 3500 "ms until the last probe ended"
	# Alone: 300 ms attempts and delays of 100 ms, 200 ms, 400 ms... at most, within 3 s.
	assert_between "$one" 4 12 "attempts of one process alone: $output"
	# Each of the other four adds its first attempt (nothing is known yet) and its last,
	# made at the budget's end for the kernel's answer: one's count and 8, give or take
	# the jitter; each making its own would be five times one's count, as with sharing off.
	assert_between "$five" 5 "$((one + 12))" "attempts of five blocking processes sharing: $output"
	assert_between "$loops" 5 "$((one + 12))" "attempts of five event loops sharing: $output"
	assert_between "$off" "$((3 * one))" 1000 "attempts of five with BACKOFF_SHARED=off: $output"
}

@test "a waiter whose attempts another made goes on attempting when that other gives up: each finding of the other's stands for one attempt, not for the rest of the budget" {
	# No jitter, delays of 800 ms, attempts cut at 300 ms.  The short waiter starts once the
	# long one's first attempt has failed: its findings come after the long one's, before
	# the long one's next attempt is due, which it leaves to them until the short one's 1 s
	# budget is spent.
	in_silent_net "$OPENS"'
probe() {
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state-$2" BACKOFF_TIMEOUT="$1" BACKOFF_BASE=800ms \
		BACKOFF_CAP=800ms BACKOFF_JITTER=none BACKOFF_ATTEMPT_TIMEOUT=300ms BACKOFF_LOG="$3" \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/$2.json" "$HELPERS/probe" --mode "$2" 10.9.9.2:80
}
for mode in blocking epoll-lt; do
	i=0
	probe 5500ms "$mode" debug >"$T/long-$mode.out" 2>&1 &
	long=$!
	while ! grep -qs "\"event\":\"retry\"" "$T/$mode.json" && [ "$i" -lt 500 ]; do
		i=$((i + 1))
		sleep 0.01
	done
	probe 1s "$mode" off >"$T/short-$mode.out" 2>&1
	after=$(opens)
	wait "$long"
	echo "$mode $(($(opens) - after)) $(cat "$T/short-$mode.out" "$T/long-$mode.out" | tr "\n" " ")"
done'
	assert_eq "$status" 0 "status: $stderr"
	local mode line
	for mode in blocking epoll-lt; do
		read -r -a line <<<"$(grep "^$mode " <<<"$output")"
		assert_eq "${line[2]} ${line[3]}" "ETIMEDOUT ETIMEDOUT" "outcomes ($mode): $output"
		# After the short one ended, about 4 s of the long one's budget are left: once the
		# short one's last finding is older than a delay and an attempt (1.1 s), attempts at
		# 800 ms delays, and the last at the budget's end; never only that last one.
		assert_between "${line[1]}" 2 8 "attempts of the long waiter once the short one ended ($mode): $output"
		# What it left, it left to a finding: a remote destination has no prober to name.
		assert_eq "$(json_events "$T/$mode.json" waited reason | sort -u)" \
			"left to another's finding" "the long waiter's waited events ($mode)"
	done
}

@test "a host that is gone is known down after its budget: each later connect of the process makes one attempt, cut at BACKOFF_ATTEMPT_TIMEOUT, and gets ETIMEDOUT" {
	# Three connects in one process, blocking and then (a new process) with a timeout of
	# python's own, 10 s, in its event loop; each line: outcome, ms, attempts the kernel made.
	in_silent_net '
for mode in blocking loop; do
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state-$mode" BACKOFF_TIMEOUT=2s \
		BACKOFF_ATTEMPT_TIMEOUT=400ms BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/$mode.json" "$PYTHON" -c "
import errno, socket, sys, time
def opens():
    tcp = [l.split() for l in open(\"/proc/net/snmp\") if l.startswith(\"Tcp:\")]
    return int(tcp[1][tcp[0].index(\"ActiveOpens\")])
for i in range(3):
    s = socket.socket()
    if sys.argv[1] == \"loop\":
        s.settimeout(10)
    before, t = opens(), time.monotonic()
    try:
        s.connect((\"10.9.9.2\", 80))
        r = \"connected\"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e))
    print(sys.argv[1], r, int((time.monotonic() - t) * 1000), opens() - before, flush=True)
    s.close()
" "$mode"
done'
	assert_eq "$status" 0 "status: $stderr"
	local mode line
	for mode in blocking loop; do
		# The first spends the budget on attempts cut at 400 ms, and gives up at its end.
		read -r -a line <<<"$(grep "^$mode " <<<"$output" | sed -n 1p)"
		assert_eq "${line[1]}" ETIMEDOUT "the first connect ($mode): $output"
		assert_between "${line[2]}" 1900 2600 "ms of the first connect ($mode)"
		assert_between "${line[3]}" 3 8 "attempts of the first connect ($mode)"
		assert_eq "$(json_events "$T/$mode.json" down reason)" "budget-spent" "known down ($mode)"
		# The next ones: one real attempt each, bounded by the attempt's deadline, not by a
		# budget of their own, nor left to the kernel's two minutes; not answered without one.
		for n in 2 3; do
			read -r -a line <<<"$(grep "^$mode " <<<"$output" | sed -n "${n}p")"
			assert_eq "${line[1]}" ETIMEDOUT "connect $n ($mode): $output"
			assert_between "${line[2]}" 390 900 "ms of connect $n ($mode)"
			assert_eq "${line[3]}" 1 "attempts of connect $n ($mode)"
		done
	done
	assert_eq "$(json_events "$T/blocking.json" pass errno reason | sort | uniq -c | sed 's/^ *//')" \
		"2 ETIMEDOUT known-down" "what the blocking connects passed through"
	assert_eq "$(json_events "$T/blocking.json" giveup | wc -l)" 1 "give-ups (blocking)"
	assert_eq "$(json_events "$T/loop.json" giveup | wc -l)" 1 "give-ups (event loop)"
}

@test "a signal during an attempt with a deadline: SA_RESTART waits on to the budget, without it EINTR at once" {
	in_silent_net '
env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=3s "$HELPERS/probe" --alarm 500 --sa-restart 10.9.9.2:80 2>&1
env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=3s "$HELPERS/probe" --alarm 500 10.9.9.2:80 2>&1'
	local lines
	lines=$(grep -v '^backoff' <<<"$output" | tr '\n' ' ')
	assert_match "$lines" "^(elapsed_ms=(29[0-9][0-9]|3[0-3][0-9][0-9]) alarms=1 ETIMEDOUT|ETIMEDOUT elapsed_ms=(29[0-9][0-9]|3[0-3][0-9][0-9]) alarms=1) " \
		"with SA_RESTART: the budget's ETIMEDOUT"
	assert_match "$lines" " (elapsed_ms=(4[89][0-9]|5[0-9][0-9]|6[0-4][0-9]) alarms=1 EINTR|EINTR elapsed_ms=(4[89][0-9]|5[0-9][0-9]|6[0-4][0-9]) alarms=1) $" \
		"without: EINTR at the signal"
}

@test "a thread cancelled during an attempt with a deadline leaves the socket its own send timeout, as without the library" {
	in_silent_net '
env LD_PRELOAD="$LIB" BACKOFF_ATTEMPT_TIMEOUT=5s "$HELPERS/hazards" cancel-connect 10.9.9.2:80
"$HELPERS/hazards" cancel-connect 10.9.9.2:80'
	assert_eq "$output" "cancelled=1 sndtimeo=0.000000
cancelled=1 sndtimeo=0.000000" "the cancelled thread's socket, with and without the library: $stderr"
}

@test "a siglongjmp out of an attempt with a deadline leaves the socket its own send timeout: the next send blocks until a signal, as without the library" {
	in_silent_net '
env LD_PRELOAD="$LIB" BACKOFF_ATTEMPT_TIMEOUT=1s "$HELPERS/hazards" jump-connect 10.9.9.2:80
"$HELPERS/hazards" jump-connect 10.9.9.2:80'
	# The bound, 1 s, left as the send timeout would read back and cut the send (EAGAIN).
	assert_eq "$output" "sndtimeo first: jumped=1 sndtimeo=0.000000 send=EINTR
send first: jumped=1 sndtimeo=0.000000 send=EINTR
sndtimeo first: jumped=1 sndtimeo=0.000000 send=EINTR
send first: jumped=1 sndtimeo=0.000000 send=EINTR" "the socket after the jump, with and without the library: $stderr"
}

@test "a fork during an attempt with a deadline: the child's connect keeps its own 200 ms timeout, the parent's ends at its budget with ETIMEDOUT" {
	in_silent_net '
env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=2s "$HELPERS/hazards" fork-connect 10.9.9.2:80
echo "status $?"'
	local child
	child=$(sed -n 's/^child EINPROGRESS ms=//p' <<<"$output")
	assert_between "${child:-0}" 190 450 "ms until the child's own timeout: $output"
	assert_eq "$(grep -v '^child' <<<"$output")" "parent ETIMEDOUT
status 0" "the parent's outcome: $stderr"
}

@test "under the supervisor a signal during a held silent connect restarts it into the same job: ETIMEDOUT at the budget, never EPIPE" {
	in_silent_net '
"$LAUNCHER" --engine supervise --timeout 3s --attempt-timeout 1s -- \
	"$HELPERS/probe" --alarm 500 --sa-restart 10.9.9.2:80'
	assert_eq "$output" "ETIMEDOUT" "the outcome: $stderr"
	assert_match "$stderr" "elapsed_ms=(29[0-9][0-9]|3[0-4][0-9][0-9]) alarms=1" "when it ended"
}
