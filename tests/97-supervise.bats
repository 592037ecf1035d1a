#!/usr/bin/env bats
# The supervisor engine: Go, static and raw-syscall clients started before their server
# connect under the launcher, and the program stays itself (PID, status, signals, fds).
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CAP_MS=300

setup() {
	require_build
	SUPERVISOR=$BUILD/backoff-supervise
	RAW=$BUILD/static/raw-connect
	GO_DIAL=$BUILD/go/dial
	for f in "$SUPERVISOR" "$RAW" "$BUILD/static/raw-odd" "$GO_DIAL-nocgo" "$GO_DIAL-cgo"; do
		[[ -x $f ]] || fail "$f is missing: run make (with go installed)" || return
	done
	BUSYBOX=$(command -v busybox || true)
	LATE=(--base 50ms --cap "${CAP_MS}ms" --log info --json --log-file "$T/log.json")
}

# late_tcp NAME: a TCP server listening 1.5 s from now that sends "hello"; sets PORT, ADDR.
late_tcp() {
	start_listener "$1" 1500 --send hello
	ADDR=127.0.0.1:$PORT
	TARGET=$ADDR
	ERRNO=ECONNREFUSED
}

# late_unix NAME: the same on a unix socket created 1.5 s from now; sets ADDR.
late_unix() {
	ADDR=$T/$1.sock
	start_bg "$1" "$HELPERS/late-listener" --unix "$ADDR" --after 1500 --send hello
	TARGET=unix:$ADDR
	ERRNO=ENOENT
}

# assert_only_the_launcher_connects COMMAND...: without the launcher and with
# --engine preload COMMAND fails at once (the server is not listening yet); under
# the launcher's default engine it connects once the server listens, after retries.
assert_only_the_launcher_connects() {
	run --separate-stderr timeout 20 "$@"
	assert_between "$status" 1 125 "status without the launcher" || return
	run --separate-stderr timeout 20 "$LAUNCHER" --engine preload "${LATE[@]}" -- "$@"
	assert_between "$status" 1 125 "status with --engine preload" || return
	assert_eq "$(json_events "$T/log.json" retry)" "" "retries under the preload" || return
	run --separate-stderr timeout 20 "$LAUNCHER" "${LATE[@]}" -- "$@"
	assert_eq "$status" 0 "status under the launcher: $stderr" || return
	assert_match "$output" "hello" "output under the launcher" || return
	assert_retried_then_connected "$T/log.json" "$TARGET" "$ERRNO" \
		"$(listener_mono server listening)" "$CAP_MS" || return
	record_matrix "$BATS_TEST_DESCRIPTION" "auto: $("$SUPERVISOR" --inspect "$(command -v "$1")")"
}

@test "a static client's blocking raw connect to a late TCP server connects" {
	late_tcp server
	assert_only_the_launcher_connects "$RAW" --tcp "$ADDR"
}

@test "a static client's blocking connect looks for its local listener: connected at the listen, not at its planned 2 s" {
	# Timed by the listeners' own clocks: from listening to the connection accepted.
	local looked planned
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 "$LAUNCHER" --base 2s --cap 2s --jitter none \
		--shared "$T/state" -- "$RAW" --tcp "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "hello" "output"
	looked=$(($(listener_mono server accepted) - $(listener_mono server listening)))
	# The control: with looks off, the planned attempt at 2 s, 1 s after the listen.
	start_listener server2 1000 --send hello
	run --separate-stderr timeout 20 "$LAUNCHER" --base 2s --cap 2s --jitter none \
		--shared "$T/state" --local-probe off -- "$RAW" --tcp "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status with looks off: $stderr"
	planned=$(($(listener_mono server2 accepted) - $(listener_mono server2 listening)))
	assert_between "$looked" 0 300 "ms from the listen to the connection with looks"
	assert_between "$planned" 700 2000 "ms from the listen to the connection with looks off"
}

