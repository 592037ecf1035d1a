/* A fixed ring of recent getaddrinfo answers, written under a per-slot seqlock. */
#include "core/addrlist.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

struct addrlist_slot {
	atomic_uint seq;  /* odd while being written */
	atomic_bool busy; /* one writer per slot */
	uint64_t stamp_ms;
	uint64_t order; /* larger is more recent */
	unsigned count;
	bool truncated; /* more addresses than kept: none is last */
	struct target_addr addr[ADDRLIST_ADDRS];
};

static struct addrlist_slot addrlist_slots[ADDRLIST_LISTS];
static atomic_uint_fast64_t addrlist_next;

static bool already_listed(const struct target_addr *list, unsigned n, const struct target_addr *t)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (target_same_address(&list[i], t) && list[i].port == t->port)
			return true;
	return false;
}

void addrlist_remember(const struct addrinfo *res, uint64_t now_ms)
{
	struct target_addr addr[ADDRLIST_ADDRS];
	struct addrlist_slot *slot;
	unsigned n = 0;
	bool truncated = false;
	uint64_t order;
	const struct addrinfo *ai;

	for (ai = res; ai; ai = ai->ai_next) {
		struct target_addr t;

		if (!target_from_sockaddr(ai->ai_addr, ai->ai_addrlen, &t) || t.family == AF_UNIX)
			continue;
		if (already_listed(addr, n, &t))
			continue;
		if (n == ADDRLIST_ADDRS) {
			truncated = true;
			break;
		}
		addr[n++] = t;
	}
	if (n < 2)
		return;
	order = atomic_fetch_add_explicit(&addrlist_next, 1, memory_order_relaxed);
	slot = &addrlist_slots[order % ADDRLIST_LISTS];
	if (atomic_exchange_explicit(&slot->busy, true, memory_order_acquire))
		return; /* another writer has this slot: losing one list is harmless */
	atomic_fetch_add_explicit(&slot->seq, 1, memory_order_acq_rel);
	atomic_thread_fence(memory_order_release);
	slot->stamp_ms = now_ms;
	slot->order = order + 1;
	slot->count = n;
	slot->truncated = truncated;
	memcpy(slot->addr, addr, n * sizeof(addr[0]));
	atomic_fetch_add_explicit(&slot->seq, 1, memory_order_release);
	atomic_store_explicit(&slot->busy, false, memory_order_release);
}

/* Copy @slot consistently; false if a writer was in it. */
static bool read_slot(struct addrlist_slot *slot, struct addrlist_slot *copy)
{
	unsigned before = atomic_load_explicit(&slot->seq, memory_order_acquire);

	if (before & 1)
		return false;
	copy->stamp_ms = slot->stamp_ms;
	copy->order = slot->order;
	copy->count = slot->count < ADDRLIST_ADDRS ? slot->count : ADDRLIST_ADDRS;
	copy->truncated = slot->truncated;
	memcpy(copy->addr, slot->addr, copy->count * sizeof(copy->addr[0]));
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&slot->seq, memory_order_relaxed) == before;
}

enum addrlist_place addrlist_find(const struct target_addr *t, uint64_t now_ms)
{
	enum addrlist_place place = ADDRLIST_UNKNOWN;
	uint64_t best = 0;
	unsigned s, i;

	if (t->family == AF_UNIX)
		return ADDRLIST_UNKNOWN;
	for (s = 0; s < ADDRLIST_LISTS; s++) {
		struct addrlist_slot copy;

		if (atomic_load_explicit(&addrlist_slots[s].seq, memory_order_relaxed) == 0)
			continue;
		if (!read_slot(&addrlist_slots[s], &copy) || copy.order <= best)
			continue;
		if (now_ms - copy.stamp_ms > ADDRLIST_MAX_AGE_MS)
			continue;
		for (i = 0; i < copy.count; i++) {
			if (target_same_address(&copy.addr[i], t)) {
				best = copy.order;
				place = (i + 1 == copy.count && !copy.truncated)
						? ADDRLIST_LAST
						: ADDRLIST_NOT_LAST;
				break;
			}
		}
	}
	return place;
}

void addrlist_reset(void)
{
	memset(addrlist_slots, 0, sizeof(addrlist_slots));
	atomic_store(&addrlist_next, 0);
}
