/* A failed connect's destination: eligibility, its facts for the engine, shared fate, bookkeeping.
 */
#include "config/config_dests.h"
#include "drivers/decide.h"

#include <errno.h>
#include <sys/socket.h>

#include "facts/addrlist.h"
#include "facts/record.h"
#include "drivers/eligible.h"
#include "engine/engine.h"
#include "counters/events.h"
#include "drivers/conn.h"
#include "drivers/retry.h"
#include "facts/share.h"
#include "sys/clock.h"
#include "sys/listen.h"
#include "sys/rng.h"
#include "sys/sock.h"

/*
 * Why the failed connect @c is not retried, or NULL if it is; *blocking:
 * whether it is retried blocking (else in the event loop).  Asked only after
 * a failure, so the success path makes no system call of its own.
 */
static const char *connect_why_not(const struct config *cfg, const struct decide_connect *c,
				   bool *blocking)
{
	int type = SOCK_STREAM;

	/*
	 * Only a connection-mode socket that is non-blocking (or blocking with
	 * SO_SNDTIMEO expired: then the program does not wait for it, and a
	 * retry checks the mode first) answers EINPROGRESS: no system call.
	 */
	*blocking = false;
	if (c->err != EINPROGRESS) {
		if (!eligible_retryable(cfg, c->target, c->err))
			return "errno";
		type = sock_type(c->fd);
		*blocking = c->own_thread || sock_is_blocking(c->fd);
	}
	return eligible_why_not(cfg, c->target, type, *blocking);
}

/* Whether a program that tries several addresses moves on from @t, at @now_ms. */
static bool more_addresses(const struct target_addr *t, uint64_t now_ms)
{
	return addrlist_find(t, now_ms) == ADDRLIST_NOT_LAST;
}

/*
 * A call to @t gave up at @now_ms: its record books it, with what the
 * engine says of the destination's budget and, for the call's run, of the
 * time its later calls get the kernel's answer at once.
 */
static void book_give_up(const struct config *cfg, struct fate *f, struct dest *d,
			 const struct target_addr *t, int fd, uint64_t now_ms)
{
	uint64_t since = record_clock(d);
	uint32_t giveups = record_gave_up(
		cfg, f, d, t, fd, since != 0 && engine_budget_left_ms(cfg, since, now_ms) == 0,
		now_ms);

	if (giveups)
		record_run_open(t, clock_now_ns() +
					   engine_run_open_ms(cfg, giveups, rng_next()) * 1000000);
}

/* The blocking retry of @c: the destination's facts, budget and shared fate, then the loop. */
static int retry_here(const struct config *cfg, struct decide_connect *c)
{
	/* Looked up here only when some destination is down; else when it joins. */
	struct dest *d = dest_any_down() ? dest_of(cfg, c->target, decide_owner(c)) : NULL;
	struct fate fate = { .slot = NULL };
	uint64_t now = clock_now_ms();
	struct retry_call call = {
		.what = { .call = "connect", .target = c->target },
		.retryable = config_retryable(cfg, c->target->family),
		.attempt = c->attempt,
		.planned = c->planned,
		.ctx = c->ctx,
		.first_waited = c->waited,
		.known_down = record_known_down(cfg, d, c->target),
		.more_addresses = more_addresses(c->target, now),
		.budget_ms = CONFIG_INFINITE,
	};

	/* Passed through at once (engine_passes): no fate to share, no clock to start. */
	if (!call.known_down && !call.more_addresses) {
		uint64_t budget, sndtimeo;

		budget = engine_budget_left_ms(
			cfg,
			record_join(cfg, &d, &fate, c->target, sock_type(c->fd),
				    c->started_ms ? c->started_ms : now,
				    engine_finding_fresh_ns(cfg, false), decide_owner(c)),
			now);
		if (fate.slot)
			call.fate = &fate;
		sndtimeo = sock_sndtimeo_ms(c->fd);
		/* The program's own send timeout counts from the call's start, the first attempt in
		 * it. */
		if (sndtimeo != CONFIG_INFINITE && c->started_ms) {
			uint64_t spent = now - c->started_ms;

			sndtimeo = sndtimeo > spent ? sndtimeo - spent : 0;
		}
		call.budget_ms = sndtimeo < budget ? sndtimeo : budget;
	}
	call.started_ms = c->started_ms;
	c->err = retry_blocking(cfg, &call, c->err);
	if (c->err == 0)
		dest_succeeded(d);
	else if (c->err != ECANCELED) /* the supervisor's program went away: no verdict */
		book_give_up(cfg, NULL, d, c->target, -1, clock_now_ms());
	return c->err;
}

