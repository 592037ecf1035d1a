#!/usr/bin/env bats
# An empty answer is an answer: a server that closes a connection without a
# byte on purpose (an empty FTP listing, a server that accepts once) must not
# turn into an error after the budget, nor into a hang.  A connection the
# library makes again after an early close has one attempt's time to answer;
# a listener that is gone, or refuses it, served its one connection; and when
# the library gives up, the program's read gets the end the first connection
# met, never an errno of the library's own connections.  A local listener that
# leaves the new connection in its queue for 100 ms served its one connection
# too.  Every close here is taken for a refusal (BACKOFF_EARLY_CLOSE=refusal),
# so that the new connection's rules are met; by default an ordinary port's
# close with nothing sent is the server's answer (94-early-close-answer.bats).
# shellcheck disable=SC2154 # status, output, stderr, lines: set by bats run

load helper

# The servers: start_front (helper.bash), whose first connection is ended
# before a byte, then keeps listening without accepting (keep), accepts and
# says nothing (silent), or stops listening and exits (exit).

setup() {
	require_build
	LOGGED=(BACKOFF_SHARED="$T/state" BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json
		BACKOFF_LOG_FILE="$T/log.json" BACKOFF_EARLY_CLOSE=refusal)
}

# A python client: connects, waits for the socket to be readable (select on a
# blocking socket; select, poll or epoll on a non-blocking one; pollout: select,
# after one wait to be writable once a read found nothing, as an event loop that
# also writes), reads, and prints what it read or the error, then the
# milliseconds since it connected.
CLIENT='
import select, socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
t = time.monotonic()
if mode != "blocking":
    s.setblocking(False)
nothing = False
while True:
    if mode == "pollout" and nothing:
        select.select([], [s], [], 60)
        nothing = False
    if mode == "poll":
        p = select.poll()
        p.register(s, select.POLLIN)
        p.poll(60000)
    elif mode == "epoll":
        e = select.epoll()
        e.register(s, select.EPOLLIN)
        e.poll(60)
        e.close()
    else:
        select.select([s], [], [], 60)
    try:
        out = repr(s.recv(1))
        break
    except BlockingIOError:
        nothing = True
        continue
    except OSError as e:
        out = type(e).__name__
        break
print(out, int((time.monotonic() - t) * 1000))
'

# The upper bound of a window in ms: the window itself, looser under the
# sanitizers' runtime (make sanitize), whose start-up and calls are slower.
within() {
	if [[ -n ${TEST_PRELOAD_FIRST:-} ]]; then
		echo $(($1 + 1000))
	else
		echo "$1"
	fi
}

@test "a server that accepts once and keeps listening: nc -d and a python client get their end of file once the new connection sat 100 ms in the listener's queue, as without the library" {
	require_command nc
	local start elapsed mode
	start_front plain fin 1 keep
	start=$(now_ms)
	run --separate-stderr timeout 20 nc -d 127.0.0.1 "$PORT"
	assert_eq "$status/$output" "0/" "without the library: $stderr"
	assert_between "$(($(now_ms) - start))" 0 "$(within 1000)" "ms without the library"
	start_front lib fin 1 keep
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" nc -d 127.0.0.1 "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/" "with the library: $stderr"
	assert_between "$elapsed" 100 "$(within 900)" "ms with the library"
	assert_eq "$(json_events "$T/log.json" early-end reason)" "unaccepted" "the new connection's end"
	for mode in blocking select epoll; do
		rm -f "$T/log.json" "$T/state"
		start_front "py-$mode" fin 1 keep
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
			"$PYTHON" -c "$CLIENT" "$PORT" "$mode"
		assert_match "$output" "^b'' [0-9]+$" "$mode: $stderr"
		assert_between "${output#* }" 100 "$(within 900)" "ms ($mode)"
		assert_eq "$(json_events "$T/log.json" early-end reason)" "unaccepted" \
			"the new connection's end ($mode)"
	done
}

@test "a server that accepts once, then accepts and says nothing: nc -d gets its end of file within the attempt's time, as without the library, preloaded and under the launcher" {
	require_command nc
	local start elapsed
	start_front plain fin 1 silent
	start=$(now_ms)
	run --separate-stderr timeout 20 nc -d 127.0.0.1 "$PORT"
	assert_eq "$status/$output" "0/" "without the library: $stderr"
	assert_between "$(($(now_ms) - start))" 0 "$(within 1000)" "ms without the library"
	start_front lib fin 1 silent
	start=$(now_ms)
	run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_ATTEMPT_TIMEOUT=1s \
		nc -d 127.0.0.1 "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/" "with the library: $stderr"
	assert_between "$elapsed" 1000 "$(within 1300)" "ms with the library (one attempt's time)"
	assert_eq "$(json_events "$T/log.json" early-end reason)" "silent" "the new connection's end"
	rm -f "$T/log.json"
	start_front launched fin 1 silent
	start=$(now_ms)
	run --separate-stderr timeout 20 env "${LOGGED[@]}" "$LAUNCHER" --attempt-timeout 1s -- \
		nc -d 127.0.0.1 "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/" "under the launcher: $stderr"
	assert_between "$elapsed" 1000 "$(within 1300)" "ms under the launcher"
	assert_eq "$(json_events "$T/log.json" early-end reason)" "silent" "the new connection's end"
}

