/* The per-fd table: pages mapped on first use, slots claimed with one atomic word each. */
#include "tables/fdtable.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters/events.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/kcall.h"
#include "sys/startup.h"

#define LEAF_SLOTS (1U << FDTABLE_LEAF_BITS)
#define MID_ENTRIES (1U << FDTABLE_MID_BITS)
#define DIR_ENTRIES (1U << FDTABLE_DIR_BITS)

/* A claim older than this was abandoned (siglongjmp out of a hook): it may be taken over. */
#define CLAIM_STALE_NS 1000000000ULL

_Atomic(struct fdtable_mid *) fdtable_dir[DIR_ENTRIES];
STARTUP_DATA static atomic_uint top_fd; /* the highest fd with a slot: scans stop there */

STARTUP_DATA atomic_bool fdtable_first_used;
STARTUP_DATA atomic_uint fdtable_managed;
STARTUP_DATA atomic_uint fdtable_first;
STARTUP_DATA _Atomic uint64_t fdtable_attention;
STARTUP_DATA atomic_uint fdtable_epoch;

/*
 * The slots this thread holds or is taking, innermost last: a signal handler
 * runs on the thread it interrupted, so it finds here the claims it must
 * never wait for (the interrupted code holds them until the handler returns).
 */
#define HELD_MAX 8
static __thread struct {
	struct fdslot *slot[HELD_MAX];
	unsigned n;
} held __attribute__((tls_model("initial-exec")));

static bool held_here(const struct fdslot *s)
{
	unsigned i, n = held.n < HELD_MAX ? held.n : HELD_MAX;

	for (i = 0; i < n; i++)
		if (held.slot[i] == s)
			return true;
	return false;
}

static void held_push(struct fdslot *s)
{
	/* Full only after siglongjmps left entries behind: the oldest goes. */
	if (held.n >= HELD_MAX)
		held.n = HELD_MAX - 1;
	held.slot[held.n] = s;
	atomic_signal_fence(memory_order_seq_cst); /* seen by a handler before the CAS */
	held.n++;
}

static void held_pop(const struct fdslot *s)
{
	if (held.n > 0 && held.slot[held.n - 1] == s)
		held.n--;
}

/* Whether the claim on @s (seen at @now) was abandoned: made over a second ago. */
static bool claim_stale(const struct fdslot *s, uint64_t now)
{
	uint64_t since = atomic_load_explicit(&s->claimed_ns, memory_order_relaxed);

	/* 0: a claim just taken, its time not written yet. */
	return since != 0 && now > since && now - since > CLAIM_STALE_NS;
}

/*
 * The process this state belongs to.  A vfork() child runs in its parent's
 * memory until it execs and may close fds meanwhile: those are its own, so
 * it leaves the parent's connects alone.
 */
STARTUP_DATA static atomic_int owner_pid;

static bool in_vfork_child(void)
{
	int owner = atomic_load_explicit(&owner_pid, memory_order_relaxed);

	return owner != 0 && owner != (int)kcall_getpid();
}

