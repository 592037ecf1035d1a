/* A slot of the state file read for `backoff status`: copied, bounded, every field hostile. */
#include "facts/share.h"

#include <string.h>

#include "facts/share_int.h"

bool share_view_slot(const struct share_head *h, unsigned i, uint64_t now_ns, struct share_view *v)
{
	const struct share_slot *s;
	uint64_t key, probed, looked, early;
	unsigned state;
	int tid, pid;
	uint32_t err;

	memset(v, 0, sizeof(*v));
	if (i >= SHARE_SLOTS)
		return false;
	s = (const struct share_slot *)(h + 1) + i;
	key = atomic_load_explicit(&s->key, memory_order_acquire);
	if (key == 0)
		return false;
	state = atomic_load_explicit(&s->state, memory_order_relaxed);
	v->state = state <= SHARE_UP ? (enum share_state)state : SHARE_UNKNOWN;
	tid = atomic_load_explicit(&s->prober, memory_order_relaxed);
	pid = atomic_load_explicit(&s->prober_pid, memory_order_relaxed);
	/* A lease, as share_lead sees one: a prober and an end still to come. */
	v->probing = tid != 0 && atomic_load_explicit(&s->lease_ns, memory_order_relaxed) > now_ns;
	if (v->probing && tid > 0)
		v->prober_tid = tid;
	if (v->probing && pid > 0)
		v->prober_pid = pid;
	err = atomic_load_explicit(&s->err, memory_order_relaxed);
	v->err = err < CONFIG_ERRNO_MAX ? (int)err : 0;
	v->since_ns = atomic_load_explicit(&s->since_ns, memory_order_relaxed);
	if (v->since_ns > now_ns)
		v->since_ns = 0;
	probed = atomic_load_explicit(&s->probed_ns, memory_order_relaxed);
	v->probed_ns = probed <= now_ns ? probed : 0;
	/* Sleepers a killed process left behind are not believed, as in stale(). */
	looked = atomic_load_explicit(&s->looked_ns, memory_order_relaxed);
	v->waiters = atomic_load_explicit(&s->waiters, memory_order_relaxed);
	if (share_older_than(probed > looked ? probed : looked, now_ns, SHARE_SLEEPERS_NS))
		v->waiters = 0;
	v->attempts = atomic_load_explicit(&s->attempts, memory_order_relaxed);
	v->saved = atomic_load_explicit(&s->saved, memory_order_relaxed);
	early = atomic_load_explicit(&s->early_ns, memory_order_relaxed);
	if (early != 0 && early <= now_ns && !share_older_than(early, now_ns, SHARE_IDLE_NS))
		v->early = atomic_load_explicit(&s->early, memory_order_relaxed);
	v->full = share_full_line(s, now_ns, SHARE_IDLE_NS) >= 0;
	if (v->full)
		v->queued = atomic_load_explicit(&s->queued, memory_order_relaxed);
	for (unsigned k = 0; k < SHARE_LOOPS; k++) {
		uint64_t w = atomic_load_explicit(&s->loops[k], memory_order_relaxed);

		if (!share_loop_lease_left(w, now_ns) || (int)(w >> 32) <= 0)
			continue;
		v->loop_pid[k] = (int)(w >> 32);
		v->loop_count[k] = (uint32_t)(w >> 16 & 0xffff);
	}
	v->named = share_read_dest(&s->dest, key, &v->target, &v->netns);
	if (!v->named)
		v->netns = 0;
	return true;
}
