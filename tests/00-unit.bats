#!/usr/bin/env bats
# Unit-test drivers of the pure core (policy, config, target) and of sys/listen on real sockets, built by make.

load helper

@test "every unit driver in build/unit exits 0" {
	local drivers=() d failed=()
	for d in "$BUILD"/unit/*; do
		[[ -f $d && -x $d ]] && drivers+=("$d")
	done
	# make builds one driver per tests/unit/*.c: none means a broken build, not a pass.
	((${#drivers[@]} > 0)) || fail "no unit drivers in $BUILD/unit: run make first" || return
	assert_eq "${#drivers[@]}" "$(find "$ROOT/tests/unit" -name '*.c' | wc -l)" \
		"unit drivers built, one per tests/unit/*.c" || return
	for d in "${drivers[@]}"; do
		if ! timeout 60 "$d" >"$T/${d##*/}.log" 2>&1; then
			failed+=("${d##*/}")
			sed "s|^|${d##*/}: |" "$T/${d##*/}.log" >&2
		fi
	done
	assert_eq "${failed[*]}" "" "failing unit drivers"
}
