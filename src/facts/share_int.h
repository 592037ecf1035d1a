/* What share.c and share_full.c have in common and no other module needs. */
#ifndef BACKOFF_FACTS_SHARE_INT_H
#define BACKOFF_FACTS_SHARE_INT_H

#include <stdint.h>
#include <time.h>

#include "facts/share.h"

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
