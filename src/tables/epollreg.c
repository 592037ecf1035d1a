/* Epoll registrations: recorded per fd at epoll_ctl, so a managed fd is never looked up in /proc.
 */
#include "tables/epollreg.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "sys/fdinfo.h"
#include "sys/real.h"
#include "sys/kcall.h"

/*
 * (epfd, data) -> fd hints for managed fds, open addressing with a short
 * probe: entries are never removed, only found stale (the fd no longer
 * managed or registered so) and overwritten.
 */
#define HINT_BITS 18
#define HINT_SIZE (1U << HINT_BITS)
#define HINT_PROBES 16
static _Atomic int hints[HINT_SIZE]; /* fd + 1; 0: never used */

static struct fdreg *reg_at(const struct fdslot *s, unsigned i)
{
	if (i < FDREG_INLINE)
		return (struct fdreg *)&s->reg[i];
	return atomic_load_explicit(&s->more, memory_order_acquire) + (i - FDREG_INLINE);
}

/* The epoll set @epfd as it is now: its close count, and whether it is one we saw. */
static uint32_t epgen_now(int epfd)
{
	struct fdslot *e = fdtable_peek(epfd);

	return e ? atomic_load_explicit(&e->epgen, memory_order_relaxed) : 0;
}

static bool reg_valid(const struct fdreg *r)
{
	return atomic_load_explicit(&r->epgen, memory_order_relaxed) ==
	       epgen_now(atomic_load_explicit(&r->epfd, memory_order_relaxed));
}

/* Registrations recorded for @s, valid or stale. */
static unsigned epollreg_count(const struct fdslot *s)
{
	return atomic_load_explicit(&s->nreg, memory_order_relaxed);
}

static int reg_find(const struct fdslot *s, int epfd)
{
	unsigned i, n = epollreg_count(s);

	for (i = 0; i < n; i++) {
		const struct fdreg *r = reg_at(s, i);

		if (atomic_load_explicit(&r->epfd, memory_order_relaxed) == epfd && reg_valid(r))
			return (int)i;
	}
	return -1;
}

static void reg_set(struct fdreg *r, int epfd, uint32_t events, uint64_t data)
{
	atomic_store_explicit(&r->epfd, epfd, memory_order_relaxed);
	atomic_store_explicit(&r->epgen, epgen_now(epfd), memory_order_relaxed);
	atomic_store_explicit(&r->events, events, memory_order_relaxed);
	atomic_store_explicit(&r->data, data, memory_order_relaxed);
}

