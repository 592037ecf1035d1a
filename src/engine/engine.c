/* The rules of one call's attempts: count, budget, plan, give up; pure. */
#include "engine/engine.h"

#include <errno.h>
#include <sys/socket.h>

#include "engine/policy.h"
#include "sys/rng.h"
#include "sys/startup.h"

bool engine_takes(const struct config *cfg, const struct target_addr *t)
{
	return cfg->enabled && target_matches(&cfg->targets, t);
}

const char *engine_why_not(const struct config *cfg, const struct target_addr *t, int type,
			   bool blocking)
{
	if (type != SOCK_STREAM && !(type == SOCK_DGRAM && t->family == AF_UNIX))
		return "not-stream";
	if (!blocking && (type == SOCK_DGRAM || !cfg->nonblock))
		return "nonblocking";
	return engine_takes(cfg, t) ? NULL : "excluded";
}

void engine_begin(const struct config *cfg, struct retry_progress *p, uint64_t budget_ms,
		  uint64_t now_ms, uint64_t first_ms, const struct engine_again *again)
{
	uint64_t budget = budget_ms < cfg->timeout_ms ? budget_ms : cfg->timeout_ms;
	bool later = first_ms > now_ms;

	p->attempt = later ? 0 : 1;
	p->prev_ms = cfg->policy.base_ms;
	p->start_ms = first_ms && !later ? first_ms : now_ms;
	p->planned_ms = later ? first_ms : now_ms;
	p->answer_err = p->last_err = 0;
	p->told = p->real = p->final = false;
	p->deadline_ms = budget == CONFIG_INFINITE ? CONFIG_INFINITE : now_ms + budget;
	/*
	 * Each call draws from a sequence of its own: with BACKOFF_SEED the same
	 * for every call, whichever thread makes it (the one --schedule prints),
	 * else one seeded from the generator of the thread that plans its first
	 * retry (ENGINE_FACTS_SEED): a call that never retries, the common case,
	 * does not seed a thread's generator (a getrandom per process).
	 */
	p->rng = cfg->seeded ? rng_seed_state(cfg->seed, 0) : 0;
	p->again_until_ms = again ? again->until_ms : 0;
	p->again_local = again && again->local;
}

/*
 * When the new connection of an early close (@p), under way or made at
 * @now_ms, is next looked at: at its time, and after ENGINE_ACCEPT_MS first
 * when its destination is local (a listener that keeps listening but
 * accepts no more served its one connection).
 */
static uint64_t again_look_at(const struct retry_progress *p, uint64_t now_ms)
{
	return p->again_local && now_ms + ENGINE_ACCEPT_MS < p->again_until_ms
		       ? now_ms + ENGINE_ACCEPT_MS
		       : p->again_until_ms;
}

/* Why no attempt may follow attempt p->attempt at @now_ms: its retries or its budget spent. */
static const char *spent(const struct config *cfg, const struct retry_progress *p, uint64_t now_ms)
{
	if (cfg->retries != CONFIG_INFINITE && p->attempt > cfg->retries)
		return "retries";
	return now_ms >= p->deadline_ms ? "timeout" : NULL;
}

/* Whether the attempt planned at @wake_ms (the one after p->attempt) is the last one allowed. */
static bool is_last(const struct config *cfg, const struct retry_progress *p, uint64_t wake_ms)
{
	struct retry_progress next = *p;

	next.attempt++;
	return spent(cfg, &next, wake_ms) != NULL;
}

/* The facts of its destination an event of @kind of a connect of the program's own (@p) reads. */
static unsigned facts_of(const struct config *cfg, const struct retry_progress *p,
			 enum engine_event_kind kind)
{
	if (kind == ENGINE_DUE)
		return is_last(cfg, p, p->planned_ms) ? 0 : ENGINE_FACTS_FINDING;
	if (kind != ENGINE_FAILED && kind != ENGINE_HELD)
		return 0;
	return p->attempt == 1 ? ENGINE_FACTS_DEST | ENGINE_FACTS_ADDRESSES : ENGINE_FACTS_DEST;
}

unsigned engine_facts(const struct config *cfg, const struct retry_progress *p,
		      enum engine_event_kind kind)
{
	if (p->again_until_ms)
		return !p->again_local				    ? 0
		       : kind == ENGINE_DUE || kind == ENGINE_EARLY ? ENGINE_FACTS_GONE
		       : kind == ENGINE_LOOK			    ? ENGINE_FACTS_ACCEPT
								    : 0;
	return facts_of(cfg, p, kind) |
	       ((kind == ENGINE_FAILED || kind == ENGINE_DUE) && p->rng == 0 && !cfg->seeded
			? ENGINE_FACTS_SEED
			: 0);
}