static void *map_zeroed(size_t size)
{
	void *p = kcall_mmap(size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * The first middle page, that of fds 256 to 262143, and the slots of fds 0
 * to 255: a mapping costs a process two system calls, and in the
 * zero-filled section they cost nothing until touched.  The first slots
 * begin a page, so that fds 0 to 5 share one.
 */
static struct fdtable_mid first_mid;
PAGE_BSS struct fdtable_leaf fdtable_first_leaf;

/*
 * The page at *@at, @first or else mapped, and published once; NULL if
 * memory cannot be had.
 */
static void *page(_Atomic(void *) *at, size_t size, void *first)
{
	void *p = atomic_load_explicit(at, memory_order_acquire), *expected = NULL;

	if (p)
		return p;
	p = first ? first : map_zeroed(size);
	if (!p)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(at, &expected, p, memory_order_acq_rel,
						     memory_order_acquire)) {
		if (!first)
			kcall_munmap(p, size); /* another thread won the race */
		return expected;
	}
	return p;
}

struct fdslot *fdtable_get(int fd)
{
	static atomic_bool warned;
	unsigned u = (unsigned)fd;
	int saved = errno;
	struct fdtable_mid *m;
	struct fdtable_leaf *l = NULL;

	if (u < FDTABLE_FIRST_FDS) {
		if (!atomic_load_explicit(&fdtable_first_used, memory_order_relaxed))
			atomic_store_explicit(&fdtable_first_used, true, memory_order_release);
		fdtable_cover(fd);
		return &fdtable_first_leaf.slot[u];
	}
	if (fd < 0 || u >= FDTABLE_MAX_FD)
		return NULL;
	m = page((_Atomic(void *) *)&fdtable_dir[u >> (FDTABLE_LEAF_BITS + FDTABLE_MID_BITS)],
		 sizeof(struct fdtable_mid),
		 u < (1U << (FDTABLE_LEAF_BITS + FDTABLE_MID_BITS)) ? &first_mid : NULL);
	if (m)
		l = page((_Atomic(void *) *)&m->leaf[(u >> FDTABLE_LEAF_BITS) & (MID_ENTRIES - 1)],
			 sizeof(struct fdtable_leaf), NULL);
	if (!l) {
		events_unmanaged();
		if (!atomic_exchange_explicit(&warned, true, memory_order_relaxed))
			log_notice(LOG_LEVEL_WARN, "unmanaged",
				   "out of memory for the fd table: some connects pass through "
				   "unretried");
		errno = saved;
		return NULL;
	}
	fdtable_cover(fd);
	errno = saved;
	return &l->slot[u & (LEAF_SLOTS - 1)];
}

void fdtable_cover(int fd)
{
	unsigned u = (unsigned)fd, top = atomic_load_explicit(&top_fd, memory_order_relaxed);

	while (fd >= 0 && u > top &&
	       !atomic_compare_exchange_weak_explicit(&top_fd, &top, u, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

bool fdtable_claim(struct fdslot *s, bool wait)
{
	uint32_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
	unsigned spins = 0;

	if (atomic_load_explicit(&owner_pid, memory_order_relaxed) == 0)
		atomic_store_explicit(&owner_pid, (int)kcall_getpid(), memory_order_relaxed);
	/* A handler on the claiming thread: never wait for ourselves. */
	if (held_here(s))
		return false;
	held_push(s);
	for (;;) {
		if (!(w & FDS_CLAIMED)) {
			if (atomic_compare_exchange_weak_explicit(&s->word, &w, w | FDS_CLAIMED,
								  memory_order_acquire,
								  memory_order_relaxed))
				break;
			continue;
		}
		if (claim_stale(s, clock_coarse_ns())) {
			/* Abandoned (a siglongjmp out of a hook): take it over. */
			if (atomic_compare_exchange_strong_explicit(
				    &s->word, &w, w, memory_order_acquire, memory_order_relaxed))
				break;
			continue;
		}
		if (!wait) {
			held_pop(s);
			return false;
		}
		if (++spins % 64 == 0)
			kcall_sched_yield();
		w = atomic_load_explicit(&s->word, memory_order_relaxed);
	}
	atomic_store_explicit(&s->claimed_ns, clock_coarse_ns() | 1, memory_order_relaxed);
	return true;
}

unsigned fdtable_settled(struct fdslot *s)
{
	uint32_t w = atomic_load_explicit(&s->word, memory_order_acquire);
	unsigned spins = 0;

	if (held_here(s))
		return w & FDS_STATE;
	while ((w & FDS_CLAIMED) && !claim_stale(s, clock_coarse_ns())) {
		if (++spins % 64 == 0)
			kcall_sched_yield();
		w = atomic_load_explicit(&s->word, memory_order_acquire);
	}
	return w & FDS_STATE;
}

static bool masks(unsigned state)
{
	return state == FDS_HIDDEN || state == FDS_FAILED;
}

/* Keep the counters of managed and hidden connects as a slot goes from one state to another. */
static void fdtable_count(unsigned old_state, unsigned new_state)
{
	if (old_state == FDS_FREE && new_state != FDS_FREE)
		atomic_fetch_add_explicit(&fdtable_managed, 1, memory_order_relaxed);
	else if (old_state != FDS_FREE && new_state == FDS_FREE)
		atomic_fetch_sub_explicit(&fdtable_managed, 1, memory_order_relaxed);
	if (!masks(old_state) && masks(new_state))
		atomic_fetch_add_explicit(&fdtable_attention, FDTABLE_HIDDEN_ONE,
					  memory_order_relaxed);
	else if (masks(old_state) && !masks(new_state))
		atomic_fetch_sub_explicit(&fdtable_attention, FDTABLE_HIDDEN_ONE,
					  memory_order_relaxed);
}

/*
 * What @s holds of one life of its fd outside the word: a connection made
 * again after an early close (its time, the end the first one met).  Ended
 * where the life ends (a close, a fork's child) and where a new one begins
 * (a socket made on the number, which may have been closed behind the
 * hooks): a later socket of the number never meets it.  Two loads when
 * there is nothing to end.
 */
static void life_end(struct fdslot *s)
{
	if (__builtin_expect(atomic_load_explicit(&s->again_until_ms, memory_order_relaxed) != 0 ||
				     atomic_load_explicit(&s->again_end, memory_order_relaxed) != 0,
			     0)) {
		atomic_store_explicit(&s->again_until_ms, 0, memory_order_relaxed);
		atomic_store_explicit(&s->again_end, 0, memory_order_relaxed);
	}
}

unsigned fdtable_release(struct fdslot *s, unsigned state)
{
	uint32_t w = atomic_load_explicit(&s->word, memory_order_relaxed), next;

	/* Not stale until the next claimer says when it claimed. */
	atomic_store_explicit(&s->claimed_ns, 0, memory_order_relaxed);
	do {
		if (w & FDS_CLOSED) {
			next = w & FDS_EPOLL; /* closed meanwhile: nothing survives */
			atomic_store_explicit(&s->nreg, 0, memory_order_relaxed);
			life_end(s);
		} else {
			next = (w & ~(FDS_CLAIMED | FDS_STATE)) | state;
		}
	} while (!atomic_compare_exchange_weak_explicit(&s->word, &w, next, memory_order_release,
							memory_order_relaxed));
	if ((w & FDS_FLIGHT) && !(next & FDS_FLIGHT))
		fdtable_flight_free(atomic_exchange(&s->flight, NULL));
	fdtable_count(w & FDS_STATE, next & FDS_STATE);
	if ((w & FDS_FIRST) && !(next & FDS_FIRST))
		atomic_fetch_sub_explicit(&fdtable_first, 1, memory_order_relaxed);
	if ((w & FDS_BOUND) && !(next & FDS_BOUND))
		atomic_fetch_sub_explicit(&fdtable_attention, FDTABLE_BOUND_ONE,
					  memory_order_relaxed);
	held_pop(s);
	return next & FDS_STATE;
}

void fdtable_forget(int fd)
{
	struct fdslot *s = fdtable_peek(fd);
	uint32_t w, next;

	if (!s)
		return;
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	/* Claimed: the claimer ends it at release (it may be writing it now). */
	if (!(w & FDS_CLAIMED))
		life_end(s);
	if (w == 0)
		return;
	if (w & FDS_EPOLL)
		atomic_fetch_add_explicit(&s->epgen, 1, memory_order_relaxed);
	if ((w & FDS_STATE) != FDS_FREE && in_vfork_child())
		return;
	/*
	 * Another thread working on this fd (a due retry) finishes first: after
	 * the real close the number may be another socket's.  Claims are short
	 * and never wait on the kernel; the thread's own claim (a handler) is not
	 * waited for: its claimer clears the slot at release.
	 */
	if (w & FDS_CLAIMED) {
		fdtable_settled(s);
		w = atomic_load_explicit(&s->word, memory_order_relaxed);
	}
	do {
		if (w & FDS_CLAIMED) {
			next = w | FDS_CLOSED; /* the claimer clears it */
		} else {
			next = 0;
			atomic_store_explicit(&s->nreg, 0, memory_order_relaxed);
		}
	} while (!atomic_compare_exchange_weak_explicit(&s->word, &w, next, memory_order_acq_rel,
							memory_order_relaxed));
	if (!(w & FDS_CLAIMED)) {
		life_end(s);
		if (w & FDS_FLIGHT)
			fdtable_flight_free(atomic_exchange(&s->flight, NULL));
		/* A socket whose mode alone is known (most) was never counted. */
		if ((w & FDS_STATE) != FDS_FREE)
			fdtable_count(w & FDS_STATE, FDS_FREE);
		if (w & FDS_FIRST)
			atomic_fetch_sub_explicit(&fdtable_first, 1, memory_order_relaxed);
		/* Closed: the bound goes with the socket. */
		if (w & FDS_BOUND)
			atomic_fetch_sub_explicit(&fdtable_attention, FDTABLE_BOUND_ONE,
						  memory_order_relaxed);
	}
}

bool fdtable_set_bound(int fd, struct fdslot *s, bool on)
{
	uint32_t w;

	if (!s)
		s = fdtable_peek(fd);
	if (!s && on)
		s = fdtable_get(fd); /* a socket no hook saw made */
	/* Clearing a bit not set, the hooks' case: a load, no write to the slot. */
	if (!s || (!on && !(atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_BOUND)))
		return false;
	if (on)
		fdtable_cover(fd);
	w = on ? atomic_fetch_or_explicit(&s->word, FDS_BOUND, memory_order_relaxed)
	       : atomic_fetch_and_explicit(&s->word, ~FDS_BOUND, memory_order_relaxed);
	if (!(w & FDS_BOUND) == !on)
		return false;
	if (on)
		atomic_fetch_add_explicit(&fdtable_attention, FDTABLE_BOUND_ONE,
					  memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&fdtable_attention, FDTABLE_BOUND_ONE,
					  memory_order_relaxed);
	return true;
}

bool fdtable_set_first(struct fdslot *s, bool on)
{
	/* Set with release: the address written before it is seen with the flag. */
	uint32_t w = on ? atomic_fetch_or_explicit(&s->word, FDS_FIRST, memory_order_release)
			: atomic_fetch_and_explicit(&s->word, ~FDS_FIRST, memory_order_relaxed);

	if (!(w & FDS_FIRST) == !on)
		return false;
	if (on)
		atomic_fetch_add_explicit(&fdtable_first, 1, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&fdtable_first, 1, memory_order_relaxed);
	return true;
}

struct flight *fdtable_flight_take(struct fdslot *s)
{
	if (!(atomic_fetch_and_explicit(&s->word, ~FDS_FLIGHT, memory_order_acq_rel) & FDS_FLIGHT))
		return NULL;
	return atomic_exchange(&s->flight, NULL);
}

void fdtable_flight_put(struct fdslot *s, struct flight *f)
{
	fdtable_flight_free(atomic_exchange(&s->flight, f));
	atomic_fetch_or_explicit(&s->word, FDS_FLIGHT, memory_order_release);
}

/*
 * The flights of connections that are over, kept for the next ones: a
 * process that records one connection after another, a few at once (a proxy
 * with +http), maps none after its first few.  Their pages stay as far as
 * records wrote them.
 */
#define SPARE_FLIGHTS 8
static _Atomic(struct flight *) spare_flights[SPARE_FLIGHTS];

struct flight *fdtable_flight_new(void)
{
	struct flight *f;
	int saved = errno;
	unsigned i;

	for (i = 0; i < SPARE_FLIGHTS; i++) {
		if (!atomic_load_explicit(&spare_flights[i], memory_order_relaxed))
			continue;
		f = atomic_exchange_explicit(&spare_flights[i], NULL, memory_order_acquire);
		if (f) {
			f->len = 0;
			return f;
		}
	}
	f = kcall_mmap(sizeof(*f), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	errno = saved;
	return f == MAP_FAILED ? NULL : f;
}

void fdtable_flight_free(struct flight *f)
{
	int saved = errno;
	unsigned i;

	for (i = 0; f && i < SPARE_FLIGHTS; i++) {
		struct flight *none = NULL;

		if (atomic_compare_exchange_strong_explicit(&spare_flights[i], &none, f,
							    memory_order_release,
							    memory_order_relaxed))
			f = NULL;
	}
	if (f)
		kcall_munmap(f, sizeof(*f));
	errno = saved;
}

void fdtable_forget_range(unsigned lo, unsigned hi)
{
	unsigned top = atomic_load_explicit(&top_fd, memory_order_relaxed), fd;

	if (hi > top)
		hi = top;
	for (fd = lo; fd <= hi; fd++) {
		/* Whole pages never mapped hold nothing. */
		if (!fdtable_peek((int)fd) && fd % LEAF_SLOTS == 0) {
			fd += LEAF_SLOTS - 1;
			continue;
		}
		fdtable_forget((int)fd);
	}
}

unsigned fdtable_top(void)
{
	return atomic_load_explicit(&top_fd, memory_order_relaxed);
}

void fdtable_after_fork(void)
{
	unsigned top = atomic_load_explicit(&top_fd, memory_order_relaxed), fd;

	for (fd = 0; fd <= top; fd++) {
		struct fdslot *s = fdtable_peek((int)fd);
		uint32_t w;

		if (!s) {
			fd |= LEAF_SLOTS - 1;
			continue;
		}
		/* The registrations are the kernel's and stay true; the connects were the parent's.
		 */
		w = atomic_load_explicit(&s->word, memory_order_relaxed);
		atomic_store_explicit(&s->word, w & (FDS_EPOLL | FDS_REGS | FDS_UNKNOWN),
				      memory_order_relaxed);
		atomic_store_explicit(&s->claimed_ns, 0, memory_order_relaxed);
		life_end(s);
	}
	atomic_store_explicit(&fdtable_managed, 0, memory_order_relaxed);
	atomic_store_explicit(&fdtable_first, 0, memory_order_relaxed);
	/*
	 * Nothing hidden; and a bound is the option of a socket the parent
	 * shares: given back by the parent, whose attempt it may still be, never
	 * by the child.
	 */
	atomic_store_explicit(&fdtable_attention, 0, memory_order_relaxed);
	atomic_store_explicit(&owner_pid, (int)kcall_getpid(), memory_order_relaxed);
}

/* @s's mode set to @mode, its word guessed to be @w: the word it had. */
static uint32_t mode_set(struct fdslot *s, uint32_t w, uint32_t mode)
{
	while (!atomic_compare_exchange_weak_explicit(
		&s->word, &w, (w & ~(FDS_MODE | ~0U << FDS_EPOCH_SHIFT)) | mode,
		memory_order_release, memory_order_relaxed))
		;
	return w;
}

void fdtable_mode_made(int fd, unsigned epoch, unsigned bits)
{
	struct fdslot *s = fdtable_peek(fd);
	uint32_t w, mode = FDS_KNOWN | (bits & FDS_MODE) | (epoch & 0xffffU) << FDS_EPOCH_SHIFT;

	if (!s && !(s = fdtable_get(fd)))
		return;
	fdtable_cover(fd);
	/*
	 * A fresh slot's word is 0: guessed, so that the slot's page is first
	 * touched by a write (one page fault, where a read first maps the zero
	 * page and the write then faults again).
	 */
	w = mode_set(s, 0, mode);
	life_end(s); /* a new socket: nothing of the number's last one is its own */
	/*
	 * A connect still managed on the number: its socket was closed behind
	 * the hooks (fclose, a raw system call), and its state is stale.  Ended
	 * as a close ends it; then this socket's mode, once more.
	 */
	if (__builtin_expect((w & FDS_STATE) != FDS_FREE, 0)) {
		fdtable_forget(fd);
		(void)mode_set(s, atomic_load_explicit(&s->word, memory_order_relaxed), mode);
	}
}

void fdtable_mode_change(int fd, unsigned bit, bool on)
{
	struct fdslot *s = fdtable_peek(fd);
	uint32_t w;

	if (!s)
		return;
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	while ((w & FDS_KNOWN) &&
	       !atomic_compare_exchange_weak_explicit(&s->word, &w, on ? w | bit : w & ~bit,
						      memory_order_release, memory_order_relaxed))
		;
}

void fdtable_mode_forget(int fd)
{
	struct fdslot *s = fdtable_peek(fd);

	if (s && (atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_KNOWN))
		atomic_fetch_and_explicit(&s->word, ~FDS_MODE, memory_order_release);
}

void fdtable_mode_after_fork(void)
{
	unsigned epoch = atomic_fetch_add_explicit(&fdtable_epoch, 1, memory_order_acq_rel) + 1,
		 top, fd;

	if ((epoch & 0xffffU) != 0)
		return;
	/* The epoch's low bits wrapped: a mode learnt 65536 forks ago must not look new. */
	top = atomic_load_explicit(&top_fd, memory_order_relaxed);
	for (fd = 0; fd <= top; fd++) {
		if (!fdtable_peek((int)fd)) {
			fd |= LEAF_SLOTS - 1;
			continue;
		}
		fdtable_mode_forget((int)fd);
	}
}

/* A blocking attempt's bound, noted in the fd's slot (NULL: looked up). */
struct slot_bound {
	struct sock_bound base; /* first: the slot_bound is told as its sock_bound */
	struct fdslot *slot;
};

/* The socket @fd carries a connect's bound (@on), or its own send timeout again. */
static void bound_told(struct sock_bound *self, int fd, bool on)
{
	(void)fdtable_set_bound(fd, ((struct slot_bound *)self)->slot, on);
}

int fdtable_connect_from(int fd, struct fdslot *s, const struct sockaddr *addr, socklen_t len,
			 uint64_t now_ms, uint64_t deadline_ms, enum sock_own_timeo own)
{
	struct slot_bound b = { { bound_told }, s };

	return sock_connect_from(fd, addr, len, now_ms, deadline_ms, own, &b.base);
}

__attribute__((noinline, cold)) void fdtable_give_back_sndtimeo(int fd)
{
	if (fdtable_set_bound(fd, NULL, false))
		sock_sndtimeo_none(fd);
}
