#!/usr/bin/env bats
# Send-family retries: nothing lost, nothing duplicated, and nothing retried that must not be.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell

load helper

setup() {
	require_build
	local f
	for f in dgram-sender dgram-receiver stream-pump send-probe faultshim.so; do
		[[ -e $HELPERS/$f ]] || fail "$HELPERS/$f is missing: run make first" || return
	done
	SHIM=$HELPERS/faultshim.so
	LOG_ENV=(BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# check_numbers FILE FIRST LAST: FILE holds FIRST..LAST, one per line, each once, in order.
check_numbers() {
	local summary
	if ! seq "$2" "$3" | cmp -s - "$1"; then
		summary=$("$PYTHON" - "$1" <<'EOF'
import collections, sys
got = open(sys.argv[1]).read().split()
dups = [k for k, v in collections.Counter(got).items() if v > 1]
print(f"{len(got)} lines, first {got[:1]}, last {got[-1:]}, {len(dups)} duplicated")
EOF
		)
		fail "$1 is not the numbers $2 to $3, each once, in order" "$summary"
	fi
}

# event_count EVENT: how many EVENT objects the JSON log holds.
event_count() {
	count_lines "$(json_events "$T/log.json" "$1")"
}

# report_of CALL: the fault shim's "calls=C faults=F" line for CALL.
report_of() {
	sed -n "s/^$1 //p" "$T/faults"
}

@test "a unix datagram sender that connects 1 s before its receiver binds delivers 10000 datagrams once each, in order" {
	start_bg receiver "$HELPERS/dgram-receiver" --unix "$T/r.sock" --after 1000 --out "$T/got" \
		--until 9999
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=200ms \
		"${LOG_ENV[@]}" "$HELPERS/dgram-sender" --unix "$T/r.sock" --connect
	assert_eq "$status" 0 "sender status"
	assert_eq "$output" "sent 10000" "sender output"
	wait_for_line "$T/receiver.out" '^done' 10
	check_numbers "$T/got" 0 9999

	local retries ready
	retries=$(json_events "$T/log.json" retry call target errno)
	assert_eq "$(sort -u <<<"$retries")" "connect unix:$T/r.sock ENOENT" "retry events"
	assert_between "$(count_lines "$retries")" 3 100 "retries"
	assert_eq "$(json_events "$T/log.json" success call attempt)" \
		"connect $(($(count_lines "$retries") + 1))" "success event"
	ready=$(sed -n 's/^ready mono_ms=//p' "$T/receiver.out")
	# The receiver says "ready" just after its bind: the sender may be quicker to see it.
	assert_between "$(json_events "$T/log.json" success mono_ms)" $((ready - 100)) \
		$((ready + 1000)) "success time"
}

@test "a unix datagram sender that names its receiver in each sendto() delivers 10000 datagrams once each, in order, from 1 s before it binds" {
	start_bg receiver "$HELPERS/dgram-receiver" --unix "$T/r.sock" --after 1000 --out "$T/got" \
		--until 9999
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=200ms \
		"${LOG_ENV[@]}" "$HELPERS/dgram-sender" --unix "$T/r.sock" --call sendto
	assert_eq "$status" 0 "sender status"
	assert_eq "$output" "sent 10000" "sender output"
	wait_for_line "$T/receiver.out" '^done' 10
	check_numbers "$T/got" 0 9999

	local retries
	retries=$(json_events "$T/log.json" retry call target errno)
	assert_eq "$(sort -u <<<"$retries")" "sendto unix:$T/r.sock ENOENT" "retry events"
	assert_between "$(count_lines "$retries")" 3 100 "retries"
	# Only datagram 0 waited: one success event.
	assert_eq "$(json_events "$T/log.json" success call attempt)" \
		"sendto $(($(count_lines "$retries") + 1))" "success event"
}

# The hand-over is lossless by construction: the first receiver removes its
# socket file and reads on until the log shows the sender failing (so every
# datagram sent before is in its queue), then reads the queue empty and
# leaves a socket file nobody listens on; the second binds 500 ms later.
@test "a unix datagram receiver that restarts mid-stream gets all 10000 sendmsg() datagrams once each, in order" {
	local r1 sender r1_count retries
	start_bg r1 "$HELPERS/dgram-receiver" --unix "$T/r.sock" --out "$T/got" --stop-after 3000 \
		--on-signal --stale-on-exit
	r1=$(<"$T/r1.pid")
	wait_for_line "$T/r1.out" '^ready' 5
	start_bg sender timeout 60 env LD_PRELOAD="$LIB" BACKOFF_BASE=20ms BACKOFF_CAP=100ms \
		"${LOG_ENV[@]}" "$HELPERS/dgram-sender" --unix "$T/r.sock" --call sendmsg
	sender=$(<"$T/sender.pid")
	wait_for_line "$T/r1.out" '^unlinked' 30
	wait_for_line "$T/log.json" '"event":"retry"' 10
	kill -USR1 "$r1"
	wait_for_line "$T/r1.out" '^done' 10
	start_bg r2 "$HELPERS/dgram-receiver" --unix "$T/r.sock" --after 500 --out "$T/got" \
		--until 9999
	wait "$sender" || fail "sender failed: $(cat "$T/sender.err")"
	assert_eq "$(<"$T/sender.out")" "sent 10000" "sender output"
	wait_for_line "$T/r2.out" '^done' 10
	check_numbers "$T/got" 0 9999

	r1_count=$(sed -n 's/^done received=\([0-9]*\).*/\1/p' "$T/r1.out")
	assert_between "$r1_count" 3000 9999 "datagrams the first receiver got"
	assert_eq "$(sed -n 's/^done received=\([0-9]*\).*/\1/p' "$T/r2.out")" \
		$((10000 - r1_count)) "datagrams the second receiver got"
	# ENOENT while no file is there, ECONNREFUSED while the stale one is.
	retries=$(json_events "$T/log.json" retry call target errno)
	assert_eq "$(sort -u <<<"$retries" | tr '\n' ' ')" \
		"sendmsg unix:$T/r.sock ECONNREFUSED sendmsg unix:$T/r.sock ENOENT " "retry events"
	assert_eq "$(json_events "$T/log.json" success call attempt)" \
		"sendmsg $(($(count_lines "$retries") + 1))" "one success event, for the datagram that waited"
}

@test "python SysLogHandler loses no record while its unix datagram receiver restarts" {
	local n=2000 retries
	start_bg r1 "$HELPERS/dgram-receiver" --unix "$T/log.sock" --out "$T/records" \
		--stop-after 500 --stale-on-exit
	wait_for_line "$T/r1.out" '^ready' 5
	start_bg logger timeout 60 env LD_PRELOAD="$LIB" BACKOFF_BASE=20ms BACKOFF_CAP=100ms \
		"${LOG_ENV[@]}" "$PYTHON" -c '
import logging, logging.handlers, sys
log = logging.getLogger("t")
log.addHandler(logging.handlers.SysLogHandler(address=sys.argv[1]))
log.setLevel(logging.INFO)
for i in range(int(sys.argv[2])):
    log.info("record %d", i)
print("logged", sys.argv[2])
' "$T/log.sock" "$n"
	wait_for_line "$T/r1.out" '^done' 30
	start_bg r2 "$HELPERS/dgram-receiver" --unix "$T/log.sock" --after 300 --out "$T/records" \
		--until "record $((n - 1))"
	wait "$(<"$T/logger.pid")" || fail "logger failed: $(cat "$T/logger.err")"
	assert_eq "$(<"$T/logger.out")" "logged $n" "logger output"
	# A record SysLogHandler fails to send is reported as a "Logging error".
	assert_eq "$(cat "$T/logger.err")" "" "logger stderr"
	wait_for_line "$T/r2.out" '^done' 10
	sed -E 's/^<14>record //' "$T/records" >"$T/numbers"
	check_numbers "$T/numbers" 0 $((n - 1))

	# The send after the first receiver shut down fails (EPIPE, not retried);
	# SysLogHandler reconnects, and that connect is retried.
	retries=$(json_events "$T/log.json" retry call target errno)
	assert_match "$(sort -u <<<"$retries" | tr '\n' ' ')" \
		"^(connect unix:$T/log.sock (ECONNREFUSED|ENOENT) )+$" "retry events"
	assert_eq "$(json_events "$T/log.json" success call attempt)" \
		"connect $(($(count_lines "$retries") + 1))" "success event"
}

# Measured (Linux and gVisor): a connected UDP send to a port nobody is bound
# to succeeds, and the ICMP error it draws, synchronous on loopback, makes
# the next send fail with ECONNREFUSED without sending.  So each datagram
# sent while no receiver is there is lost on the way, and the next one fails
# once and is retried: datagram R waits through the R-th retry.  With R
# retries in all, datagrams 0..R-1 are lost, and R..N-1 all arrive.
@test "a connected UDP sender whose receiver binds 1 s late loses no datagram after the first retry that gets through" {
	local n=2000 retries r
	start_bg receiver "$HELPERS/dgram-receiver" --udp 127.0.0.1:0 --port-file "$T/port" \
		--after 1000 --out "$T/got" --until $((n - 1))
	wait_for_file "$T/port" 5
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP=200ms \
		"${LOG_ENV[@]}" "$HELPERS/dgram-sender" --udp "127.0.0.1:$(<"$T/port")" --connect \
		--count "$n" --interval-us 500
	assert_eq "$status" 0 "sender status"
	assert_eq "$output" "sent $n" "sender output"
	wait_for_line "$T/receiver.out" '^(done|overflow)' 10
	assert_no_match "$(<"$T/receiver.out")" overflow "receiver (dropped for want of buffer)"

	retries=$(json_events "$T/log.json" retry call target errno attempt)
	r=$(count_lines "$retries")
	assert_between "$r" 2 1000 "retries"
	assert_eq "$(sort -u <<<"$retries")" "send 127.0.0.1:$(<"$T/port") ECONNREFUSED 1" \
		"retry events"
	assert_eq "$(json_events "$T/log.json" success attempt | sort -u)" 2 "success attempts"
	assert_eq "$(event_count success)" "$r" "success events"
	check_numbers "$T/got" "$r" $((n - 1))
}

@test "ENOBUFS injected at p = 0.1 into 100000 stream send() calls: every byte arrives once, in order" {
	local line faults calls bytes
	run timeout 30 "$HELPERS/stream-pump" --calls 100000 --seed 7 --sent "$T/plain.sent" \
		--received "$T/plain.received"
	assert_eq "$status" 0 "status without the library"
	cmp "$T/plain.sent" "$T/plain.received"

	run --separate-stderr timeout 120 env LD_PRELOAD="$LIB:$SHIM" FAULT_CALL=send \
		FAULT_ERRNO=ENOBUFS FAULT_RATE=0.1 FAULT_SEED=7 FAULT_REPORT="$T/faults" \
		BACKOFF_BASE=1ms BACKOFF_CAP=1ms "${LOG_ENV[@]}" \
		"$HELPERS/stream-pump" --calls 100000 --seed 7 --sent "$T/sent" --received "$T/received"
	assert_eq "$status" 0 "status"
	bytes=$(stat -c %s "$T/plain.sent")
	assert_eq "$output" "calls=100000 failed=0 sent=$bytes received=$bytes" "output"
	cmp "$T/sent" "$T/received"
	assert_eq "$(sha256sum <"$T/received")" "$(sha256sum <"$T/plain.sent")" \
		"checksum of the bytes received against a run without faults"

	line=$(report_of send)
	assert_match "$line" '^calls=[0-9]+ faults=[0-9]+$' "fault report"
	calls=${line#calls=} calls=${calls%% *} faults=${line##*faults=}
	assert_between "$faults" 9000 13500 "faults injected"
	assert_eq "$calls" $((100000 + faults)) "send calls the shim saw"
	assert_eq "$(event_count retry)" "$faults" "retry events"
	assert_eq "$(event_count giveup)" 0 "give-up events"
	assert_eq "$(json_events "$T/log.json" success attempt | awk '{ s += $1 - 1 } END { print s }')" \
		"$faults" "retries counted by the success events"
}

# Run by strace, the probe's only send-family system call is the probe itself.
check_one_syscall() {
	local call=$1 out
	shift
	require_strace
	run timeout 20 strace -f -qq -e trace=sendto,sendmsg,sendmmsg,getsockopt,getpeername \
		-o "$T/strace" -E LD_PRELOAD="$LIB" env BACKOFF_BASE=1s BACKOFF_JITTER=none \
		BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/send-probe" --fill "$@"
	assert_eq "${lines[0]}" EAGAIN "probe result"
	assert_between "${lines[1]#elapsed_ms=}" 0 500 "elapsed ms"
	out=$(cat "$T/strace")
	assert_eq "$(count_lines "$out")" 1 "system calls traced"
	assert_match "$out" "$call\(.* = -1 EAGAIN" "the one system call"
	[[ ! -s $T/log.json ]] || fail "log written: $(cat "$T/log.json")"
}

@test "EAGAIN from send() on a full non-blocking socket comes back at once, in one system call" {
	check_one_syscall sendto --nonblock
}

@test "EAGAIN from sendmsg() with MSG_DONTWAIT on a full blocking socket comes back at once, in one system call" {
	check_one_syscall sendmsg --dontwait --call sendmsg
}

@test "ENOBUFS on a blocking socket is retried by send, sendto, sendmsg and sendmmsg" {
	local call
	for call in send sendto sendmsg sendmmsg; do
		rm -f "$T/faults" "$T/log.json"
		run timeout 20 env LD_PRELOAD="$LIB:$SHIM" FAULT_CALL=$call FAULT_ERRNO=ENOBUFS \
			FAULT_COUNT=3 FAULT_REPORT="$T/faults" BACKOFF_BASE=10ms "${LOG_ENV[@]}" \
			"$HELPERS/send-probe" --call "$call"
		assert_eq "${lines[0]}" "ok 1" "$call result"
		assert_eq "$(report_of "$call")" "calls=4 faults=3" "$call fault report"
		assert_eq "$(json_events "$T/log.json" retry call errno attempt | tr '\n' ' ')" \
			"$call ENOBUFS 1 $call ENOBUFS 2 $call ENOBUFS 3 " "$call retry events"
		assert_eq "$(json_events "$T/log.json" success call target attempt)" "$call unix: 4" \
			"$call success event"
	done
}

# check_not_retried REASON VAR=VALUE... -- PROBE-ARGS...: an ENOBUFS injected
# once into sendto() comes back at once, after one call, and the debug log
# says REASON (says nothing when REASON is empty).
check_not_retried() {
	local reason=$1 vars=()
	shift
	while [[ $1 != -- ]]; do
		vars+=("$1")
		shift
	done
	shift
	run timeout 20 env LD_PRELOAD="$LIB:$SHIM" FAULT_CALL=sendto FAULT_ERRNO=ENOBUFS \
		FAULT_COUNT=1 FAULT_REPORT="$T/faults" BACKOFF_BASE=1s BACKOFF_JITTER=none \
		BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" "${vars[@]}" \
		"$HELPERS/send-probe" --call sendto "$@"
	assert_eq "${lines[0]}" ENOBUFS "probe result"
	assert_between "${lines[1]#elapsed_ms=}" 0 500 "elapsed ms"
	assert_eq "$(report_of sendto)" "calls=1 faults=1" "fault report"
	assert_eq "$(event_count retry)" 0 "retry events"
	if [[ -n $reason ]]; then
		assert_eq "$(json_events "$T/log.json" pass call errno reason)" \
			"sendto ENOBUFS $reason" "pass event"
	else
		[[ ! -s $T/log.json ]] || fail "log written: $(cat "$T/log.json")"
	fi
}

@test "ENOBUFS on a non-blocking socket is not retried" {
	check_not_retried nonblocking -- --nonblock
}

@test "ENOBUFS with MSG_DONTWAIT is not retried" {
	check_not_retried nonblocking -- --dontwait
}

@test "ENOBUFS with MSG_FASTOPEN is not retried" {
	check_not_retried fastopen -- --fastopen
}

@test "with BACKOFF_SEND=off ENOBUFS is not retried" {
	check_not_retried "" BACKOFF_SEND=off --
}

@test "the socket's SO_SNDTIMEO ends the retries of a send with its last error" {
	run timeout 20 env LD_PRELOAD="$LIB:$SHIM" FAULT_CALL=send FAULT_ERRNO=ENOBUFS \
		FAULT_COUNT=1000000 BACKOFF_BASE=20ms BACKOFF_CAP=50ms "${LOG_ENV[@]}" \
		"$HELPERS/send-probe" --sndtimeo-ms 300
	assert_eq "${lines[0]}" ENOBUFS "result"
	assert_between "${lines[1]#elapsed_ms=}" 280 3000 "elapsed ms"
	assert_eq "$(json_events "$T/log.json" giveup call errno reason)" "send ENOBUFS timeout" \
		"give-up event"
}

@test "a datagram to a destination excluded by BACKOFF_TARGETS is not retried" {
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_TARGETS="!unix:$T/*" BACKOFF_BASE=1s \
		BACKOFF_LOG=debug BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/dgram-sender" --unix "$T/missing.sock" --count 1
	assert_eq "$status" 1 "sender status"
	assert_eq "$output" "error at 0: ENOENT (sendto)" "sender output"
	assert_eq "$(json_events "$T/log.json" pass call target errno reason)" \
		"sendto unix:$T/missing.sock ENOENT excluded" "pass event"
}

# Measured: the kernel disconnects the socket with that error, so a second
# send would fail with ENOTCONN; the program's reconnect is what is retried.
@test "send() on a connected unix datagram socket whose receiver closed returns ECONNREFUSED at once" {
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=1s BACKOFF_JITTER=none "${LOG_ENV[@]}" \
		"$PYTHON" -c '
import errno, socket, sys, time
r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
r.bind(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(sys.argv[1])
r.close()
start = time.monotonic()
try:
    s.send(b"x")
except OSError as e:
    print(errno.errorcode[e.errno], int((time.monotonic() - start) * 1000))
' "$T/r.sock"
	assert_eq "$status" 0 "status"
	assert_match "$output" '^ECONNREFUSED [0-9]+$' "output"
	assert_between "${output#* }" 0 500 "elapsed ms"
	assert_eq "$(event_count retry)" 0 "retry events"
}

@test "a blocking unix datagram connect to a missing socket gives up with ENOENT after the retries" {
	run timeout 20 env LD_PRELOAD="$LIB" BACKOFF_RETRIES=2 BACKOFF_BASE=10ms "${LOG_ENV[@]}" \
		"$HELPERS/probe" --type dgram "unix:$T/missing.sock"
	assert_eq "$output" ENOENT "probe output"
	assert_eq "$(json_events "$T/log.json" retry call errno | tr '\n' ' ')" \
		"connect ENOENT connect ENOENT " "retry events"
	assert_eq "$(json_events "$T/log.json" giveup errno attempt reason)" "ENOENT 3 retries" \
		"give-up event"
}
