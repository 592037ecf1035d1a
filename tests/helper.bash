# Shared set-up for the bats files: paths, small asserts, background servers, log parsing.
# shellcheck shell=bash disable=SC2034 # its variables are for the bats files that load it

bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
BUILD=${TEST_BUILD_DIR:-$ROOT/build}
LIB=$BUILD/libbackoff.so
HELPERS=$BUILD/helpers
SCHEDULE=$BUILD/backoff-schedule
LAUNCHER=$ROOT/scripts/backoff
T=$BATS_TEST_TMPDIR

# Every variable the library reads, as listed in the interface contract.
BACKOFF_VARIABLES=(BACKOFF BACKOFF_POLICY BACKOFF_BASE BACKOFF_MULTIPLIER BACKOFF_CAP
	BACKOFF_JITTER BACKOFF_RETRIES BACKOFF_TIMEOUT BACKOFF_ERRORS BACKOFF_TARGETS
	BACKOFF_NONBLOCK BACKOFF_SEND BACKOFF_DNS BACKOFF_LOG BACKOFF_LOG_FILE
	BACKOFF_LOG_FORMAT BACKOFF_SEED BACKOFF_STATS BACKOFF_STRICT)

# A test sees only the variables it sets itself.
unset LD_PRELOAD "${BACKOFF_VARIABLES[@]}"

# The real interpreter, not a version-manager shim: the shim is a shell script
# that would run (and connect) under the preload too.  Cached for the run.
if [[ -s $BATS_RUN_TMPDIR/python ]]; then
	PYTHON=$(<"$BATS_RUN_TMPDIR/python")
else
	PYTHON=$(python3 -c 'import sys; print(sys.executable)')
	printf '%s\n' "$PYTHON" >"$BATS_RUN_TMPDIR/python"
fi

fail() {
	printf '%s\n' "$@" >&2
	return 1
}

# assert_eq ACTUAL EXPECTED [WHAT]
assert_eq() {
	[[ $1 == "$2" ]] ||
		fail "${3:-value} differs" "expected: '$2'" "     got: '$1'"
}

# assert_match ACTUAL REGEX [WHAT]
assert_match() {
	[[ $1 =~ $2 ]] ||
		fail "${3:-value} does not match" "   regex: '$2'" "     got: '$1'"
}

# assert_no_match ACTUAL REGEX [WHAT]
assert_no_match() {
	! [[ $1 =~ $2 ]] ||
		fail "${3:-value} matches what it must not" "   regex: '$2'" "     got: '$1'"
}

# assert_between VALUE LOW HIGH [WHAT]: integers, bounds included.
assert_between() {
	[[ $1 =~ ^-?[0-9]+$ ]] || fail "${4:-value} is not an integer: '$1'" || return
	((($1) >= ($2) && ($1) <= ($3))) ||
		fail "${4:-value} out of range" "expected: [$2, $3]" "     got: $1"
}

# require_build: the library and the helpers must have been built by make.
require_build() {
	local f
	for f in "$LIB" "$HELPERS/late-listener" "$HELPERS/probe"; do
		[[ -e $f ]] || fail "$f is missing: run make first" || return
	done
}

require_socat() {
	command -v socat >/dev/null || skip "socat is not installed"
}

require_wget() {
	command -v wget >/dev/null || skip "wget is not installed"
}

require_strace() {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -qq -e trace=none true 2>/dev/null || skip "strace cannot trace here (ptrace denied)"
}

# require_unshare FLAGS...: sets UNSHARE to a command creating those
# namespaces: unshare as root, else unshare -r in a user namespace.
require_unshare() {
	command -v unshare >/dev/null || skip "unshare is not installed"
	if ((EUID == 0)) && unshare "$@" true 2>/dev/null; then
		UNSHARE=(unshare "$@")
	elif unshare -r "$@" true 2>/dev/null; then
		UNSHARE=(unshare -r "$@")
	else
		skip "unshare $* needs root or unprivileged user namespaces"
	fi
}

