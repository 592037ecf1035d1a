#!/usr/bin/env bats
# With a seed, the library waits exactly the delays that backoff-schedule prints,
# and both are the delays computed here from the documented formulas.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	[[ -x $SCHEDULE ]] || fail "$SCHEDULE is missing: run make first"
}

# expected_delays JITTER: the five delays of BACKOFF_SEED=42 BACKOFF_BASE=10ms
# BACKOFF_CAP=200ms (multiplier 2), one per line, computed independently of
# policy.c: the window is min(base * 2^(n-1), cap); the strategy's range
# (README, BACKOFF_JITTER); a draw in [lo, hi] is lo + x % (hi - lo + 1), x the
# next output of splitmix64 started from the seed; the cap bounds the delay.
expected_delays() {
	"$PYTHON" - "$1" <<'EOF'
import sys
M = (1 << 64) - 1
state = 42
def draw(lo, hi):
    global state
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return lo + (z ^ (z >> 31)) % (hi - lo + 1)
jitter, _, ratio = sys.argv[1].partition(":")
base, cap, prev = 10, 200, 10
for n in range(1, 6):
    w = min(base * 2 ** (n - 1), cap)
    if jitter == "none":
        lo, hi = w, w
    elif jitter == "full":
        lo, hi = 0, w
    elif jitter == "equal":
        lo, hi = w // 2, w // 2 * 2
    elif jitter == "decorrelated":
        lo, hi = base, 3 * min(max(prev, base), cap)
    elif jitter == "additive":
        lo, hi = w, w + base
    elif jitter == "proportional":
        spread = w * int(float(ratio or "0.2") * 1000) // 1000
        lo, hi = w - spread, w + spread
    prev = min(draw(lo, hi), cap)
    print(prev)
EOF
}

# check_schedule JITTER: five retries against a closed port log the delays
# computed by expected_delays, and backoff-schedule prints the same, each
# within the schedule's bounds.
check_schedule() {
	local vars=(BACKOFF_SEED=42 BACKOFF_RETRIES=5 BACKOFF_BASE=10ms BACKOFF_CAP=200ms
		BACKOFF_JITTER="$1" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
	local planned logged
	closed_port server
	run timeout 20 env LD_PRELOAD="$LIB" "${vars[@]}" "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output"

	run --separate-stderr timeout 20 env "${vars[@]}" "$SCHEDULE"
	assert_eq "$status" 0 "backoff-schedule status"
	assert_eq "$stderr" "" "backoff-schedule stderr"
	planned=$(awk '!/^#/ && NF { print $2 }' <<<"$output")
	logged=$(json_events "$T/log.json" retry delay_ms)
	assert_eq "$(count_lines "$logged")" 5 "retry events"
	assert_eq "$(tr '\n' ' ' <<<"$logged")" "$(expected_delays "$1" | tr '\n' ' ')" \
		"logged vs computed delays"
	assert_eq "$(tr '\n' ' ' <<<"$logged")" "$(tr '\n' ' ' <<<"$planned")" "logged vs planned delays"
	awk '!/^#/ && NF && !($3 <= $2 && $2 <= $4) {
		print "retry " $1 ": delay " $2 " outside [" $3 ", " $4 "]"; bad = 1
	} END { exit bad }' <<<"$output" >&2
	assert_eq "$(json_keys "$T/log.json" retry | sort -u)" \
		time,mono_ms,pid,tid,level,event,call,target,errno,attempt,delay_ms,wait_ms "keys of retry events"
}

@test "seeded delays without jitter match the schedule" {
	check_schedule none
}

@test "seeded delays with full jitter match the schedule" {
	check_schedule full
}

@test "seeded delays with equal jitter match the schedule" {
	check_schedule equal
}

@test "seeded delays with decorrelated jitter match the schedule" {
	check_schedule decorrelated
}

@test "seeded delays with additive jitter match the schedule" {
	check_schedule additive
}

@test "seeded delays with proportional jitter match the schedule" {
	check_schedule proportional
}

@test "seeded delays with proportional:0.5 jitter match the schedule" {
	check_schedule proportional:0.5
}

@test "the expected delays without jitter are the doubling window" {
	assert_eq "$(expected_delays none | tr '\n' ' ')" "10 20 40 80 160 " "expected delays"
}

@test "with a seed every call draws the schedule's delays, whichever thread makes it and in what order" {
	local vars=(BACKOFF_SEED=42 BACKOFF_RETRIES=5 BACKOFF_BASE=10ms BACKOFF_CAP=200ms
		BACKOFF_JITTER=full BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json")
	local tid expected
	closed_port server
	# Eight threads, two blocking calls each: a sequence per thread (or per
	# process) would give them different delays.
	run timeout 30 env LD_PRELOAD="$LIB" "${vars[@]}" "$PYTHON" -c '
import socket, sys, threading
outcomes = []
def calls():
    for _ in range(2):
        try:
            socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            outcomes.append("connected")
        except OSError as e:
            outcomes.append(type(e).__name__)
ts = [threading.Thread(target=calls) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print("\n".join(outcomes))
' "$PORT"
	assert_eq "$(grep -c '^ConnectionRefusedError$' <<<"$output")" 16 "refused calls"
	expected=$(expected_delays full | tr '\n' ' ')
	assert_eq "$(json_events "$T/log.json" retry tid | sort -u | wc -l)" 8 "threads that retried"
	for tid in $(json_events "$T/log.json" retry tid | sort -u); do
		assert_eq "$(json_events "$T/log.json" retry tid delay_ms |
			awk -v t="$tid" '$1 == t { printf "%s ", $2 }')" "$expected$expected" \
			"delays of thread $tid" || return
	done
}