int decide_failed(const struct config *cfg, struct decide_connect *c)
{
	for (;;) {
		bool blocking;
		const char *reason;

		/* The driver's call ended (the supervisor's program was interrupted): no verdict.
		 */
		if (c->err == ECANCELED)
			return c->err;
		reason = connect_why_not(cfg, c, &blocking);

		if (!reason && blocking)
			return retry_here(cfg, c);
		/* A non-blocking connect that is retried: its event loop's, if it takes it. */
		if (!reason && c->hand && c->hand(c->ctx, c->err)) {
			if (c->waited)
				events_waited();
			return c->err = EINPROGRESS;
		}
		if (!c->waited) {
			if (reason && c->err != EINPROGRESS)
				events_pass("connect", c->target, c->err, reason);
			return c->err;
		}
		/*
		 * Its first attempt was left to a prober, but it is neither retried
		 * nor taken by an event loop: the program's own attempt, now,
		 * decided as any.
		 */
		c->waited = false;
		c->err = c->first(c);
		if (c->err == 0) {
			decide_connected(cfg, c->target, decide_owner(c));
			return 0;
		}
	}
}

void decide_connected(const struct config *cfg, const struct target_addr *t, pid_t owner)
{
	(void)record_connected(NULL, cfg, t, NULL, owner, -1);
}

void decide_up(const struct config *cfg, const struct sockaddr *addr, socklen_t len)
{
	struct target_addr t;
	int saved = errno;

	if (eligible_takes(cfg, addr, len, &t))
		decide_connected(cfg, &t, 0);
	errno = saved;
}

/* The event loop's connect @c as the log sees it. */
static struct events_subject loop_what(const struct fdconn *c)
{
	struct events_subject what = { .call = "connect", .target = &c->target };

	return what;
}

/*
 * The engine's event @kind (@err) for @c at @now: the facts of its
 * destination.  Unless the event passes the call through at once, its
 * destination's clock runs from its first failure, and its fate is joined.
 */
static struct engine_event loop_event(const struct config *cfg, struct fdconn *c,
				      enum engine_event_kind kind, int err, uint64_t now)
{
	struct engine_event ev = {
		.kind = kind,
		.now_ms = now,
		.err = err,
		.budget_left_ms = CONFIG_INFINITE,
	};
	/* What the engine asks of this event, asked of it at once. */
	unsigned facts = engine_facts(cfg, &c->progress, kind);
	uint64_t stale = facts & ENGINE_FACTS_DEST ? engine_finding_fresh_ns(cfg, false) : 0, since;

	if (facts & ENGINE_FACTS_SEED)
		ev.seed = rng_next();
	if (facts & ENGINE_FACTS_GONE)
		ev.gone = decide_listener_gone(cfg, &c->target);
	/* Only a failure asks the destination's record: a success pays for none of it. */
	if (!(facts & ENGINE_FACTS_DEST))
		return ev;
	ev.known_down = record_known_down(cfg, c->dest, &c->target);
	if (facts & ENGINE_FACTS_ADDRESSES)
		ev.more_addresses = more_addresses(&c->target, now);
	if (engine_passes(&c->progress, &ev))
		return ev;
	/* A managed connect is a stream connect (it was EINPROGRESS). */
	since = record_join(cfg, &c->dest, &c->fate, &c->target, SOCK_STREAM,
			    engine_started_ms(&c->progress), stale, 0);
	ev.budget_left_ms = engine_budget_left_ms(cfg, since, now);
	return ev;
}

/* Step @c's engine with @ev and say what it asks to. */
static struct engine_action loop_step(const struct config *cfg, struct fdconn *c,
				      const struct engine_event *ev)
{
	struct events_subject what = loop_what(c);
	struct engine_action a =
		engine_step(cfg, config_retryable(cfg, c->target.family), &c->progress, ev);

	retry_say(&what, &a, ev->now_ms,
		  a.say & ENGINE_SAY_LEFT ? (uint64_t)fate_prober(&c->fate) : 0);
	return a;
}