@test "a static client's non-blocking raw connect (poll, SO_ERROR) to a late TCP server connects" {
	late_tcp server
	assert_only_the_launcher_connects "$RAW" --nonblock --tcp "$ADDR"
}

@test "a static client's blocking raw connect to a late unix socket connects" {
	late_unix server
	assert_only_the_launcher_connects "$RAW" --unix "$ADDR"
}

@test "a static client's non-blocking raw connect to a late unix socket connects" {
	late_unix server
	assert_only_the_launcher_connects "$RAW" --nonblock --unix "$ADDR"
}

@test "a Go client built with CGO_ENABLED=0 connects to a late TCP server" {
	late_tcp server
	assert_only_the_launcher_connects "$GO_DIAL-nocgo" tcp "$ADDR"
}

@test "a Go client built with CGO_ENABLED=1 connects to a late TCP server" {
	late_tcp server
	assert_only_the_launcher_connects "$GO_DIAL-cgo" tcp "$ADDR"
}

@test "a Go client built with CGO_ENABLED=0 connects to a late unix socket" {
	late_unix server
	assert_only_the_launcher_connects "$GO_DIAL-nocgo" unix "$ADDR"
}

@test "a Go client built with CGO_ENABLED=1 connects to a late unix socket" {
	late_unix server
	assert_only_the_launcher_connects "$GO_DIAL-cgo" unix "$ADDR"
}

@test "a Go client started by a shell script connects to a late TCP server" {
	late_tcp server
	assert_only_the_launcher_connects sh -c "exec 2>&1; $GO_DIAL-nocgo tcp $ADDR; exit \$?"
}

@test "a Go client started by Python's subprocess connects to a late TCP server" {
	late_tcp server
	assert_only_the_launcher_connects "$PYTHON" -c \
		'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' \
		"$GO_DIAL-cgo" tcp "$ADDR"
}

@test "Go's own dial timeout stays exact under the supervisor: 2 s, whatever BACKOFF_TIMEOUT says" {
	local build start elapsed
	closed_port server
	for build in nocgo cgo; do
		start=$(now_ms)
		run --separate-stderr timeout 20 "$LAUNCHER" --timeout 60s --cap "${CAP_MS}ms" -- \
			"$GO_DIAL-$build" -timeout 2s tcp "127.0.0.1:$PORT"
		elapsed=$(($(now_ms) - start))
		assert_eq "$status" 1 "status ($build)"
		assert_match "$stderr" "i/o timeout" "Go's error ($build)"
		assert_between "$elapsed" 1700 2300 "ms until Go gave up ($build)"
	done
}

@test "Go gives up with its own error once the budget is spent when the server never comes" {
	local start elapsed
	closed_port server
	start=$(now_ms)
	run --separate-stderr timeout 20 "$LAUNCHER" --timeout 1s --cap "${CAP_MS}ms" -- \
		"$GO_DIAL-nocgo" tcp "127.0.0.1:$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status" 1 "status"
	assert_match "$stderr" "connect: connection refused" "Go's error"
	assert_match "$stderr" "giving up after [0-9]+ attempts" "the give-up line"
	assert_between "$elapsed" 900 2500 "ms until Go gave up"
}

@test "busybox-static nc started from a shell pipeline connects to a late server" {
	[[ -n $BUSYBOX ]] || fail "busybox is not installed (busybox-static)"
	assert_eq "$("$SUPERVISOR" --inspect "$BUSYBOX")" static "busybox is a static binary"
	late_tcp server
	assert_only_the_launcher_connects sh -c "echo ping | $BUSYBOX nc 127.0.0.1 $PORT"
}

