/* A fixed ring of recent getaddrinfo answers, written under a per-slot seqlock. */
#include "facts/addrlist.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* What a slot holds: the header first, so that a reader copies only what it needs. */
struct addrlist_list {
	uint64_t stamp_ms;
	uint64_t order; /* larger is more recent */
	unsigned count;
	bool truncated; /* more addresses than kept: none is last */
	struct target_addr addr[ADDRLIST_ADDRS];
};

#define LIST_WORDS ((sizeof(struct addrlist_list) + 7) / 8)
#define HEADER_WORDS ((offsetof(struct addrlist_list, addr) + 7) / 8)

/*
 * The list is stored as atomic words: a reader may run while a writer fills
 * the slot, and only atomic accesses make that race defined (C11) and visible
 * to ThreadSanitizer.  Writers store each word with release order after making
 * seq odd; a reader loads each with acquire order between two reads of seq, so
 * a word it sees from a writer carries that writer's odd seq with it: the
 * second read differs and the copy is dropped.  No fence is needed.
 */
struct addrlist_slot {
	atomic_uint seq;  /* odd while being written */
	atomic_bool busy; /* one writer per slot */
	_Atomic uint64_t word[LIST_WORDS];
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

static void store_words(struct addrlist_slot *slot, const struct addrlist_list *list, size_t n)
{
	uint64_t w[LIST_WORDS] = { 0 };
	size_t i;

	memcpy(w, list, sizeof(*list));
	for (i = 0; i < n; i++)
		atomic_store_explicit(&slot->word[i], w[i], memory_order_release);
}

static void load_words(struct addrlist_slot *slot, uint64_t *w, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to; i++)
		w[i] = atomic_load_explicit(&slot->word[i], memory_order_acquire);
}

void addrlist_remember(const struct addrinfo *res, uint64_t now_ms)
{
	struct addrlist_list list;
	struct addrlist_slot *slot;
	unsigned n = 0;
	bool truncated = false;
	uint64_t order;
	const struct addrinfo *ai;

	memset(&list, 0, sizeof(list));
	for (ai = res; ai; ai = ai->ai_next) {
		struct target_addr t;

		if (!target_from_sockaddr(ai->ai_addr, ai->ai_addrlen, &t) || t.family == AF_UNIX)
			continue;
		if (already_listed(list.addr, n, &t))
			continue;
		if (n == ADDRLIST_ADDRS) {
			truncated = true;
			break;
		}
		list.addr[n++] = t;
	}
	if (n < 2)
		return;
	order = atomic_fetch_add_explicit(&addrlist_next, 1, memory_order_relaxed);
	slot = &addrlist_slots[order % ADDRLIST_LISTS];
	if (atomic_exchange_explicit(&slot->busy, true, memory_order_acquire))
		return; /* another writer has this slot: losing one list is harmless */
	list.stamp_ms = now_ms;
	list.order = order + 1;
	list.count = n;
	list.truncated = truncated;
	atomic_fetch_add_explicit(&slot->seq, 1, memory_order_relaxed);
	store_words(slot, &list,
		    (offsetof(struct addrlist_list, addr) + n * sizeof(list.addr[0]) + 7) / 8);
	atomic_fetch_add_explicit(&slot->seq, 1, memory_order_release);
	atomic_store_explicit(&slot->busy, false, memory_order_release);
}

/* Copy @slot consistently; false if a writer was in it. */
static bool read_slot(struct addrlist_slot *slot, struct addrlist_list *copy)
{
	unsigned before = atomic_load_explicit(&slot->seq, memory_order_acquire);
	uint64_t w[LIST_WORDS];
	size_t n;

	if (before & 1)
		return false;
	load_words(slot, w, 0, HEADER_WORDS);
	memcpy(copy, w, offsetof(struct addrlist_list, addr));
	if (copy->count > ADDRLIST_ADDRS)
		copy->count = ADDRLIST_ADDRS; /* torn: dropped below */
	n = (offsetof(struct addrlist_list, addr) + copy->count * sizeof(copy->addr[0]) + 7) / 8;
	load_words(slot, w, HEADER_WORDS, n);
	memcpy(copy->addr, (const char *)w + offsetof(struct addrlist_list, addr),
	       copy->count * sizeof(copy->addr[0]));
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
		struct addrlist_list copy;

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
