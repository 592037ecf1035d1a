#!/usr/bin/env bash
# make sanitize: the whole bats suite against the ASan+UBSan build in BUILD_DIR.
#
# The tests put $LIB in LD_PRELOAD; here it starts with the ASan runtime, which
# must come before any instrumented object (tests/helper.bash, TEST_PRELOAD_FIRST).
# Every report goes to a file of its own under BUILD_DIR/sanitizer-reports, so
# that a finding in a process whose output no test reads still fails the run.
#
# detect_leaks=0: the programs the tests run under the preload (sh, python3,
# curl, wget, socat...) are not ours and exit without freeing what they
# allocated; LeakSanitizer would report them.  libbackoff allocates nothing
# (no malloc is reachable from a hook), so there is no leak of ours to miss.
set -euo pipefail

build=${1:?usage: sanitize.sh BUILD_DIR [bats arguments...]}
shift
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/../.."

asan_rt=$(readlink -f "$(${CC:-cc} -print-file-name=libasan.so)")
[[ -f $asan_rt ]] || {
	echo "sanitize: no ASan runtime (libasan.so) for ${CC:-cc}" >&2
	exit 1
}
reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
chmod 1777 "$reports" # a test may run a program as another user

export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
export TEST_BUILD_DIR=$build TEST_PRELOAD_FIRST=$asan_rt
# bats' own files in a directory of this run: a long run must not lose them to a
# clean-up of /tmp by whatever else runs on the machine.
export TMPDIR=$build/tmp
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"

# Some programs hang under the ASan runtime preloaded alone, without libbackoff
# (curl, wget and psql here: glibc's setlocale lock is left corrupted before
# main; "ASan via LD_PRELOAD is not officially supported" upstream).  Such a
# program runs through a wrapper first in PATH with the uninstrumented library
# (PLAIN_LIB) in place of the ASan pair, so its tests still check behaviour,
# and the summary names it.
wrapped=()
wrappers=$TMPDIR/path
mkdir -p "$wrappers"
for prog in curl wget psql python3 node nc socat perl ssh telnet logger nginx; do
	real=$(command -v "$prog") || continue
	status=0
	timeout 5 env LD_PRELOAD="$asan_rt" "$real" --version </dev/null >/dev/null 2>&1 || status=$?
	((status == 124)) || continue
	[[ -f ${PLAIN_LIB:-} ]] || {
		echo "sanitize: $prog hangs under the ASan runtime and PLAIN_LIB is not set" >&2
		exit 1
	}
	cat >"$wrappers/$prog" <<WRAPPER
#!/bin/sh
# $prog cannot run under the ASan runtime: the uninstrumented library instead.
LD_PRELOAD=\$(printf '%s' "\${LD_PRELOAD:-}" | sed 's|$asan_rt:$build/libbackoff.so|$PLAIN_LIB|')
export LD_PRELOAD
exec "$real" "\$@"
WRAPPER
	chmod +x "$wrappers/$prog"
	wrapped+=("$prog")
done
export PATH=$wrappers:$PATH

read -ra bats_flags <<<"${BATS_FLAGS:-}"
start=$SECONDS
status=0
"${BATS:-bats}" "${bats_flags[@]}" "${@:-tests/}" || status=$?
shopt -s nullglob
found=("$reports"/*)
if ((${#found[@]} > 0)); then
	echo "sanitize: ${#found[@]} report(s) from the sanitizers:" >&2
	for f in "${found[@]}"; do
		printf '==== %s\n' "$f" >&2
		cat "$f" >&2
	done
	status=1
fi
echo "sanitize: suite status $status, ${#found[@]} sanitizer report(s), $((SECONDS - start)) s"
if ((${#wrapped[@]} > 0)); then
	echo "sanitize: run with the uninstrumented library (they hang under the ASan runtime alone): ${wrapped[*]}"
fi
exit "$status"
