/* What the state file's modules (share, share_full, share_view) have in common and no other needs.
 */
#ifndef BACKOFF_FACTS_SHARE_INT_H
#define BACKOFF_FACTS_SHARE_INT_H

#include <stdint.h>
#include <time.h>

#include "facts/share.h"

/*
 * A slot nobody has used for this long (no attempt, look, lease or sleeper)
 * may be taken for another destination: the table holds the destinations
 * being waited for, not every one ever refused.  A count of sleepers that
 * a killed process left behind is not believed after an hour.
 */
#define SHARE_IDLE_NS (60ULL * 1000000000ULL)
#define SHARE_SLEEPERS_NS (3600ULL * 1000000000ULL)
/* Whether @t is at least @age before @now (a time in the future is not). */
static inline bool share_older_than(uint64_t t, uint64_t now, uint64_t age)
{
	return t <= now && now - t >= age;
}

/* The lease of loop word @w, if it runs at @now (CLOCK_MONOTONIC ns): its seconds left, else 0. */
static inline unsigned share_loop_lease_left(uint64_t w, uint64_t now)
{
	unsigned left =
		(unsigned)(((w & 0xffff) + 0x10000 - (now / 1000000000ULL & 0xffff)) & 0xffff);

	return (w >> 16 & 0xffff) != 0 && left <= SHARE_LOOP_LEASE_MAX_S ? left : 0;
}

/*
 * The destination in @d and the network namespace it was written from
 * (*netns), if it is whole and the one of @key: read, bounded, and hashed
 * again.
 */
bool share_read_dest(const struct share_dest *d, uint64_t key, struct target_addr *t,
		     uint64_t *netns);

/* A futex call on @word, a word of the mapped file (never FUTEX_PRIVATE_FLAG). */
long share_futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts);

/*
 * Sleep while @word (a word of the mapped file) holds @val, until @until_ns
 * (CLOCK_MONOTONIC), counted in @sleepers while asleep: 1 when woken or the
 * word changed, 0 at @until_ns, EINTR when a signal that may not restart
 * the call cut it short.  errno preserved.
 */
int share_sleep(_Atomic uint32_t *word, uint32_t val, uint64_t until_ns,
		_Atomic uint32_t *sleepers);

/* @a - @b modulo 2^32: the file's counters and millisecond stamps wrap on purpose. */
static inline uint32_t share_wrap_sub(uint32_t a, uint32_t b)
{
	return (uint32_t)((uint64_t)a + 0x100000000ULL - b);
}

/* The connect hook's gate stays open for @key's bucket until @until (CLOCK_MONOTONIC ns). */
void share_gate_until(struct share_head *h, uint64_t key, uint64_t until);

#endif
