/* A full server's line in the state file: connects that wait for a connection held to it to close.
 */
#include "facts/share.h"
#include "facts/share_int.h"

#include <errno.h>
#include <linux/futex.h>

/* An event loop's connect in line looks every 10 ms (ENGINE_FULL_LOOK_MS): a few of its looks. */
#define SHARE_POLLED_MS 50U

/* Whether @s said it is full within @window_ns of @now_ns. */
static bool full_at(const struct share_slot *s, uint64_t now_ns, uint64_t window_ns)
{
	uint64_t at = atomic_load_explicit(&s->full_ns, memory_order_relaxed);

	/* A time to come is a hostile one: not full. */
	return at != 0 && at <= now_ns && now_ns - at < window_ns;
}

void share_note_full(struct share_slot *s, uint64_t now_ns, uint64_t window_ns)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_relaxed);
	uint64_t until = now_ns + window_ns, cur;

	atomic_store_explicit(&s->full_ns, now_ns, memory_order_relaxed);
	if (!h)
		return;
	cur = atomic_load_explicit(&h->full_until, memory_order_relaxed);
	while (cur < until &&
	       !atomic_compare_exchange_weak_explicit(&h->full_until, &cur, until,
						      memory_order_relaxed, memory_order_relaxed))
		;
	/* New connects to it look at its line before their attempt. */
	share_gate_until(h, atomic_load_explicit(&s->key, memory_order_relaxed), until);
}

int share_full_line(const struct share_slot *s, uint64_t now_ns, uint64_t window_ns)
{
	uint32_t n;

	if (!full_at(s, now_ns, window_ns))
		return -1;
	n = atomic_load_explicit(&s->queued, memory_order_relaxed);
	/* An event loop's connect that looked within a few of its looks is in line too. */
	if (share_wrap_sub((uint32_t)(now_ns / 1000000),
			   atomic_load_explicit(&s->polled_ms, memory_order_relaxed)) <
	    SHARE_POLLED_MS)
		n++;
	/* Sleepers a killed process left behind make a line longer, never a wrong answer. */
	return n < 1U << 20 ? (int)n : 1 << 20;
}

void share_note_closing(const struct target_addr *t, uint64_t now_ns, uint64_t window_ns,
			uint64_t max_ns)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);
	uint64_t until;
	struct share_slot *s;

	if (!h || (until = atomic_load_explicit(&h->full_until, memory_order_relaxed)) == 0)
		return;
	if (until <= now_ns || until - now_ns > max_ns) {
		/* Over, or a hostile value: closes read one 0 from now on. */
		atomic_compare_exchange_strong_explicit(&h->full_until, &until, 0,
							memory_order_relaxed, memory_order_relaxed);
		return;
	}
	s = share_find(t);
	if (!s || !full_at(s, now_ns, window_ns))
		return;
	atomic_store_explicit(&s->freed_ns, now_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->freed, 1, memory_order_release);
	if (atomic_load_explicit(&s->queued, memory_order_relaxed) != 0) {
		int saved = errno;

		/* One: the connection frees one place. */
		share_futex(&s->freed, FUTEX_WAKE_BITSET, 1, NULL);
		errno = saved;
	}
}

uint32_t share_freed(struct share_slot *s)
{
	return atomic_load_explicit(&s->freed, memory_order_acquire);
}

uint64_t share_freed_ns(const struct share_slot *s)
{
	return atomic_load_explicit(&s->freed_ns, memory_order_relaxed);
}

bool share_full_scout(struct share_slot *s, uint64_t now_ms, uint64_t *next_ms)
{
	uint64_t delay = atomic_load_explicit(&s->damp_ms, memory_order_relaxed);
	uint32_t at = atomic_load_explicit(&s->scout_ms, memory_order_relaxed), ahead;

	/* A hostile delay is bounded as the damp is: at most a minute. */
	delay = delay == 0 ? 1 : delay > 60000 ? 60000 : delay;
	/* Its time is past (a wrapped difference of less than 2^31 ms): this connect's turn. */
	if ((at == 0 || (int32_t)share_wrap_sub((uint32_t)now_ms, at) >= 0) &&
	    atomic_compare_exchange_strong_explicit(&s->scout_ms, &at, (uint32_t)(now_ms + delay),
						    memory_order_relaxed, memory_order_relaxed))
		return true;
	ahead = share_wrap_sub(atomic_load_explicit(&s->scout_ms, memory_order_relaxed),
			       (uint32_t)now_ms);
	*next_ms = now_ms + (ahead > 0 && ahead <= delay ? ahead : delay);
	return false;
}

void share_full_looked(struct share_slot *s, uint64_t now_ns)
{
	atomic_store_explicit(&s->polled_ms, (uint32_t)(now_ns / 1000000), memory_order_relaxed);
}

bool share_full_claim(struct share_slot *s, uint64_t now_ns, uint64_t fresh_ns)
{
	uint32_t freed = atomic_load_explicit(&s->freed, memory_order_acquire),
		 claimed = atomic_load_explicit(&s->claimed, memory_order_relaxed);
	uint64_t at = atomic_load_explicit(&s->freed_ns, memory_order_relaxed);

	while (claimed != freed) {
		/* Stale (or a hostile count, or a time to come): every place is taken. */
		if (at > now_ns || now_ns - at > fresh_ns ||
		    share_wrap_sub(freed, claimed) > 1U << 16) {
			atomic_compare_exchange_strong_explicit(&s->claimed, &claimed, freed,
								memory_order_relaxed,
								memory_order_relaxed);
			return false;
		}
		if (atomic_compare_exchange_weak_explicit(
			    &s->claimed, &claimed, (uint32_t)((uint64_t)claimed + 1),
			    memory_order_relaxed, memory_order_relaxed))
			return true;
	}
	return false;
}

int share_full_wait(struct share_slot *s, uint32_t freed, uint64_t until_ns)
{
	return share_sleep(&s->freed, freed, until_ns, &s->queued);
}
