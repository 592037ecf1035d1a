#!/usr/bin/env bats
# The default engine supervises only the programs the preload cannot reach, chosen at each
# exec: a dynamically linked tree runs under the preload alone (no filter, no supervisor, no
# no_new_privs), and a static or Go program anywhere in it is still run under the supervisor,
# whichever call of the exec family or posix_spawn starts it, keeping its PID and status.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CAP_MS=300

setup() {
	require_build
	SUPERVISOR=$BUILD/backoff-supervise
	WHOAMI=$BUILD/static/whoami
	GO_DIAL=$BUILD/go/dial
	SPAWN=$HELPERS/spawn
	for f in "$SUPERVISOR" "$WHOAMI" "$SPAWN" "$GO_DIAL-nocgo" "$GO_DIAL-cgo"; do
		[[ -x $f ]] || fail "$f is missing: run make (with go installed)" || return
	done
	# shellcheck disable=SC2016 # expanded by the shell of the tree
	COUNT_SUPERVISORS='n=0; for e in /proc/[0-9]*/exe; do
		[ "$(readlink "$e" 2>/dev/null)" = "'$SUPERVISOR'" ] && n=$((n + 1)); done; echo "supervisors=$n"'
}

# status_field FIELD: that line's value from /proc/self/status, as the tree's shell reads it.
status_field() {
	echo "grep '^$1:' /proc/self/status | tr -d ' \t'"
}

@test "a dynamically linked tree runs under the preload alone: no filter, no no_new_privs, no supervisor" {
	run --separate-stderr timeout 20 "$LAUNCHER" -- sh -c \
		"$(status_field Seccomp); sh -c \"$(status_field Seccomp); $(status_field NoNewPrivs)\"; $COUNT_SUPERVISORS"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "$(printf 'Seccomp:0\nSeccomp:0\nNoNewPrivs:0\nsupervisors=0')" \
		"the shell, its child, and the supervisors alive"
	assert_eq "$stderr" "" "stderr"
}

@test "a static program started by a preloaded shell runs under the supervisor, with its own PID" {
	local pid
	run --separate-stderr timeout 20 "$LAUNCHER" -- sh -c "$WHOAMI & echo \"child=\$!\"; wait"
	assert_eq "$status" 0 "status: $stderr"
	pid=$(sed -n 's/^child=//p' <<<"$output")
	assert_match "$output" "pid=$pid euid=[0-9]+ seccomp=2 " "the program, as the shell started it"
}

# Every call of the exec family and posix_spawn: the program the call starts is under the
# filter, and the spawning calls return the PID the program has.
@test "each call of the exec family and posix_spawn runs a static program under the supervisor" {
	# The sanitizers' runtime must come first in a preloaded process; a program the
	# supervisor runs from a preloaded one does not keep that order.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	local mode prog pid
	for mode in execve execv execvp execvpe execl execle execlp fexecve execveat execveat-fd \
		posix_spawn posix_spawnp vfork; do
		prog=$WHOAMI
		[[ $mode != *p && $mode != execvpe && $mode != posix_spawnp ]] || prog=whoami
		run --separate-stderr env PATH="$BUILD/static:$PATH" timeout 20 "$LAUNCHER" -- \
			"$SPAWN" "$mode" "$prog"
		assert_eq "$status" 0 "status ($mode): $stderr" || return
		assert_match "$output" "seccomp=2 " "the program ($mode)" || return
		pid=$(sed -n 's/^spawned //p' <<<"$output")
		[[ -z $pid ]] || assert_match "$output" "pid=$pid " "the PID ($mode)" || return
	done
}

@test "an exec whose environment dropped LD_PRELOAD still runs a static program under the supervisor" {
	run --separate-stderr timeout 20 "$LAUNCHER" -- env -u LD_PRELOAD "$WHOAMI"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "seccomp=2 " "the program"
}

