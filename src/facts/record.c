/*
 * A destination's record: this process's part, in an open-addressing table
 * claimed once with a CAS and never freed, and a call's hold on the host's
 * slot (its place among the waiters, the look and the lease).
 */
#include "facts/record.h"

#include <errno.h>
#include <sys/socket.h>

#include <stdatomic.h>
#include <string.h>

#include "counters/events.h"
#include "facts/share.h"
#include "sys/clock.h"
#include "sys/listen.h"
#include "sys/log.h"
#include "sys/startup.h"

/* Destinations one process talks to: far fewer than this; when full, one warning. */
#define DEST_SLOTS 4096
#define DEST_PROBES 64

enum { DEST_EMPTY, DEST_WRITING, DEST_READY };

struct dest {
	_Atomic int state;
	uint64_t hash;
	pid_t owner;
	struct target_addr target;	/* written once, before state becomes DEST_READY */
	_Atomic uint64_t first_fail_ms; /* 0: no failure since the last success */
	_Atomic bool down;
	_Atomic int looker;		  /* fd + 1 of the hidden connect that wakes to look */
	_Atomic uint64_t looker_until_ms; /* its turn ends unless renewed */
};

static struct dest table[DEST_SLOTS];
STARTUP_DATA atomic_uint dest_clocks;
STARTUP_DATA atomic_uint dest_downs;

static uint64_t hash_of(const struct target_addr *t, pid_t owner)
{
	const unsigned char *p = t->family == AF_UNIX ? (const unsigned char *)t->path : t->ip;
	size_t n = t->family == AF_UNIX ? t->path_len : t->family == AF_INET ? 4 : 16, i;
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	h ^= (uint64_t)(unsigned)t->family | (uint64_t)t->port << 16 |
	     (uint64_t)(t->abstract ? 1U : 0U) << 40;
	h = (h ^ (uint64_t)(unsigned)owner) * UINT64_C(0x100000001b3);

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h ? h : 1;
}

static bool same(const struct target_addr *a, const struct target_addr *b)
{
	return a->port == b->port && target_same_address(a, b);
}

struct dest *dest_of(const struct config *cfg, const struct target_addr *t, pid_t owner)
{
	static atomic_bool warned;
	uint64_t h;
	unsigned k;

	if (!cfg->shared)
		return NULL;
	h = hash_of(t, owner);
	for (k = 0; k < DEST_PROBES; k++) {
		struct dest *d = &table[(h + k) % DEST_SLOTS];
		int state = atomic_load_explicit(&d->state, memory_order_acquire),
		    empty = DEST_EMPTY;

		if (state == DEST_EMPTY && atomic_compare_exchange_strong_explicit(
						   &d->state, &empty, DEST_WRITING,
						   memory_order_acquire, memory_order_acquire)) {
			d->hash = h;
			d->owner = owner;
			d->target = *t;
			atomic_store_explicit(&d->state, DEST_READY, memory_order_release);
			return d;
		}
		/* Lost the claim: what it read, acquired, as the load above is. */
		if (state == DEST_EMPTY)
			state = empty;
		/* Another thread is writing this one: it may be ours; look further. */
		if (state == DEST_READY && d->hash == h && d->owner == owner && same(&d->target, t))
			return d;
	}
	events_unmanaged();
	if (!atomic_exchange_explicit(&warned, true, memory_order_relaxed))
		log_notice(LOG_LEVEL_WARN, "destinations",
			   "too many destinations: connects to further ones each keep a budget of "
			   "their own");
	return NULL;
}

/*
 * Whether @d is known down: its budget ran out with no success since.  A
 * connect to it makes one real attempt and returns the kernel's answer.
 */
static bool dest_down(const struct dest *d)
{
	return d && atomic_load_explicit(&d->down, memory_order_relaxed);
}

/*
 * A failed attempt to @d, begun at @began_ms: starts its clock at @began_ms
 * if it has none (the budget covers the attempt too).  Returns when the
 * clock started: the destination's first failed attempt since its last
 * success (@d NULL: the call's own, @began_ms).
 */
static uint64_t dest_clock(struct dest *d, uint64_t began_ms)
{
	uint64_t first = began_ms ? began_ms : 1, zero = 0;

	if (!d)
		return first;
	if (atomic_compare_exchange_strong_explicit(&d->first_fail_ms, &zero, first,
						    memory_order_relaxed, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&dest_clocks, 1, memory_order_relaxed);
		return first;
	}
	return zero;
}

/*
 * A call to @d gave up at @now_ms, its budget @spent (the engine's
 * engine_budget_left_ms on record_clock): @d is known down from now on (said
 * once at info), and true is returned.
 */
static bool dest_gave_up(struct dest *d, const struct target_addr *t, bool spent, uint64_t now_ms)
{
	uint64_t first;

	if (!d || !spent)
		return false;
	first = atomic_load_explicit(&d->first_fail_ms, memory_order_relaxed);
	if (first == 0)
		return false;
	if (!atomic_exchange_explicit(&d->down, true, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&dest_downs, 1, memory_order_relaxed);
		events_down("connect", t, now_ms - first);
	}
	return true;
}

uint64_t record_clock(const struct dest *d)
{
	return d ? atomic_load_explicit(&d->first_fail_ms, memory_order_relaxed) : 0;
}