# count_attempts ENGINE: the attempts of a probe that gives up after 3 retries.
count_attempts() {
	rm -f "$T/log.json"
	timeout 20 "$LAUNCHER" --engine "$1" --retries 3 --base 10ms --cap 20ms --log info \
		--json --log-file "$T/log.json" -- "$HELPERS/probe" --mode "$2" "127.0.0.1:$PORT" \
		>/dev/null || true
	printf '%s retries, give-up at attempt %s\n' \
		"$(count_lines "$(json_events "$T/log.json" retry)")" \
		"$(json_events "$T/log.json" giveup attempt)"
}

@test "a dynamically linked client makes as many attempts under auto as under the preload" {
	local mode
	# The launcher puts the library first in LD_PRELOAD; an ASan-built probe needs its runtime first.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	closed_port server
	for mode in blocking poll epoll-et; do
		assert_eq "$(count_attempts preload "$mode")" "3 retries, give-up at attempt 4" \
			"preload, $mode"
		assert_eq "$(count_attempts auto "$mode")" "3 retries, give-up at attempt 4" \
			"auto, $mode"
	done
}

@test "a preloaded client's SO_ERROR of its own connection goes to the kernel, not to the supervisor" {
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	require_strace
	start_listener up 0 --count 10
	cat >"$T/so_error.py" <<'PY'
import select, socket, sys
s = socket.socket()
s.setblocking(False)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except BlockingIOError:
    pass
select.select([], [s], [], 5)
print("zeros", [s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) for _ in range(20)].count(0))
PY
	[[ -n $BUSYBOX ]] || fail "busybox is not installed (busybox-static)"
	local engine answered
	# Each notification the supervisor answers is one SECCOMP_IOCTL_NOTIF_SEND of its own.
	# auto: python is the child of a static shell, so under its filter, and preloaded.
	for engine in auto supervise; do
		run timeout 20 strace -f -qq -e trace=ioctl -o "$T/trace.$engine" \
			"$LAUNCHER" --engine "$engine" -- "$BUSYBOX" sh -c '"$0" "$1" "$2"' \
			"$PYTHON" "$T/so_error.py" "$PORT"
		assert_eq "$output" "zeros 20" "$engine: what the program read" || return
		answered+="$engine $(grep -c 'SECCOMP_IOCTL_NOTIF_SEND' "$T/trace.$engine" || true) "
	done
	# auto: the preload marks its connect and its SO_ERROR reads (a round trip each, about
	# 28 us, saved); supervise alone: the connect and the 20 reads go to the supervisor.
	assert_eq "$answered" "auto 0 supervise 21 " "notifications answered by the supervisor"
}

@test "the exit status and a death by signal are the program's own" {
	local engine
	for engine in auto supervise; do
		run "$LAUNCHER" --engine "$engine" -- sh -c 'exit 7'
		assert_eq "$status" 7 "exit status ($engine)"
		run "$LAUNCHER" --engine "$engine" -- "$RAW"
		assert_eq "$status" 2 "static program's exit status ($engine)"
		run "$LAUNCHER" --engine "$engine" -- sh -c 'kill -TERM $$'
		assert_eq "$status" 143 "death by SIGTERM ($engine)"
	done
}

@test "the program keeps the launcher's PID and gets the signals sent to it" {
	local pid
	"$LAUNCHER" -- sh -c 'echo $$; exec sleep 30' >"$T/pid.out" 3>&- &
	pid=$!
	wait_for_file "$T/pid.out" 5
	assert_eq "$(<"$T/pid.out")" "$pid" "the PID the program sees"
	kill -TERM "$pid"
	local status=0
	wait "$pid" || status=$?
	assert_eq "$status" 143 "status after SIGTERM"
}

@test "out=\$(backoff -- prog) returns as soon as the program ends" {
	local start out
	start=$(now_ms)
	out=$("$LAUNCHER" --engine supervise -- sh -c 'echo hi')
	assert_eq "$out" hi "captured output"
	out=$("$LAUNCHER" --timeout 100ms -- "$RAW" --tcp 127.0.0.1:1 2>&1 || true)
	assert_between "$(($(now_ms) - start))" 0 3000 "ms for two captures"
}