# now_ms: wall-clock milliseconds, for durations measured around a command.
now_ms() {
	local us=${EPOCHREALTIME//[!0-9]/}
	echo $((us / 1000))
}

# mono_ms: CLOCK_MONOTONIC in milliseconds, the clock of the log's mono_ms.
mono_ms() {
	"$PYTHON" -c 'import time; print(time.monotonic_ns() // 1000000)'
}

# wait_for_file FILE TIMEOUT_S: until FILE exists and is not empty.
wait_for_file() {
	local deadline=$(($(now_ms) + $2 * 1000))
	until [[ -s $1 ]]; do
		(($(now_ms) < deadline)) || fail "timed out after $2 s waiting for $1" || return
		sleep 0.01
	done
}

# wait_for_line FILE REGEX TIMEOUT_S: until a line of FILE matches REGEX (grep -E).
wait_for_line() {
	local deadline=$(($(now_ms) + $3 * 1000))
	until grep -Eq -- "$2" "$1" 2>/dev/null; do
		(($(now_ms) < deadline)) || fail "timed out after $3 s waiting for /$2/ in $1" || return
		sleep 0.01
	done
}

# start_bg NAME COMMAND...: runs COMMAND in the background, stdout in $T/NAME.out,
# stderr in $T/NAME.err, fd 3 closed (bats waits on it); teardown reaps it.
BG_PIDS=()
start_bg() {
	local name=$1
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err" 3>&- &
	BG_PIDS+=("$!")
	printf '%s\n' "$!" >"$T/$name.pid"
}

stop_bg_all() {
	local pid
	for pid in "${BG_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	BG_PIDS=()
}

teardown() {
	stop_bg_all
	return 0
}

# start_listener NAME AFTER_MS [late-listener options...]: a TCP listener on
# 127.0.0.1 with a free port, bound at once, listening after AFTER_MS; sets PORT.
start_listener() {
	start_listener_on 127.0.0.1 "$@"
}

# start_listener_on HOST NAME AFTER_MS [options...]: the same on HOST ([::1] for IPv6).
start_listener_on() {
	local host=$1 name=$2 after=$3
	shift 3
	start_bg "$name" "$HELPERS/late-listener" --tcp "$host:0" --after "$after" \
		--port-file "$T/$name.port" "$@"
	wait_for_file "$T/$name.port" 5 || return
	PORT=$(<"$T/$name.port")
}

# closed_port NAME: a port bound but never listened on, so it refuses every
# connection and no other process can take it during the test; sets PORT.
closed_port() {
	start_listener "$1" 3600000
}

# json_events FILE EVENT [KEY...]: one line per EVENT object of the JSON log,
# the values of KEYs separated by spaces (the whole object without KEYs).
# A missing file has no events; a line that is not JSON is an error.
json_events() {
	[[ -e $1 ]] || return 0
	"$PYTHON" - "$@" <<'EOF'
import json, sys
path, event, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path, encoding="utf-8", errors="replace") as f:
    for n, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            sys.exit(f"{path}:{n}: not JSON ({e}): {line!r}")
        if obj.get("event") != event:
            continue
        print(" ".join(str(obj.get(k)) for k in keys) if keys else line.rstrip("\n"))
EOF
}

# json_keys FILE EVENT: the keys of each EVENT object, in order, comma-separated.
json_keys() {
	"$PYTHON" - "$@" <<'PYEOF'
import json, sys
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        obj = json.loads(line)
        if obj.get("event") == sys.argv[2]:
            print(",".join(obj))
PYEOF
}

# count_lines TEXT: number of non-empty lines.
count_lines() {
	local n=0 line
	while IFS= read -r line; do
		[[ -z $line ]] || n=$((n + 1))
	done <<<"$1"
	echo "$n"
}

# without_backoff_lines: stdin without the library's own log lines.
without_backoff_lines() {
	local rc=0
	grep -Ev '^backoff(\[[0-9]+\])?: ' || rc=$?
	((rc <= 1))
}

# strace_connects FILE PATTERN: connect() calls in an strace -o FILE whose
# arguments contain PATTERN (fixed string), such as 'htons(8080)'.
strace_connects() {
	grep -F -- "$2" "$1" | grep -c 'connect(' || true
}

# traced OUT COMMAND...: runs COMMAND under the library with strace recording
# its connect() calls (and its children's) in OUT.  Variables for COMMAND go
# through env (traced OUT env BACKOFF_RETRIES=1 probe ...), not into strace.
traced() {
	local out=$1
	shift
	timeout 20 strace -f -qq -e trace=connect -e signal=none -o "$out" \
		-E LD_PRELOAD="$LIB" "$@"
}

# normalized_output TEXT: TEXT without the library's lines and without the parts
# of a program's messages that change from run to run (socat's time and pid).
normalized_output() {
	printf '%s\n' "$1" | without_backoff_lines |
		sed -E 's|^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9:]{8} socat\[[0-9]+\]|socat[PID]|'
}

# Clients used as they come, each reading what the server sends until EOF.
# Python's create_connection() without a timeout uses a blocking connect().
PY_CLIENT=("$PYTHON" -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
data = b""
while chunk := s.recv(4096):
    data += chunk
sys.stdout.write(data.decode())
')
WGET_CLIENT=(wget -nv -t 1 -O -)
SOCAT_CLIENT=(socat -u)
HTTP_REPLY=$'HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello'
