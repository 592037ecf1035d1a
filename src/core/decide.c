/* What happens to a failed connect: eligibility, known down, budget, shared fate, bookkeeping. */
#include "core/decide.h"

#include <errno.h>
#include <sys/socket.h>

#include "core/addrlist.h"
#include "core/dest.h"
#include "core/events.h"
#include "core/fdtable.h"
#include "core/retry.h"
#include "core/share.h"
#include "sys/clock.h"
#include "sys/listen.h"
#include "sys/rng.h"
#include "sys/sock.h"

static const struct config_errset *retryable(const struct config *cfg, const struct target_addr *t)
{
	return t->family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet;
}

uint64_t decide_first_cap_ms(const struct config *cfg, const struct target_addr *t)
{
	bool retried = cfg->timeout_ms != 0 && cfg->retries != 0;

	return retried && t->family != AF_UNIX && share_is_local(t) ? CONFIG_LOCAL_ATTEMPT_MS
								    : CONFIG_INFINITE;
}

/*
 * Why the failed connect @c is not retried, or NULL if it is; *blocking:
 * whether it is retried blocking (else in the event loop).  Asked only after
 * a failure, so the success path makes no system call of its own.
 */
static const char *why_not(const struct config *cfg, const struct decide_connect *c, bool *blocking)
{
	const struct target_addr *t = c->target;
	int type;

	*blocking = true;
	if (c->err == EINPROGRESS) {
		/*
		 * Only a connection-mode socket that is non-blocking (or blocking
		 * with SO_SNDTIMEO expired: then the program does not wait for it,
		 * and a retry checks the mode first) answers so: no system call.
		 */
		*blocking = false;
		goto destination;
	}
	if (!config_errset_has(retryable(cfg, t), c->err))
		return "errno";
	type = sock_type(c->fd);
	/* An AF_UNIX datagram connect fails too while the receiver is missing. */
	if (type != SOCK_STREAM && !(type == SOCK_DGRAM && t->family == AF_UNIX))
		return "not-stream";
	*blocking = c->own_thread || sock_is_blocking(c->fd);
	/* A datagram connect ends at once: no attempt is under way for the event loop. */
	if (!*blocking && type == SOCK_DGRAM)
		return "nonblocking";
destination:
	if (!*blocking && !cfg->nonblock)
		return "nonblocking";
	if (!target_matches(&cfg->targets, t))
		return "excluded";
	/*
	 * Programs that try several addresses move on at once, as without
	 * libbackoff.  An attempt under way is asked at its first failure.
	 */
	if (c->err != EINPROGRESS && addrlist_find(t, clock_now_ms()) == ADDRLIST_NOT_LAST)
		return "not-last-address";
	return NULL;
}

/* The blocking retry of @c: known down, budget, shared fate, then the loop. */
static enum decide_verdict retry_here(const struct config *cfg, struct decide_connect *c)
{
	struct dest *d = dest_of(cfg, c->target, c->owner);
	struct fate fate;
	uint64_t budget, sndtimeo;
	struct retry_call call = {
		.what = { .call = "connect", .target = c->target },
		.retryable = retryable(cfg, c->target),
		.attempt = c->attempt,
		.planned = c->planned,
		.ctx = c->ctx,
		.first_waited = c->waited,
	};

	if (dest_down(d)) {
		/* Its budget ran out: the kernel's answer, at once, as without libbackoff. */
		if (c->waited)
			return DECIDE_ATTEMPT;
		events_pass("connect", c->target, c->err, "known-down");
		return DECIDE_DONE;
	}
	fate_join(&fate, cfg, c->target, sock_type(c->fd), clock_now_ns());
	if (fate.slot)
		call.fate = &fate;
	else if (c->waited)
		return DECIDE_ATTEMPT;
	budget = dest_budget_left(cfg, d, c->started_ms ? c->started_ms : clock_now_ms(),
				  clock_now_ms());
	sndtimeo = sock_sndtimeo_ms(c->fd);
	/* The program's own send timeout counts from the call's start, the first attempt in it. */
	if (sndtimeo != CONFIG_INFINITE && c->started_ms) {
		uint64_t spent = clock_now_ms() - c->started_ms;

		sndtimeo = sndtimeo > spent ? sndtimeo - spent : 0;
	}
	call.started_ms = c->started_ms;
	call.budget_ms = sndtimeo < budget ? sndtimeo : budget;
	c->err = retry_blocking(cfg, &call, c->err);
	if (c->err == 0)
		dest_succeeded(d);
	else if (c->err != ECANCELED) /* the supervisor's program went away: no verdict */
		dest_gave_up(cfg, d, c->target, clock_now_ms());
	return DECIDE_DONE;
}