void dest_succeeded(struct dest *d)
{
	if (!d)
		return;
	if (atomic_exchange_explicit(&d->down, false, memory_order_relaxed))
		atomic_fetch_sub_explicit(&dest_downs, 1, memory_order_relaxed);
	if (atomic_exchange_explicit(&d->first_fail_ms, 0, memory_order_relaxed) != 0)
		atomic_fetch_sub_explicit(&dest_clocks, 1, memory_order_relaxed);
}

bool dest_look_turn(struct dest *d, int fd, uint64_t now_ms, uint64_t until_ms)
{
	int cur = atomic_load_explicit(&d->looker, memory_order_relaxed);

	if (cur != fd + 1) {
		if (cur != 0 &&
		    atomic_load_explicit(&d->looker_until_ms, memory_order_relaxed) > now_ms)
			return false;
		/* Free, or its fd missed its turn (closed, or made blocking): taken over. */
		if (!atomic_compare_exchange_strong_explicit(
			    &d->looker, &cur, fd + 1, memory_order_relaxed, memory_order_relaxed))
			return false;
	}
	atomic_store_explicit(&d->looker_until_ms, until_ms, memory_order_relaxed);
	return true;
}

/* @fd's connect ended: its turn is free.  Returns whether it had it. */
static bool dest_look_done(struct dest *d, int fd)
{
	int me = fd + 1;

	return d && atomic_compare_exchange_strong_explicit(
			    &d->looker, &me, 0, memory_order_relaxed, memory_order_relaxed);
}

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
	if (cfg->local_probe_ms && target_is_local(t))
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
	share_leave(f->slot, f->loop_waiter);
	f->loop_waiter = false;
}

bool record_connected(struct fate *f, const struct config *cfg, const struct target_addr *t,
		      struct dest *d, pid_t owner, int fd)
{
	struct share_slot *s = f ? f->slot : NULL;
	bool turn = s && dest_look_done(d, fd);

	/* A destination whose clock runs is up again (rare: one load otherwise). */
	if (dest_any_clock())
		dest_succeeded(d ? d : dest_of(cfg, t, owner));
	/* The clock is read only when something is written: a healthy success reads none. */
	if (s) {
		/* The news and the call's leaving, one event of the slot. */
		share_connected(s, clock_now_ns(), f->loop_waiter);
		f->loop_waiter = false;
	} else if (cfg->shared && share_down_for(t)) {
		share_note_up(t, clock_now_ns()); /* a first attempt: no fate joined */
	}
	return turn;
}

/* When an event loop's connect that wakes at @wake_ns is counted no more: a wake that comes late.
 */
static uint64_t loop_lease_end(const struct fate *f, uint64_t wake_ns)
{
	/* An attempt's time and a delay after it. */
	return f->stale_ns < UINT64_MAX - wake_ns ? wake_ns + f->stale_ns : UINT64_MAX;
}

void fate_loop_waits(struct fate *f, uint64_t wake_ns)
{
	if (f->slot)
		f->loop_waiter =
			share_loop_renew(f->slot, f->loop_waiter, loop_lease_end(f, wake_ns));
}

void fate_loop_failed(struct fate *f, int err, uint64_t now_ns, uint64_t wake_ns)
{
	uint64_t until = wake_ns ? loop_lease_end(f, wake_ns) : 0;

	f->last_ns = now_ns;
	if (!f->slot)
		return;
	f->loop_waiter = share_loop_failed(f->slot, err, now_ns, f->loop_waiter, until);
	f->seq = share_seq(f->slot);
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
			share_leave(s, false);
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

bool record_known_down(const struct config *cfg, const struct dest *d, const struct target_addr *t)
{
	/*
	 * A run's give-up leaves its destination down (a success since clears
	 * both): with none down, two loads, no clock read and no lookup, for the
	 * deadline of every managed connect.
	 */
	return dest_down(d) || (cfg->run_id && cfg->shared && share_down_for(t) &&
				share_run_spent(t, cfg->run_id, clock_now_ns()));
}

uint64_t record_join(const struct config *cfg, struct dest **d, struct fate *f,
		     const struct target_addr *t, int type, uint64_t began_ms, uint64_t stale_ns,
		     pid_t owner)
{
	if (!*d)
		/* Atomic: an event loop releasing its waiters reads it without the claim. */
		__atomic_store_n(d, dest_of(cfg, t, owner), __ATOMIC_RELAXED);
	/*
	 * The call's last real attempt: an event loop's connect noted its start
	 * (decide_loop_begin); a blocking call's failed now.
	 */
	if (!f->slot && cfg->shared)
		fate_join(f, cfg, t, type, f->last_ns ? f->last_ns : clock_now_ns(), stale_ns);
	return dest_clock(*d, began_ms);
}

bool record_leave(struct fate *f, struct dest *d, int fd)
{
	if (!f || !f->slot)
		return false;
	fate_leave(f);
	return dest_look_done(d, fd);
}

uint32_t record_gave_up(const struct config *cfg, struct fate *f, struct dest *d,
			const struct target_addr *t, int fd, bool spent, uint64_t now_ms)
{
	struct share_slot *s;

	(void)record_leave(f, d, fd);
	if (!dest_gave_up(d, t, spent, now_ms) || !cfg->run_id || !cfg->shared ||
	    !(s = share_find(t)))
		return 0;
	return share_note_run_giveup(s, cfg->run_id);
}

void record_run_open(const struct target_addr *t, uint64_t until_ns)
{
	struct share_slot *s = share_find(t);

	if (s)
		share_note_run_open(s, until_ns);
}
