/* The blocking engine: the attempts of one call made and waited for in the calling thread. */
#include "drivers/retry.h"

#include <errno.h>

#include "sys/clock.h"
#include "sys/rng.h"

void retry_say(const struct events_subject *what, const struct engine_action *a, uint64_t now_ms,
	       uint64_t prober_tid)
{
	if (a->say & ENGINE_SAY_PASS)
		events_pass(what->call, what->target, a->err, a->reason);
	if (a->say & ENGINE_SAY_LEFT)
		events_left(what, a->err, a->attempt, a->elapsed_ms, prober_tid);
	if (a->say & ENGINE_SAY_RETRY)
		events_retry(what, a->first, a->err, a->attempt, a->delay_ms, a->until_ms - now_ms);
	if (a->say & ENGINE_SAY_WAITING)
		events_waiting(what, a->err, a->attempt, a->elapsed_ms, a->left_ms);
	if (a->say & ENGINE_SAY_GIVE_UP)
		events_giveup(what, a->first, a->err, a->attempt, a->elapsed_ms, a->reason);
	if (a->say & ENGINE_SAY_SUCCESS)
		events_success(what, a->attempt, a->elapsed_ms);
	if (a->say & ENGINE_SAY_EARLY)
		events_woke_early(a->early_ms);
	if (a->say & ENGINE_SAY_ENDED)
		events_ended(what, a->err, a->attempt, a->elapsed_ms);
}

/* What a wait between attempts ended with. */
enum wait_end {
	WAIT_DUE,    /* the planned time came */
	WAIT_NOW,    /* a success or a listener: attempt at once */
	WAIT_SIGNAL, /* cut short by a signal */
	WAIT_MADE,   /* a look was an attempt: its result is in *err */
};

bool retry_look_attempt(struct fate *f, const struct config_errset *retryable,
			int (*attempt)(void *ctx, uint64_t deadline_ms), void *ctx, uint64_t now_ns,
			int *err)
{
	*err = attempt(ctx, CONFIG_INFINITE);
	if (*err == 0 || !engine_retries(retryable, *err))
		return true;
	fate_attempt_failed(f, *err, now_ns);
	return false;
}

/* Wait until @until_ns, with the destination's fate when the call shares it. */
static enum wait_end wait_until(const struct retry_call *c, uint64_t until_ns, int *err)
{
	uint64_t next;

	if (!c->fate)
		return clock_wait_until_ns(until_ns) != 0 ? WAIT_SIGNAL : WAIT_DUE;
	for (;;) {
		uint64_t now = clock_now_ns();

		switch (fate_wake(c->fate, c->what.target, now, until_ns, true, &next)) {
		case FATE_DUE:
			return WAIT_DUE;
		case FATE_NOW:
			return WAIT_NOW;
		case FATE_ATTEMPT:
			if (retry_look_attempt(c->fate, c->retryable, c->attempt, c->ctx, now, err))
				return WAIT_MADE;
			break;
		case FATE_SLEEP:
			break;
		}
		if (fate_sleep(c->fate, next) != 0)
			return WAIT_SIGNAL;
	}
}

/* wait_until, with a look every c->look_ms meanwhile when the call has one. */
static enum wait_end wait_for(const struct retry_call *c, uint64_t until_ns, int *err)
{
	for (;;) {
		uint64_t look_ns = c->look ? clock_now_ns() + c->look_ms * 1000000 : UINT64_MAX;
		enum wait_end wend = wait_until(c, look_ns < until_ns ? look_ns : until_ns, err);

		if (wend != WAIT_DUE || look_ns >= until_ns)
			return wend;
		if (c->look(c->ctx, until_ns / 1000000, err))
			return WAIT_MADE;
	}
}

void retry_finding(const struct config *cfg, const struct retry_progress *p, const struct fate *f,
		   uint64_t now_ns, struct engine_event *ev)
{
	uint64_t age;

	ev->found = false;
	if (!(engine_facts(cfg, p, ENGINE_DUE) & ENGINE_FACTS_FINDING))
		return;
	age = fate_finding_age(f, now_ns);
	ev->found = age != UINT64_MAX;
	ev->found_age_ns = age;
}

int retry_blocking(const struct config *cfg, const struct retry_call *c, int first_err)
{
	struct retry_progress p;
	struct engine_event ev = {
		.kind = ENGINE_FAILED,
		.err = first_err,
		.theirs = c->first_waited,
		.known_down = c->known_down,
		.more_addresses = c->more_addresses,
		.budget_left_ms = CONFIG_INFINITE,
	};
	struct engine_action a;
	uint64_t now_ns = clock_now_ns();
	bool made = false, left = false;
	int err = first_err;

	/* The call began with its first attempt: the log's elapsed times count from there. */
	engine_begin(cfg, &p, c->budget_ms, now_ns / 1000000, c->started_ms, NULL);
	/* Our first failure is news to the others (its errno included), unless it was theirs. */
	if (c->fate && !c->first_waited)
		fate_attempted(c->fate, first_err, now_ns);
	for (;;) {
		uint64_t now_ms = now_ns / 1000000, wake_ns;
		enum wait_end wend;

		ev.now_ms = now_ms;
		ev.queue_full = c->fate && c->fate->full;
		ev.seed = engine_facts(cfg, &p, ev.kind) & ENGINE_FACTS_SEED ? rng_next() : 0;
		a = engine_step(cfg, c->retryable, &p, &ev);
		retry_say(&c->what, &a, now_ms,
			  a.say & ENGINE_SAY_LEFT ? (uint64_t)fate_prober(c->fate) : 0);
		if (a.say & ENGINE_SAY_LEFT)
			fate_left(c->fate); /* one attempt saved, as backoff status counts them */
		if (a.what == ENGINE_END)
			break;
		if (a.what == ENGINE_ATTEMPT) {
			/* The one real attempt of a call that left every other to the prober. */
			if (a.final && !left) {
				fate_leave(c->fate);
				left = true;
			}
			if (!made)
				err = c->attempt(c->ctx, a.until_ms);
			made = false;
			if (c->fate) {
				if (!a.final)
					events_probed();
				fate_attempted(c->fate, err, clock_now_ns());
			}
			ev.kind = err == 0 ? ENGINE_CONNECTED : ENGINE_FAILED;
			ev.err = err;
			ev.theirs = false;
			now_ns = clock_now_ns();
			continue;
		}
		/* ENGINE_WAIT; the wait is measured from now, not from now rounded down to the ms.
		 */
		if (c->planned)
			c->planned(c->ctx);
		wake_ns = now_ns + (a.until_ms - now_ms) * 1000000;
		wend = wait_for(c, wake_ns, &err);
		now_ns = clock_now_ns();
		/* Woken before the planned time: the stats count the wait made. */
		if ((wend == WAIT_NOW || wend == WAIT_MADE) && now_ns < wake_ns)
			events_cut_short(&c->what, (wake_ns - now_ns) / 1000000, wend == WAIT_MADE);
		made = wend == WAIT_MADE;
		ev.kind = wend == WAIT_SIGNAL ? ENGINE_SIGNAL : ENGINE_DUE;
		ev.theirs = false;
		ev.found = false;
		if (wend == WAIT_DUE)
			retry_finding(cfg, &p, c->fate, now_ns, &ev);
	}
	if (!left)
		fate_leave(c->fate);
	return a.err;
}
