/* The retry loop shared by every intercepted call: classify, budget, wait, log. */
#ifndef BACKOFF_CORE_RETRY_H
#define BACKOFF_CORE_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/target.h"

/* One call being retried. */
struct retry_call {
	const char *call;                      /* "connect", ... for the log */
	const struct target_addr *target;
	const struct config_errset *retryable; /* errors worth another attempt */
	uint64_t budget_ms;                    /* CONFIG_INFINITE or a time budget */
	/* Make one more attempt: 0 on success, else the errno it failed with. */
	int (*attempt)(void *ctx);
	void *ctx;
};

/*
 * Retry @c after its first attempt failed with @first_err (retryable), with
 * the configured policy, retry count and budget (the smaller of
 * BACKOFF_TIMEOUT and c->budget_ms).  Returns 0 once an attempt succeeded, or
 * the errno of the last real attempt: on give-up, on a non-retryable error,
 * or when a signal cut the wait short.  Blocks the calling thread; holds no
 * lock and no resource across the waits; errno is not touched.
 */
int retry_blocking(const struct config *cfg, const struct retry_call *c, int first_err);

/* Counters for BACKOFF_STATS. */
struct retry_stats {
	uint64_t calls, retries, giveups, waited_ms;
};

void retry_stats_read(struct retry_stats *out);

/* Log a failed call that is passed through unretried, at debug level. */
void retry_log_pass(const char *call, const struct target_addr *target, int err,
		    const char *reason);

#endif