void decide_loop_begin(const struct config *cfg, struct fdconn *c, uint64_t now_ms,
		       uint64_t later_ms, uint64_t again_until_ms)
{
	struct engine_again again = { .until_ms = again_until_ms };

	/* Looked up here only when some destination is down; else at a first failure. */
	__atomic_store_n(&c->dest, dest_any_down() ? dest_of(cfg, &c->target, 0) : NULL,
			 __ATOMIC_RELAXED);
	c->fate.slot = NULL; /* joined at a first failure */
	c->fate.looking = c->fate.seen_listener = c->fate.full = false;
	c->fate.last_ns = clock_now_ns();
	c->cfg = cfg; /* kept for all its events */
	if (again_until_ms)
		again.local = decide_look_ms(cfg, &c->target) != 0;
	engine_begin(cfg, &c->progress, CONFIG_INFINITE, now_ms, later_ms,
		     again_until_ms ? &again : NULL);
}

void decide_loop_gave_up(struct fdconn *c, int fd, uint64_t now_ms)
{
	const struct config *cfg = c->cfg;

	book_give_up(cfg, &c->fate, c->dest, &c->target, fd, now_ms);
}

void decide_loop_closed(struct fdconn *c, int fd, bool hidden, uint64_t now_ms)
{
	const struct config *cfg = c->cfg;
	struct engine_event ev = loop_event(cfg, c, ENGINE_CLOSED, 0, now_ms);

	ev.waiting = hidden;
	(void)loop_step(cfg, c, &ev);
	(void)record_leave(&c->fate, c->dest, fd);
}

struct engine_action decide_loop_failed(struct fdconn *c, int fd, int err, uint64_t now_ms)
{
	const struct config *cfg = c->cfg;
	struct engine_event ev = loop_event(cfg, c, ENGINE_FAILED, err, now_ms);
	struct engine_action a = loop_step(cfg, c, &ev);

	/* An early close's new connection: no attempt of the destination's record. */
	if (a.what == ENGINE_OVER)
		return a;
	/* News to the others, and the wait for the retry counted: one event of the record. */
	if (c->fate.slot)
		fate_loop_failed(&c->fate, err, clock_now_ns(),
				 a.what == ENGINE_WAIT ? a.until_ms * 1000000 : 0);
	if (a.what != ENGINE_WAIT)
		decide_loop_gave_up(c, fd, now_ms);
	return a;
}

bool decide_loop_final(struct fdconn *c, int fd, uint64_t now_ms)
{
	const struct config *cfg = c->cfg;
	struct engine_event ev = loop_event(cfg, c, ENGINE_HELD, 0, now_ms);
	struct engine_action a = loop_step(cfg, c, &ev);

	if (a.what == ENGINE_COLLECT)
		return false;
	if (a.final)
		decide_loop_gave_up(c, fd, now_ms);
	return true;
}

uint64_t decide_loop_attempt_deadline(const struct fdconn *c, uint64_t now_ms)
{
	const struct config *cfg = c->cfg;
	return engine_attempt_deadline(cfg, &c->progress, &c->target, c->fate.full,
				       record_known_down(cfg, c->dest, &c->target), now_ms);
}

struct engine_action decide_loop_succeeded(struct fdconn *c, int fd, uint64_t now_ms, bool *turn)
{
	const struct config *cfg = c->cfg;
	struct engine_event ev = loop_event(cfg, c, ENGINE_CONNECTED, 0, now_ms);
	struct engine_action a = loop_step(cfg, c, &ev);

	*turn = record_connected(&c->fate, cfg, &c->target, c->dest, 0, fd);
	return a;
}

struct engine_action decide_loop_look(struct fdconn *c, const struct decide_look *f,
				      uint64_t now_ms)
{
	const struct config *cfg = c->cfg;
	struct engine_event ev = loop_event(cfg, c, ENGINE_LOOK, 0, now_ms);

	ev.answered = f->answered;
	ev.unanswered = f->unanswered;
	ev.unaccepted = f->unaccepted;
	return loop_step(cfg, c, &ev);
}

/*
 * @c's planned wait ends at @now_ms, before its time: a listener or
 * another's success was found, or a look was an attempt (@made).  The stats
 * count the wait made, and the log says why, as for a blocking call.
 */
static void loop_woke(struct fdconn *c, uint64_t now_ms, bool made)
{
	struct events_subject what = loop_what(c);

	if (now_ms < engine_planned_ms(&c->progress))
		events_cut_short(&what, engine_planned_ms(&c->progress) - now_ms, made);
}