@test "the default attempt time (5 s) bounds the wait for a silent new connection: nc -d" {
	require_command nc
	local start elapsed
	start_front front fin 1 silent
	start=$(now_ms)
	run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${LOGGED[@]}" nc -d 127.0.0.1 "$PORT"
	elapsed=$(($(now_ms) - start))
	assert_eq "$status/$output" "0/" "with the library: $stderr"
	assert_between "$elapsed" 5000 "$(within 5400)" "ms"
}

@test "a server that accepts once, then accepts and says nothing: a python select + recv client gets b'' within the attempt's time, blocking and non-blocking (select, poll, epoll, a wait to write), preloaded and under the launcher" {
	local mode how
	for mode in blocking select poll epoll pollout; do
		start_front "plain-$mode" fin 1 silent
		run --separate-stderr timeout 20 "$PYTHON" -c "$CLIENT" "$PORT" "$mode"
		assert_match "$output" "^b'' [0-9]+$" "without the library ($mode): $stderr"
		for how in preload launcher; do
			start_front "$how-$mode" fin 1 silent
			if [[ $how == preload ]]; then
				run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
					BACKOFF_ATTEMPT_TIMEOUT=1s "$PYTHON" -c "$CLIENT" "$PORT" "$mode"
			else
				run --separate-stderr timeout 20 env "${LOGGED[@]}" "$LAUNCHER" \
					--attempt-timeout 1s -- "$PYTHON" -c "$CLIENT" "$PORT" "$mode"
			fi
			assert_match "$output" "^b'' [0-9]+$" "$how, $mode: $stderr"
			assert_between "${output#* }" 900 "$(within 1300)" "ms ($how, $mode)"
			assert_eq "$(json_events "$T/log.json" early-end reason)" "silent" \
				"the new connection's end ($how, $mode)"
			rm -f "$T/log.json" "$T/state"
		done
	done
}

@test "a signal during the wait for a silent new connection: its handler runs at once, and the read gets the end it met" {
	start_front front fin 1 silent
	run --separate-stderr client alarmed timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_BASE=1ms
	local got handler total
	read -r got handler total <<<"$output"
	assert_eq "$got" "b''" "what the read returned: $stderr"
	assert_between "$handler" 250 "$(within 800)" "ms until the handler ran (the attempt's time is 5 s)"
	assert_between "$total" 250 "$(within 1000)" "ms until the read returned"
	assert_eq "$(json_events "$T/log.json" early-end errno reason)" "EINTR failed" "the new connection's end"
}

@test "a server that accepts once and exits: the read returns 0 at once, blocking and non-blocking, as without the library" {
	local mode
	for mode in blocking select poll epoll; do
		start_front "plain-$mode" fin 1 exit
		run --separate-stderr timeout 20 "$PYTHON" -c "$CLIENT" "$PORT" "$mode"
		assert_match "$output" "^b'' [0-9]+$" "without the library ($mode): $stderr"
		start_front "lib-$mode" fin 1 exit
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
			"$PYTHON" -c "$CLIENT" "$PORT" "$mode"
		assert_match "$output" "^b'' [0-9]+$" "with the library ($mode): $stderr"
		assert_between "${output#* }" 0 "$(within 150)" "ms ($mode)"
		assert_eq "$(json_events "$T/log.json" early-end errno reason)" "None gone" \
			"the end, seen before any new connection ($mode)"
		assert_eq "$(wc -l <"$T/lib-$mode.out")" 1 "connections ($mode)"
		rm -f "$T/log.json" "$T/state"
	done
}

@test "a listener that refuses the new connection served its one connection: the end at once, not ECONNREFUSED after the budget" {
	# With the kernel's listener tables out of reach (BACKOFF_LOCAL_PROBE=off), the
	# new connection is made, refused, and the program still gets its end of file.
	local mode
	for mode in blocking select; do
		start_front "lib-$mode" fin 1 exit
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
			BACKOFF_LOCAL_PROBE=off BACKOFF_BASE=50ms BACKOFF_TIMEOUT=5s \
			"$PYTHON" -c "$CLIENT" "$PORT" "$mode"
		assert_match "$output" "^b'' [0-9]+$" "with the library ($mode): $stderr"
		assert_between "${output#* }" 0 "$(within 500)" "ms ($mode)"
		assert_eq "$(json_events "$T/log.json" early-end errno reason)" "ECONNREFUSED gone" \
			"the new connection's end ($mode)"
		assert_eq "$(json_events "$T/log.json" retry)" "" "no refusal retried ($mode)"
		rm -f "$T/log.json" "$T/state"
	done
}