enum decide_verdict decide_connect(const struct config *cfg, struct decide_connect *c)
{
	bool blocking;
	const char *reason = why_not(cfg, c, &blocking);

	if (reason) {
		if (c->waited)
			return DECIDE_ATTEMPT; /* not ours to retry: the program's own attempt */
		if (c->err != EINPROGRESS)
			events_pass("connect", c->target, c->err, reason);
		return DECIDE_DONE;
	}
	if (!blocking)
		return DECIDE_EVENT_LOOP;
	return retry_here(cfg, c);
}

void decide_connected(const struct config *cfg, const struct target_addr *t, pid_t owner)
{
	/* A destination whose clock runs is up again (rare: one load otherwise). */
	if (dest_any_clock())
		dest_succeeded(dest_of(cfg, t, owner));
}

/* The event loop's connect @c as the log and the retry loop see it. */
static struct retry_call loop_call(const struct config *cfg, struct fdconn *c)
{
	struct retry_call rc = {
		.what = { .call = "connect", .target = &c->target },
		.retryable = retryable(cfg, &c->target),
		.budget_ms = CONFIG_INFINITE,
	};

	return rc;
}

/*
 * A failed attempt of @c at @now: its destination's clock runs from its
 * first failure, and the call's deadline is never past the destination's.
 */
static void charge(const struct config *cfg, struct fdconn *c, uint64_t now)
{
	uint64_t left;

	if (!c->dest)
		/* Atomic: releasing the event loop's waiters reads it without the claim. */
		__atomic_store_n(&c->dest, dest_of(cfg, &c->target, 0), __ATOMIC_RELAXED);
	if (!c->fate.slot && cfg->shared)
		/* A managed connect is a stream connect (it was EINPROGRESS). */
		fate_join(&c->fate, cfg, &c->target, SOCK_STREAM, c->fate.last_ns);
	left = dest_budget_left(cfg, c->dest, c->progress.start_ms, now);
	if (left != CONFIG_INFINITE && now + left < c->progress.deadline_ms)
		c->progress.deadline_ms = now + left;
}

bool decide_loop_begin(const struct config *cfg, struct fdconn *c, uint64_t now_ms)
{
	/* Looked up here only when some destination is down; else at a first failure. */
	__atomic_store_n(&c->dest, dest_any_down() ? dest_of(cfg, &c->target, 0) : NULL,
			 __ATOMIC_RELAXED);
	c->fate.slot = NULL; /* joined at a first failure */
	c->fate.looking = c->fate.seen_listener = c->fate.full = false;
	c->fate.last_ns = clock_now_ns();
	retry_begin(cfg, &c->progress, CONFIG_INFINITE, now_ms);
	if (!dest_down(c->dest))
		return false;
	/*
	 * Known down: this attempt is the kernel's alone (no retry), only
	 * watched, so that its success makes the destination up again.
	 */
	c->progress.deadline_ms = now_ms;
	return true;
}

void decide_loop_gave_up(const struct config *cfg, struct fdconn *c, int fd, uint64_t now_ms)
{
	if (c->fate.slot) {
		fate_leave(&c->fate);
		dest_look_done(c->dest, fd);
	}
	dest_gave_up(cfg, c->dest, &c->target, now_ms);
}

void decide_loop_closed(const struct config *cfg, struct fdconn *c, int fd, bool hidden,
			uint64_t now_ms)
{
	struct retry_call rc = loop_call(cfg, c);

	if (c->progress.attempt == 1 && !hidden)
		return; /* its first attempt, under way: not yet a call of ours */
	if (hidden && now_ms < c->policy_due_ms)
		events_woke_early(c->policy_due_ms - now_ms);
	events_ended(&rc.what, c->last_err, c->progress.attempt, now_ms - c->progress.start_ms);
	if (c->fate.slot) {
		fate_leave(&c->fate);
		dest_look_done(c->dest, fd);
	}
}