@test "a script whose interpreter is a static program runs under the supervisor" {
	local busybox
	busybox=$(command -v busybox) || skip "busybox is not installed (busybox-static)"
	# shellcheck disable=SC2016 # for the script's shell
	printf '#!%s sh\nwhile read -r l; do case $l in Seccomp:*) echo "$l";; esac; done </proc/$$/status\n' \
		"$busybox" >"$T/script"
	chmod +x "$T/script"
	run --separate-stderr timeout 20 "$LAUNCHER" -- sh -c "$T/script"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "^Seccomp:[[:space:]]+2$" "the script's shell"
}

@test "the exit status and a death by signal of a program run through the supervisor are its own" {
	# The sanitizers' runtime must come first in a preloaded process; a program the
	# supervisor runs from a preloaded one does not keep that order.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	local busybox
	busybox=$(command -v busybox) || skip "busybox is not installed (busybox-static)"
	assert_eq "$("$SUPERVISOR" --inspect "$busybox")" static "busybox is a static binary"
	run timeout 20 "$LAUNCHER" -- "$SPAWN" posix_spawn "$busybox" sh -c 'exit 7'
	assert_eq "$status" 7 "exit status"
	run timeout 20 "$LAUNCHER" -- "$SPAWN" posix_spawn "$busybox" sh -c 'kill -TERM $$'
	assert_eq "$status" 143 "death by SIGTERM, as the parent saw it"
	run timeout 20 "$LAUNCHER" -- sh -c "$busybox sh -c 'kill -TERM \$\$'"
	assert_eq "$status" 143 "death by SIGTERM, through a shell"
}

# late_go MODE: a Go client started by the spawn helper's MODE connects to a late server.
late_go() {
	start_listener server 1500 --send hello
	run --separate-stderr timeout 20 "$LAUNCHER" --base 50ms --cap "${CAP_MS}ms" --log info \
		--json --log-file "$T/log.json" -- "$SPAWN" "$1" "$GO_DIAL-$2" tcp "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status: $stderr" || return
	assert_match "$output" hello "output" || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
}

@test "a Go client started by a C program's posix_spawn connects to a late server" {
	# The sanitizers' runtime must come first in a preloaded process; a program the
	# supervisor runs from a preloaded one does not keep that order.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	late_go posix_spawn nocgo
}

@test "a Go client built with cgo started by a C program's execvp connects to a late server" {
	# The sanitizers' runtime must come first in a preloaded process; a program the
	# supervisor runs from a preloaded one does not keep that order.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	late_go execvp cgo
}

# A harness that evaluated --print-env (its own process not preloaded) starts a shell that starts
# CLIENT tcp 127.0.0.1:$PORT: the export lines ENV, as that harness has them.
from_print_env() {
	run --separate-stderr timeout 20 sh -c "$1
		sh -c '\"\$0\" tcp 127.0.0.1:$PORT' \"\$0\"" "$2"
}

@test "a shell that evaluated --print-env runs a Go client through the supervisor: it connects to a late server" {
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	local env
	env=$("$LAUNCHER" --base 50ms --cap "${CAP_MS}ms" --log info --json --log-file "$T/log.json" \
		--print-env)
	assert_match "$(grep '^export LIBBACKOFF_SUPERVISOR=' <<<"$env")" "/backoff-supervise'\$" \
		"the supervisor exported" || return
	# Another engine's lines take a supervisor named before away.
	assert_match "$("$LAUNCHER" --engine preload --print-env)" \
		$'\nunset LIBBACKOFF_SUPERVISOR\n' "under --engine preload" || return
	# Without the supervisor's path, the preload cannot reach the Go client: refused at once.
	start_listener server 1500 --send hello
	from_print_env "$(grep -v LIBBACKOFF_SUPERVISOR <<<"$env")" "$GO_DIAL-nocgo"
	assert_match "$output$stderr" "refused" "the Go client, the preload alone" || return
	stop_bg_all
	start_listener server 1500 --send hello
	from_print_env "$env" "$GO_DIAL-nocgo"
	assert_eq "$status" 0 "status: $stderr" || return
	assert_match "$output" hello "output" || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
}

