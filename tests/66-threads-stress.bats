#!/usr/bin/env bats
# Many threads connecting to late servers at once, blocking and in poll and epoll loops.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
	[[ -x $HELPERS/stress ]] || fail "$HELPERS/stress is missing: run make first"
}

# The full-size run (64 threads x 50) is make tsan, under ThreadSanitizer.
@test "16 threads x 20 connects to late servers all succeed, and each request is answered" {
	run --separate-stderr timeout 120 env LD_PRELOAD="$LIB" BACKOFF_BASE=5ms BACKOFF_CAP=50ms \
		BACKOFF_TIMEOUT=30s BACKOFF_STATS=1 \
		"$HELPERS/stress" --threads 16 --connects 20 --watchdog 100
	assert_eq "$status" 0 "status (stderr: ${stderr:0:2000})"
	assert_match "$output" ' ok=320 failed=0 replies=320 ' "counts"
	assert_match "$stderr" 'stats: calls=[0-9]+ retries=[0-9]+ giveups=0 ' "library's counts"
}
