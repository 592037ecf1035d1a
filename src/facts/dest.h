/* The budget of each destination in this process: one clock per address, and "known down". */
#ifndef BACKOFF_FACTS_DEST_H
#define BACKOFF_FACTS_DEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "config/target.h"

struct dest;

/* Destinations whose clock runs (failed since their last success): the fast path reads this. */
extern atomic_uint dest_clocks;

/* Whether any destination's clock runs: one relaxed load, for every successful connect. */
static inline bool dest_any_clock(void)
{
	return atomic_load_explicit(&dest_clocks, memory_order_relaxed) != 0;
}

/* Destinations known down now. */
extern atomic_uint dest_downs;

static inline bool dest_any_down(void)
{
	return atomic_load_explicit(&dest_downs, memory_order_relaxed) != 0;
}

/*
 * The record of destination @t for process @owner (0: this one; the
 * supervisor keeps one per supervised process), made on first use; NULL when BACKOFF_SHARED
 * is off, or when the table is full (then one warning, and the call keeps a
 * budget of its own, as with BACKOFF_SHARED=off).  Lock-free,
 * async-signal-safe.
 */
struct dest *dest_of(const struct config *cfg, const struct target_addr *t, pid_t owner);

/*
 * Whether @d is known down: its budget ran out with no success since.  A
 * connect to it makes one real attempt and returns the kernel's answer.
 */
bool dest_down(const struct dest *d);

/*
 * A failed attempt to @d, begun at @began_ms, at @now_ms: starts its clock
 * at @began_ms if it has none (the budget covers the attempt too).  Returns
 * what is left of its budget (BACKOFF_TIMEOUT from its first attempt) in ms,
 * or CONFIG_INFINITE.  @d NULL: the call's own budget, from @began_ms.
 */
uint64_t dest_budget_left(const struct config *cfg, struct dest *d, uint64_t began_ms,
			  uint64_t now_ms);

/*
 * A call to @d gave up at @now_ms: if its budget is spent, @d is known down
 * from now on (said once at info), and true is returned.
 */
bool dest_gave_up(const struct config *cfg, struct dest *d, const struct target_addr *t,
		  uint64_t now_ms);

/* A connect to @d succeeded: its clock stops and it is no longer known down. */
void dest_succeeded(struct dest *d);

/*
 * Shared fate in an event loop: one hidden connect of @d per process wakes
 * between its attempts (to look for a local listener, or to learn that
 * another process connected); the others wait for their planned attempt or
 * its release.  Whether @fd has that turn (taken if free or not renewed by
 * @now_ms), renewed until @until_ms.
 */
bool dest_look_turn(struct dest *d, int fd, uint64_t now_ms, uint64_t until_ms);

/* @fd's connect ended: its turn is free.  Returns whether it had it. */
bool dest_look_done(struct dest *d, int fd);

#endif