bool decide_loop_failed(const struct config *cfg, struct fdconn *c, int fd, int err,
			uint64_t now_ms, uint64_t *due_ms)
{
	struct retry_call rc = loop_call(cfg, c);

	c->last_err = err;
	if (err != ETIMEDOUT)
		c->progress.answered = err;
	charge(cfg, c, now_ms);
	if (c->fate.slot)
		fate_attempted(&c->fate, err, clock_now_ns());
	if (config_errset_has(rc.retryable, err) &&
	    retry_plan(cfg, &rc, &c->progress, err, now_ms, due_ms))
		return true;
	decide_loop_gave_up(cfg, c, fd, now_ms);
	return false;
}

bool decide_loop_final(const struct config *cfg, struct fdconn *c, int fd, uint64_t now_ms)
{
	struct retry_call rc = loop_call(cfg, c);
	uint64_t due;

	if (c->progress.attempt == 1 && addrlist_find(&c->target, now_ms) == ADDRLIST_NOT_LAST) {
		/* Another address follows: the program moves on at once, as without libbackoff. */
		events_pass("connect", &c->target, 0, "not-last-address");
		return true;
	}
	if (dest_down(c->dest))
		return !retry_allowed(cfg, &c->progress, now_ms);
	charge(cfg, c, now_ms);
	if (retry_allowed(cfg, &c->progress, now_ms))
		return false;
	/*
	 * The last attempt: the program sees the kernel's own outcome, and a
	 * connect() that checks it (hiredis, perl) must get it from the kernel
	 * too, not start another round.
	 */
	retry_plan(cfg, &rc, &c->progress, 0, now_ms, &due);
	decide_loop_gave_up(cfg, c, fd, now_ms);
	return true;
}

uint64_t decide_loop_attempt_deadline(const struct config *cfg, const struct fdconn *c,
				      uint64_t now_ms)
{
	uint64_t cap = c->fate.full		  ? CONFIG_LOCAL_ATTEMPT_MS
		       : c->progress.attempt == 1 ? decide_first_cap_ms(cfg, &c->target)
						  : CONFIG_INFINITE;

	if (dest_down(c->dest)) {
		uint64_t len = cfg->attempt_timeout_ms < cap ? cfg->attempt_timeout_ms : cap;

		return len == CONFIG_INFINITE ? CONFIG_INFINITE : now_ms + len;
	}
	return retry_attempt_deadline(cfg, &c->progress, cap, now_ms);
}

bool decide_loop_timed_out(const struct config *cfg, struct fdconn *c, int fd, uint64_t now_ms,
			   uint64_t *due_ms)
{
	if (dest_down(c->dest))
		return false;
	if (c->progress.attempt == 1 && addrlist_find(&c->target, now_ms) == ADDRLIST_NOT_LAST) {
		events_pass("connect", &c->target, ETIMEDOUT, "not-last-address");
		return false;
	}
	return decide_loop_failed(cfg, c, fd, ETIMEDOUT, now_ms, due_ms);
}

bool decide_loop_succeeded(const struct config *cfg, struct fdconn *c, int fd, uint64_t now_ms)
{
	bool turn = false;

	if (c->progress.attempt > 1) {
		struct retry_call rc = loop_call(cfg, c);

		retry_succeeded(&rc, &c->progress, now_ms);
	}
	if (c->fate.slot) {
		fate_attempted(&c->fate, 0, clock_now_ns());
		fate_leave(&c->fate);
		turn = dest_look_done(c->dest, fd);
	}
	if (dest_any_clock())
		dest_succeeded(c->dest ? c->dest : dest_of(cfg, &c->target, 0));
	return turn;
}

