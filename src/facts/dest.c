/* Destinations: an open-addressing table of records, claimed once with a CAS, never freed. */
#include "facts/dest.h"

#include <stdatomic.h>
#include <string.h>

#include "counters/events.h"
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

bool dest_down(const struct dest *d)
{
	return d && atomic_load_explicit(&d->down, memory_order_relaxed);
}

uint64_t dest_budget_left(const struct config *cfg, struct dest *d, uint64_t began_ms,
			  uint64_t now_ms)
{
	uint64_t first = began_ms ? began_ms : 1, zero = 0, end;

	if (cfg->timeout_ms == CONFIG_INFINITE)
		return CONFIG_INFINITE;
	if (d &&
	    atomic_compare_exchange_strong_explicit(&d->first_fail_ms, &zero, first,
						    memory_order_relaxed, memory_order_relaxed))
		atomic_fetch_add_explicit(&dest_clocks, 1, memory_order_relaxed);
	else if (d)
		first = zero;
	end = first + cfg->timeout_ms;
	return now_ms < end ? end - now_ms : 0;
}

bool dest_gave_up(const struct config *cfg, struct dest *d, const struct target_addr *t,
		  uint64_t now_ms)
{
	uint64_t first;

	if (!d || cfg->timeout_ms == CONFIG_INFINITE)
		return false;
	first = atomic_load_explicit(&d->first_fail_ms, memory_order_relaxed);
	if (first == 0 || now_ms < first + cfg->timeout_ms)
		return false;
	if (!atomic_exchange_explicit(&d->down, true, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&dest_downs, 1, memory_order_relaxed);
		events_down("connect", t, now_ms - first);
	}
	return true;
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

bool dest_look_done(struct dest *d, int fd)
{
	int me = fd + 1;

	return d && atomic_compare_exchange_strong_explicit(
			    &d->looker, &me, 0, memory_order_relaxed, memory_order_relaxed);
}