@test "a give-up after early closes leaves the program the end the first connection met: a reset stays a reset" {
	# The first connection is reset, every later one ended with a FIN: the
	# program's read is the reset's, as without the library.
	start_front plain rst1 -1
	run --separate-stderr timeout 20 "$PYTHON" -c "$CLIENT" "$PORT" blocking
	assert_match "$output" "^ConnectionResetError [0-9]+$" "without the library: $stderr"
	local mode
	for mode in blocking select; do
		start_front "lib-$mode" rst1 -1
		run --separate-stderr timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" BACKOFF_RETRIES=2 \
			BACKOFF_BASE=20ms "$PYTHON" -c "$CLIENT" "$PORT" "$mode"
		assert_match "$output" "^ConnectionResetError [0-9]+$" "with the library ($mode): $stderr"
		assert_eq "$(json_events "$T/log.json" early attempt reason | tr '\n' ' ')" \
			"1 reconnect 2 reconnect 3 retries " "the early closes ($mode)"
		rm -f "$T/log.json" "$T/state"
	done
}

@test "BACKOFF_REPLAY=on: a replayed request whose new connection stays silent gets the end it met within the attempt's time" {
	local start elapsed
	start_front front read 1 silent
	start=$(now_ms)
	run --separate-stderr client sends timeout 20 env LD_PRELOAD="$LIB" "${LOGGED[@]}" \
		BACKOFF_REPLAY=on BACKOFF_ATTEMPT_TIMEOUT=1s
	elapsed=$(($(now_ms) - start))
	assert_eq "$output" "b''" "the client's end of file: $stderr"
	assert_between "$elapsed" 900 "$(within 1500)" "ms"
	assert_eq "$(json_events "$T/log.json" early attempt reason)" "1 replay" "the early close"
	assert_eq "$(json_events "$T/log.json" early-end reason)" "silent" "the replay's end"
}

# --- FTP: an empty listing is a data connection closed without a byte ---

# ftp_alike WHAT COMMAND...: COMMAND without and with the library (logged) exits
# with the same status and output, within 100 ms of its time without it: the
# best of three runs each (curl and vsftpd alone sometimes take 200 ms more,
# with the library or without: delayed acknowledgements).
ftp_alike() {
	local what=$1 start ms plain_ms=999999 lib_ms=999999 plain_status plain_output
	shift
	for _ in 1 2 3; do
		start=$(now_ms)
		run --separate-stderr timeout 30 "$@"
		ms=$(($(now_ms) - start))
		((ms < plain_ms)) && plain_ms=$ms
		plain_status=$status plain_output=$output
	done
	for _ in 1 2 3; do
		start=$(now_ms)
		run --separate-stderr timeout 30 env LD_PRELOAD="$LIB" "${LOGGED[@]}" "$@"
		ms=$(($(now_ms) - start))
		((ms < lib_ms)) && lib_ms=$ms
		assert_eq "$status" "$plain_status" "$what: the status ($stderr)"
		assert_eq "$output" "$plain_output" "$what: the output"
	done
	assert_between "$lib_ms" 0 "$(within $((plain_ms + 100)))" "$what: ms (${plain_ms} ms without)"
}

@test "curl lists an empty FTP directory and downloads an empty file, passive and active: as without the library" {
	require_command curl
	# The default: a data connection's close before a byte is its answer.
	LOGGED=("${LOGGED[@]/BACKOFF_EARLY_CLOSE=refusal/BACKOFF_EARLY_CLOSE=auto}")
	start_vsftpd
	local url="ftp://127.0.0.1:$FTP_PORT"
	ftp_alike "passive list" curl -sS "$url/empty/"
	assert_eq "$status/$output" "0/" "passive list"
	ftp_alike "active list" curl -sS -P 127.0.0.1 "$url/empty/"
	assert_eq "$status/$output" "0/" "active list"
	ftp_alike "passive empty file" curl -sS "$url/empty.txt"
	assert_eq "$status/$output" "0/" "passive empty file"
	ftp_alike "active empty file" curl -sS -P 127.0.0.1 "$url/empty.txt"
	assert_eq "$status/$output" "0/" "active empty file"
	ftp_alike "passive file" curl -sS "$url/hello.txt"
	assert_eq "$status/$output" "0/hello" "passive file"
	# Each empty passive transfer met its end of file: none was an error.
	assert_eq "$(json_events "$T/log.json" giveup)" "" "give-ups"
}

@test "python ftplib lists an empty FTP directory (MLSD and NLST): as without the library" {
	LOGGED=("${LOGGED[@]/BACKOFF_EARLY_CLOSE=refusal/BACKOFF_EARLY_CLOSE=auto}")
	start_vsftpd
	ftp_alike "ftplib" "$PYTHON" -c '
import ftplib, sys
f = ftplib.FTP()
f.connect("127.0.0.1", int(sys.argv[1]), timeout=20)
f.login()
print("nlst", f.nlst("empty"))
try:
    print("mlsd", list(f.mlsd("empty")))
except ftplib.error_perm as e:
    print("mlsd", str(e)[:3])
f.quit()
' "$FTP_PORT"
	assert_eq "$status" 0 "ftplib: $stderr"
	assert_match "${lines[0]}" "^nlst \\[\\]$" "the empty listing"
}
