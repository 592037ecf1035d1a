/* The blocking engine: one call retried in the calling thread, as engine/engine decides. */
#ifndef BACKOFF_DRIVERS_RETRY_H
#define BACKOFF_DRIVERS_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "engine/engine.h"
#include "counters/events.h"
#include "facts/record.h"
#include "engine/progress.h"
#include "config/target.h"

/*
 * The look that fate_wake asks to be an attempt (FATE_ATTEMPT, at @now_ns):
 * made with @attempt(@ctx).  True when it ends the wait, *err holding its
 * result (a success, or an error not in @retryable); else its failure is
 * news for the others (fate_attempt_failed) and the wait goes on.
 */
bool retry_look_attempt(struct fate *f, const struct config_errset *retryable,
			int (*attempt)(void *ctx, uint64_t deadline_ms), void *ctx, uint64_t now_ns,
			int *err);

/*
 * At the planned time of @p's attempt (@now_ns): how long ago another found
 * the destination down since our last real attempt (@f), into @ev, if the
 * engine asks (engine_facts: not for the call's last attempt); whether that
 * stands for the attempt is the engine's.  For the blocking loop and the
 * event loop alike.
 */
void retry_finding(const struct config *cfg, const struct retry_progress *p, const struct fate *f,
		   uint64_t now_ns, struct engine_event *ev);

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
	/*
	 * NULL, or a look at the destination every @look_ms between planned
	 * attempts (backoff wait: a local server that answered "not ready" is
	 * asked again), bounded by @deadline_ms, the planned attempt's time:
	 * true when the look was an attempt that stands for the planned one
	 * (its result in *err), false to wait on.
	 */
	bool (*look)(void *ctx, uint64_t deadline_ms, int *err);
	uint64_t look_ms;
	void *ctx;
	/*
	 * Shared fate (retry_blocking only): the call's place in its
	 * destination's fate, or NULL; whether the first attempt was left to
	 * the prober (not made: a real one is made before any give-up).
	 */
	struct fate *fate;
	bool first_waited;
	/* The destination's facts at the first failure (engine/engine): passed through at once. */
	bool known_down, more_addresses;
	uint64_t started_ms; /* when the call's first attempt began; 0: at its failure */
};

/*
 * Say what the engine's action @a asks to (@prober_tid: the prober a planned
 * attempt was left to, for ENGINE_SAY_LEFT), at @now_ms.  Thread-safe;
 * async-signal-safe.
 */
void retry_say(const struct events_subject *what, const struct engine_action *a, uint64_t now_ms,
	       uint64_t prober_tid);

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
