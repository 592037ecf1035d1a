#!/usr/bin/env bats
# What an operator sees: honest stats when the program's own timeout ends a
# call, a word when local listeners cannot be looked for, and one line when a
# wait gets long.
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

setup() {
	require_build
}

@test "a call the program's own timeout ends counts as a give-up, and only the wait made counts" {
	require_command curl
	closed_port server
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_STATS=1 BACKOFF_CAP=3s \
		BACKOFF_SHARED=off curl -sS --connect-timeout 2 "http://127.0.0.1:$PORT/"
	assert_eq "$status" 28 "curl's status (its own timeout)"
	assert_match "$stderr" "stats: calls=1 retries=[0-9]+ giveups=1 waited_ms=[0-9]+" "the stats line"
	local waited
	waited=$(sed -n 's/.* waited_ms=\([0-9]*\).*/\1/p' <<<"$stderr")
	# curl waited 2 s in all: the planned waits it never made are not counted.
	assert_between "$waited" 1000 2050 "waited_ms"
}

@test "without AF_NETLINK (systemd's RestrictAddressFamilies) the prober says once that it cannot look, and the client still connects" {
	start_listener srv 1200 --count 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_LOG=info BACKOFF_CAP=500ms \
		BACKOFF_SHARED="$T/state" "$HELPERS/deny-syscall" netlink-socket -- \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "the outcome"
	assert_eq "$(grep -c 'cannot look for local listeners' <<<"$stderr")" 1 "lines saying so"
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_CAP=500ms \
		BACKOFF_SHARED="$T/state2" "$HELPERS/deny-syscall" netlink-socket -- \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$(grep -c 'cannot look' <<<"$stderr")" 0 "nothing of it at the default level: $stderr"
}

# probe_closed_port [VAR=VALUE...]: nc -z under the launcher, in the background,
# against a closed port; its stderr in $T/err, its status in $T/err.status once
# it ended; sets START (ms).
probe_closed_port() {
	closed_port closed
	START=$(now_ms)
	# shellcheck disable=SC2016 # expanded by that shell
	start_bg probe sh -c '"$@" 2>"$0"; echo "$?" >"$0.status"' "$T/err" \
		env "$@" "$LAUNCHER" --timeout 8s -- nc -z 127.0.0.1 "$PORT"
}

@test "a long wait is not silent: nc -z to a closed port says once what it waits for, within 5.5 s, at the default log level; nothing at BACKOFF_LOG=error" {
	require_command nc
	local said
	probe_closed_port
	wait_for_line "$T/err" "waiting|still retrying" 10 || return
	said=$(($(now_ms) - START))
	assert_between "$said" 0 5500 "ms before the line"
	wait_for_file "$T/err.status" 20 || return
	assert_eq "$(cat "$T/err.status")" 1 "nc's status"
	assert_eq "$(grep -c . "$T/err")" 2 "lines in all: the wait, then the give-up ($(cat "$T/err"))"
	assert_match "$(head -n 1 "$T/err")" \
		"^backoff\\[[0-9]+\\]: connect 127\\.0\\.0\\.1:$PORT: ECONNREFUSED for [0-9]+ms \\([0-9]+ attempts?\\), still retrying for up to [0-9]+ms more \\(BACKOFF_TIMEOUT\\); BACKOFF_LOG=info shows each retry\$" \
		"the line"
	assert_match "$(tail -n 1 "$T/err")" "giving up after" "the give-up"
	stop_bg_all
	rm -f "$T/err" "$T/err.status"
	probe_closed_port BACKOFF_LOG=error
	wait_for_file "$T/err.status" 20 || return
	assert_eq "$(cat "$T/err")" "" "nothing at BACKOFF_LOG=error"
}

@test "a wait cut short says why: a local server that listens 1 s into a planned 3 s wait" {
	start_listener srv 1000 --count 1
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" BACKOFF_SHARED="$T/state" \
		BACKOFF_BASE=3s BACKOFF_JITTER=none BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" "OK" "the outcome: $stderr"
	assert_eq "$(json_events "$T/log.json" retry wait_ms)" 3000 "the planned wait"
	local woke
	woke=$(json_events "$T/log.json" woke reason wait_ms)
	assert_match "$woke" "^news [0-9]+$" "the wait cut short, and why"
	assert_between "${woke#* }" 1000 3000 "ms not waited"
	assert_eq "$(json_events "$T/log.json" success attempt)" 2 "the success"
}

@test "an event loop's wait cut short says why, and waited_ms is the time waited: nc -z to a server that listens 1 s into a planned 3 s wait" {
	require_command nc
	start_listener srv 1000 --count 1
	local t0 t1 woke waited
	t0=$(now_ms)
	run --separate-stderr timeout 20 env BACKOFF_SHARED="$T/state" BACKOFF_BASE=3s \
		BACKOFF_JITTER=none BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json \
		BACKOFF_LOG_FILE="$T/log.json" BACKOFF_STATS=on "$LAUNCHER" -- nc -z 127.0.0.1 "$PORT"
	t1=$(now_ms)
	assert_eq "$status" 0 "nc's status: $stderr"
	assert_eq "$(json_events "$T/log.json" retry wait_ms)" 3000 "the planned wait"
	woke=$(json_events "$T/log.json" woke reason wait_ms)
	assert_match "$woke" "^news [0-9]+$" "the wait cut short, and why"
	assert_between "${woke#* }" 1000 3000 "ms not waited"
	waited=$(json_events "$T/log.json" stats waited_ms)
	# The one wait, from the first attempt to the listen: at most the whole run's time.
	assert_between "$waited" 500 "$((t1 - t0))" "waited_ms (the run took $((t1 - t0)) ms)"
}

@test "a socket absent on purpose waits the budget too: gdbus without a system bus (a container's) gets its error after it, at once once excluded as README's pitfall says" {
	require_program gdbus libglib2.0-bin
	local start elapsed plain
	local introspect=(gdbus introspect --system --dest org.freedesktop.DBus --object-path /)
	local lib=(env LD_PRELOAD="$LIB" BACKOFF_TIMEOUT=2s BACKOFF_LOG=error BACKOFF_SHARED=off)
	mkdir "$T/dbus"
	export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/dbus/system_bus_socket"
	run --separate-stderr timeout 20 "${introspect[@]}"
	assert_eq "$status" 1 "gdbus without the library: $stderr"
	assert_match "$stderr" "No such file or directory" "its error"
	plain=$stderr
	start=$(now_ms)
	run --separate-stderr timeout 20 "${lib[@]}" "${introspect[@]}"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status $stderr" "1 $plain" "gdbus under the library"
	assert_between "$elapsed" 1900 10000 "ms, the budget waited"
	start=$(now_ms)
	run --separate-stderr timeout 20 "${lib[@]}" BACKOFF_TARGETS='!unix:*/dbus/system_bus_socket' \
		"${introspect[@]}"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status $stderr" "1 $plain" "gdbus with the bus excluded"
	assert_between "$elapsed" 0 1500 "ms with the bus excluded"
}
