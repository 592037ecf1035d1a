#!/usr/bin/env bats
# Every variable set to each of a corpus of hostile values: the program runs as it would
# without them, and the library writes at most one clean line per variable.
# shellcheck disable=SC2016 # $(id) and `id` are values, never expanded

load helper

setup() {
	require_build
	hostile_values
}

# hostile_values: HOSTILE (the values) and HOSTILE_NAMES (how to call them).
hostile_values() {
	local binary long_x long_9 commas
	# Every byte but NUL, in order, newline and escape included.
	binary=$(printf '%b' "$(printf '\\0%03o' {1..255})" && echo .)
	binary=${binary%.}
	long_x=$(printf 'x%.0s' {1..65536})
	long_9=$(printf '9%.0s' {1..65536})
	commas=$(printf ',%.0s' {1..10000})
	# shellcheck disable=SC1003 # literal quotes and backslashes
	HOSTILE=('' ' ' $'\t' '  10s  ' '-1' '+5' '-0' '+inf' '-inf' 'nan'
		'18446744073709551615' '18446744073709551616' '99999999999999999999999999999'
		'1e3' '0x10' '1.' '.5' '1..2' '0.0001' '1,5'
		'ms' 's' 'm' 'h' '5 ms' '5MS' '2S'
		"$binary" $'\xc3\xa9\xe2\x80\xae\xef\xbb\xbf' $'line one\nline two' $'\e[31mred\e[0m'
		'"'"'"'\\' '$(id)' '`id`'
		'%s%n%x%p%9999999d' '%n%n%n%n%n%n%n%n'
		"$long_x" "$long_9" "$commas"
		'!' '*' 'unix:' '[' ']' ':' '/' '+' '-' '+,-' '!*,!*')
	HOSTILE_NAMES=(empty space tab padded -1 +5 -0 +inf -inf nan
		2^64-1 2^64 huge
		1e3 0x10 '1.' '.5' 1..2 0.0001 '1,5'
		ms s m h '5 ms' 5MS 2S
		'bytes 1-255' 'utf-8' newline escape
		quotes '$(id)' '`id`'
		'%s%n' '%n x8'
		'64 KB x' '64 KB 9' '10000 commas'
		'!' '*' 'unix:' '[' ']' ':' '/' '+' '-' '+,-' '!*,!*')
}

# check_run WHAT MAX_LINES VAR...: the probe's output and status as without the
# library, and at most MAX_LINES lines from it, each naming one of VARs once.
check_run() {
	local what=$1 max=$2 line var n=0 named
	shift 2
	[[ $prog_status == 0 && $prog_out == OK ]] ||
		problems+=("$what: status $prog_status, output '${prog_out:0:100}'")
	declare -A seen=()
	while IFS= read -r line; do
		[[ -n $line ]] || continue
		n=$((n + 1))
		named=
		for var in "$@"; do
			[[ $line == "backoff: $var=\""* ]] && named=$var
		done
		[[ -n $named ]] || problems+=("$what: a line naming none of the variables: ${line:0:200}")
		[[ -z $named || -z ${seen[$named]:-} ]] || problems+=("$what: $named named twice")
		[[ -n $named ]] && seen[$named]=1
		((${#line} <= 400)) || problems+=("$what: a line of ${#line} bytes")
		! LC_ALL=C grep -q '[[:cntrl:]]' <<<"$line" ||
			problems+=("$what: a control byte in: ${line:0:200}")
	done <"$T/stderr"
	((n <= max)) || problems+=("$what: $n lines: $(head -c 400 "$T/stderr")")
	LINES_SEEN=$((LINES_SEEN + n))
}

# run_probe MODE VAR=VALUE...: the probe connecting to the listener on $PORT,
# under the library with those variables, in the test's directory (a log file
# path lands there); sets prog_status and prog_out, stderr in $T/stderr.
run_probe() {
	local mode=$1
	shift
	prog_status=0
	prog_out=$(cd "$T" && timeout 20 env LD_PRELOAD="$LIB" "$@" \
		"$HELPERS/probe" --mode "$mode" "127.0.0.1:$PORT" 2>"$T/stderr") || prog_status=$?
}

@test "each variable set to each hostile value: the program's output and status are unchanged" {
	local modes=(blocking poll epoll-lt select) var i k=0 problems=()
	LINES_SEEN=0
	for var in "${BACKOFF_VARIABLES[@]}"; do
		# One listener per variable, alive for as long as a loaded machine may take.
		start_listener "server-$var" 0 --count "${#HOSTILE[@]}" --life 600
		for i in "${!HOSTILE[@]}"; do
			run_probe "${modes[k++ % ${#modes[@]}]}" "$var=${HOSTILE[i]}"
			check_run "$var=${HOSTILE_NAMES[i]}" 1 "$var"
		done
	done
	printf '%s\n' "${problems[@]}" >&2
	assert_eq "${#problems[@]}" 0 "problems"
	# Most values are wrong for most variables: the lines were seen and checked.
	((LINES_SEEN > ${#HOSTILE[@]} * 10)) || fail "only $LINES_SEEN lines in all"
}

@test "every variable at once set to each hostile value: at most one line per variable" {
	local var i env problems=()
	LINES_SEEN=0
	start_listener server 0 --count "${#HOSTILE[@]}" --life 600
	for i in "${!HOSTILE[@]}"; do
		env=()
		for var in "${BACKOFF_VARIABLES[@]}"; do
			# A path taken as the log file would take the lines away from stderr, a
			# name taken as the programs served would leave the probe out, silent.
			[[ $var == BACKOFF_LOG_FILE || $var == BACKOFF_PROGRAMS ]] ||
				env+=("$var=${HOSTILE[i]}")
		done
		run_probe poll "${env[@]}"
		check_run "all=${HOSTILE_NAMES[i]}" "${#BACKOFF_VARIABLES[@]}" "${BACKOFF_VARIABLES[@]}"
	done
	printf '%s\n' "${problems[@]}" >&2
	assert_eq "${#problems[@]}" 0 "problems"
	# Most values are wrong for most variables: the lines were seen and checked.
	((LINES_SEEN > ${#HOSTILE[@]} * 10)) || fail "only $LINES_SEEN lines in all"
}