# supervisors: how many supervisor processes of this build are alive.
supervisors() {
	local exe n=0
	for exe in /proc/[0-9]*/exe; do
		[[ $(readlink "$exe" 2>/dev/null) == "$SUPERVISOR" ]] && n=$((n + 1))
	done
	echo "$n"
}

@test "a tree of 50 short-lived children leaves no supervisor behind" {
	local before deadline
	before=$(supervisors)
	run timeout 30 "$LAUNCHER" --retries 0 -- sh -c \
		"for i in \$(seq 50); do $RAW --tcp 127.0.0.1:1 2>/dev/null & done; wait; exit 0"
	assert_eq "$status" 0 "status"
	deadline=$(($(now_ms) + 5000))
	while (($(supervisors) > before)) && (($(now_ms) < deadline)); do
		sleep 0.05
	done
	assert_eq "$(supervisors)" "$before" "supervisor processes left"
}

@test "the supervisor is not a child of the program: wait() finds none" {
	local engine
	for engine in auto supervise; do
		# shellcheck disable=SC2016 # $$ is the program's; read is a builtin: no child yet
		run "$LAUNCHER" --engine "$engine" -- sh -c \
			'read -r kids </proc/$$/task/$$/children; echo "children:${kids:-}"'
		assert_eq "$output" "children:" "children of the program ($engine)"
	done
}

@test "the program's fds are its own: nothing of the supervisor's leaks into it" {
	local engine bare
	# The shell's own glob, not ls in a pipeline: a child's listing would race with the
	# shell closing the pipe's ends.
	# shellcheck disable=SC2016 # $$ is the program's
	run sh -c 'cd /proc/$$/fd && echo *'
	bare=$output
	for engine in auto supervise; do
		# shellcheck disable=SC2016 # $$ is the program's
		run "$LAUNCHER" --engine "$engine" -- sh -c 'cd /proc/$$/fd && echo *'
		assert_eq "$output" "$bare" "fds of the program ($engine)"
	done
}

@test "odd connect calls get the kernel's answers under the supervisor" {
	local bare
	closed_port server
	bare=$("$BUILD/static/raw-odd" "$PORT")
	run --separate-stderr "$LAUNCHER" --engine supervise --timeout 200ms -- \
		"$BUILD/static/raw-odd" "$PORT"
	assert_eq "$output" "$bare" "results under the supervisor"
}

@test "a client killed during its held connect leaves the supervisor serving the others" {
	late_tcp server
	run timeout 20 "$LAUNCHER" "${LATE[@]}" -- sh -c \
		"timeout -s KILL 0.3 $RAW --tcp $ADDR; $RAW --tcp $ADDR"
	assert_eq "$status" 0 "status of the second client"
	assert_match "$output" hello "output of the second client"
}

@test "as a user without privileges the supervisor runs (no_new_privs) and retries" {
	command -v setpriv >/dev/null || fail "setpriv is missing (util-linux)"
	USER_DIR=$(mktemp -d /tmp/backoff-user.XXXXXX)
	cp "$RAW" "$USER_DIR/raw-connect"
	chmod 755 "$USER_DIR" "$USER_DIR/raw-connect"
	late_tcp server
	run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$LAUNCHER" --base 50ms --cap "${CAP_MS}ms" -v -- "$USER_DIR/raw-connect" --tcp "$ADDR"
	rm -rf "$USER_DIR"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" hello "output"
	assert_match "$stderr" "succeeded on attempt" "the log"
}

@test "a set-user-ID command run by a user gets the preload alone, with one line saying why" {
	command -v setpriv >/dev/null || fail "setpriv is missing (util-linux)"
	USER_DIR=$(mktemp -d /tmp/backoff-user.XXXXXX)
	cp /bin/true "$USER_DIR/suid-true"
	chmod 4755 "$USER_DIR/suid-true"
	chmod 755 "$USER_DIR"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$LAUNCHER" -- "$USER_DIR/suid-true"
	rm -rf "$USER_DIR"
	assert_eq "$status" 0 "status"
	assert_match "$stderr" "set-user-ID or has file capabilities: the preload alone retries" \
		"the warning"
	assert_eq "$(count_lines "$stderr")" 1 "lines on stderr"
}

