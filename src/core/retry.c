/* The retry loop: count, budget, plan and wait between the attempts of one call. */
#include "core/retry.h"

#include <errno.h>

#include "core/policy.h"
#include "sys/clock.h"
#include "sys/rng.h"

void retry_begin(const struct config *cfg, struct retry_progress *p, uint64_t budget_ms,
		 uint64_t now_ms)
{
	uint64_t budget = budget_ms < cfg->timeout_ms ? budget_ms : cfg->timeout_ms;

	p->attempt = 1;
	p->prev_ms = cfg->policy.base_ms;
	p->start_ms = now_ms;
	p->answered = 0;
	p->told = 0;
	p->deadline_ms = budget == CONFIG_INFINITE ? CONFIG_INFINITE : now_ms + budget;
	/*
	 * Each call draws from a sequence of its own: with BACKOFF_SEED the same
	 * for every call, whichever thread makes it (the one --schedule prints),
	 * else one seeded from the generator of the thread that plans its first
	 * retry (retry_plan): a call that never retries, the common case, does
	 * not seed a thread's generator (a getrandom per process).
	 */
	p->rng = cfg->seeded ? rng_seed_state(cfg->seed, 0) : 0;
}

bool retry_allowed(const struct config *cfg, const struct retry_progress *p, uint64_t now_ms)
{
	return (cfg->retries == CONFIG_INFINITE || p->attempt <= cfg->retries) &&
	       now_ms < p->deadline_ms;
}

bool retry_is_last(const struct config *cfg, const struct retry_progress *p, uint64_t wake_ms)
{
	return wake_ms >= p->deadline_ms ||
	       (cfg->retries != CONFIG_INFINITE && p->attempt + 1 > cfg->retries);
}

bool retry_plan(const struct config *cfg, const struct retry_call *c, struct retry_progress *p,
		int err, uint64_t now_ms, uint64_t *wake_ms)
{
	const char *reason;
	uint64_t delay;

	if (cfg->retries != CONFIG_INFINITE && p->attempt > cfg->retries) {
		reason = "retries";
		goto give_up;
	}
	if (now_ms >= p->deadline_ms) {
		reason = "timeout";
		goto give_up;
	}
	/* Not drawn yet (a state of 0 drawn by chance is drawn again: no matter). */
	if (p->rng == 0 && !cfg->seeded)
		p->rng = rng_next();
	delay = policy_next_delay(&cfg->policy, p->attempt, p->prev_ms, rng_step(&p->rng));
	p->prev_ms = delay;
	/* A wait never runs past the budget: the last attempt is made at its end. */
	*wake_ms = delay < p->deadline_ms - now_ms ? now_ms + delay : p->deadline_ms;
	events_retry(&c->what, p->attempt == 1, err, p->attempt, delay, *wake_ms - now_ms);
	/* A wait that takes the call past a few seconds is not silent by default. */
	if (!p->told && *wake_ms - p->start_ms >= CONFIG_TELL_WAIT_MS) {
		p->told = 1;
		events_waiting(&c->what, err, p->attempt, now_ms - p->start_ms,
			       p->deadline_ms == CONFIG_INFINITE ? CONFIG_INFINITE
								 : p->deadline_ms - now_ms);
	}
	return true;
give_up:
	/* What the program gets: an attempt our deadline cut is no answer of the kernel's. */
	if (err == ETIMEDOUT && p->answered)
		err = p->answered;
	events_giveup(&c->what, p->attempt == 1, err, p->attempt, now_ms - p->start_ms, reason);
	return false;
}

uint64_t retry_attempt_deadline(const struct config *cfg, const struct retry_progress *p,
				uint64_t cap_ms, uint64_t now_ms)
{
	uint64_t len = cfg->attempt_timeout_ms, end;

	if (cfg->attempt_until_next) {
		uint64_t next = policy_window_ms(&cfg->policy, p->attempt);

		if (next > len)
			len = next;
	}
	if (cap_ms < len)
		len = cap_ms;
	end = len == CONFIG_INFINITE ? CONFIG_INFINITE : now_ms + len;
	/* A budget of 0 retries nothing, and bounds nothing: the attempt timeout alone. */
	if (cfg->timeout_ms == 0)
		return end;
	return end < p->deadline_ms ? end : p->deadline_ms;
}

void retry_succeeded(const struct retry_call *c, const struct retry_progress *p, uint64_t now_ms)
{
	if (p->attempt > 1)
		events_success(&c->what, p->attempt, now_ms - p->start_ms);
}

