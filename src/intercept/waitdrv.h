/* The wait driver shared by poll, select and epoll: due retries, one clamp, the program's deadline.
 */
#ifndef BACKOFF_INTERCEPT_WAITDRV_H
#define BACKOFF_INTERCEPT_WAITDRV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include "config/config.h"
#include "drivers/pending.h"
#include "sys/clock.h"

/*
 * Every wait with managed connects about is a loop: run the due retries,
 * take one snapshot (which fds to mask, and the earliest due retry among
 * them: mask and clamp from the same reading), wait until the program's
 * deadline or that retry, whichever is first, then classify the result.  A
 * wake-up the program must not see starts the loop again; the program's own
 * timeout is kept across the extra wake-ups.
 */
struct waitdrv {
	const struct config *cfg;
	bool infinite;
	int64_t timeout_ns;   /* the program's */
	uint64_t deadline_ns; /* 0 until a second wait or a clamp needs the clock */
};

/*
 * While a connect is managed no wait sleeps longer than this: a retry
 * scheduled by another thread while this one was already asleep in the same
 * epoll set is then made at most this late.
 */
#define WAITDRV_MAX_SLEEP_NS 1000000000ULL
/* The wait when the earliest due time is already past: another thread runs it. */
#define WAITDRV_PAST_DUE_NS 1000000ULL

/* Timeouts as the program gave them, in ns; -1: for ever (as is anything past 2^62 ns). */
static inline int64_t waitdrv_ms_to_ns(int ms)
{
	return ms < 0 ? -1 : (int64_t)ms * 1000000;
}

static inline int64_t waitdrv_sec_to_ns(int64_t sec, int64_t frac_ns)
{
	if (sec < 0 || frac_ns < 0)
		return 0;
	if (sec > (INT64_MAX / 4) / 1000000000 || frac_ns >= 1000000000)
		return -1;
	return sec * 1000000000 + frac_ns;
}

static inline int64_t waitdrv_ts_to_ns(const struct timespec *ts)
{
	return ts ? waitdrv_sec_to_ns((int64_t)ts->tv_sec, (int64_t)ts->tv_nsec) : -1;
}

static inline int64_t waitdrv_tv_to_ns(const struct timeval *tv)
{
	return tv ? waitdrv_sec_to_ns((int64_t)tv->tv_sec, (int64_t)tv->tv_usec * 1000) : -1;
}

/*
 * The program's deadline is taken from the clock before the first wait that
 * needs it: a wait for ever or for 0 ns that is not clamped reads no clock.
 */
static inline void waitdrv_begin(struct waitdrv *w, const struct config *cfg, int64_t timeout_ns)
{
	w->cfg = cfg;
	w->infinite = timeout_ns < 0;
	w->timeout_ns = timeout_ns;
	w->deadline_ns = 0;
}

/* The program's deadline; @now_ns the time if known (else 0). */
static inline uint64_t waitdrv_deadline(struct waitdrv *w, uint64_t now_ns)
{
	if (w->deadline_ns == 0)
		w->deadline_ns = (now_ns ? now_ns : clock_now_ns()) + (uint64_t)w->timeout_ns;
	return w->deadline_ns;
}

/*
 * Whether the program's timeout has passed, after a wait that returned no
 * event of the program's.  A timeout of 0 has, at once.
 */
static inline bool waitdrv_expired(struct waitdrv *w)
{
	if (w->infinite)
		return false;
	if (w->timeout_ns == 0)
		return true;
	return clock_now_ns() >= waitdrv_deadline(w, 0);
}

/* What is left of the program's timeout, in ns. */
static inline uint64_t waitdrv_left_ns(struct waitdrv *w)
{
	uint64_t now = clock_now_ns(), end;

	if (w->infinite)
		return 0;
	end = waitdrv_deadline(w, now);
	return now >= end ? 0 : end - now;
}

/* Run the retries due now; call before each snapshot.  No clock read when none is hidden. */
static inline void waitdrv_run_due(const struct waitdrv *w)
{
	if (pending_next_due() != CONFIG_INFINITE)
		pending_run_due(w->cfg, clock_now_ms());
}

/*
 * The timeout of the next real wait in ns (-1: none): what is left of the
 * program's, clamped to @due_ms (the snapshot's earliest due retry) and to
 * the process's earliest one.
 */
static inline int64_t waitdrv_timeout(struct waitdrv *w, uint64_t due_ms)
{
	uint64_t now, left = UINT64_MAX, global = pending_next_due();

	if (global < due_ms)
		due_ms = global;
	/*
	 * Nothing to clamp to, and a timeout that needs no deadline (none, or
	 * 0: a wait that is not repeated): no clock.
	 */
	if (due_ms == CONFIG_INFINITE && (w->infinite || w->timeout_ns == 0)) {
		if (w->infinite)
			return pending_any() ? (int64_t)WAITDRV_MAX_SLEEP_NS : -1;
		return 0;
	}
	now = clock_now_ns();
	if (!w->infinite) {
		uint64_t end = waitdrv_deadline(w, now);

		left = end > now ? end - now : 0;
	}
	if (due_ms != CONFIG_INFINITE) {
		/*
		 * A due time already past is another thread's scan to run: sleep a
		 * moment rather than spin on a zero timeout until it has.
		 */
		uint64_t due_ns = due_ms * 1000000ULL,
			 until = due_ns > now ? due_ns - now : WAITDRV_PAST_DUE_NS;

		if (until < left)
			left = until;
	}
	if (pending_any() && left > WAITDRV_MAX_SLEEP_NS)
		left = WAITDRV_MAX_SLEEP_NS;
	return left == UINT64_MAX ? -1 : (int64_t)left;
}

/* A timeout in ns as the millisecond argument of poll/epoll_wait, rounded up. */
static inline int waitdrv_ns_to_ms(int64_t ns)
{
	if (ns < 0)
		return -1;
	if (ns / 1000000 >= INT_MAX)
		return INT_MAX;
	return (int)((ns + 999999) / 1000000);
}

static inline struct timespec waitdrv_ns_to_ts(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

	return ts;
}

#endif
