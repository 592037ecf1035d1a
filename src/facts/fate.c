/* Shared fate of one call: its place among the destination's waiters, the look and the lease. */
#include "facts/fate.h"

#include <errno.h>
#include <sys/socket.h>

#include "counters/events.h"
#include "facts/dest.h"
#include "facts/share.h"
#include "sys/clock.h"
#include "sys/listen.h"

void fate_join(struct fate *f, const struct config *cfg, const struct target_addr *t, int type,
	       uint64_t now_ns, uint64_t stale_ns)
{
	f->slot = NULL;
	f->stale_ns = stale_ns;
	f->last_ns = now_ns;
	f->look_ns = 0;
	f->looking = f->seen_listener = f->full = f->loop_waiter = false;
	f->seq = 0;
	if (!cfg->shared || type != SOCK_STREAM)
		return;
	f->slot = share_get(cfg, t);
	if (!f->slot)
		return;
	if (cfg->local_probe_ms && share_is_local(t))
		f->look_ns = cfg->local_probe_ms * 1000000;
	f->looking = f->look_ns != 0;
	f->seq = share_seq(f->slot);
}

void fate_attempted(struct fate *f, int err, uint64_t now_ns)
{
	if (!f)
		return;
	f->last_ns = now_ns;
	if (!f->slot)
		return;
	share_note(f->slot, err, now_ns);
	f->seq = share_seq(f->slot);
}

void fate_leave(struct fate *f)
{
	if (!f || !f->slot)
		return;
	share_leave(f->slot);
	if (f->loop_waiter)
		share_loop_wait(f->slot, -1, 0);
	f->loop_waiter = false;
}

void fate_connected(struct fate *f, const struct config *cfg, const struct target_addr *t,
		    struct dest *d, pid_t owner)
{
	/* The clock is read only when something is written: a healthy success reads none. */
	if (f && f->slot) {
		fate_attempted(f, 0, clock_now_ns());
		fate_leave(f);
	} else if (cfg->shared && share_down_for(t)) {
		share_note_up(t, clock_now_ns()); /* a first attempt: no fate joined */
	}
	/* A destination whose clock runs is up again (rare: one load otherwise). */
	if (dest_any_clock())
		dest_succeeded(d ? d : dest_of(cfg, t, owner));
}

void fate_loop_waits(struct fate *f, uint64_t wake_ns)
{
	/* Until a wake that comes late: an attempt's time and a delay after it. */
	uint64_t until = f->stale_ns < UINT64_MAX - wake_ns ? wake_ns + f->stale_ns : UINT64_MAX;

	if (!f->slot)
		return;
	/* Renewed; or counted anew if its lease lapsed meanwhile (a wait longer than any lease). */
	if (!f->loop_waiter || !share_loop_wait(f->slot, 0, until))
		f->loop_waiter = share_loop_wait(f->slot, 1, until);
}

enum fate_step fate_wake(struct fate *f, const struct target_addr *t, uint64_t now_ns,
			 uint64_t planned_ns, bool deputy, uint64_t *next_ns)
{
	struct share_slot *s = f->slot;

	*next_ns = planned_ns;
	if (share_seq(s) != f->seq)
		return FATE_NOW; /* someone connected since our last attempt */
	if (now_ns >= planned_ns) {
		/*
		 * An attempt into a full accept queue is silence, cut short: a
		 * look just before it tells (a delay shorter than the prober's
		 * look leaves no other look to tell).
		 */
		if (f->looking)
			f->full = listen_probe(t) == 2;
		return FATE_DUE;
	}
	if (f->looking && share_lead(s, now_ns, now_ns + 5 * f->look_ns)) {
		int found = listen_probe(t);

		if (found == 2)
			found = 0; /* a full accept queue drops SYNs: no listener for now */

		if (found == 1 && !f->seen_listener) {
			f->seen_listener = true;
			return FATE_NOW;
		}
		if (found == 0) {
			f->seen_listener = false;
			share_note_looked(s, now_ns);
		} else if (found < 0 && t->family == AF_UNIX) {
			/*
			 * A socket file no socket here holds (stale, or bound in
			 * another network namespace): a refused unix attempt costs
			 * nothing, so the look is an attempt, which the caller makes.
			 */
			if (now_ns + f->look_ns < *next_ns)
				*next_ns = now_ns + f->look_ns;
			return FATE_ATTEMPT;
		} else if (found < 0) {
			f->looking = false; /* the policy's attempts alone, as without sharing */
			events_no_look();
			share_leave(s);
		}
		if (f->looking && now_ns + f->look_ns < *next_ns)
			*next_ns = now_ns + f->look_ns;
	} else if (f->looking && deputy) {
		/*
		 * One waiter, the deputy, is back when the prober's lease ends,
		 * to take over if it is gone; the others sleep until a success
		 * or their planned attempt.
		 */
		uint64_t lease = share_lease_end(s);

		if (lease < now_ns + f->look_ns)
			lease = now_ns + f->look_ns;
		if (lease < *next_ns && share_deputy(s, now_ns, lease + 5 * f->look_ns))
			*next_ns = lease;
	}
	return FATE_SLEEP;
}

void fate_attempt_failed(struct fate *f, int err, uint64_t now_ns)
{
	share_note(f->slot, err, now_ns);
}

uint64_t fate_finding_age(const struct fate *f, uint64_t now_ns)
{
	uint64_t news = f && f->slot ? share_probed_since(f->slot, f->last_ns, now_ns) : 0;

	return news ? now_ns - news : UINT64_MAX;
}

void fate_left(struct fate *f)
{
	share_note_saved(f->slot);
}

int fate_sleep(struct fate *f, uint64_t until_ns)
{
	return share_wait(f->slot, f->seq, until_ns);
}

int fate_prober(const struct fate *f)
{
	return f->slot ? share_prober(f->slot) : 0;
}