static void reg_copy(struct fdreg *to, const struct fdreg *from)
{
	atomic_store_explicit(&to->epfd, atomic_load_explicit(&from->epfd, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&to->epgen, atomic_load_explicit(&from->epgen, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&to->events,
			      atomic_load_explicit(&from->events, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&to->data, atomic_load_explicit(&from->data, memory_order_relaxed),
			      memory_order_relaxed);
}

/* Room for registration @n: grown by doubling; old arrays stay mapped for lock-free readers. */
static bool reg_room(struct fdslot *s, unsigned n)
{
	unsigned cap = atomic_load_explicit(&s->morecap, memory_order_relaxed), i;
	struct fdreg *old = atomic_load_explicit(&s->more, memory_order_relaxed), *grown;
	size_t size;
	void *p;

	if (n < FDREG_INLINE + cap)
		return true;
	cap = cap ? cap * 2 : 8;
	size = cap * sizeof(struct fdreg);
	p = kcall_mmap(size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (p == MAP_FAILED)
		return false;
	grown = p;
	for (i = FDREG_INLINE; i < n; i++)
		reg_copy(&grown[i - FDREG_INLINE], &old[i - FDREG_INLINE]);
	atomic_store_explicit(&s->more, grown, memory_order_release);
	atomic_store_explicit(&s->morecap, cap, memory_order_relaxed);
	return true;
}

/* Drop registrations whose set was closed since, then registration @i. */
static void reg_remove(struct fdslot *s, unsigned i)
{
	unsigned n = epollreg_count(s);

	if (i + 1 < n)
		reg_copy(reg_at(s, i), reg_at(s, n - 1));
	atomic_store_explicit(&s->nreg, n - 1, memory_order_relaxed);
}

static void prune(struct fdslot *s)
{
	unsigned i = 0;

	while (i < epollreg_count(s)) {
		if (reg_valid(reg_at(s, i)))
			i++;
		else
			reg_remove(s, i);
	}
}

int epollreg_apply(struct fdslot *s, int fd, int epfd, int op, uint32_t events, uint64_t data)
{
	int i;

	(void)fd;
	prune(s);
	i = reg_find(s, epfd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (i >= 0)
			return EEXIST;
		if (!reg_room(s, epollreg_count(s)))
			return ENOMEM;
		reg_set(reg_at(s, epollreg_count(s)), epfd, events, data);
		atomic_store_explicit(&s->nreg, epollreg_count(s) + 1, memory_order_release);
		atomic_fetch_or_explicit(&s->word, FDS_REGS, memory_order_relaxed);
		return 0;
	case EPOLL_CTL_MOD:
		if (i < 0)
			return ENOENT;
		reg_set(reg_at(s, (unsigned)i), epfd, events, data);
		return 0;
	case EPOLL_CTL_DEL:
		if (i < 0)
			return ENOENT;
		reg_remove(s, (unsigned)i);
		return 0;
	default:
		return EINVAL;
	}
}

static void mark_epoll(int epfd)
{
	struct fdslot *e = fdtable_get(epfd);

	if (e && !(atomic_load_explicit(&e->word, memory_order_relaxed) & FDS_EPOLL))
		atomic_fetch_or_explicit(&e->word, FDS_EPOLL, memory_order_relaxed);
}

/* Not recorded: a connect on @fd asks /proc which sets hold it. */
static bool unknown(int fd)
{
	struct fdslot *s = fdtable_peek(fd);

	if (s)
		atomic_fetch_or_explicit(&s->word, FDS_UNKNOWN, memory_order_relaxed);
	return false;
}

bool epollreg_record(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct fdslot *s;
	bool ok;

	/* Nothing was recorded of an fd never added: a delete or modify has nothing to change. */
	if (op != EPOLL_CTL_ADD) {
		s = fdtable_peek(fd);
		if (!s || !(atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_REGS))
			return true;
	} else {
		mark_epoll(epfd);
		s = fdtable_get(fd);
		if (!s)
			return unknown(fd);
	}
	if (!fdtable_claim(s, true))
		return unknown(fd);
	ok = epollreg_apply(s, fd, epfd, op, events, data) == 0;
	if (ok && fdtable_state_of(s) != FDS_FREE)
		ok = epollreg_index(s, fd);
	fdtable_release(s, fdtable_state_of(s));
	return ok || unknown(fd);
}

void epollreg_hide(struct fdslot *s, int fd)
{
	unsigned i, n = epollreg_count(s);
	int saved = errno;

	/* A closed socket is always OUT|HUP, and EPOLLHUP cannot be masked: delete, replay later.
	 */
	for (i = 0; i < n; i++) {
		const struct fdreg *r = reg_at(s, i);

		if (reg_valid(r))
			real_epoll_ctl(atomic_load_explicit(&r->epfd, memory_order_relaxed),
				       EPOLL_CTL_DEL, fd, NULL);
	}
	errno = saved;
}

void epollreg_replay(struct fdslot *s, int fd)
{
	unsigned i, n = epollreg_count(s);
	int saved = errno;

	for (i = 0; i < n; i++) {
		const struct fdreg *r = reg_at(s, i);
		int epfd = atomic_load_explicit(&r->epfd, memory_order_relaxed);
		struct epoll_event ev = {
			.events = atomic_load_explicit(&r->events, memory_order_relaxed),
			.data.u64 = atomic_load_explicit(&r->data, memory_order_relaxed),
		};

		if (!reg_valid(r))
			continue;
		if (real_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
			real_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
	}
	errno = saved;
}

static unsigned hint_hash(int epfd, uint64_t data)
{
	uint64_t h = (data ^ ((uint64_t)(unsigned)epfd << 40)) * 0x9e3779b97f4a7c15ULL;

	return (unsigned)(h >> (64 - HINT_BITS));
}

static bool managed(int fd)
{
	struct fdslot *s = fdtable_peek(fd);

	return s && fdtable_state_of(s) != FDS_FREE;
}

/* Whether @fd is managed and registered in @epfd with @data now. */
static bool registered_as(int fd, int epfd, uint64_t data)
{
	struct fdslot *s = fdtable_peek(fd);
	int i;

	if (!s || fdtable_state_of(s) == FDS_FREE)
		return false;
	i = reg_find(s, epfd);
	return i >= 0 &&
	       atomic_load_explicit(&reg_at(s, (unsigned)i)->data, memory_order_relaxed) == data;
}

static bool hint_put(int fd, int epfd, uint64_t data)
{
	unsigned h = hint_hash(epfd, data), k;

	/* An event loop that keeps the fd in data finds it without the index. */
	if ((int)(uint32_t)data == fd)
		return true;
	for (k = 0; k < HINT_PROBES; k++) {
		_Atomic int *slot = &hints[(h + k) & (HINT_SIZE - 1)];
		int old = atomic_load_explicit(slot, memory_order_relaxed);

		if (old == fd + 1)
			return true;
		if (old != 0 && managed(old - 1) && !registered_as(old - 1, epfd, data))
			continue; /* in use by another managed fd */
		if (atomic_compare_exchange_strong_explicit(
			    slot, &old, fd + 1, memory_order_release, memory_order_relaxed))
			return true;
	}
	return false;
}

bool epollreg_index(const struct fdslot *s, int fd)
{
	unsigned i, n = epollreg_count(s);

	for (i = 0; i < n; i++) {
		const struct fdreg *r = reg_at(s, i);

		if (reg_valid(r) &&
		    !hint_put(fd, atomic_load_explicit(&r->epfd, memory_order_relaxed),
			      atomic_load_explicit(&r->data, memory_order_relaxed)))
			return false;
	}
	return true;
}

int epollreg_lookup(int epfd, uint64_t data)
{
	unsigned h, k;
	int fd = (int)(uint32_t)data;

	if (fd >= 0 && registered_as(fd, epfd, data))
		return fd;
	h = hint_hash(epfd, data);
	for (k = 0; k < HINT_PROBES; k++) {
		int v = atomic_load_explicit(&hints[(h + k) & (HINT_SIZE - 1)],
					     memory_order_acquire);

		if (v != 0 && registered_as(v - 1, epfd, data))
			return v - 1;
	}
	return -1;
}

bool epollreg_from_proc(struct fdslot *s, int fd)
{
	unsigned top = fdtable_top(), e;

	for (e = 0; e <= top; e++) {
		struct fdslot *es = fdtable_peek((int)e);
		uint32_t events;
		uint64_t data;
		int rc;

		if (!es || !(atomic_load_explicit(&es->word, memory_order_relaxed) & FDS_EPOLL))
			continue;
		rc = fdinfo_read((int)e, fd, &events, &data);
		if (rc < 0)
			return false;
		if (rc == 1 && epollreg_apply(s, fd, (int)e, EPOLL_CTL_ADD, events, data) == ENOMEM)
			return false;
	}
	return true;
}