enum decide_wake decide_loop_wake(const struct config *cfg, struct fdconn *c, uint64_t now_ms,
				  int (*attempt)(void *ctx, uint64_t deadline_ms), void *ctx,
				  int *err, uint64_t *due_ms)
{
	struct retry_progress *p = &c->progress;
	uint64_t now_ns = clock_now_ns(), next;
	struct retry_call rc;

	if (!c->fate.slot)
		return DECIDE_WAKE_ATTEMPT;
	switch (fate_wake(&c->fate, &c->target, retryable(cfg, &c->target), now_ns,
			  c->policy_due_ms * 1000000, false, attempt, ctx, err, &next)) {
	case FATE_NOW:
		return DECIDE_WAKE_ATTEMPT;
	case FATE_MADE:
		return DECIDE_WAKE_MADE;
	case FATE_SLEEP:
		*due_ms = c->policy_due_ms;
		return DECIDE_WAKE_SLEEP;
	case FATE_DUE:
		break;
	}
	if (retry_is_last(cfg, p, c->policy_due_ms) || !fate_left_to_other(&c->fate, now_ns))
		return DECIDE_WAKE_ATTEMPT;
	/* Another found it down since our last attempt: its result is ours. */
	rc = loop_call(cfg, c);
	p->attempt++;
	if (!retry_plan(cfg, &rc, p, c->last_err, now_ms, due_ms)) {
		p->attempt--;
		return DECIDE_WAKE_ATTEMPT;
	}
	events_left(&rc.what, c->last_err, p->attempt, now_ms - p->start_ms,
		    (uint64_t)fate_prober(&c->fate));
	return DECIDE_WAKE_SLEEP;
}

/*
 * When the new connection of an early close must have answered: one
 * attempt's time (BACKOFF_ATTEMPT_TIMEOUT) after its planned start, @now_ms
 * + @delay_ms, and within the budget counted from the streak's first early
 * close at @since_ms; CONFIG_INFINITE when neither bounds it.  Pure.
 */
static uint64_t early_until_ms(const struct config *cfg, uint64_t now_ms, uint64_t delay_ms,
			       uint64_t since_ms)
{
	uint64_t until = CONFIG_INFINITE;

	if (cfg->attempt_timeout_ms != CONFIG_INFINITE)
		until = now_ms + delay_ms + cfg->attempt_timeout_ms;
	if (cfg->timeout_ms != CONFIG_INFINITE && since_ms + cfg->timeout_ms < until)
		until = since_ms + cfg->timeout_ms;
	return until;
}

bool decide_early_close(const struct config *cfg, const struct target_addr *t, bool not_ready,
			bool sent, bool replay, bool blocking, bool timed, uint64_t *until_ms)
{
	struct share_slot *s = share_get(cfg, t);
	struct events_subject what = { .call = "connect", .target = t };
	uint64_t now = clock_now_ns(), since, prev, delay, cap = cfg->policy.cap_ms;
	const char *why = NULL;
	uint32_t n;

	if (!s)
		return false; /* no shared state: nothing to count it in */
	/*
	 * Nothing listens there any more (asked of the kernel, for a local
	 * destination): the server closed on purpose and stopped listening
	 * (an FTP data channel, a server that answered and exited).  No failed
	 * attempt: the end is the program's, at once.
	 */
	if (decide_listener_gone(cfg, t)) {
		events_early_end(&what, 0, true);
		return false;
	}
	/* A streak whose last early close is further back than two of the longest delays is over.
	 */
	n = share_note_early(s, now, 2 * (cap + 1000) * 1000000, &since, &prev);
	delay = policy_next_delay(&cfg->policy, n, prev, rng_next());
	share_damp(s, now + delay * 1000000, delay);
	if (sent && !replay)
		why = "sent";
	else if (!blocking && !cfg->nonblock)
		why = "nonblocking";
	else if (timed)
		why = "own-timeout";
	else if (cfg->retries != CONFIG_INFINITE && n > cfg->retries)
		why = "retries";
	else if (cfg->timeout_ms != CONFIG_INFINITE &&
		 (now - since) / 1000000 + delay >= cfg->timeout_ms)
		why = "budget";
	events_early(&what, not_ready, n, delay, why ? why : sent ? "replay" : "reconnect");
	if (why)
		return false;
	*until_ms = early_until_ms(cfg, now / 1000000, delay, since / 1000000);
	return true;
}

void decide_first_byte(const struct config *cfg, const struct target_addr *t)
{
	struct share_slot *s = cfg->shared ? share_find(t) : NULL;

	if (s)
		share_note_first_byte(s);
}

uint64_t decide_look_ms(const struct config *cfg, const struct target_addr *t)
{
	return cfg->local_probe_ms && share_is_local(t) ? cfg->local_probe_ms : 0;
}

bool decide_listener_gone(const struct config *cfg, const struct target_addr *t)
{
	return decide_look_ms(cfg, t) && listen_probe(t) == 0;
}
