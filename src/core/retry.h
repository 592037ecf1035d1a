/* The retry logic shared by every intercepted call: classify, budget, plan, wait, log. */
#ifndef BACKOFF_CORE_RETRY_H
#define BACKOFF_CORE_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/target.h"

/* One call being retried. */
struct retry_call {
	const char *call; /* "connect", ... for the log */
	const struct target_addr *target;
	const char *name; /* printed instead when target is NULL: a host name */
	/* The log's name for a failure code; NULL: the codes are errno values. */
	const char *(*err_name)(int err);
	const struct config_errset *retryable; /* errors worth another attempt */
	uint64_t budget_ms;		       /* CONFIG_INFINITE or a time budget */
	/* Make one more attempt: 0 on success, else the errno it failed with. */
	int (*attempt)(void *ctx);
	void *ctx;
	/*
	 * Shared fate (retry_blocking only): the destination's slot in the state
	 * file, or NULL; how often to look for a listener while waiting (0:
	 * never, a remote destination); whether the first attempt was left to
	 * the prober (not made: a real one is made before any give-up).
	 */
	struct share_slot *shared;
	uint64_t look_ns;
	bool first_waited;
};

/* Where a call stands between attempts; plain data, owned by the caller. */
struct retry_progress {
	uint64_t attempt;     /* attempts made so far */
	uint64_t prev_ms;     /* the previous delay (decorrelated jitter) */
	uint64_t start_ms;    /* monotonic time of the first attempt */
	uint64_t deadline_ms; /* CONFIG_INFINITE or start + budget */
	uint64_t rng;	      /* this call's own random sequence (splitmix64 state) */
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

/*
 * Fill @out with the errors worth another attempt of a send that sent nothing
 * (it returned -1) on a blocking socket of @family and @type; @addressed: the
 * call names its destination (sendto, msg_name).  With AF_UNSPEC and type 0:
 * every error retried on some socket, a check that needs no system call.
 * Pure.
 */
void retry_send_errors(int family, int type, bool addressed, struct config_errset *out);

/*
 * What a name lookup's result is to retry_blocking: the resolve hooks
 * translate EAI_AGAIN and TRY_AGAIN into RETRY_DNS_AGAIN, every other failure
 * into RETRY_DNS_FAILED, which ends the retries at once.
 */
enum retry_dns_result {
	RETRY_DNS_OK = 0,
	RETRY_DNS_AGAIN = 1,
	RETRY_DNS_FAILED = 2,
};

/* Fill @out with the name lookup results worth another attempt.  Pure. */
void retry_dns_errors(struct config_errset *out);

/* Counters for BACKOFF_STATS. */
struct retry_stats {
	uint64_t calls, retries, giveups, waited_ms;
	uint64_t probed, waited; /* shared fate: attempts made (by a prober), left to another */
	uint64_t unmanaged;	 /* connects passed through for want of memory */
};

void retry_stats_read(struct retry_stats *out);

/* Count an attempt left to another prober (@waited) or made while others wait. */
void retry_count_shared(bool waited);

/* Count a connect that could not be managed.  Async-signal-safe. */
void retry_count_unmanaged(void);

/*
 * Say at info that @target is known down: its budget ran out @elapsed_ms
 * after its first failure, with no success.
 */
void retry_log_down(const char *call, const struct target_addr *target, uint64_t elapsed_ms);

/* Log a failed call that is passed through unretried, at debug level. */
void retry_log_pass(const char *call, const struct target_addr *target, int err,
		    const char *reason);

#endif
