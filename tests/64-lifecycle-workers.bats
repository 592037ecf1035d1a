#!/usr/bin/env bats
# A process forking 50 workers that all connect to a late server: each draws its own jitter.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

@test "50 workers forked after their parent drew all connect to a server 1 s late, with delays of their own" {
	closed_port refusing
	local refusing=$PORT
	# 1 s: the parent's own connect (100 ms) and 50 forks (over 200 ms under the
	# sanitizers) come before it listens, so every worker's first attempt is refused.
	start_listener server 1000 --count 50
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" BACKOFF_BASE=1s BACKOFF_LOG=info \
		BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json" \
		"$HELPERS/probe" --first "127.0.0.1:$refusing" --fork 50 "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)"
	assert_eq "$(grep -c '^OK$' <<<"$output")" 50 "workers that connected"
	assert_eq "$(json_events "$T/log.json" success pid | sort -u | wc -l)" 50 \
		"workers that succeeded after retrying"
	# Full jitter over a 1 s window: 50 workers going on with their parent's
	# sequence (a generator not reseeded after fork; the parent drew a delay
	# for its own connect, probe --first, before forking) would all wait the
	# same.  Independent draws from 0..1000 ms repeat a value a couple of
	# times at most.
	local first distinct parent
	parent=$(json_events "$T/log.json" retry pid target | awk -v t="127.0.0.1:$refusing" '$2 == t { print $1 }' | sort -u)
	assert_eq "$(count_lines "$parent")" 1 "processes that retried the parent's own connect" || return
	first=$(json_events "$T/log.json" retry pid attempt delay_ms |
		awk -v p="$parent" '$1 != p && $2 == 1 { print $3 }')
	assert_eq "$(count_lines "$first")" 50 "first delays"
	distinct=$(sort -u <<<"$first" | wc -l)
	((distinct >= 40)) || fail "only $distinct distinct first delays among 50 workers: $first"
}
