/* Before a connect's first attempt: the rule, what it reads, and the damped wait. */
#include "drivers/before.h"

#include <errno.h>

#include "drivers/decide.h"
#include "drivers/eligible.h"
#include "engine/engine.h"
#include "counters/events.h"
#include "facts/share.h"
#include "sys/clock.h"
#include "sys/rng.h"
#include "sys/sock.h"

/* Whether connects to @t wait for its streak of early closes (connections over IP only). */
static bool damps(const struct config *cfg, const struct target_addr *t)
{
	return cfg->shared && t->family != AF_UNIX && engine_takes(cfg, t);
}

/* Whether a first attempt to @t may be left to its prober: a local destination, looked at. */
static bool leaves(const struct config *cfg, const struct target_addr *t)
{
	return cfg->enabled && cfg->shared && cfg->local_probe_ms && target_is_local(t);
}

/*
 * Whether a connect of @f joins its full server's line: it would wait
 * anyway, or others wait before it; a blocking one, or a non-blocking one
 * whose driver looks for a place freed (the preload's event loop).
 */
static bool in_line(const struct before_facts *f)
{
	return (f->blocking || f->looks) &&
	       (f->full_line > 0 || (f->full_line == 0 && f->damped_until_ns > f->now_ns));
}

enum before_verdict before_decide(const struct config *cfg, const struct target_addr *t,
				  const struct before_facts *f, uint64_t *until_ns)
{
	uint64_t until = f->damped_until_ns;

	/*
	 * A full server's line: it ends when a connection held to the server
	 * closes, or at engine_full_until_ms (then looked at again).
	 */
	if (in_line(f))
		until = engine_full_until_ms(cfg, f->now_ns / 1000000, until / 1000000, f->draw) *
			1000000;
	/* A streak is of TCP connections: a datagram socket to the same port does not wait. */
	if (until > f->now_ns && f->type == SOCK_STREAM && damps(cfg, t)) {
		if (f->blocking) {
			/* The program's own send timeout bounds the connect, the wait in it too. */
			if (f->sndtimeo_ms != CONFIG_INFINITE &&
			    f->sndtimeo_ms <= (until - f->now_ns - 1) / 1000000)
				until = f->now_ns + f->sndtimeo_ms * 1000000;
			*until_ns = until;
			return BEFORE_WAIT;
		}
		if (cfg->nonblock) {
			*until_ns = until;
			return BEFORE_LATER;
		}
	}
	/* The prober's finding stands for a stream connect's attempt: a datagram one is made. */
	if (f->down_err && f->type == SOCK_STREAM && leaves(cfg, t))
		return BEFORE_LEFT;
	return BEFORE_ATTEMPT;
}

void before_configure(struct config *cfg)
{
	engine_derive(cfg);
}

uint64_t before_bound_ms(const struct config *cfg, const struct target_addr *t)
{
	return engine_first_bound_ms(cfg, t);
}

/*
 * What before_decide reads of @t on @fd into *f: its delay (if @delay) and
 * its prober's finding (if @left) from the shared state first, the socket's
 * facts (system calls) only when the state says something.  *slot: @t's
 * slot; *streak: its early closes.  Whether anything was found.
 */
static bool read_facts(const struct config *cfg, int fd, const struct target_addr *t, bool delay,
		       bool left, struct share_slot **slot, uint32_t *streak,
		       struct before_facts *f)
{
	*f = (struct before_facts){ .sndtimeo_ms = CONFIG_INFINITE, .full_line = -1 };
	delay = delay && damps(cfg, t);
	left = left && leaves(cfg, t);
	if (!delay && !left)
		return false;
	*slot = share_find(t);
	if (!*slot)
		return false;
	f->now_ns = clock_now_ns();
	if (delay) {
		f->damped_until_ns =
			share_damped_until(*slot, f->now_ns, cfg->policy.cap_ms * 1000000, streak);
		f->full_line =
			share_full_line(*slot, f->now_ns, engine_streak_stale_ms(cfg) * 1000000);
		if (f->full_line >= 0)
			f->draw = rng_next();
	}
	if (left) {
		uint64_t age_ns = 0;
		int err = share_prober_finding(*slot, f->now_ns, &age_ns);

		/* The prober's finding, fresh, and an error retried, stands for this attempt. */
		if (err && engine_finding_stands(cfg, true, age_ns) &&
		    eligible_retryable(cfg, t, err))
			f->down_err = err;
	}
	if (!f->damped_until_ns && !f->down_err && f->full_line <= 0)
		return false;
	f->type = sock_type(fd);
	if ((f->damped_until_ns || f->full_line > 0) && f->type == SOCK_STREAM) {
		f->blocking = sock_is_blocking(fd);
		if (f->blocking)
			f->sndtimeo_ms = sock_sndtimeo_ms(fd);
	}
	return true;
}

/* The delay of @t, said: a streak of @streak, waited from @f->now_ns until @until_ns. */
static void said_damped(const struct target_addr *t, uint32_t streak, const struct before_facts *f,
			uint64_t until_ns)
{
	struct events_subject what = { .call = "connect", .target = t };

	events_damped(&what, streak, (until_ns - f->now_ns) / 1000000,
		      in_line(f) ? f->full_line : -1);
}

