#!/usr/bin/env bash
# make analyze: cppcheck, clang-tidy and gcc -fanalyzer over src/, every finding
# either fixed or explained in tests/hardening/analyze.supp.
#
# Each tool's findings are brought to one form, "FILE:LINE: TOOL CHECK: message",
# and matched against the explanations; what is left fails the run, and so does
# an explanation that no longer matches anything.
# shellcheck disable=SC2317 # the run_* functions are called through timed
set -euo pipefail
cd "$(dirname "$0")/../.."

supp=tests/hardening/analyze.supp
out=${ANALYZE_DIR:-build/analyze}
mkdir -p "$out"
mapfile -t sources < <(find src -name '*.c' | sort)
defines=(-D_GNU_SOURCE '-DBACKOFF_VERSION="0"' -Isrc)
timings=()

timed() {
	local name=$1 start=$SECONDS
	shift
	"$@"
	timings+=("$name $((SECONDS - start)) s")
}

run_cppcheck() {
	# all: warning, style, performance, portability, information, unusedFunction.
	cppcheck --enable=all --std=c11 --library=posix --inline-suppr --quiet \
		--suppress=missingIncludeSystem \
		--template='{file}:{line}: cppcheck {id}: {message}' "${defines[@]}" src/ \
		2>"$out/cppcheck.txt" || true
}

# Checks chosen: the analyzer and the bug-finding families.  Left out, with why:
#  - clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling: asks
#    for Annex K (memcpy_s), which glibc does not provide; every copy is bounded.
#  - bugprone-easily-swappable-parameters: a style rule (fd, fd) the types cannot fix.
#  - cert-err33-c: snprintf into fixed buffers truncates on purpose, and the
#    log writes have nobody to report to; errors that matter are checked.
CLANG_TIDY_CHECKS='-*,clang-analyzer-*,bugprone-*,cert-*,misc-*,performance-*,portability-*,'\
'concurrency-*,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,'\
'-bugprone-easily-swappable-parameters,-cert-err33-c'

run_clang_tidy() {
	clang-tidy --quiet -checks="$CLANG_TIDY_CHECKS" "${sources[@]}" -- -std=c11 \
		"${defines[@]}" 2>/dev/null |
		sed -nE "s|^$PWD/||; s|^([^:]+):([0-9]+):[0-9]+: (warning\|error): (.*) \[([^]]+)\]$|\1:\2: clang-tidy \5: \4|p" \
			>"$out/clang-tidy.txt" || true
}

run_gcc_analyzer() {
	local f
	: >"$out/gcc.txt"
	for f in "${sources[@]}"; do
		gcc -std=c11 "${defines[@]}" -fanalyzer -Wall -Wextra -c -o /dev/null "$f" 2>&1 |
			sed -nE 's|^([^:]+):([0-9]+):[0-9]+: warning: (.*) \[([^]]+)\]$|\1:\2: gcc \4: \3|p' \
				>>"$out/gcc.txt" || true
	done
}

timed cppcheck run_cppcheck
timed clang-tidy run_clang_tidy
timed gcc-fanalyzer run_gcc_analyzer

# explained FINDING: the number of the analyze.supp entry explaining it, or nothing.
mapfile -t entries < <(grep -vE '^[[:space:]]*(#|$)' "$supp" | sed -E 's/[[:space:]]+#[[:space:]].*$//')
used=()
explained() {
	local file=${1%%:*} rest=${1#*:} line tool check i e_tool e_check e_file e_snippet text
	line=${rest%%:*}
	read -r tool check _ <<<"${rest#*: }"
	check=${check%:}
	text=$(sed -n "${line}p" "$file" 2>/dev/null)
	for i in "${!entries[@]}"; do
		read -r e_tool e_check e_file e_snippet <<<"${entries[i]}"
		[[ $e_tool == "$tool" && $e_check == "$check" && $file == "$e_file"* ]] || continue
		[[ -z $e_snippet || $text == *"$e_snippet"* ]] || continue
		echo "$i"
		return
	done
}

status=0
for tool in cppcheck clang-tidy gcc; do
	total=0 left=0
	while IFS= read -r finding; do
		[[ -n $finding ]] || continue
		total=$((total + 1))
		i=$(explained "$finding")
		if [[ -n $i ]]; then
			used[i]=1
		else
			left=$((left + 1))
			echo "analyze: $finding" >&2
		fi
	done < <(sort -u "$out/$tool.txt")
	echo "analyze: $tool: $total finding(s), $((total - left)) explained in $supp, $left left"
	((left == 0)) || status=1
done
for i in "${!entries[@]}"; do
	[[ -n ${used[i]:-} ]] && continue
	echo "analyze: $supp: explains nothing any more: ${entries[i]}" >&2
	status=1
done
echo "analyze: times: ${timings[*]}"
exit "$status"
