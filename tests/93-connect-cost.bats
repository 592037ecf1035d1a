#!/usr/bin/env bats
# The cost of a connect that succeeds: a blocking one makes two system calls
# more than without the library (its bound's send timeout set and restored),
# a non-blocking one only what managing it in the event loop takes (one);
# the socket's mode and the program's own send timeout are followed from the
# socket's birth, and asked of the kernel whenever a copy (dup, fork) may
# have changed them where the hooks cannot see.
# shellcheck disable=SC2154 # status, output: set by bats run

load helper

setup() {
	require_build
	require_strace
	start_listener up 0 --count 1000
}

# calls_of HOW [with]: runs connect-modes HOW under strace (with the library
# if asked); sets CALLS to the system calls its measured connect made, TRACE
# to them, one a line, and OUT to what it printed.
calls_of() {
	local how=$1 preload=()
	[[ ${2:-} == with ]] && preload=(-E LD_PRELOAD="$LIB")
	run timeout 20 strace -f -qq -e signal=none -o "$T/trace.$how" "${preload[@]}" \
		"$HELPERS/connect-modes" "$how" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "connect-modes $how status (output: $output)" || return
	OUT=$output
	TRACE=$(awk '/getppid\(/ { n++; next } n == 1 { sub(/^[0-9]+ +/, ""); print }' \
		"$T/trace.$how")
	CALLS=$(awk '/getppid\(/ { n++; next } n == 1 { c++ } END { print c + 0 }' "$T/trace.$how")
}

# extra_calls HOW: sets EXTRA to how many system calls more the measured
# connect of HOW makes under the library than without; OUT, TRACE: with it.
extra_calls() {
	local without
	calls_of "$1" || return
	without=$CALLS
	assert_eq "$without" 1 "system calls of connect $1 without the library" || return
	calls_of "$1" with || return
	EXTRA=$((CALLS - without))
}

@test "a successful blocking TCP connect makes two system calls more: its bound's send timeout set and restored" {
	extra_calls blocking
	assert_eq "$EXTRA" 2 "extra system calls (trace: $TRACE)"
	assert_eq "$(grep -c 'setsockopt(.*SO_SNDTIMEO' <<<"$TRACE")" 2 "SO_SNDTIMEO set and restored"
	assert_match "$OUT" "connect=0" "the connect"
	assert_match "$OUT" "sndtimeo=0.000000" "no send timeout left behind"
}

@test "a non-blocking TCP connect asks nothing of the kernel: no system call more, its management included" {
	local how
	for how in nonblocking setfl fionbio; do
		extra_calls "$how" || return
		assert_eq "$EXTRA" 0 "$how: extra system calls (trace: $TRACE)" || return
		assert_no_match "$TRACE" "fcntl|SO_SNDTIMEO" "$how: neither mode nor timeout asked" ||
			return
		assert_match "$OUT" "connect=EINPROGRESS" "$how: the kernel's answer" || return
	done
}

@test "a socket made non-blocking and set back to blocking before its connect gets its bound" {
	extra_calls unset
	assert_eq "$EXTRA" 2 "extra system calls (trace: $TRACE)"
	assert_match "$OUT" "connect=0" "the connect"
}

@test "a socket made non-blocking through a copy (dup, or a forked child's) is found so at its connect" {
	local how
	for how in setfl-dup setfl-fork; do
		calls_of "$how" with || return
		assert_match "$OUT" "connect=EINPROGRESS" "$how: the kernel's answer" || return
		assert_match "$TRACE" "fcntl\([0-9]+, F_GETFL\)" "$how: the mode asked" || return
		assert_no_match "$TRACE" "SO_SNDTIMEO" "$how: no bound set on it" || return
	done
}

@test "a socket made non-blocking where no hook sees it gets the kernel's EINPROGRESS, its attempt not aborted" {
	calls_of setfl-raw with
	assert_match "$OUT" "connect=EINPROGRESS" "the kernel's answer"
	assert_no_match "$TRACE" "AF_UNSPEC" "the attempt left under way"
}

@test "a program's own send timeout is its connect's bound: nothing set, and it finds its value exact" {
	extra_calls sndtimeo
	assert_eq "$EXTRA" 0 "extra system calls (trace: $TRACE)"
	assert_match "$OUT" "sndtimeo=5.252000" "the program's own value"
	extra_calls sndtimeo-off
	assert_eq "$EXTRA" 2 "a timeout set then cleared: extra system calls (trace: $TRACE)"
	assert_match "$OUT" "sndtimeo=0.000000" "no send timeout left behind"
}

@test "a short-lived client's one connect: the quiet mark looked at, the attempt's process, one look; nothing else" {
	# The sanitizers' runtime, preloaded first, makes system calls of its own.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	require_program nc
	local nc_path extra
	nc_path=$(command -v nc)
	# The state file exists already, as on any host where something connected before, and
	# no destination in it is down or probed: the first process that mapped it left the
	# quiet mark beside it, and the next ones map nothing (one that is down makes a process
	# map the file, and a success look its slot up).
	env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state" "$nc_path" -z 127.0.0.1 "$PORT" ||
		fail "nc -z under the library"
	[[ -f $T/state.quiet ]] || fail "no quiet mark after a healthy first process"
	strace -f -qq -o "$T/without" "$nc_path" -z 127.0.0.1 "$PORT"
	strace -f -qq -o "$T/with" -E LD_PRELOAD="$LIB" -E BACKOFF_SHARED="$T/state" \
		"$nc_path" -z 127.0.0.1 "$PORT"
	# From the program's socket on, the names of the calls one run makes and the other not.
	for f in without with; do
		sed -nE '/socket\(AF_INET/,$ s/^([0-9]+ +)?([a-z0-9_]+)\(.*/\2/p' "$T/$f" | sort >"$T/$f.names"
	done
	extra=$(comm -13 "$T/without.names" "$T/with.names" | tr '\n' ' ')
	# geteuid, newfstatat: the quiet mark beside the user's state file; getpid: the managed
	# attempt's process (vfork); getsockopt: TCP_INFO, the look at its outcome.  The socket's
	# identity (fd reuse) is read only when the library acts on it, never for a success.  The
	# fd table's first pages are in the library's zero-filled section (no mapping), and a
	# connect that is never retried draws no seed.
	assert_eq "$extra" "geteuid getpid getsockopt newfstatat " \
		"system calls the library added (trace: $(cat "$T/with"))"
}
