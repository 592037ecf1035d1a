/* The program's own wait deadline, and the timeout of each real wait within it. */
#ifndef BACKOFF_INTERCEPT_WAITCLOCK_H
#define BACKOFF_INTERCEPT_WAITCLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/config.h"
#include "core/pending.h"
#include "sys/clock.h"

struct waitclock {
	bool infinite;
	uint64_t deadline_ns;
};

/* @timeout_ns < 0: wait for ever. */
static inline void waitclock_start(struct waitclock *w, int64_t timeout_ns)
{
	w->infinite = timeout_ns < 0;
	w->deadline_ns = w->infinite ? 0 : clock_now_ns() + (uint64_t)timeout_ns;
}

static inline bool waitclock_expired(const struct waitclock *w)
{
	return !w->infinite && clock_now_ns() >= w->deadline_ns;
}

/*
 * The timeout of the next real wait: what is left of the program's own,
 * clamped to the next due retry so that it is made on time.  Returns false
 * for an unbounded wait (then *ts is untouched).
 */
static inline bool waitclock_next(const struct waitclock *w, struct timespec *ts)
{
	uint64_t now = clock_now_ns(), due_ms = pending_next_due(), left = UINT64_MAX;

	if (!w->infinite)
		left = w->deadline_ns > now ? w->deadline_ns - now : 0;
	if (due_ms != CONFIG_INFINITE) {
		uint64_t due_ns = due_ms * 1000000ULL;
		uint64_t until = due_ns > now ? due_ns - now : 0;

		if (until < left)
			left = until;
	}
	if (left == UINT64_MAX)
		return false;
	ts->tv_sec = (time_t)(left / 1000000000ULL);
	ts->tv_nsec = (long)(left % 1000000000ULL);
	return true;
}

/* What is left of the program's timeout, for select's timeval write-back. */
static inline uint64_t waitclock_left_ns(const struct waitclock *w)
{
	uint64_t now = clock_now_ns();

	return w->infinite || now >= w->deadline_ns ? 0 : w->deadline_ns - now;
}

#endif