enum decide_wake decide_loop_wake(struct fdconn *c, uint64_t now_ms, bool lined,
				  int (*attempt)(void *ctx, uint64_t deadline_ms), void *ctx,
				  int *err, uint64_t *due_ms)
{
	const struct config *cfg = c->cfg;
	struct retry_progress *p = &c->progress;
	struct engine_event ev = loop_event(cfg, c, ENGINE_DUE, 0, now_ms);
	enum decide_wake wake = DECIDE_WAKE_ATTEMPT;
	uint64_t now_ns = clock_now_ns(), next;
	struct engine_action a;

	/* A fact that may end the call is told at once, before any line or look. */
	if (ev.gone)
		return loop_step(cfg, c, &ev).what == ENGINE_OVER ? DECIDE_WAKE_OVER
								  : DECIDE_WAKE_ATTEMPT;
	if (lined && !decide_loop_line_turn(c, now_ms))
		return DECIDE_WAKE_LINE;
	if (c->fate.slot) {
		switch (fate_wake(&c->fate, &c->target, now_ns, engine_planned_ms(p) * 1000000,
				  false, &next)) {
		case FATE_NOW:
			loop_woke(c, now_ms, false);
			break;
		case FATE_ATTEMPT:
			if (retry_look_attempt(&c->fate, config_retryable(cfg, c->target.family),
					       attempt, ctx, now_ns, err)) {
				loop_woke(c, now_ms, true);
				wake = DECIDE_WAKE_MADE;
				break;
			}
			/* A retried failure, news for the others: the wait goes on. */
			/* fall through */
		case FATE_SLEEP:
			*due_ms = engine_planned_ms(p);
			fate_loop_waits(&c->fate, engine_planned_ms(p) * 1000000);
			return DECIDE_WAKE_SLEEP;
		case FATE_DUE:
			retry_finding(cfg, p, &c->fate, now_ns, &ev);
			break;
		}
	}
	a = loop_step(cfg, c, &ev);
	if (a.say & ENGINE_SAY_LEFT)
		fate_left(&c->fate); /* one attempt saved, as backoff status counts them */
	if (a.what == ENGINE_WAIT) {
		*due_ms = a.until_ms;
		fate_loop_waits(&c->fate, a.until_ms * 1000000);
		return DECIDE_WAKE_SLEEP;
	}
	return wake;
}

bool decide_early_close(const struct config *base, const struct target_addr *t, const char *answer,
			bool full, uint64_t at_least_ms, bool sent, bool replay, bool blocking,
			bool timed, uint64_t *until_ms)
{
	const struct config *cfg = config_for(base, t); /* BACKOFF_DESTINATIONS */
	struct share_slot *s = share_get(cfg, t);
	struct events_subject what = { .call = "connect", .target = t };
	uint64_t now = clock_now_ns(), since, prev, by;
	struct engine_again again = { .until_ms = CONFIG_INFINITE };
	struct engine_early e = {
		.at_least_ms = at_least_ms,
		.sent = sent,
		.replay = replay,
		.said = answer != NULL,
		.full = full,
		.blocking = blocking,
		.timed = timed,
		.port = t->family == AF_UNIX ? 0 : t->port,
	};
	struct engine_event ev = { .kind = ENGINE_EARLY, .now_ms = now / 1000000, .close = &e };
	struct retry_progress p;
	struct engine_action a;

	if (!s)
		return false; /* no shared state: nothing to count it in */
	e.greeted = share_greeted(s, &by);
	/*
	 * A greeting heard from another listener than the one there now was
	 * another server's (a port reused: a test's, a restarted daemon's): it
	 * says nothing of this one, which may close on purpose; nor does a local
	 * one noted without its listener (an older build of the same file).
	 */
	if (e.greeted && target_is_local(t) && (by == 0 || by != listen_inode(t))) {
		share_forget_greeted(s);
		e.greeted = false;
	}
	again.local = decide_look_ms(cfg, t) != 0;
	engine_begin(cfg, &p, CONFIG_INFINITE, ev.now_ms, ev.now_ms, &again);
	/* Nothing listens there any more (asked of the kernel, for a local destination). */
	if (engine_facts(cfg, &p, ENGINE_EARLY) & ENGINE_FACTS_GONE)
		ev.gone = decide_listener_gone(cfg, t);
	a = engine_step(cfg, NULL, &p, &ev);
	if (a.what == ENGINE_COUNT) {
		e.streak = share_note_early(s, now, engine_streak_stale_ms(cfg) * 1000000, &since,
					    &prev);
		if (full)
			share_note_full(s, now, engine_streak_stale_ms(cfg) * 1000000);
		e.since_ms = since / 1000000;
		e.prev_delay_ms = prev;
		e.draw = rng_next();
		ev.kind = ENGINE_COUNTED;
		a = engine_step(cfg, NULL, &p, &ev);
	}
	if (a.say & ENGINE_SAY_CLOSE) {
		share_damp(s, now + a.delay_ms * 1000000, a.delay_ms);
		events_early(&what, answer, e.streak, a.delay_ms, a.reason);
	} else if (a.over == ENGINE_OVER_ANSWER) {
		events_early_answer(&what); /* no failed attempt, nothing damped */
	} else if (a.over == ENGINE_OVER_GONE) {
		events_early_end(&what, 0, EVENTS_END_GONE); /* the end is the program's, at once */
	}
	if (a.what != ENGINE_ATTEMPT)
		return false;
	*until_ms = a.until_ms;
	return true;
}

