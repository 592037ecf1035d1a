#!/usr/bin/env bats
# Every wait primitive a non-blocking client can use, and both moments of an
# epoll registration (before and after connect()), against a server 1 s late.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CAP_MS=300

setup() {
	require_build
	[[ -x $HELPERS/evloop ]] || fail "$HELPERS/evloop is missing: run make first"
	LATE_ENV=(LD_PRELOAD="$LIB" BACKOFF_BASE=50ms BACKOFF_CAP="${CAP_MS}ms"
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# check_late LABEL DETECTION: the server listened 1 s late, accepted once
# within the cap of it, and the log shows the retries and the success.
check_late() {
	local listening accepted
	listening=$(listener_mono server listening)
	accepted=$(listener_mono server accepted)
	[[ -n $listening && -n $accepted ]] || fail "the server never accepted" || return
	assert_between "$accepted" "$listening" "$((listening + CAP_MS + 500))" "accept time" || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED "$listening" \
		"$CAP_MS" || return
	assert_retries_on_time "$T/log.json" || return
	record_matrix "$1" "$2"
}

# assert_retries_on_time LOG: each retry was made when it was due (the wait
# clamped to it), not up to a second late: the outcome of attempt N+1 (its
# failure, or the success) is logged within 500 ms of the failure of attempt
# N plus its wait (a loaded machine under make sanitize takes a few hundred).
assert_retries_on_time() {
	local prev_mono="" prev_wait="" mono wait late worst=0
	while read -r mono wait; do
		if [[ -n $prev_mono ]]; then
			late=$((mono - prev_mono - prev_wait))
			((late > worst)) && worst=$late
		fi
		prev_mono=$mono prev_wait=$wait
	done < <({
		json_events "$1" retry mono_ms wait_ms
		json_events "$1" success mono_ms wait_ms
	} | sort -n)
	assert_between "$worst" 0 500 "latest retry after its due time (ms)"
}

# late_probe MODE: the probe in MODE (the socket added to epoll after
# connect(), as asyncio and node do) gets the data from a server 1 s late.
late_probe() {
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "$HELPERS/probe" --mode "$1" --read \
		"127.0.0.1:$PORT"
	assert_eq "$status" 0 "probe status (stderr: $stderr)"
	assert_eq "$output" "OK hello" "probe output"
	local detection="$1 + SO_ERROR"
	[[ $1 != epoll* ]] || detection="$1 (added after connect) + SO_ERROR"
	check_late "C probe --mode $1" "$detection"
}

# late_evloop WAIT REGISTER DETECT DETECTION: the event-loop helper likewise.
late_evloop() {
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "$HELPERS/evloop" --wait "$1" \
		--register "$2" --detect "$3" "127.0.0.1:$PORT"
	assert_eq "$status" 0 "evloop status (stderr: $stderr)"
	assert_eq "$output" "thread 0 OK hello" "evloop output"
	check_late "C evloop --wait $1 --register $2 --detect $3" "$4"
}

@test "the probe waiting in poll connects to a server 1 s late" {
	late_probe poll
}

@test "the probe waiting in ppoll connects to a server 1 s late" {
	late_probe ppoll
}

@test "the probe waiting in select connects to a server 1 s late" {
	late_probe select
}

@test "the probe waiting in pselect connects to a server 1 s late" {
	late_probe pselect
}

@test "the probe waiting in level-triggered epoll, added after connect, connects to a server 1 s late" {
	late_probe epoll-lt
}

@test "the probe waiting in edge-triggered epoll, added after connect, connects to a server 1 s late" {
	late_probe epoll-et
}

@test "a level-triggered epoll loop with the socket added before connect connects to a server 1 s late" {
	late_evloop epoll-lt before sockopt "epoll LT (added before connect) + SO_ERROR"
}

@test "an edge-triggered epoll loop with the socket added before connect connects to a server 1 s late" {
	late_evloop epoll-et before sockopt "epoll ET (added before connect) + SO_ERROR"
}

@test "a poll loop that checks with a second connect connects to a server 1 s late" {
	late_evloop poll after connect "poll + second connect()"
}

@test "an edge-triggered epoll loop that checks with a second connect connects to a server 1 s late" {
	late_evloop epoll-et before connect "epoll ET (added before connect) + second connect()"
}

@test "in every wait mode the program's own 1 s timeout ends the wait on time while retries go on" {
	closed_port server
	local mode modes=(poll ppoll select pselect epoll-lt epoll-et)
	for mode in "${modes[@]}"; do
		start_bg "probe-$mode" timeout 20 env LD_PRELOAD="$LIB" BACKOFF_BASE=50ms \
			BACKOFF_CAP=300ms BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
			BACKOFF_LOG_FILE="$T/$mode.json" "$HELPERS/probe" --mode "$mode" --timeout 1000 \
			--elapsed "127.0.0.1:$PORT"
	done
	for mode in "${modes[@]}"; do
		wait "$(<"$T/probe-$mode.pid")" || true
		assert_eq "$(<"$T/probe-$mode.out")" ETIMEDOUT "probe --mode $mode output"
		local elapsed
		elapsed=$(sed -n 's/^elapsed_ms=\([0-9]*\) .*/\1/p' "$T/probe-$mode.err")
		# Never early; late by no more than scheduling on a busy machine.
		assert_between "$elapsed" 1000 1150 "probe --mode $mode wait in ms"
		assert_between "$(json_events "$T/$mode.json" retry | wc -l)" 3 1000 \
			"probe --mode $mode retry events"
		assert_eq "$(json_events "$T/$mode.json" giveup)" "" "probe --mode $mode give-up events"
	done
}
