#!/usr/bin/env bats
# With a seed, the library waits exactly the delays that backoff-schedule prints.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	[[ -x $SCHEDULE ]] || fail "$SCHEDULE is missing: run make first"
}

# check_schedule JITTER: five retries against a closed port log the delays of
# the schedule, each within the schedule's bounds.
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
