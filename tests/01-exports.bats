#!/usr/bin/env bats
# The library exports the intercepted symbols and nothing else.

load helper

@test "make check-exports passes" {
	require_build
	run make -s -C "$ROOT" BUILD="$BUILD" check-exports
	printf '%s\n' "$output"
	assert_eq "$status" 0 "make check-exports status"
}