uint64_t engine_first_bound_ms(const struct config *cfg, const struct target_addr *t)
{
	bool retried = cfg->timeout_ms != 0 && cfg->retries != 0;

	if (cfg->first_attempt_ms == CONFIG_INFINITE ||
	    (t->family != AF_INET && t->family != AF_INET6) || !engine_takes(cfg, t))
		return CONFIG_INFINITE;
	return target_is_loopback(t) && retried && CONFIG_LOCAL_ATTEMPT_MS < cfg->first_attempt_ms
		       ? CONFIG_LOCAL_ATTEMPT_MS
		       : cfg->first_attempt_ms;
}

uint64_t engine_attempt_deadline(const struct config *cfg, const struct retry_progress *p,
				 const struct target_addr *first, bool queue_full, bool known_down,
				 uint64_t now_ms)
{
	uint64_t len = cfg->attempt_timeout_ms, until, cap = CONFIG_INFINITE;

	/* A new connection of an early close: its look, whatever the policy. */
	if (p->again_until_ms)
		return again_look_at(p, now_ms);
	if (queue_full)
		cap = CONFIG_LOCAL_ATTEMPT_MS;
	else if (first && p->attempt == 1)
		cap = engine_first_bound_ms(cfg, first);

	if (cfg->attempt_until_next && !known_down) {
		uint64_t next = policy_window_ms(&cfg->policy, p->attempt);

		if (next > len)
			len = next;
	}
	if (cap < len)
		len = cap;
	until = len == CONFIG_INFINITE ? CONFIG_INFINITE : now_ms + len;
	/*
	 * A budget of 0 retries nothing, and bounds nothing: the attempt timeout
	 * alone; nor does a destination known down, whose one attempt is the
	 * kernel's, watched.
	 */
	if (cfg->timeout_ms == 0 || known_down)
		return until;
	return until < p->deadline_ms ? until : p->deadline_ms;
}

/*
 * The bound of any call's first attempt (engine_attempt_deadline of an
 * attempt 1 at 0, without a cap): kept in cfg->first_attempt_ms, computed
 * once.  CONFIG_INFINITE when the library is off.
 */
static uint64_t first_attempt_ms(const struct config *cfg)
{
	/* A call begun at 0 (engine_begin): its budget's end is BACKOFF_TIMEOUT. */
	struct retry_progress p = { .attempt = 1, .deadline_ms = cfg->timeout_ms };

	return cfg->enabled ? engine_attempt_deadline(cfg, &p, NULL, false, false, 0)
			    : CONFIG_INFINITE;
}

STARTUP_CODE void engine_derive(struct config *cfg)
{
	unsigned i;

	cfg->first_attempt_ms = first_attempt_ms(cfg);
	/* An entry's own entries: none. */
	for (i = 0; i < cfg->dest_count; i++)
		cfg->dests[i].cfg.first_attempt_ms = first_attempt_ms(&cfg->dests[i].cfg);
}

/*
 * The call's outcome for an attempt that ended with @err: an attempt our
 * deadline cut (ETIMEDOUT) is no answer of the kernel's, so the last one the
 * kernel gave stands, ETIMEDOUT only when it gave none.
 */
static int outcome(const struct retry_progress *p, int err)
{
	return err == ETIMEDOUT && p->answer_err ? p->answer_err : err;
}

static struct engine_action end(int err, unsigned say, const char *reason)
{
	struct engine_action a = { .what = ENGINE_END, .err = err, .say = say, .reason = reason };

	return a;
}

static struct engine_action attempt(const struct config *cfg, struct retry_progress *p,
				    const struct engine_event *ev)
{
	struct engine_action a = {
		.what = ENGINE_ATTEMPT,
		.until_ms =
			engine_attempt_deadline(cfg, p, NULL, ev->queue_full, false, ev->now_ms),
	};

	return a;
}

/*
 * The call gives up with @err for @reason (@first: at its first failure, so
 * it is counted): the destination's budget books it.  A call that made no
 * attempt of its own (another's results stood for each) makes one real
 * attempt first, whose result is the call's.
 */
