#!/usr/bin/env bash
# make tsan: the stress test under ThreadSanitizer; any report fails it.
#
# usage: tsan.sh PROGRAM [stress arguments...]
#
# Reports are written unsymbolized to files and symbolized here with
# addr2line: the hooks are linked into the program, so the runtime's own
# symbolizer would call them (read, close...) while it holds its locks, and
# a report could hang instead of being printed.
set -euo pipefail

program=${1:?usage: tsan.sh PROGRAM [stress arguments...]}
shift
reports=$(dirname "$program")/tsan-reports
rm -rf "$reports"
mkdir -p "$reports"

status=0
TSAN_OPTIONS="halt_on_error=1 symbolize=0 second_deadlock_stack=1 log_path=$reports/tsan" \
	"$program" "$@" || status=$?

shopt -s nullglob
found=("$reports"/*)
for f in "${found[@]}"; do
	echo "==== $f" >&2
	# "#3 <null> <null> (stress-linked+0x7a25)": the function and line of each frame.
	while IFS= read -r line; do
		if [[ $line =~ \(([^+\)]+)\+(0x[0-9a-f]+)\) ]] &&
			[[ ${BASH_REMATCH[1]} == "$(basename "$program")" ]]; then
			printf '%s  %s\n' "$line" \
				"$(addr2line -f -i -p -e "$program" "${BASH_REMATCH[2]}" | tr '\n' ' ')" >&2
		else
			printf '%s\n' "$line" >&2
		fi
	done <"$f"
done
echo "tsan: stress status $status, ${#found[@]} ThreadSanitizer report(s)"
((status == 0 && ${#found[@]} == 0))
