#!/usr/bin/env bats
# An installed copy, a Debian package and the demo: what a user runs first, outside the tree.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

# stage_install PREFIX: make install of this build into $T/stage with PREFIX.
stage_install() {
	make -C "$ROOT" --no-print-directory BUILD="$BUILD" DESTDIR="$T/stage" PREFIX="$1" \
		install >"$T/install.log" 2>&1 || fail "make install failed:" "$(<"$T/install.log")"
}

@test "an installed launcher finds the library next to itself and preloads it" {
	# An installed copy is the default build, which the ASan runtime would have to precede.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	stage_install /usr/local
	local bin=$T/stage/usr/local/bin/backoff lib
	lib=$(cd "$T/stage/usr/local/lib/libbackoff" && pwd -P)/libbackoff.so
	[[ -f $lib && -x ${lib%/*}/backoff-supervise ]] || fail "make install left out a file"
	local page
	for page in man1/backoff.1 man7/libbackoff.7; do
		[[ -f $T/stage/usr/local/share/man/$page ]] || fail "make install left out the man page $page"
	done

	run --separate-stderr "$bin" -- true
	assert_eq "$status" 0 "status of backoff -- true"
	assert_eq "$stderr" "" "stderr of backoff -- true"

	run --separate-stderr "$bin" --engine preload -- sh -c 'printf "%s\n" "$LD_PRELOAD"'
	assert_eq "$output" "$lib" "LD_PRELOAD under the installed launcher"
	assert_eq "$stderr" "" "stderr"
}

@test "an installed launcher retries a connect to a late server under both engines" {
	# An installed copy is the default build, which the ASan runtime would have to precede.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	stage_install /usr/local
	local engine
	for engine in preload supervise; do
		start_listener "server-$engine" 300
		run --separate-stderr timeout 20 "$T/stage/usr/local/bin/backoff" --engine "$engine" \
			--base 20ms --cap 100ms -v -- "$HELPERS/probe" "127.0.0.1:$PORT"
		assert_eq "$output" OK "probe under --engine $engine (stderr: $stderr)"
		assert_match "$stderr" "retrying in" "retry lines under --engine $engine"
	done
}

@test "make uninstall removes every file make install put in place, the man pages included" {
	stage_install /usr/local
	[[ -n $(find "$T/stage" -type f) ]] || fail "make install installed nothing"
	make -C "$ROOT" --no-print-directory BUILD="$BUILD" DESTDIR="$T/stage" PREFIX=/usr/local \
		uninstall >"$T/uninstall.log" 2>&1 || fail "make uninstall failed:" "$(<"$T/uninstall.log")"
	assert_eq "$(cd "$T/stage" && find . -type f)" "" "files left by make uninstall"
}

@test "BACKOFF_LIBRARY overrides the library found next to an installed launcher" {
	# An installed copy is the default build, which the ASan runtime would have to precede.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	stage_install /usr/local
	run --separate-stderr env BACKOFF_LIBRARY="$BUILD/libbackoff.so" \
		"$T/stage/usr/local/bin/backoff" --engine preload -- sh -c 'printf "%s\n" "$LD_PRELOAD"'
	assert_eq "$output" "$(cd "$BUILD" && pwd -P)/libbackoff.so" "LD_PRELOAD"
}

@test "an installed launcher without its library says where it looked, not to run make" {
	# A prefix that exists nowhere, so that no library is found where it points either.
	stage_install "$T/nowhere"
	mkdir -p "$T/lone/bin"
	cp "$T/stage$T/nowhere/bin/backoff" "$T/lone/bin/backoff"
	run --separate-stderr "$T/lone/bin/backoff" -- true
	assert_eq "$status" 2 "status"
	assert_match "$stderr" "^backoff: cannot find libbackoff.so in $T/lone/bin/../lib/libbackoff or $T/nowhere/lib/libbackoff \(set BACKOFF_LIBRARY\)$"
	assert_no_match "$stderr" "make" "advice"
}

@test "make demo in a fresh tree prints no warning from the launcher" {
	require_program python3
	mkdir "$T/clone"
	cp -a "$ROOT/src" "$ROOT/tests" "$ROOT/scripts" "$ROOT/Makefile" "$T/clone/"
	# The default build, whatever build the suite runs against (make sanitize).
	run --separate-stderr timeout 120 env -u EXTRA_CFLAGS -u EXTRA_LDFLAGS -u OPT -u CC -u BUILD \
		make -C "$T/clone" --no-print-directory demo
	assert_eq "$status" 0 "make demo status (stderr: $stderr)"
	assert_match "$output" "demo: client received: hello from the late server" "demo output"
	# Retry lines carry a PID (backoff[PID]: ...); a launcher warning does not.
	assert_eq "$(grep '^backoff: ' <<<"$output"$'\n'"$stderr")" "" "warnings of make demo"
}

@test "make deb builds a package that holds every part, depends on libc6 and runs once unpacked" {
	# An installed copy is the default build, which the ASan runtime would have to precede.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	require_program dpkg-deb dpkg
	require_program curl
	run --separate-stderr make -C "$ROOT" --no-print-directory BUILD="$BUILD" DEB_DIR="$T/deb" deb
	assert_eq "$status" 0 "make deb status (stderr: $stderr)"
	local deb
	deb=$(echo "$T"/deb/libbackoff_*_"$(dpkg --print-architecture)".deb)
	[[ -f $deb ]] || fail "no package in $T/deb: $output"

	run dpkg-deb --field "$deb" Package Architecture Depends
	assert_match "$output" "^Package: libbackoff"$'\n'"Architecture: $(dpkg --print-architecture)"$'\n'"Depends: (.*, )?libc6 \(>= [0-9.]+\)(,|$)"
	run dpkg-deb --contents "$deb"
	local f
	for f in ./usr/bin/backoff ./usr/lib/libbackoff/libbackoff.so \
		./usr/lib/libbackoff/backoff-supervise ./usr/lib/libbackoff/backoff-schedule \
		./usr/share/man/man1/backoff.1.gz ./usr/share/man/man7/libbackoff.7.gz \
		./usr/share/doc/libbackoff/copyright; do
		grep -q " root/root .* $f$" <<<"$output" || fail "$f missing or not root's: $output"
	done

	# Unpacked rather than installed: dpkg -i would change the machine the suite runs on.
	dpkg-deb -x "$deb" "$T/root"
	run "$T/root/usr/bin/backoff" --help
	assert_eq "$status" 0 "backoff --help status"
	assert_match "${output%%$'\n'*}" "^usage: backoff " "backoff --help"
	grep -q 'Permission is hereby granted' "$T/root/usr/share/doc/libbackoff/copyright" ||
		fail "the copyright file lacks the licence"
	start_listener server 500 --send "$HTTP_REPLY"
	run --separate-stderr timeout 20 "$T/root/usr/bin/backoff" --engine preload -v -- \
		curl -sS "http://127.0.0.1:$PORT/"
	assert_eq "$status" 0 "curl status (stderr: $stderr)"
	assert_eq "$output" hello "curl output"
	assert_match "$stderr" "connect 127.0.0.1:$PORT: ECONNREFUSED \(attempt 1\), retrying in" "retry lines"
}

@test "the README's systemd drop-in runs the daemon through the launcher, within the default start timeout" {
	local block timeout
	# The ini block after "A legacy daemon under systemd".
	block=$(sed -n '/^A legacy daemon under systemd/,/^```$/p' "$ROOT/README.md" |
		sed -n '/^```ini$/,/^```$/p')
	[[ -n $block ]] || fail "no systemd example in README.md"
	assert_no_match "$block" "LD_PRELOAD" "the drop-in (LD_PRELOAD reaches ExecStartPre and ExecStop)"
	assert_match "$block" $'\n''ExecStart=/usr/local/bin/backoff -- ' "the drop-in's ExecStart"
	timeout=$(grep -o 'BACKOFF_TIMEOUT=[^ ]*' <<<"$block" | cut -d= -f2)
	run env BACKOFF_TIMEOUT="$timeout" "$SCHEDULE" --attempts 1
	assert_eq "$status" 0 "BACKOFF_TIMEOUT=$timeout in the example"
	timeout=$(sed -n 's/.* timeout=\([0-9]*\)ms.*/\1/p' <<<"$output")
	assert_between "$timeout" 1 89999 "the example's budget under TimeoutStartSec's default 90 s"
}