static struct engine_action give_up(const struct config *cfg, struct retry_progress *p,
				    const struct engine_event *ev, int err, const char *reason,
				    bool first)
{
	struct engine_action a = end(outcome(p, err), ENGINE_SAY_GIVE_UP, reason);

	a.first = first;
	a.final = true;
	if (!p->real) {
		p->final = true;
		a.what = ENGINE_ATTEMPT;
		a.until_ms =
			engine_attempt_deadline(cfg, p, NULL, ev->queue_full, false, ev->now_ms);
	}
	return a;
}

/* Attempt p->attempt failed with @err: plan the next one, or give up. */
static struct engine_action plan(const struct config *cfg, struct retry_progress *p,
				 const struct engine_event *ev, int err)
{
	struct engine_action a = { .what = ENGINE_WAIT, .err = err, .say = ENGINE_SAY_RETRY };
	uint64_t now = ev->now_ms;

	const char *reason = spent(cfg, p, now);

	if (reason)
		return give_up(cfg, p, ev, err, reason, p->attempt == 1);
	/* Not drawn yet (a state of 0 drawn by chance is drawn again: no matter). */
	if (p->rng == 0)
		p->rng = ev->seed;
	a.delay_ms = policy_next_delay(&cfg->policy, p->attempt, p->prev_ms, rng_step(&p->rng));
	p->prev_ms = a.delay_ms;
	/* A wait never runs past the budget: the last attempt is made at its end. */
	a.until_ms = a.delay_ms < p->deadline_ms - now ? now + a.delay_ms : p->deadline_ms;
	p->planned_ms = a.until_ms;
	a.first = p->attempt == 1;
	/* A wait that takes the call past a few seconds is not silent by default. */
	if (!p->told && a.until_ms - p->start_ms >= CONFIG_TELL_WAIT_MS) {
		p->told = true;
		a.say |= ENGINE_SAY_WAITING;
	}
	return a;
}

/* The destination's budget left bounds the call's: never past the destination's deadline. */
static void charge(struct retry_progress *p, const struct engine_event *ev)
{
	uint64_t left = ev->budget_left_ms;

	if (left != CONFIG_INFINITE && ev->now_ms + left < p->deadline_ms)
		p->deadline_ms = ev->now_ms + left;
}

/* Why the first failure of the call ends it at once (engine_passes), or NULL. */
static const char *pass_reason(const struct retry_progress *p, const struct engine_event *ev)
{
	if (p->attempt != 1)
		return NULL;
	return ev->more_addresses ? "not-last-address" : ev->known_down ? "known-down" : NULL;
}

bool engine_passes(const struct retry_progress *p, const struct engine_event *ev)
{
	return pass_reason(p, ev) != NULL;
}

bool engine_retries(const struct config_errset *retryable, int err)
{
	return config_errset_has(retryable, err);
}

static struct engine_action failed(const struct config *cfg, const struct config_errset *retryable,
				   struct retry_progress *p, const struct engine_event *ev)
{
	const char *reason = pass_reason(p, ev);
	int err = ev->err;

	p->last_err = err;
	if (err != ETIMEDOUT)
		p->answer_err = err;
	if (!ev->theirs)
		p->real = true;
	if (p->final) {
		struct engine_action a = end(outcome(p, err), 0, NULL);

		a.final = true;
		return a;
	}
	if (reason) {
		/* Another's result is no answer to pass on: the program's own attempt, now. */
		if (!p->real) {
			struct engine_action a;

			p->final = true;
			a = attempt(cfg, p, ev);
			a.final = true;
			return a;
		}
		return end(err, ENGINE_SAY_PASS, reason);
	}
	charge(p, ev);
	if (!engine_retries(retryable, err)) {
		struct engine_action a = end(outcome(p, err), 0, NULL);

		a.final = true;
		return a;
	}
	return plan(cfg, p, ev, err);
}

/*
 * The kernel holds the error of the failed attempt: if no retry would follow,
 * the program is to get it from the kernel, as a connect() that checks it
 * (hiredis, perl) must, rather than start another round.
 */
static struct engine_action held(const struct config *cfg, struct retry_progress *p,
				 const struct engine_event *ev)
{
	struct engine_action a = { .what = ENGINE_COLLECT };
	const char *reason = pass_reason(p, ev);

	p->real = true;
	if (reason)
		return end(0, ENGINE_SAY_PASS, reason);
	charge(p, ev);
	reason = spent(cfg, p, ev->now_ms);
	if (reason)
		return give_up(cfg, p, ev, 0, reason, p->attempt == 1);
	return a;
}