@test "a signal during a held connect: EINTR without SA_RESTART, the call restarted with it" {
	late_tcp server
	run --separate-stderr "$LAUNCHER" --engine supervise --cap "${CAP_MS}ms" -- \
		"$HELPERS/probe" --alarm 300 "$ADDR"
	assert_eq "$output" EINTR "without SA_RESTART"
	assert_match "$stderr" "elapsed_ms=(2|3)[0-9][0-9] " "time until EINTR"
	run --separate-stderr "$LAUNCHER" --engine supervise --cap "${CAP_MS}ms" -- \
		"$HELPERS/probe" --alarm 300 --sa-restart --read "$ADDR"
	assert_eq "$output" "OK hello" "with SA_RESTART"
}

@test "the launcher's inspection tells Go, static, dynamic and script apart" {
	assert_eq "$("$SUPERVISOR" --inspect "$GO_DIAL-nocgo")" go "Go without cgo"
	assert_eq "$("$SUPERVISOR" --inspect "$GO_DIAL-cgo")" go "Go with cgo"
	assert_eq "$("$SUPERVISOR" --inspect "$RAW")" static "gcc -static"
	assert_eq "$("$SUPERVISOR" --inspect "$HELPERS/probe")" dynamic "dynamically linked"
	assert_eq "$("$SUPERVISOR" --inspect "$LAUNCHER")" script "script"
	assert_eq "$("$SUPERVISOR" --inspect "$T/none")" unknown "missing file"
}

@test "BACKOFF_TARGETS and BACKOFF_STATS work under the supervisor as under the preload" {
	local start
	start=$(now_ms)
	run --separate-stderr "$LAUNCHER" --engine supervise --targets '!127.0.0.1:*' -v -- \
		"$RAW" --tcp 127.0.0.1:1
	assert_eq "$status" 1 "status with the target excluded"
	assert_eq "$stderr" "raw-connect: connect: Connection refused" "stderr: no retry"
	assert_between "$(($(now_ms) - start))" 0 2000 "ms with the target excluded"
	# The supervisor writes the line once the program has gone: wait for it.
	"$LAUNCHER" --engine supervise --timeout 200ms --stats -- "$RAW" --tcp 127.0.0.1:1 \
		2>"$T/stats.err" || true
	wait_for_line "$T/stats.err" "stats: calls=1 retries=[0-9]+ giveups=1 waited_ms=" 5
}

# As Yama's ptrace_scope does to a supervisor that is not an ancestor: a non-dumpable
# program of an unprivileged user denies the supervisor its memory and its sockets.
@test "without ptrace access to the program, its connects get the kernel's answer at once" {
	local start mode
	command -v setpriv >/dev/null || fail "setpriv is missing (util-linux)"
	USER_DIR=$(mktemp -d /tmp/backoff-user.XXXXXX)
	cp "$RAW" "$USER_DIR/raw-connect"
	chmod 755 "$USER_DIR" "$USER_DIR/raw-connect"
	closed_port server
	for mode in --tcp "--nonblock --tcp"; do
		start=$(now_ms)
		# shellcheck disable=SC2086 # $mode is two words
		run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$LAUNCHER" -- "$USER_DIR/raw-connect" --undumpable $mode "127.0.0.1:$PORT"
		assert_eq "$status" 1 "status ($mode)"
		assert_eq "$stderr" "raw-connect: connect: Connection refused" "stderr ($mode)"
		assert_between "$(($(now_ms) - start))" 0 2000 "ms ($mode)"
	done
	rm -rf "$USER_DIR"
}