@test "a static program the supervisor runs starts its children under its own filter, not another" {
	# The sanitizers' runtime must come first in a preloaded process; a program the
	# supervisor runs from a preloaded one does not keep that order.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	local busybox
	busybox=$(command -v busybox) || skip "busybox is not installed (busybox-static)"
	# spawn (preloaded) -> busybox (supervised) -> spawn (preloaded, under the filter) ->
	# whoami: one filter, the one busybox's exec installed.
	run --separate-stderr timeout 20 "$LAUNCHER" -- "$SPAWN" execv "$busybox" sh -c \
		"$SPAWN execve $WHOAMI"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "seccomp=2 nnp=0 filters=1" "the grandchild"
	assert_eq "$stderr" "" "stderr"
}

@test "a launcher started in a preloaded tree is not put under a supervisor: its command gets one" {
	# The sanitizers' runtime must come first in a preloaded process; a program the
	# supervisor runs from a preloaded one does not keep that order.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize: the ASan runtime must come first"
	assert_eq "$("$SUPERVISOR" --inspect "$BUILD/backoff")" engine "the launcher's kind"
	run --separate-stderr timeout 20 "$LAUNCHER" -- sh -c "$BUILD/backoff -- $WHOAMI"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$stderr" "" "stderr"
	assert_match "$output" "seccomp=2 nnp=0 filters=1" "the inner launcher's command"
}

@test "--engine supervise within a tree of the default engine puts its whole tree under one filter" {
	# The inner tree inherits LD_PRELOAD: its shell is preloaded, under the filter.
	run --separate-stderr timeout 20 "$LAUNCHER" -- sh -c \
		"$LAUNCHER --engine supervise -- sh -c $WHOAMI"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$stderr" "" "stderr"
	assert_match "$output" "seccomp=2 nnp=0 filters=1" "the program"
}

@test "--engine preload runs a static program as it is" {
	run --separate-stderr timeout 20 "$LAUNCHER" --engine preload -- sh -c "$WHOAMI"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "seccomp=0 " "the program"
}

# setuid_copy FILE: a set-user-ID root copy of FILE in USER_DIR, or skip where none can be made.
setuid_copy() {
	command -v setpriv >/dev/null || skip "setpriv is missing (util-linux)"
	((EUID == 0)) || skip "making a set-user-ID root file needs root"
	USER_DIR=$(mktemp -d /tmp/backoff-user.XXXXXX)
	chmod 755 "$USER_DIR"
	cp "$1" "$USER_DIR/"
	chmod 4755 "$USER_DIR/${1##*/}"
}

AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

@test "as a user, a set-user-ID copy of id in a dynamically linked tree gets its effective user" {
	setuid_copy "$(command -v id)"
	[[ $("${AS_NOBODY[@]}" "$USER_DIR/id" -u) == 0 ]] || {
		rm -rf "$USER_DIR"
		skip "set-user-ID files do not take effect here (nosuid)"
	}
	run --separate-stderr timeout 20 "${AS_NOBODY[@]}" "$LAUNCHER" -- sh -c "$USER_DIR/id -u; id -u"
	rm -rf "$USER_DIR"
	assert_eq "$status" 0 "status: $stderr"
	assert_eq "$output" "$(printf '0\n65534')" "the set-user-ID program's, then the shell's"
}

@test "as a user, a set-user-ID static program is never run under the supervisor" {
	setuid_copy "$WHOAMI"
	run --separate-stderr timeout 20 "${AS_NOBODY[@]}" "$LAUNCHER" -- sh -c "$USER_DIR/whoami"
	rm -rf "$USER_DIR"
	assert_eq "$status" 0 "status: $stderr"
	assert_match "$output" "euid=0 seccomp=0 nnp=0" "the program"
}