static struct engine_action due(const struct config *cfg, struct retry_progress *p,
				const struct engine_event *ev)
{
	if (ev->found && engine_finding_stands(cfg, false, ev->found_age_ns) &&
	    !is_last(cfg, p, p->planned_ms)) {
		struct engine_action a;

		/* Another found it down since our last attempt: its result is ours. */
		p->attempt++;
		a = plan(cfg, p, ev, p->last_err);
		if (a.what == ENGINE_WAIT) {
			a.say |= ENGINE_SAY_LEFT;
			return a;
		}
		/* No time for another after it: the last attempt is made. */
		p->attempt--;
		p->final = false;
	}
	p->attempt++;
	return attempt(cfg, p, ev);
}

static struct engine_action closed(struct retry_progress *p, const struct engine_event *ev)
{
	struct engine_action a = end(p->last_err, 0, NULL);

	/* Its first attempt, under way: not yet a call of ours. */
	if (p->attempt == 1 && !ev->waiting)
		return a;
	a.say = ENGINE_SAY_ENDED;
	if (ev->waiting && ev->now_ms < p->planned_ms) {
		a.say |= ENGINE_SAY_EARLY;
		a.early_ms = p->planned_ms - ev->now_ms;
	}
	return a;
}

/* An attempt succeeded: said if it was a retry, not the last one of a call that made none. */
static struct engine_action connected(struct retry_progress *p)
{
	p->real = true;
	return end(0, p->attempt > 1 && !p->final ? ENGINE_SAY_SUCCESS : 0, NULL);
}

static struct engine_action over(enum engine_over why, int err)
{
	struct engine_action a = { .what = ENGINE_OVER, .err = err, .over = why };

	return a;
}

static struct engine_action await_until(uint64_t until_ms)
{
	struct engine_action a = { .what = ENGINE_AWAIT, .until_ms = until_ms };

	return a;
}

/*
 * The time of a look at a call's attempt came: answered meanwhile, the
 * program's wait sees it; still unanswered, our deadline cuts it.
 */
static struct engine_action looked(const struct engine_event *ev)
{
	struct engine_action a = { .what = ENGINE_ABORT };

	return ev->unanswered ? a : await_until(CONFIG_INFINITE);
}

/*
 * Whether the early close @e is the server's answer, not a failed attempt:
 * the program sent nothing, no "try later" was said, and the close is not
 * taken for a front's refusal (BACKOFF_EARLY_CLOSE: auto takes it so only
 * where the server speaks first: it greeted before, or its port says so).
 * Then the program gets its end at once and the server sees one connection.
 */
static bool early_answer(const struct config *cfg, const struct engine_early *e)
{
	if (e->sent || e->said)
		return false; /* an end before any answer to a request is no answer */
	/* Asked for: refusal (never an answer) or answer (always). */
	if (cfg->early_close != CONFIG_EARLY_AUTO)
		return cfg->early_close == CONFIG_EARLY_ANSWER;
	return !e->greeted && !engine_port_speaks_first(e->port);
}

/*
 * A counted early close @e at @now_ms is a failed attempt of its
 * destination: the streak counts as the attempts, BACKOFF_RETRIES and
 * BACKOFF_TIMEOUT bound it, and its delay is the policy's (the server's own
 * when it asks for longer: Retry-After), which damps every new connect
 * there.  The same connection is connected again (ENGINE_ATTEMPT, with the
 * reason "replay" or "reconnect"; else ENGINE_OVER with the reason it is
 * not) only if nothing was sent on it or what was is sent again, its read
 * is the library's to wait in, and it has no timeout of its own; it must
 * have answered one attempt's time after its delay, within the budget
 * counted from the streak's first close.  A full server's line holds the
 * new connect as long as it moves (engine_full_moving): its time in line
 * is the budget's, and its attempt has one attempt's time from when it is
 * made (again_step).
 */
