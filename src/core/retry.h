/* The retry logic shared by every intercepted call: classify, budget, plan, wait, log. */
#ifndef BACKOFF_CORE_RETRY_H
#define BACKOFF_CORE_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/events.h"
#include "core/fate.h"
#include "core/progress.h"
#include "core/target.h"

/* One call being retried. */
struct retry_call {
	struct events_subject what;	       /* the call and its destination, for the log */
	const struct config_errset *retryable; /* errors worth another attempt */
	uint64_t budget_ms;		       /* CONFIG_INFINITE or a time budget */
	/*
	 * Make one more attempt, ended by @deadline_ms (monotonic; CONFIG_INFINITE:
	 * none) if it is still unanswered then: 0 on success, else the errno it
	 * failed with (ETIMEDOUT at the deadline).
	 */
	int (*attempt)(void *ctx, uint64_t deadline_ms);
	/* NULL, or told that an attempt failed and the next one is planned. */
	void (*planned)(void *ctx);
	void *ctx;
	/*
	 * Shared fate (retry_blocking only): the call's place in its
	 * destination's fate, or NULL; whether the first attempt was left to
	 * the prober (not made: a real one is made before any give-up).
	 */
	struct fate *fate;
	bool first_waited;
	uint64_t started_ms; /* when the call's first attempt began; 0: at its failure */
};

/* Start counting after the first attempt failed; @budget_ms as in retry_call. */
void retry_begin(const struct config *cfg, struct retry_progress *p, uint64_t budget_ms,
		 uint64_t now_ms);

/* Whether another attempt is allowed at @now_ms: retries left and budget not spent. */
bool retry_allowed(const struct config *cfg, const struct retry_progress *p, uint64_t now_ms);

/*
 * Whether the attempt planned at @wake_ms (the one after p->attempt) is the
 * last one allowed: no retry would follow it.  That one is always made for
 * real, whoever else probes, so that its error is the kernel's.
 */
bool retry_is_last(const struct config *cfg, const struct retry_progress *p, uint64_t wake_ms);

/*
 * Attempt p->attempt just failed with @err (0 if not known yet).  If another
 * attempt is allowed, draw its delay, log the retry and return true with
 * *wake_ms = when to make it (never past the deadline).  Otherwise log the
 * give-up and return false.  Thread-safe; async-signal-safe.
 */
bool retry_plan(const struct config *cfg, const struct retry_call *c, struct retry_progress *p,
		int err, uint64_t now_ms, uint64_t *wake_ms);

/*
 * When attempt p->attempt, made at @now_ms, is to be aborted if still
 * unanswered: BACKOFF_ATTEMPT_TIMEOUT after it (the grpc preset: no sooner
 * than the next planned attempt would be), and at most @cap_ms (a loopback
 * listener's full queue: CONFIG_LOCAL_ATTEMPT_MS, else CONFIG_INFINITE), never
 * past the call's deadline.
 * CONFIG_INFINITE: the kernel's own end.  Pure.
 */
uint64_t retry_attempt_deadline(const struct config *cfg, const struct retry_progress *p,
				uint64_t cap_ms, uint64_t now_ms);

/* Log and count the success of attempt p->attempt, if it was a retry. */
void retry_succeeded(const struct retry_call *c, const struct retry_progress *p, uint64_t now_ms);

/*
 * Retry @c after its first attempt failed with @first_err (retryable), with
 * the configured policy, retry count and budget (the smaller of
 * BACKOFF_TIMEOUT and c->budget_ms).  Returns 0 once an attempt succeeded, or
 * the errno of the last real attempt: on give-up, on a non-retryable error,
 * or when a signal cut the wait short.  Blocks the calling thread; holds no
 * lock and no resource across the waits; errno is not touched.
 */
int retry_blocking(const struct config *cfg, const struct retry_call *c, int first_err);

#endif