enum before_verdict before_connect(const struct config *cfg, struct before_connect *b)
{
	struct before_facts f;
	enum before_verdict v = BEFORE_ATTEMPT;
	uint32_t streak = 0;
	int saved = errno;

	if (!share_probing(b->addr, b->len) || !target_from_sockaddr(b->addr, b->len, b->target) ||
	    !read_facts(cfg, b->fd, b->target, !b->past_delay, true, &b->slot, &streak, &f))
		goto out;
	f.looks = b->looks;
	v = before_decide(cfg, b->target, &f, &b->until_ns);
	if (v == BEFORE_WAIT || v == BEFORE_LATER)
		said_damped(b->target, streak, &f, b->until_ns);
	if (v == BEFORE_LEFT) {
		b->err = f.down_err;
		share_note_saved(b->slot);
	}
out:
	errno = saved;
	return v;
}

/*
 * Sleep until @until_ns, woken early by a success to @s, or, @s being full,
 * by a close of a connection held to it (the first in its line); @watch:
 * looking every BACKOFF_LOCAL_PROBE whether @t's local listener is gone.  0,
 * EINTR (a signal that may not restart the call), or ECONNREFUSED (gone).
 */
static int damp_wait(const struct config *cfg, int fd, struct share_slot *s,
		     const struct target_addr *t, uint64_t until_ns, bool watch)
{
	uint64_t look_ns = watch ? decide_look_ms(cfg, t) * 1000000 : 0, began = clock_now_ns();
	bool full = share_full_line(s, began, engine_streak_stale_ms(cfg) * 1000000) >= 0;
	int rc = 0;

	while (rc == 0) {
		uint64_t now = clock_now_ns(), to;

		/*
		 * Its time in a full server's line came: it waits on while the
		 * line moves, within one budget, unless that time was the
		 * program's own timeout's.
		 */
		if (now >= until_ns) {
			uint64_t next;

			if (!full ||
			    (cfg->timeout_ms != CONFIG_INFINITE &&
			     now - began >= cfg->timeout_ms * 1000000) ||
			    sock_sndtimeo_ms(fd) != CONFIG_INFINITE)
				break;
			/* A line that stalls: one connect per delay attempts, as without it. */
			if (engine_full_moving(cfg, now / 1000000, share_freed_ns(s) / 1000000))
				next = engine_full_until_ms(cfg, now / 1000000, 0, rng_next());
			else if (share_full_scout(s, now / 1000000, &next))
				break;
			until_ns = next * 1000000;
		}
		to = look_ns && now + look_ns < until_ns ? now + look_ns : until_ns;
		if (full) {
			/*
			 * Woken: a held connection closed, and the place is this
			 * connect's (unless an event loop's took it) once its
			 * server has read the close.
			 */
			if ((rc = share_full_wait(s, share_freed(s), to)) == 1) {
				if (share_full_claim(s, clock_now_ns(),
						     ENGINE_FULL_FRESH_MS * 1000000))
					return share_wait(s, share_seq(s),
							  clock_now_ns() +
								  ENGINE_FULL_SETTLE_MS * 1000000);
				rc = 0;
				continue;
			}
		} else {
			rc = share_wait(s, share_seq(s), to);
		}
		if (rc == 0 && look_ns && decide_listener_gone(cfg, t))
			rc = ECONNREFUSED;
	}
	return rc;
}

enum before_verdict before_settle(const struct config *cfg, struct before_connect *b,
				  bool (*later)(void *ctx, const struct before_connect *b),
				  void *ctx)
{
	enum before_verdict v;

	while ((v = before_connect(cfg, b)) == BEFORE_WAIT || v == BEFORE_LATER) {
		if (v == BEFORE_LATER && (!later || later(ctx, b)))
			return BEFORE_LATER;
		/* Its wait, ended early by a success to the destination. */
		if (v == BEFORE_WAIT &&
		    damp_wait(cfg, b->fd, b->slot, b->target, b->until_ns, false) == EINTR)
			return BEFORE_INTR;
		/* Waited, or not the event loop's after all: made now, or left. */
		b->past_delay = true;
	}
	return v;
}

int before_damp(const struct config *cfg, int fd, const struct target_addr *t, uint64_t *until_ms,
		bool watch)
{
	struct share_slot *s = NULL;
	struct before_facts f;
	uint64_t until = 0;
	uint32_t streak = 0;

	/* The delay alone: a new connection of an early close is no first attempt to leave. */
	if (!read_facts(cfg, fd, t, true, false, &s, &streak, &f))
		return 0;
	switch (before_decide(cfg, t, &f, &until)) {
	case BEFORE_LATER:
		*until_ms = until / 1000000;
		said_damped(t, streak, &f, until);
		return EINPROGRESS;
	case BEFORE_WAIT:
		said_damped(t, streak, &f, until);
		return damp_wait(cfg, fd, s, t, until, watch);
	default:
		return 0;
	}
}