static struct engine_action early_verdict(const struct config *cfg, const struct engine_early *e,
					  uint64_t now_ms)
{
	struct engine_action a = {
		.what = ENGINE_OVER,
		.over = ENGINE_OVER_CLOSED,
		.say = ENGINE_SAY_CLOSE,
		.delay_ms = policy_next_delay(&cfg->policy, e->streak, e->prev_delay_ms, e->draw),
		.until_ms = CONFIG_INFINITE,
	};

	if (e->at_least_ms > a.delay_ms)
		a.delay_ms = e->at_least_ms;
	if (e->sent && !e->replay)
		a.reason = "sent";
	else if (!e->blocking && !cfg->nonblock)
		a.reason = "nonblocking";
	else if (e->timed)
		a.reason = "own-timeout";
	else if (cfg->retries != CONFIG_INFINITE && e->streak > cfg->retries)
		a.reason = "retries";
	else if (cfg->timeout_ms != CONFIG_INFINITE &&
		 now_ms - e->since_ms + a.delay_ms >= cfg->timeout_ms)
		a.reason = "budget";
	if (a.reason)
		return a;
	a.what = ENGINE_ATTEMPT;
	a.reason = e->sent ? "replay" : "reconnect";
	if (cfg->attempt_timeout_ms != CONFIG_INFINITE && !e->full)
		a.until_ms = now_ms + a.delay_ms + cfg->attempt_timeout_ms;
	if (cfg->timeout_ms != CONFIG_INFINITE && e->since_ms + cfg->timeout_ms < a.until_ms)
		a.until_ms = e->since_ms + cfg->timeout_ms;
	return a;
}

/*
 * The new connection of an early close meets @ev.  The close itself comes
 * first: the server's answer ends the call at once, nothing counted; a
 * local listener gone (it served its one connection) is no failed attempt
 * either; else the close is counted in its destination's streak and judged
 * (early_verdict).  The new connection has one attempt (its failure is the
 * end of it), is not made once its local listener went away, and is awaited
 * until its time, looked at first once its local listener had
 * ENGINE_ACCEPT_MS to take it; a byte makes it the program's.
 */
static struct engine_action again_step(const struct config *cfg, struct retry_progress *p,
				       const struct engine_event *ev)
{
	switch (ev->kind) {
	case ENGINE_EARLY: {
		struct engine_action a = { .what = ENGINE_COUNT };

		if (early_answer(cfg, ev->close))
			return over(ENGINE_OVER_ANSWER, 0);
		return ev->gone ? over(ENGINE_OVER_GONE, 0) : a;
	}
	case ENGINE_COUNTED: {
		struct engine_action a = early_verdict(cfg, ev->close, ev->now_ms);

		/*
		 * The call goes on as the new connection, by its time.  The drivers
		 * make that attempt later (at the program's next read or wait) and
		 * begin a call of its own then, with this time as its @again.
		 */
		if (a.what == ENGINE_ATTEMPT)
			p->again_until_ms = a.until_ms;
		return a;
	}
	case ENGINE_FAILED:
		p->last_err = ev->err;
		return over(ENGINE_OVER_SILENT, ev->err);
	case ENGINE_HELD: {
		struct engine_action a = { .what = ENGINE_COLLECT };

		return a;
	}
	case ENGINE_DUE:
		if (ev->gone)
			return over(ENGINE_OVER_GONE, 0);
		p->attempt++;
		/* One attempt's time from now at most: after a full server's line it had none. */
		if (cfg->attempt_timeout_ms != CONFIG_INFINITE &&
		    ev->now_ms + cfg->attempt_timeout_ms < p->again_until_ms)
			p->again_until_ms = ev->now_ms + cfg->attempt_timeout_ms;
		return attempt(cfg, p, ev);
	case ENGINE_CONNECTED:
		p->real = true;
		/* No time to await it (no attempt time, no budget): the program waits as it chose.
		 */
		if (p->again_until_ms == CONFIG_INFINITE && !p->again_local)
			return end(0, 0, NULL);
		return await_until(again_look_at(p, ev->now_ms));
	case ENGINE_LOOK:
		if (ev->answered)
			return end(0, 0, NULL);
		if (ev->now_ms >= p->again_until_ms)
			return over(ENGINE_OVER_SILENT, ev->unanswered ? ETIMEDOUT : 0);
		if (ev->unaccepted)
			return over(ENGINE_OVER_UNACCEPTED, 0);
		return p->again_until_ms == CONFIG_INFINITE ? end(0, 0, NULL)
							    : await_until(p->again_until_ms);
	case ENGINE_SIGNAL:
		/* A signal that may not restart the call cut its wait: the end, as a read's. */
		return over(ENGINE_OVER_SILENT, ev->err);
	case ENGINE_CLOSED:
	default:
		return closed(p, ev);
	}
}

