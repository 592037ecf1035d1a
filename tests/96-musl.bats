#!/usr/bin/env bats
# The musl build (make musl): a client linked against musl, started before its server,
# connects on retry, blocking and in its event loop, and gives up as it would alone; the
# launcher preloads the build of the command's own C library.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CAP_MS=300

setup() {
	# The musl build is no sanitizer build: make sanitize runs the glibc one alone.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	require_program musl-gcc musl-tools
	require_build
	MUSL=$BUILD/musl
	MUSL_LIB=$MUSL/libbackoff.so
	MUSL_PROBE=$MUSL/helpers/probe
	local f
	for f in "$MUSL_LIB" "$MUSL/backoff-schedule" "$MUSL/backoff-supervise" "$MUSL_PROBE"; do
		[[ -e $f ]] || fail "$f is missing: run make musl" || return
	done
	LATE_ENV=(LD_PRELOAD="$MUSL_LIB" BACKOFF_BASE=50ms BACKOFF_CAP="${CAP_MS}ms"
		BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json BACKOFF_LOG_FILE="$T/log.json")
}

# interpreter FILE: the ELF interpreter FILE names, or nothing.
interpreter() {
	readelf -l "$1" | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p'
}

@test "make musl links the library, the tool and the supervisor against musl" {
	assert_match "$(interpreter "$MUSL/backoff-schedule")" '^/lib/ld-musl-[^/]+\.so\.1$' \
		"backoff-schedule's interpreter" || return
	# The supervisor is static (a preload's exec hook runs it with the program's LD_PRELOAD):
	# no interpreter, and musl's start-up code (__init_libc), which glibc does not have.
	assert_eq "$(interpreter "$MUSL/backoff-supervise")" "" "backoff-supervise's interpreter" ||
		return
	nm "$MUSL/backoff-supervise" | grep -q ' __init_libc$' ||
		fail "the musl supervisor lacks musl's start-up code" || return
	assert_match "$(interpreter "$MUSL_PROBE")" '^/lib/ld-musl-[^/]+\.so\.1$' \
		"the musl probe's interpreter (dynamic: the preload must reach it)" || return
	# musl's libc.so, not glibc's libc.so.6; and the same hooks as the glibc build.
	assert_eq "$(readelf -d "$MUSL_LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')" libc.so \
		"the library's NEEDED" || return
	assert_eq "$(nm -D --defined-only "$MUSL_LIB" | awk '$2 == "T" { print $3 }' | sort)" \
		"$(nm -D --defined-only "$BUILD/libbackoff.so" | awk '$2 == "T" { print $3 }' |
			sed 's/@.*//' | sort)" "exported hooks of the musl and glibc builds"
}

@test "a musl client started before its server connects on retry, blocking" {
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "$MUSL_PROBE" --read "127.0.0.1:$PORT"
	assert_eq "$status" 0 "probe status (stderr: $stderr)" || return
	assert_eq "$output" "OK hello" "probe output" || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
}

@test "a musl client connects on retry to a unix socket created late" {
	start_bg server "$HELPERS/late-listener" --unix "$T/s.sock" --after 1000 --send hello
	run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "$MUSL_PROBE" --read "unix:$T/s.sock"
	assert_eq "$status" 0 "probe status (stderr: $stderr)" || return
	assert_eq "$output" "OK hello" "probe output" || return
	assert_retried_then_connected "$T/log.json" "unix:$T/s.sock" ENOENT \
		"$(listener_mono server listening)" "$CAP_MS"
}

@test "a musl client connects on retry in its event loop: poll, select, epoll" {
	local mode
	for mode in poll ppoll select pselect epoll-lt epoll-et; do
		rm -f "$T/log.json"
		stop_bg_all
		start_listener "server-$mode" 1000 --send hello
		run --separate-stderr timeout 20 env "${LATE_ENV[@]}" "$MUSL_PROBE" --mode "$mode" \
			--timeout 10000 --read "127.0.0.1:$PORT"
		assert_eq "$status" 0 "probe --mode $mode status (stderr: $stderr)" || return
		assert_eq "$output" "OK hello" "probe --mode $mode output" || return
		assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
			"$(listener_mono "server-$mode" listening)" "$CAP_MS" || return
	done
}

