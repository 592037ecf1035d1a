#!/usr/bin/env bats
# The man pages stay true to the code: libbackoff(7) has an entry, with its default, for
# each variable of the configuration table (src/config/config.c) and no other; backoff(1)
# describes each option and each wait target that `backoff --help` and `backoff wait
# --help` print, and no other; the README's module table names each module of src/.
# The pages are read from their roff source, so that no formatter is needed.
# shellcheck disable=SC2154 # status and output are set by bats run

load helper

PAGE1=$ROOT/scripts/backoff.1
PAGE7=$ROOT/scripts/libbackoff.7

setup() {
	[[ -x $BUILD/backoff ]] || fail "$BUILD/backoff is missing: run make first"
}

# The variables of the configuration table: its X(BACKOFF_..., ...) rows, one a line.
code_variables() {
	sed -n 's/^[[:space:]]*X(\(BACKOFF[A-Z_]*\),.*/\1/p' "$ROOT/src/config/config.c" | sort
}

# page_variables PAGE: the variables with an entry (a .TP tag) in PAGE's ENVIRONMENT.
page_variables() {
	awk '/^\.SH / { env = ($2 == "ENVIRONMENT") }
		env && tag && /^\.B BACKOFF/ { print $2 }
		{ tag = ($0 == ".TP") }' "$1" | sort
}

# page_variables_without_default PAGE: the entries of PAGE's ENVIRONMENT that say no default.
page_variables_without_default() {
	awk '/^\.S[HS] / { if (name != "" && !said) print name; name = ""; env = ($1 == ".SH" ? ($2 == "ENVIRONMENT") : env) }
		env && tag && /^\.B BACKOFF/ { if (name != "" && !said) print name; name = $2; said = 0 }
		env && /[Dd]efault/ { said = 1 }
		{ tag = ($0 == ".TP") }' "$1"
}

# Option names (-v, --cap) in the option column of --help lines: "  --cap DUR   text".
help_options() {
	sed -n 's/^  \{1,\}\(-[^ ].*\)/\1/p' | sed 's/  .*//' | tr ',' '\n' |
		grep -oE '(^| )-{1,2}[a-z][a-z-]*' | tr -d ' ' | sort -u
}

# page_options PAGE: the option names in the .TP tags of PAGE's OPTIONS section.
page_options() {
	awk '/^\.SH / { on = ($2 == "OPTIONS") } on && tag { print } { tag = ($0 == ".TP") }' "$1" |
		sed 's/\\-/-/g' | grep -oE '(^|[ "])-{1,2}[a-z][a-z-]*' | tr -d ' "' | sort -u
}

# The schemes of backoff wait's targets (tcp://, unix:), in --help and in the page's WAIT.
help_targets() {
	sed -n 's/^  \([a-z]*:\)[^ ]*  .*/\1/p' | sort -u
}
page_targets() {
	awk '/^\.SH / { on = ($2 == "WAIT") } on && tag && /^\.BI / { print $2 } { tag = ($0 == ".TP") }' "$1" |
		sed 's/:.*/:/' | sort -u
}

# same WHAT EXPECTED ACTUAL: equal lists, or the names missing from each side.
same() {
	[[ $2 == "$3" ]] && return
	fail "$1 differ" "missing from the page: $(comm -23 <(echo "$2") <(echo "$3") | tr '\n' ' ')" \
		"not in the code: $(comm -13 <(echo "$2") <(echo "$3") | tr '\n' ' ')"
}

@test "libbackoff(7) has an entry for every variable of the configuration table, and no other" {
	local code
	code=$(code_variables)
	# The table read here is the one the library counts, and the suite's own list.
	assert_eq "$(count_lines "$code")" \
		"$(sed -n 's/^#define CONFIG_VARIABLES \([0-9]*\).*/\1/p' "$ROOT/src/config/config.h")" \
		"rows read from config.c"
	same "the variables of config.c and the suite" "$code" "$(printf '%s\n' "${BACKOFF_VARIABLES[@]}" | sort)"
	same "the variables of config.c and libbackoff(7)" "$code" "$(page_variables "$PAGE7")"
}

@test "each variable's entry in libbackoff(7) says its default" {
	assert_eq "$(page_variables_without_default "$PAGE7")" "" "entries without a default"
}

@test "backoff(1) describes every option of backoff --help, and no other" {
	run "$BUILD/backoff" --help
	assert_eq "$status" 0 "backoff --help"
	assert_between "$(count_lines "$(help_options <<<"$output")")" 40 200 "options read from --help"
	same "the options of backoff --help and backoff(1)" "$(help_options <<<"$output")" \
		"$(page_options "$PAGE1")"
}