void decide_first_byte(const struct config *cfg, const struct target_addr *t, bool greeting)
{
	struct share_slot *s;

	if (!cfg->shared)
		return;
	/*
	 * A greeting, on a port that does not say its server speaks first: kept
	 * host-wide, so that a later close before one is taken for a refusal.
	 */
	if (greeting && t->family != AF_UNIX && !engine_port_speaks_first(t->port)) {
		uint64_t by;

		s = share_get(cfg, t);
		/*
		 * The first time: a local destination's server is its listener, by
		 * identity; one already gone when its greeting is read says nothing
		 * of the next server on the port.
		 */
		if (s && !share_greeted(s, &by)) {
			by = target_is_local(t) ? listen_inode(t) : 0;
			if (by || !target_is_local(t))
				share_note_greeted(s, by);
		}
	} else {
		s = share_find(t);
	}
	if (s)
		share_note_first_byte(s);
}

uint64_t decide_look_ms(const struct config *cfg, const struct target_addr *t)
{
	return cfg->local_probe_ms && target_is_local(t) ? cfg->local_probe_ms : 0;
}

int decide_full_line(const struct config *cfg, const struct target_addr *t)
{
	struct share_slot *s = cfg->shared ? share_find(t) : NULL;

	return s ? share_full_line(s, clock_now_ns(),
				   engine_streak_stale_ms(config_for(cfg, t)) * 1000000)
		 : -1;
}

/*
 * Whether @t is full and a place freed in its line is taken now
 * (share_full_claim); the caller, an event loop's connect, looked.
 */
static bool full_turn(const struct config *cfg, const struct target_addr *t)
{
	struct share_slot *s = cfg->shared ? share_find(t) : NULL;
	uint64_t now = clock_now_ns();

	if (!s || share_full_line(s, now, engine_streak_stale_ms(config_for(cfg, t)) * 1000000) < 0)
		return false;
	share_full_looked(s, now);
	/* A place freed a moment ago is taken once its server has read the close. */
	return now - share_freed_ns(s) >= ENGINE_FULL_SETTLE_MS * 1000000 &&
	       share_full_claim(s, now, ENGINE_FULL_FRESH_MS * 1000000);
}

/*
 * When a connect to @t planned at @planned_ms, waiting since @since_ms, is
 * to attempt: @planned_ms, or, its time come at @now_ms in a full server's
 * line, a later one within its budget while the line moves
 * (engine_full_moving), or while it stalls and another's attempt is the
 * line's one for the delay (share_full_scout).
 */
static uint64_t full_replan_ms(const struct config *cfg, const struct target_addr *t,
			       uint64_t now_ms, uint64_t since_ms, uint64_t planned_ms)
{
	const struct config *c = config_for(cfg, t);
	struct share_slot *s = cfg->shared && now_ms >= planned_ms ? share_find(t) : NULL;
	uint64_t next;

	if (!s || share_full_line(s, now_ms * 1000000, engine_streak_stale_ms(c) * 1000000) < 0 ||
	    (c->timeout_ms != CONFIG_INFINITE && now_ms - since_ms >= c->timeout_ms))
		return planned_ms;
	if (engine_full_moving(c, now_ms, share_freed_ns(s) / 1000000))
		return engine_full_until_ms(c, now_ms, 0, rng_next());
	/* A line that stalls: one connect per delay attempts, as without it. */
	return share_full_scout(s, now_ms, &next) ? planned_ms : next;
}

bool decide_loop_line_turn(struct fdconn *c, uint64_t now_ms)
{
	const struct config *cfg = c->cfg;

	uint64_t planned = full_replan_ms(cfg, &c->target, now_ms, engine_started_ms(&c->progress),
					  engine_planned_ms(&c->progress));

	if (now_ms < planned && full_turn(cfg, &c->target))
		planned = now_ms;
	engine_replan(&c->progress, planned);
	return now_ms >= planned;
}

bool decide_listener_gone(const struct config *cfg, const struct target_addr *t)
{
	return decide_look_ms(cfg, t) && listen_probe(t) == 0;
}
