#!/usr/bin/env bats
# The performance figures of libbackoff(7) are those of the last `make bench`:
# every figure its PERFORMANCE section states that a report in tests/bench/
# holds too (make bench rewrites them in place; the committed ones are the last
# measured) is the report's, rounded as the page writes it.  (The section was
# the README's; the README points to the page.)
# shellcheck disable=SC2154 # status, output, stderr: set by bats run

load helper

CHECK=$ROOT/tests/bench/readme_figures.py
PAGE=$ROOT/scripts/libbackoff.7

@test "every figure of libbackoff(7)'s PERFORMANCE section that a bench report holds is the report's" {
	run --separate-stderr "$PYTHON" "$CHECK" "$PAGE" "$ROOT/tests/bench"
	assert_eq "$status" 0 "the check: $output $stderr"
	# Each figure named, none missed: as many lines as checks, each ok.
	assert_eq "$(grep -c '^ok ' <<<"$output")" "$(count_lines "$output")" "figures checked"
	assert_between "$(count_lines "$output")" 19 100 "figures checked"
}

@test "a figure of the page that is not the report's, or a sentence the check no longer finds, fails it" {
	sed 's/sent it 200 attempts in one 100 ms window/sent it 180 attempts in one 100 ms window/' \
		"$PAGE" >"$T/page.7"
	run --separate-stderr "$PYTHON" "$CHECK" "$T/page.7" "$ROOT/tests/bench"
	assert_eq "$status" 1 "a figure changed"
	assert_match "$output" "DIFFERS +the herd's peak without and with full jitter: page 180, " \
		"the figure named"
	sed 's/kept \([0-9.]*\) of its throughput/kept most of its throughput/' \
		"$PAGE" >"$T/page.7"
	run --separate-stderr "$PYTHON" "$CHECK" "$T/page.7" "$ROOT/tests/bench"
	assert_eq "$status" 1 "a sentence reworded"
	assert_match "$output" "NOT FOUND +nginx throughput" "the sentence named"
	# A range holds the report's figure, or fails.
	sed 's/preloaded and 0.957 under/preloaded and 0.92\\(en0.93 under/' \
		"$PAGE" >"$T/page.7"
	run --separate-stderr "$PYTHON" "$CHECK" "$T/page.7" "$ROOT/tests/bench"
	assert_eq "$status" 1 "a range without the report's figure"
	assert_match "$output" "DIFFERS +start-up: short nc exchanges" "the range named"
	# Only the PERFORMANCE section counts: the same sentence elsewhere is not read.
	sed 's/^\.SH PERFORMANCE$/.SH PERFORMANCE NOTES/' "$PAGE" >"$T/page.7"
	run --separate-stderr "$PYTHON" "$CHECK" "$T/page.7" "$ROOT/tests/bench"
	assert_eq "$status" 1 "no PERFORMANCE section"
}