/* What a wait between attempts ended with. */
enum wait_end {
	WAIT_DUE,    /* the planned time came */
	WAIT_NOW,    /* a success or a listener: attempt at once */
	WAIT_SIGNAL, /* cut short by a signal */
	WAIT_MADE,   /* a look was an attempt: its result is in *err */
};

/* Wait until @until_ns, with the destination's fate when the call shares it. */
static enum wait_end wait_for(const struct retry_call *c, uint64_t until_ns, int *err)
{
	uint64_t next;

	if (!c->fate)
		return clock_wait_until_ns(until_ns) != 0 ? WAIT_SIGNAL : WAIT_DUE;
	for (;;) {
		switch (fate_wake(c->fate, c->what.target, c->retryable, clock_now_ns(), until_ns,
				  true, c->attempt, c->ctx, err, &next)) {
		case FATE_DUE:
			return WAIT_DUE;
		case FATE_NOW:
			return WAIT_NOW;
		case FATE_MADE:
			return WAIT_MADE;
		case FATE_SLEEP:
			break;
		}
		if (fate_sleep(c->fate, next) != 0)
			return WAIT_SIGNAL;
	}
}

/* An attempt into a listener whose accept queue the look found full is silence: cut short. */
static uint64_t attempt_cap(const struct retry_call *c)
{
	return c->fate && c->fate->full ? CONFIG_LOCAL_ATTEMPT_MS : CONFIG_INFINITE;
}

int retry_blocking(const struct config *cfg, const struct retry_call *c, int first_err)
{
	struct retry_progress p;
	uint64_t wake, now_first = clock_now_ns();
	bool real = !c->first_waited;
	int err = first_err;

	retry_begin(cfg, &p, c->budget_ms, now_first / 1000000);
	p.answered = first_err == ETIMEDOUT ? 0 : first_err;
	/* The call began with its first attempt: the log's elapsed times count from there. */
	if (c->started_ms && c->started_ms < p.start_ms)
		p.start_ms = c->started_ms;
	/* Our first failure is news to the others (its errno included), unless it was theirs. */
	if (c->fate && real)
		fate_attempted(c->fate, first_err, now_first);
	for (;;) {
		uint64_t now_ns = clock_now_ns(), now_ms = now_ns / 1000000, wake_ns;
		enum wait_end end;
		bool last;

		if (!retry_plan(cfg, c, &p, err, now_ms, &wake))
			break;
		if (c->planned)
			c->planned(c->ctx);
		/* The wait is measured from now, not from now rounded down to the ms. */
		wake_ns = now_ns + (wake - now_ms) * 1000000;
		last = retry_is_last(cfg, &p, wake);
		end = wait_for(c, wake_ns, &err);
		if (end == WAIT_NOW || end == WAIT_MADE) {
			/* Woken before the planned time: the stats count the wait made. */
			uint64_t woke = clock_now_ns();

			if (woke < wake_ns)
				events_cut_short(&c->what, (wake_ns - woke) / 1000000,
						 end == WAIT_MADE);
		}
		if (end == WAIT_SIGNAL) {
			events_giveup(&c->what, false, err, p.attempt, clock_now_ms() - p.start_ms,
				      "signal");
			break;
		}
		p.attempt++;
		if (end == WAIT_DUE && !last && fate_left_to_other(c->fate, clock_now_ns())) {
			/* Another found it down since our last attempt: its result is ours. */
			events_left(&c->what, err, p.attempt, clock_now_ms() - p.start_ms,
				    (uint64_t)fate_prober(c->fate));
			continue;
		}
		if (end != WAIT_MADE)
			err = c->attempt(c->ctx, retry_attempt_deadline(cfg, &p, attempt_cap(c),
									clock_now_ms()));
		real = true;
		if (c->fate) {
			events_probed();
			fate_attempted(c->fate, err, clock_now_ns());
		}
		if (err == 0) {
			retry_succeeded(c, &p, clock_now_ms());
			break;
		}
		if (err != ETIMEDOUT)
			p.answered = err;
		if (!config_errset_has(c->retryable, err))
			break;
	}
	fate_leave(c->fate);
	if (!real) {
		/* Every attempt was left to the prober: the answer is the kernel's, now. */
		err = c->attempt(c->ctx,
				 retry_attempt_deadline(cfg, &p, attempt_cap(c), clock_now_ms()));
		fate_attempted(c->fate, err, clock_now_ns());
	}
	/*
	 * An attempt our deadline cut (the last one, made at the budget's end, has
	 * little time) is no answer of the kernel's: the call gives the last one
	 * the kernel gave, ETIMEDOUT only when it gave none.
	 */
	if (err == ETIMEDOUT && p.answered)
		err = p.answered;
	return err;
}
