#!/usr/bin/env bats
# The whole host: /etc/ld.so.preload and the settings of /etc/libbackoff.conf, in a mount
# namespace of the test's own.
# shellcheck disable=SC2154 # stderr is set by bats run --separate-stderr

load helper

CONF=/etc/libbackoff.conf

setup() {
	require_build
	require_program curl
	# The sanitizers' runtime must come first in every process, which ld.so.preload is not.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	require_unshare -m
	PY_NAME=$(basename "$PYTHON")
	printf '%s\n' "${PY_CLIENT[2]}" >"$T/client.py"
}

# host CONF_MODE SCRIPT [OWNER]: SCRIPT (bash) run where /etc/ld.so.preload names the
# library and /etc/libbackoff.conf is $T/conf with CONF_MODE (chmod) and OWNER (root), a
# FIFO with CONF_MODE "fifo", absent with "-": an overlay on /etc in a mount namespace of
# its own, gone with it.  Sets what run sets.
host() {
	local mode=$1 owner=${3:-root}
	cat >"$T/host.sh" <<EOF
set -e
$(etc_overlay)
rm -f $CONF
case $mode in
-) ;;
fifo) mkfifo -m 644 $CONF ;;
*) cp "$T/conf" $CONF && chmod $mode $CONF && chown $owner $CONF ;;
esac
printf '%s\n' "$LIB" >/etc/ld.so.preload
set +e
$2
EOF
	run --separate-stderr timeout 30 "${UNSHARE[@]}" bash "$T/host.sh"
}

# client_lines DEAD LATE: the script that runs curl against the refused port DEAD and the
# python client against the late server on LATE, printing curl's status and time in ms.
client_lines() {
	cat <<EOF
start=\${EPOCHREALTIME/./}
curl -sS http://127.0.0.1:$1/
echo "curl \$? \$(((\${EPOCHREALTIME/./} - start) / 1000))"
"$PYTHON" "$T/client.py" 127.0.0.1 $2
echo " python \$?"
EOF
}

# check_clients: what client_lines printed: curl refused at once, with the stderr it has
# without the library, python connected.
check_clients() {
	local curl_status curl_ms
	read -r _ curl_status curl_ms <<<"$(grep '^curl ' <<<"$output")"
	assert_eq "$curl_status" 7 "curl's status (output: $output)"
	assert_between "$curl_ms" 0 2000 "curl's time (ms)"
	assert_match "$output" "hello python 0" "python's output and status"
	assert_eq "$stderr" "$PLAIN_CURL_ERR" "stderr: curl's own line alone"
}

# servers: a refused port (DEAD) and a server listening 800 ms from now (LATE); curl's own
# stderr against DEAD, without the library, in PLAIN_CURL_ERR.
servers() {
	closed_port dead
	DEAD=$PORT
	run --separate-stderr curl -sS "http://127.0.0.1:$DEAD/"
	assert_eq "$status" 7 "curl's status without the library"
	PLAIN_CURL_ERR=$stderr
	start_listener late 800 --send hello
	LATE=$PORT
}

@test "preloaded host-wide with the file naming python, python waits for a late server while curl is refused at once, as without the library" {
	servers
	printf '# only python waits\nBACKOFF_PROGRAMS=%s\nBACKOFF_BASE=50ms\nBACKOFF_CAP=200ms\n' \
		"$PY_NAME" >"$T/conf"
	host 644 "$(client_lines "$DEAD" "$LATE")"
	assert_eq "$status" 0 "the namespace's status (stderr: $stderr)"
	check_clients
}

@test "the environment's BACKOFF_PROGRAMS overrides the file's, and serves alone without the file" {
	local mode
	servers
	printf 'BACKOFF_PROGRAMS=curl\nBACKOFF_BASE=50ms\nBACKOFF_CAP=200ms\n' >"$T/conf"
	for mode in 644 -; do
		[[ $mode == 644 ]] || start_listener late 800 --send hello
		LATE=$PORT
		host "$mode" "export BACKOFF_PROGRAMS=$PY_NAME
$(client_lines "$DEAD" "$LATE")"
		assert_eq "$status" 0 "the namespace's status with the file's mode $mode (stderr: $stderr)"
		check_clients
	done
}

@test "a file another user may have written, not a regular file, or too large is ignored with one line" {
	local mode owner
	for mode in 666 664 owner fifo large; do
		printf 'BACKOFF_CAP=10x\n' >"$T/conf"
		owner=root
		case $mode in
		owner)
			# Only root gives a file away.
			((EUID == 0)) || continue
			owner=nobody mode=644
			;;
		large)
			head -c 9000 /dev/zero | tr '\0' '#' >"$T/conf"
			mode=644
			;;
		esac
		host "$mode" "sh -c 'echo out'" "$owner"
		assert_eq "$status/$output" "0/out" "status and output, $mode $owner"
		assert_match "$stderr" "^backoff\[[0-9]+\]: $CONF (is not owned by root|is writable by others than root|is not a regular file|holds more than 8192 bytes): ignored$" \
			"stderr, $mode $owner"
	done
}

@test "each bad line of the file is said once, the good ones are taken, and BACKOFF_STRICT ends the program" {
	closed_port dead
	printf '%s\n' '# comment' '' '  # indented' junk 'BACKOFF_TIMOUT=3s' BACKOFF_RETRIES=0 \
		BACKOFF_LOG=info >"$T/conf"
	host 644 "'$HELPERS/probe' 127.0.0.1:$PORT"
	assert_eq "$output" ECONNREFUSED "the probe's output: no retry (stderr: $stderr)"
	assert_match "$stderr" "$CONF:4: junk: expected NAME=value" "the line that names nothing"
	assert_match "$stderr" "$CONF:5: BACKOFF_TIMOUT: unknown variable \(did you mean BACKOFF_TIMEOUT\?\)" \
		"the misspelt line"
	assert_match "$stderr" "giving up after 1 attempt" "BACKOFF_RETRIES=0 and BACKOFF_LOG=info taken"
	assert_eq "$(count_lines "$stderr")" 3 "lines (stderr: $stderr)"
	# Past four, the rest are counted.
	printf '%s\n' a b c d e f BACKOFF_STRICT=1 >"$T/conf"
	host 644 "sh -c 'echo out'"
	assert_eq "$status/$output" "2/" "status and output under BACKOFF_STRICT=1 from the file"
	assert_match "$stderr" "$CONF: 2 more bad lines" "the count of the rest"
	assert_eq "$(count_lines "$stderr")" 5 "lines (stderr: $stderr)"
}

@test "a process of a host without the file tries one open of it at start, and nothing more" {
	require_strace
	[[ ! -e $CONF ]] || skip "$CONF exists on this host"
	strace -f -qq -o "$T/raw" -E LD_PRELOAD="$LIB" /bin/true
	run grep -F "$CONF" "$T/raw"
	assert_eq "$(count_lines "$output")" 1 "system calls naming $CONF: $output"
	assert_match "$output" 'openat\(AT_FDCWD, "/etc/libbackoff.conf", .*\) = -1 ENOENT' "the open"
}
