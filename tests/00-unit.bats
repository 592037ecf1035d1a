#!/usr/bin/env bats
# Unit-test drivers of the pure core (policy, config, target), built by make.

load helper

@test "every unit driver in build/unit exits 0" {
	local drivers=() d failed=()
	for d in "$BUILD"/unit/*; do
		[[ -f $d && -x $d ]] && drivers+=("$d")
	done
	((${#drivers[@]} > 0)) || skip "no unit drivers in $BUILD/unit"
	for d in "${drivers[@]}"; do
		if ! timeout 60 "$d" >"$T/${d##*/}.log" 2>&1; then
			failed+=("${d##*/}")
			sed "s|^|${d##*/}: |" "$T/${d##*/}.log" >&2
		fi
	done
	assert_eq "${failed[*]}" "" "failing unit drivers"
}