@test "backoff(1) describes every target of backoff wait --help, and no other" {
	run "$BUILD/backoff" wait --help
	assert_eq "$status" 0 "backoff wait --help"
	assert_eq "$(help_targets <<<"$output" | tr '\n' ' ')" "http: mysql: postgres: redis: tcp: unix: " \
		"targets read from wait --help"
	same "the targets of backoff wait --help and backoff(1)" "$(help_targets <<<"$output")" \
		"$(page_targets "$PAGE1")"
}

@test "a variable or an option missing from a page, or an entry without its default, fails the comparison" {
	# The BACKOFF_NAMES entry taken out of the page: its .TP and tag line.
	sed '/^\.TP$/{N;/\n\.B BACKOFF_NAMES$/d}' "$PAGE7" >"$T/libbackoff.7"
	run same "variables" "$(code_variables)" "$(page_variables "$T/libbackoff.7")"
	assert_eq "$status" 1 "BACKOFF_NAMES missing"
	assert_match "$output" "missing from the page: BACKOFF_NAMES "$'\n' "the name said"
	# The --replay option's entry taken out of backoff(1).
	sed '/^\.TP$/{N;/\n\.BR \\-\\-replay /d}' "$PAGE1" >"$T/backoff.1"
	run same "options" "$("$BUILD/backoff" --help | help_options)" "$(page_options "$T/backoff.1")"
	assert_eq "$status" 1 "--replay missing"
	assert_match "$output" "missing from the page: --replay "$'\n' "the option said"
	# BACKOFF_SEED's default line taken out.
	sed '/^Default: a random seed\.$/d' "$PAGE7" >"$T/libbackoff.7"
	assert_eq "$(page_variables_without_default "$T/libbackoff.7")" BACKOFF_SEED "an entry without its default"
}

@test "the README's module table names every module of the core's folders and each other directory of src/" {
	local code readme dir
	# A file NAME_PART belongs to module NAME: config_errors to config/config, share_file to
	# facts/share, pending_again to drivers/pending.
	code=$(cd "$ROOT/src" && printf '%s\n' drivers/*.c engine/*.c facts/*.c tables/*.c counters/*.c config/*.c |
		sed 's/\.c$//; s|/\([a-z]*\)_[a-z_]*$|/\1|' | sort -u)
	readme=$(sed -n "s/^| \`\([a-z]*\/[a-z_]*\)\` |.*/\1/p" "$ROOT/README.md" | sort)
	same "the modules of the core and the README's table" "$code" "$readme"
	for dir in intercept supervise tool sys; do
		grep -q "^| \`$dir/\*\` | " "$ROOT/README.md" || fail "no row for src/$dir in the README's table"
	done
	# every folder of src/ is the core's or has a row
	for dir in "$ROOT"/src/*/; do
		dir=$(basename "$dir")
		case " drivers engine facts tables counters config intercept supervise tool sys " in
		*" $dir "*) ;;
		*) fail "src/$dir is in no part of the README's layout" ;;
		esac
	done
}

@test "the man pages format without a warning" {
	require_program groff groff-base
	run groff -man -Tutf8 -z -ww -Wbreak "$PAGE1" "$PAGE7"
	assert_eq "$status" 0 "groff status"
	assert_eq "$output" "" "groff's warnings"
}

@test "the README's table of a state-file slot is the code's: every field of struct share_slot, at its offset" {
	local readme code
	# Its rows: | OFFSET | `FIELD` | ... |, between its heading and the next heading.
	readme=$(awk '/^### The state file/ { on = 1; next } /^#/ { on = 0 }
		on && /^\| [0-9]+ \| `/ { gsub(/[|`]/, " "); print $1, $2 }' "$ROOT/README.md")
	[[ -n $readme ]] || fail "no table of a slot in the README"
	# The fields of struct share_slot, in order: the last word before each ';' or '['.
	code=$(sed -n '/^struct share_slot {/,/^};/p' "$ROOT/src/facts/share.h" |
		sed 's|/\*.*\*/||; /^[[:space:]]*\*/d; /\/\*/d' |
		sed -nE 's/^[[:space:]]*(_Atomic )?[a-z_0-9 ]+[[:space:]]+([a-z_0-9]+)(\[[A-Z_0-9]+\])?;.*/\2/p')
	same "the fields of a slot in the README and in share.h" "$code" "$(cut -d' ' -f2 <<<"$readme")"
	# Each at the offset the README gives it, as the compiler lays the struct out.
	{
		printf '#include <stddef.h>\n#include "facts/share.h"\n'
		while read -r off field; do
			printf '_Static_assert(offsetof(struct share_slot, %s) == %s, "%s");\n' \
				"$field" "$off" "$field"
		done <<<"$readme"
	} >"$T/layout.c"
	run cc -std=c11 -D_GNU_SOURCE -I"$ROOT/src" -fsyntax-only "$T/layout.c"
	assert_eq "$status" 0 "the README's offsets: $output"
}
