#!/usr/bin/env bats
# Secure execution (setuid, setgid): no BACKOFF_* variable and no log file path is honoured.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

setup() {
	require_build
}

teardown() {
	stop_bg_all
	[[ -z ${SECURE_DIR:-} ]] || rm -rf "$SECURE_DIR"
}

# gcov_build: the library is built with --coverage (make coverage COVERAGE_SUITE=1).
gcov_build() {
	nm "$BUILD/libbackoff.so" 2>/dev/null | grep -q ' __gcov_'
}

@test "the library reads its variables with secure_getenv, never getenv" {
	local imports
	imports=$(nm -D --undefined-only "$BUILD/libbackoff.so" | awk '{ print $2 }' | sed 's/@.*//')
	# Its own (sys/cstring.c), which asks the loader's AT_SECURE; a sanitizer's build imports
	# the C library's.
	grep -qx secure_getenv <<<"$imports" ||
		{ grep -qx getauxval <<<"$imports" &&
			nm "$BUILD/libbackoff.so" | grep -q ' t secure_getenv$'; } ||
		fail "neither the C library's secure_getenv nor the library's own"
	# gcov's runtime reads GCOV_PREFIX with getenv: only a plain build can tell.
	gcov_build || ! grep -qx getenv <<<"$imports" || fail "getenv is imported"
}

# The environment of both runs below: every variable would change what the
# probe does (BACKOFF=off, no retries) or writes (a log file, a warning).
SECURE_ENV=(BACKOFF=off BACKOFF_RETRIES=0 BACKOFF_BASE=bogus BACKOFF_LOG=debug
	BACKOFF_LOG_FORMAT=json BACKOFF_STATS=1)

# setup_secure_probe: a copy of the probe (linked with the library through an
# absolute run path, which the loader honours in secure execution while it
# ignores LD_PRELOAD paths) owned by nobody, in a directory another user can
# read, with a world-writable directory for a log file.  Needs root.
setup_secure_probe() {
	((EUID == 0)) || skip "needs root to make a set-user-ID program"
	# The sanitizers ignore ASAN_OPTIONS in secure execution, and LeakSanitizer
	# cannot run there: the ASan build of the probe would die at exit.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	# Nor can gcov's runtime write its counts from there.
	! gcov_build || skip "not with a coverage build"
	require_program setpriv util-linux
	{ id daemon && id nobody; } >/dev/null 2>&1 || skip "no daemon and nobody users"
	[[ -x $BUILD/hardening/secure-probe ]] || fail "$BUILD/hardening/secure-probe is missing"
	SECURE_DIR=$(mktemp -d /tmp/backoff-secure.XXXXXX)
	if findmnt -no OPTIONS --target "$SECURE_DIR" 2>/dev/null | grep -qw nosuid; then
		skip "$SECURE_DIR is on a nosuid file system"
	fi
	chmod 755 "$SECURE_DIR"
	mkdir -m 1777 "$SECURE_DIR/out"
	cp "$BUILD/hardening/secure-probe" "$SECURE_DIR/plain-probe"
	cp "$BUILD/hardening/secure-probe" "$SECURE_DIR/setuid-probe"
	chown nobody:nogroup "$SECURE_DIR/setuid-probe"
	chmod 4755 "$SECURE_DIR/setuid-probe"
	chmod 755 "$SECURE_DIR/plain-probe"
	# The user running it must reach the library through the run path.
	setpriv --reuid=daemon --regid=daemon --clear-groups test -r "$BUILD/libbackoff.so" ||
		skip "the user daemon cannot read $BUILD/libbackoff.so"
}

# as_daemon PROGRAM ARGS...: PROGRAM run by the user daemon with SECURE_ENV and the preload.
as_daemon() {
	timeout 20 setpriv --reuid=daemon --regid=daemon --clear-groups \
		env LD_PRELOAD="$LIB" "${SECURE_ENV[@]}" BACKOFF_LOG_FILE="$SECURE_DIR/out/log" "$@"
}

@test "without secure execution the same environment is honoured (the control)" {
	setup_secure_probe
	closed_port server
	run --separate-stderr as_daemon "$SECURE_DIR/plain-probe" "127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "probe output (BACKOFF=off: one attempt)"
	assert_eq "$status" 1 "probe status"
	[[ -s $SECURE_DIR/out/log ]] || fail "no log file: the variables were not read"
	assert_eq "$(json_events "$SECURE_DIR/out/log" config variable)" BACKOFF_BASE "config event"
}

@test "a set-user-ID program ignores every BACKOFF_* variable and the log file path" {
	setup_secure_probe
	start_listener server 500
	rm -f /dev/shm/libbackoff-65534.v7 /tmp/libbackoff-65534.v7
	run --separate-stderr as_daemon "$SECURE_DIR/setuid-probe" "127.0.0.1:$PORT"
	# The defaults apply: retried until the server listens, in spite of
	# BACKOFF=off and BACKOFF_RETRIES=0; nothing logged (warn level), no
	# warning for BACKOFF_BASE, no file.
	assert_eq "$output" OK "probe output"
	assert_eq "$status" 0 "probe status"
	assert_eq "$stderr" "" "messages"
	[[ ! -e $SECURE_DIR/out/log ]] || fail "the log file was created: $(cat "$SECURE_DIR/out/log")"
	# Nor does it share: no state file of its owner's is made.
	[[ ! -e /dev/shm/libbackoff-65534.v7 && ! -e /tmp/libbackoff-65534.v7 ]] ||
		fail "a set-user-ID program made its owner's state file"
}