/* The call @p meets @ev: what to do, before what to say is filled in (engine_step). */
static struct engine_action step(const struct config *cfg, const struct config_errset *retryable,
				 struct retry_progress *p, const struct engine_event *ev)
{
	if (p->again_until_ms)
		return again_step(cfg, p, ev);
	switch (ev->kind) {
	case ENGINE_LOOK:
		return looked(ev);
	case ENGINE_FAILED:
		return failed(cfg, retryable, p, ev);
	case ENGINE_HELD:
		return held(cfg, p, ev);
	case ENGINE_DUE:
		return due(cfg, p, ev);
	case ENGINE_SIGNAL:
		return give_up(cfg, p, ev, p->last_err, "signal", false);
	case ENGINE_CLOSED:
		return closed(p, ev);
	case ENGINE_EARLY:   /* only a new connection of an early close meets these two */
	case ENGINE_COUNTED: /* (engine_begin's @again), which again_step serves */
	case ENGINE_CONNECTED:
	default:
		return connected(p);
	}
}

struct engine_action engine_step(const struct config *cfg, const struct config_errset *retryable,
				 struct retry_progress *p, const struct engine_event *ev)
{
	struct engine_action a = step(cfg, retryable, p, ev);

	/* What the log says of the call, when it says anything. */
	if (a.say) {
		a.attempt = p->attempt;
		a.elapsed_ms = ev->now_ms - p->start_ms;
		a.left_ms = p->deadline_ms == CONFIG_INFINITE ? CONFIG_INFINITE
			    : p->deadline_ms > ev->now_ms     ? p->deadline_ms - ev->now_ms
							      : 0;
	}
	return a;
}

uint64_t engine_finding_fresh_ns(const struct config *cfg, bool first)
{
	uint64_t ms;

	if (first)
		return 3 * cfg->local_probe_ms * 1000000;
	ms = cfg->policy.cap_ms + (cfg->attempt_timeout_ms == CONFIG_INFINITE
					   ? cfg->policy.cap_ms
					   : cfg->attempt_timeout_ms);
	return ms < UINT64_MAX / 1000000 ? ms * 1000000 : UINT64_MAX;
}

uint64_t engine_streak_stale_ms(const struct config *cfg)
{
	return 2 * (cfg->policy.cap_ms + 1000);
}

uint64_t engine_full_until_ms(const struct config *cfg, uint64_t now_ms, uint64_t damped_until_ms,
			      uint64_t draw)
{
	uint64_t half = cfg->policy.cap_ms / 2;

	return damped_until_ms > now_ms ? damped_until_ms : now_ms + half + draw % (half + 1);
}

bool engine_full_moving(const struct config *cfg, uint64_t now_ms, uint64_t freed_ms)
{
	return freed_ms != 0 && freed_ms <= now_ms && now_ms - freed_ms < cfg->policy.cap_ms / 2;
}

uint64_t engine_budget_left_ms(const struct config *cfg, uint64_t since_ms, uint64_t now_ms)
{
	uint64_t spent_at;

	if (cfg->timeout_ms == CONFIG_INFINITE)
		return CONFIG_INFINITE;
	spent_at = since_ms + cfg->timeout_ms;
	return now_ms < spent_at ? spent_at - now_ms : 0;
}

uint64_t engine_run_open_ms(const struct config *cfg, uint32_t giveups, uint64_t draw)
{
	uint64_t open = cfg->timeout_ms == CONFIG_INFINITE ? cfg->policy.cap_ms : cfg->timeout_ms;
	uint32_t i;

	for (i = 1; i < giveups && open < ENGINE_RUN_OPEN_MAX_MS; i++)
		open *= 2;
	if (open > ENGINE_RUN_OPEN_MAX_MS)
		open = ENGINE_RUN_OPEN_MAX_MS;
	return open - open / 5 + draw % (open / 5 * 2 + 1);
}

bool engine_port_speaks_first(uint16_t port)
{
	switch (port) {
	case 21:   /* FTP */
	case 22:   /* SSH */
	case 25:   /* SMTP */
	case 110:  /* POP3 */
	case 143:  /* IMAP */
	case 587:  /* SMTP submission */
	case 3306: /* MySQL, MariaDB */
	case 4222: /* NATS */
		return true;
	default:
		return false;
	}
}