@test "a musl client gives up with the kernel's ECONNREFUSED when its retries run out" {
	local mode giveups
	closed_port server
	for mode in blocking poll epoll-lt; do
		run --separate-stderr timeout 20 env LD_PRELOAD="$MUSL_LIB" BACKOFF_RETRIES=2 \
			BACKOFF_BASE=20ms "$MUSL_PROBE" --mode "$mode" "127.0.0.1:$PORT"
		assert_eq "$status" 1 "probe --mode $mode status (stderr: $stderr)" || return
		assert_eq "$output" ECONNREFUSED "probe --mode $mode output" || return
		giveups=$(grep -cF "connect 127.0.0.1:$PORT: giving up after 3 attempts" <<<"$stderr")
		assert_eq "$giveups" 1 "give-up lines, --mode $mode (stderr: $stderr)" || return
	done
}

@test "the launcher preloads the musl build into a musl client, under either engine" {
	local engine
	for engine in auto preload supervise; do
		rm -f "$T/log.json"
		stop_bg_all
		start_listener "server-$engine" 1000 --send hello
		run --separate-stderr timeout 20 "$LAUNCHER" -vv --engine "$engine" --base 50ms \
			--cap "${CAP_MS}ms" --json --log-file "$T/log.json" -- \
			"$MUSL_PROBE" --read "127.0.0.1:$PORT"
		assert_eq "$status" 0 "status, --engine $engine (stderr: $stderr)" || return
		assert_eq "$output" "OK hello" "output, --engine $engine" || return
		assert_eq "$stderr" "backoff: $MUSL_PROBE is linked against musl: preloading $MUSL_LIB" \
			"the launcher's line, --engine $engine" || return
		assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
			"$(listener_mono "server-$engine" listening)" "$CAP_MS" || return
	done
}

@test "a musl client started by a glibc program under the launcher connects on retry" {
	# sh is glibc's: its preload cannot be loaded into the musl client, which it runs
	# through the supervisor with the musl build preloaded in place of its own.
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 "$LAUNCHER" --base 50ms --cap "${CAP_MS}ms" --log info \
		--json --log-file "$T/log.json" -- sh -c "$MUSL_PROBE --read 127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)" || return
	assert_eq "$output" "OK hello" "output" || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
}

@test "the launcher given the musl build preloads the glibc build into a glibc client" {
	start_listener server 1000 --send hello
	run --separate-stderr timeout 20 env BACKOFF_LIBRARY="$MUSL_LIB" "$LAUNCHER" -vv \
		--base 50ms --cap "${CAP_MS}ms" --json --log-file "$T/log.json" -- \
		"$HELPERS/probe" --read "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)" || return
	assert_eq "$output" "OK hello" "output" || return
	assert_eq "$stderr" "backoff: $HELPERS/probe is linked against glibc: preloading $BUILD/libbackoff.so" \
		"the launcher's line" || return
	assert_retried_then_connected "$T/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
}

@test "the launcher follows a script's #! to its interpreter's C library" {
	printf '#!%s\nexit 0\n' "$MUSL_PROBE" >"$T/script"
	chmod +x "$T/script"
	run --separate-stderr timeout 20 "$LAUNCHER" --print-env
	assert_eq "$status" 0 "--print-env status" || return
	# Nothing to run: the system shell's C library (glibc here), the build found.
	assert_eq "$(head -1 <<<"$output")" "export LD_PRELOAD='$BUILD/libbackoff.so'" "--print-env" ||
		return
	run --separate-stderr timeout 20 "$LAUNCHER" -vv --engine preload -- "$T/script"
	assert_match "$stderr" "^backoff: $T/script is linked against musl: preloading $MUSL_LIB" \
		"the launcher's line for a script run by a musl program"
}

