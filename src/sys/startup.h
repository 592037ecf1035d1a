/* Where what every process writes at load is kept. */
#ifndef BACKOFF_SYS_STARTUP_H
#define BACKOFF_SYS_STARTUP_H

/*
 * A variable the load-time set-up writes, in any process, even one that never
 * connects, or that a healthy connect reads or writes (the fd table's and the
 * state file's small state, beside their large tables): kept together in the
 * data section, with the real symbols' pointers (sys/real.c), seven of which
 * the constructor resolves, rather than each in a page of its own among the
 * large tables of the zero-filled section (a fault each, about 2 us of every
 * exec).  Zero-initialised like any static.
 */
#define STARTUP_DATA __attribute__((section(".data.startup")))

/*
 * A function run once at load: kept with the others of its kind at the start
 * of the code, where the constructor is, so that loading reads one window of
 * code pages rather than one more for each (a fault each).  Run once per
 * process, it is optimised for size.
 */
#define STARTUP_CODE __attribute__((cold))

/*
 * A large zero-filled object that begins a page, without moving the start
 * of the zero-filled section, whose first page holds the state above: GCC on
 * x86-64 puts it in .lbss, after .bss.  Elsewhere it is not aligned (clang
 * would write the section's zeros into the file).
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PAGE_BSS __attribute__((section(".lbss"), aligned(4096)))
#else
#define PAGE_BSS
#endif

#endif
