#!/usr/bin/env bash
# make fuzz: run each libFuzzer target for SECONDS, two at a time; print executions and findings.
#
# Seeds come from tests/fuzz/corpus/TARGET; what the fuzzer learns is kept in
# FUZZ_BUILD/corpus/TARGET for the next run, and a crashing, leaking or
# hanging input in FUZZ_BUILD/artifacts/TARGET.  FUZZ_JOBS targets at a time
# (default: the machine's processors, at most 2: each fuzzer is one process).
set -euo pipefail

dir=${1:?usage: fuzz.sh FUZZ_BUILD SECONDS TARGET...}
seconds=${2:?usage: fuzz.sh FUZZ_BUILD SECONDS TARGET...}
shift 2
cd "$(dirname "$0")/../.."

jobs=${FUZZ_JOBS:-$(nproc)}
((jobs >= 1)) || jobs=1
((jobs <= 2)) || jobs=2

# fuzz_one TARGET: run it; its line on stdout, its findings on stderr; status 1 if any.
fuzz_one() {
	local target=$1 corpus artifacts log max_len start rc runs findings
	corpus=$dir/corpus/$target
	artifacts=$dir/artifacts/$target
	log=$dir/fuzz-$target.log
	rm -rf "$artifacts"
	mkdir -p "$corpus" "$artifacts"
	case $target in
	policy) max_len=64 ;;
	*) max_len=8192 ;;
	esac
	start=$SECONDS
	rc=0
	"$dir/fuzz-$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
		-rss_limit_mb=2048 -use_value_profile=1 -print_final_stats=1 \
		-dict=tests/fuzz/config.dict -artifact_prefix="$artifacts/" \
		"$corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	findings=$(find "$artifacts" -type f | wc -l)
	printf 'fuzz %-7s %4d s  executions=%s  corpus=%d  findings=%d  (status %d, log %s)\n' \
		"$target" "$((SECONDS - start))" "${runs:-?}" "$(find "$corpus" -type f | wc -l)" \
		"$findings" "$rc" "$log"
	if ((rc != 0 || findings > 0)); then
		grep -E 'ERROR|SUMMARY|runtime error|#[0-9]+ .* in .*(src|tests)/' "$log" | head -20 >&2
		find "$artifacts" -type f >&2
		return 1
	fi
}

status=0
running=0
for target in "$@"; do
	if ((running >= jobs)); then
		wait -n || status=1
		running=$((running - 1))
	fi
	fuzz_one "$target" &
	running=$((running + 1))
done
while ((running > 0)); do
	wait -n || status=1
	running=$((running - 1))
done
exit "$status"