@test "a launcher with no musl build next to its library refuses a musl client, saying why" {
	mkdir "$T/glibc-only"
	cp "$BUILD/libbackoff.so" "$BUILD/backoff-schedule" "$BUILD/backoff-supervise" "$T/glibc-only/"
	run --separate-stderr timeout 20 env BACKOFF_LIBRARY="$T/glibc-only/libbackoff.so" \
		"$LAUNCHER" -- "$MUSL_PROBE" 127.0.0.1:1
	assert_eq "$status" 2 "status (stderr: $stderr)" || return
	assert_eq "$stderr" "backoff: $MUSL_PROBE is linked against musl, $T/glibc-only/libbackoff.so against glibc: no musl build next to it (make musl)" \
		"the launcher's message"
}

@test "make install puts the musl build in musl/ next to the glibc build" {
	[[ -z ${TEST_BUILD_DIR:-} ]] || skip "the installed copy is the default build's"
	run make -s -C "$ROOT" install DESTDIR="$T/stage" PREFIX=/usr
	assert_eq "$status" 0 "make install status (output: $output)" || return
	local f
	for f in libbackoff.so backoff-schedule backoff-supervise musl/libbackoff.so \
		musl/backoff-schedule musl/backoff-supervise; do
		[[ -x $T/stage/usr/lib/libbackoff/$f ]] || fail "$f not installed" || return
	done
	# Installed stripped: the build's own, stripped.
	strip -o "$T/musl-stripped.so" "$MUSL_LIB"
	cmp "$T/musl-stripped.so" "$T/stage/usr/lib/libbackoff/musl/libbackoff.so" ||
		fail "the installed musl library differs from build/musl's, stripped"
	[[ $(stat -c %s "$T/stage/usr/lib/libbackoff/musl/libbackoff.so") -lt $(stat -c %s "$MUSL_LIB") ]] ||
		fail "the installed musl library is not stripped"
}

@test "in a root without glibc (an Alpine image), ENTRYPOINT [\"backoff\", \"--\"] runs a musl client" {
	[[ -z ${TEST_BUILD_DIR:-} ]] || skip "the installed copy is the default build's"
	local busybox newroot=$T/root a loader
	busybox=$(command -v busybox) || skip "busybox is not installed (apt-get install busybox-static)"
	[[ -z $(interpreter "$busybox") ]] || skip "$busybox is not static (apt-get install busybox-static)"
	require_unshare -m
	# busybox as the shell and its tools, musl's loader, the installed copy, the client.
	mkdir -p "$newroot/bin" "$newroot/lib" "$newroot/proc" "$newroot/dev"
	cp "$busybox" "$newroot/bin/busybox"
	for a in sh dd tr grep head sed dirname basename readlink id env cat; do
		ln -s busybox "$newroot/bin/$a"
	done
	loader=$(interpreter "$MUSL_PROBE")
	cp "$(readlink -f "$loader")" "$newroot$loader"
	run make -s -C "$ROOT" install DESTDIR="$newroot" PREFIX=/usr/local
	assert_eq "$status" 0 "make install status (output: $output)" || return
	cp "$MUSL_PROBE" "$newroot/probe"

	start_listener server 1000 --send hello
	# shellcheck disable=SC2016 # the script's own $1
	run --separate-stderr timeout 20 "${UNSHARE[@]}" sh -c \
		'mount --rbind /proc "$1/proc" && mount --rbind /dev "$1/dev" && shift &&
		exec chroot "$@"' sh "$newroot" "$newroot" /usr/local/bin/backoff -vv --base 50ms \
		--cap "${CAP_MS}ms" --json --log-file /log.json -- /probe --read "127.0.0.1:$PORT"
	assert_eq "$status" 0 "status (stderr: $stderr)" || return
	assert_eq "$output" "OK hello" "output" || return
	assert_eq "$stderr" \
		"backoff: /probe is linked against musl: preloading /usr/local/lib/libbackoff/musl/libbackoff.so" \
		"the launcher's line" || return
	assert_retried_then_connected "$newroot/log.json" "127.0.0.1:$PORT" ECONNREFUSED \
		"$(listener_mono server listening)" "$CAP_MS"
}
