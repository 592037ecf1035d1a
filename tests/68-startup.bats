#!/usr/bin/env bats
# What a preloaded process that never connects pays at start: bindings, system calls, instructions.

load helper

setup() {
	require_build
	# The sanitizers' runtime, preloaded first, has start-up costs of its own.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
}

# relocations [LIB]: the symbol relocations the loader made before main of /bin/true, with
# LIB preloaded (none without), from LD_DEBUG=statistics.
relocations() {
	env ${1:+LD_PRELOAD="$1"} LD_DEBUG=statistics /bin/true 2>&1 |
		sed -nE 's/^[[:space:]]*[0-9]+:[[:space:]]+number of relocations: ([0-9]+)$/\1/p' | head -1
}

# syscalls OUT [LIB]: the names of the system calls /bin/true makes, one a line, sorted,
# but for the open of the host-wide settings file (in OUT.conf).
syscalls() {
	strace -f -qq -o "$1.raw" ${2:+-E LD_PRELOAD="$2"} /bin/true
	grep -F /etc/libbackoff.conf "$1.raw" >"$1.conf" || true
	grep -vF /etc/libbackoff.conf "$1.raw" |
		sed -nE 's/^([0-9]+ +)?([a-z0-9_]+)\(.*/\2/p' | sort >"$1"
}

@test "the library's C library calls are bound at load (full RELRO), and they stay few" {
	local without with
	# Bound at load, so that the table of their addresses is read-only once loaded.
	run readelf -d "$BUILD/libbackoff.so"
	assert_match "$output" "FLAGS[^\n]*BIND_NOW" "the library's dynamic flags"
	# Never unloaded: the fork handlers it registers must not outlive it.
	assert_match "$output" "FLAGS_1[^\n]*NODELETE" "the library's dynamic flags"
	without=$(relocations)
	with=$(relocations "$LIB")
	[[ -n $without && -n $with ]] || fail "no LD_DEBUG=statistics figures: '$without' '$with'"
	# One a C library import (12 here: system calls go through syscall(), sys/kcall.h; the
	# string, memory and address-text functions are the library's own, sys/cstring.c; no
	# start files, sys/dso.c): each costs every preloaded process a lookup at load.
	assert_between "$((with - without))" 0 16 "symbol relocations the preload adds at start"
	# Tables of names held in place rather than as pointers, hooks found by their address
	# range: each pointer set at load is a relocation in every process (406 of them, 13
	# instructions each); what is left is the real symbols' pointers, set to their stubs.
	run readelf -rW "$BUILD/libbackoff.so"
	assert_between "$(grep -c '_RELATIVE ' <<<"$output")" 0 60 "relative relocations"
	# Each version of the C library it needs is checked at every load: on x86-64 glibc,
	# three (sys/symver.c binds dlsym, pthread_once and clock_gettime at GLIBC_2.2.5).
	if [[ $(uname -m) == x86_64 ]] && ldd --version 2>&1 | grep -qi glibc; then
		run readelf -V "$BUILD/libbackoff.so"
		assert_between "$(grep -c 'Name: GLIBC_' <<<"$output")" 1 3 "C library versions needed"
	fi
	# Static TLS only: a general-dynamic variable imports __tls_get_addr, bound at start and
	# called at each use.
	run nm -D --undefined-only "$BUILD/libbackoff.so"
	[[ $output != *__tls_get_addr* ]] || fail "the library imports __tls_get_addr"
}

@test "a process that never connects makes one system call of libbackoff's at start, the open of the host-wide file" {
	require_strace
	syscalls "$T/without"
	syscalls "$T/with" "$LIB"
	local extra
	# Absent (tests/75-host-wide.bats tries it present): one failed open, nothing more.
	[[ -e /etc/libbackoff.conf ]] || assert_eq "$(grep -c . "$T/with.conf")" 1 \
		"system calls naming /etc/libbackoff.conf: $(cat "$T/with.conf")"
	extra=$(comm -13 "$T/without" "$T/with")
	# The loader opening, mapping and protecting the library, and pthread_once's wake.
	run grep -vxE 'openat|read|pread64|newfstatat|fstat|mmap|mprotect|close|futex' <<<"$extra"
	assert_eq "$output" "" "system calls beyond the loader's mapping of the library"
	assert_between "$(grep -c . <<<"$extra")" 1 11 "system calls the preload adds"
}

@test "the constructor of a process with no BACKOFF variable runs in under 20,000 instructions" {
	require_program valgrind
	LD_PRELOAD="$LIB" valgrind --tool=callgrind --callgrind-out-file="$T/cg" /bin/true \
		2>"$T/valgrind.log" || fail "valgrind: $(tail -5 "$T/valgrind.log")"
	local n
	n=$(callgrind_annotate --inclusive=yes --threshold=100 "$T/cg" |
		sed -nE 's/^ *([0-9,]+) .*:init_constructor .*/\1/p' | tr -d ,)
	[[ -n $n ]] || fail "no init_constructor in the profile"
	# About 8,600 here, 6,600 of them the real symbols of the async-signal-safe calls (seven
	# dlsym), then the environment's scan and the defaults; zeroing all of struct config
	# alone took 13,000.
	assert_between "$n" 1 20000 "instructions of the constructor"
}

@test "what every process writes at load, and the small state a healthy connect touches, lies in one page, that of the real symbols' pointers" {
	require_program nm
	# The real symbols' pointers: seven resolved at load (the async-signal-safe calls), so
	# written anyway.  A variable of the zero-filled section costs a page fault of its own
	# (about 2 us of each exec); so would the terminators of the configuration's unset paths.
	run nm "$BUILD/libbackoff.so"
	local data page name addr out=""
	data=$(sed -nE 's/^([0-9a-f]+) [dD] real_ptr_connect$/\1/p' <<<"$output")
	[[ -n $data ]] || fail "no real_ptr_connect in the symbol table"
	page=$((0x$data >> 12))
	# A connect's small state among the large tables (the fd table's, the state file's)
	# would cost a page each: five more faults per process that connects once.
	for name in init_done init_once env_seen env_seen_count env_secure init_config log_json \
		log_path rng_seed rng_seeded share_cfg dest_clocks dest_downs share_map share_tried \
		share_pid share_netns fdtable_managed fdtable_first fdtable_attention fdtable_epoch \
		top_fd owner_pid marking fdtable_first_used; do
		addr=$(sed -nE "s/^([0-9a-f]+) [bBdD] $name\$/\\1/p" <<<"$output")
		[[ -n $addr ]] || fail "no $name in the symbol table"
		(((0x$addr >> 12) == page)) || out+="$name "
	done
	assert_eq "$out" "" "variables written at load outside the page of real_ptr_connect ($data)"
}

@test "a process's first socket costs the fd table one page, found without its directory" {
	# The slots of fds 0 to 255 are in place: through the directory and the middle page
	# (each read first, mapping the zero page, then written) it cost 7 faults.
	local without with
	without=$("$BUILD/helpers/first-socket") || fail "first-socket failed"
	with=$(LD_PRELOAD="$LIB" "$BUILD/helpers/first-socket") || fail "first-socket failed"
	((with - without <= 4)) || fail "the first socket cost $with minor faults under the library, $without without"
}

