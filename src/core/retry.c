/* The blocking retry loop and its counters. */
#include "core/retry.h"

#include <stdatomic.h>

#include "core/policy.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/rng.h"

static atomic_uint_fast64_t stat_calls, stat_retries, stat_giveups, stat_waited_ms;

static void count(atomic_uint_fast64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

void retry_stats_read(struct retry_stats *out)
{
	out->calls = atomic_load_explicit(&stat_calls, memory_order_relaxed);
	out->retries = atomic_load_explicit(&stat_retries, memory_order_relaxed);
	out->giveups = atomic_load_explicit(&stat_giveups, memory_order_relaxed);
	out->waited_ms = atomic_load_explicit(&stat_waited_ms, memory_order_relaxed);
}

static void log_simple(enum config_log_level level, const char *event, const struct retry_call *c,
		       int err, uint64_t attempt, int64_t delay_ms, int64_t elapsed_ms,
		       const char *reason)
{
	struct log_event ev = {
		.event = event,
		.call = c->call,
		.target = c->target,
		.err = err,
		.attempt = attempt,
		.delay_ms = delay_ms,
		.elapsed_ms = elapsed_ms,
		.reason = reason,
	};

	log_event(level, &ev);
}

void retry_log_pass(const char *call, const struct target_addr *target, int err,
		    const char *reason)
{
	struct retry_call c = { .call = call, .target = target };

	if (log_enabled(CONFIG_LOG_DEBUG))
		log_simple(CONFIG_LOG_DEBUG, "pass", &c, err, 0, LOG_NONE, LOG_NONE, reason);
}

int retry_blocking(const struct config *cfg, const struct retry_call *c, int first_err)
{
	uint64_t start = clock_now_ms(), now, deadline = CONFIG_INFINITE;
	uint64_t budget = c->budget_ms < cfg->timeout_ms ? c->budget_ms : cfg->timeout_ms;
	uint64_t attempt = 1, prev = cfg->policy.base_ms;
	const char *reason;
	int err = first_err;

	if (budget != CONFIG_INFINITE)
		deadline = start + budget;
	count(&stat_calls, 1);
	for (;;) {
		uint64_t delay, wake;

		if (cfg->retries != CONFIG_INFINITE && attempt > cfg->retries) {
			reason = "retries";
			break;
		}
		now = clock_now_ms();
		if (now >= deadline) {
			reason = "timeout";
			break;
		}
		delay = policy_next_delay(&cfg->policy, attempt, prev, rng_next());
		prev = delay;
		/* A wait never runs past the budget: the last attempt is made at its end. */
		wake = delay < deadline - now ? now + delay : deadline;
		log_simple(CONFIG_LOG_INFO, "retry", c, err, attempt, (int64_t)delay, LOG_NONE, NULL);
		count(&stat_retries, 1);
		if (clock_wait_until(wake) != 0) {
			count(&stat_waited_ms, clock_now_ms() - now);
			reason = "signal";
			break;
		}
		count(&stat_waited_ms, wake - now);
		attempt++;
		err = c->attempt(c->ctx);
		if (err == 0) {
			log_simple(CONFIG_LOG_INFO, "success", c, 0, attempt, LOG_NONE,
				   (int64_t)(clock_now_ms() - start), NULL);
			return 0;
		}
		if (!config_errset_has(c->retryable, err))
			return err;
	}
	count(&stat_giveups, 1);
	log_simple(CONFIG_LOG_WARN, "giveup", c, err, attempt, LOG_NONE,
		   (int64_t)(clock_now_ms() - start), reason);
	return err;
}
