/* The per-fd table: what the library knows of each fd, found by number without a lock. */
#ifndef BACKOFF_TABLES_FDTABLE_H
#define BACKOFF_TABLES_FDTABLE_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "sys/sock.h"

/*
 * Three levels (directory, middle, leaf page) cover every fd number the
 * kernel allows (nr_open is at most 2^30); middle and leaf pages are mapped
 * on first use, so memory follows the highest fd the library was told of.
 */
#define FDTABLE_LEAF_BITS 8
#define FDTABLE_MID_BITS 10
#define FDTABLE_DIR_BITS 12
#define FDTABLE_MAX_FD (1U << (FDTABLE_LEAF_BITS + FDTABLE_MID_BITS + FDTABLE_DIR_BITS))

/* The state of a managed connect, in the low bits of fdslot.word. */
enum fdtable_state {
	FDS_FREE = 0,	    /* not a managed connect */
	FDS_CONNECTING = 1, /* an attempt is in the kernel's hands, visible */
	FDS_HIDDEN = 2,	    /* a failed attempt, hidden until its retry is due */
	FDS_FAILED = 3,	    /* the outcome is an error the kernel no longer holds */
	FDS_FINAL = 4,	    /* the last failure was handed over: connect() is the kernel's */
	FDS_AWAIT = 5,	    /* connected again after an early close: its first byte due by due_ms */
};
#define FDS_STATE 0x7U
#define FDS_CLAIMED 0x8U  /* one thread works on the slot; others do not wait for it */
#define FDS_EPOLL 0x10U	  /* the fd is an epoll set: epgen counts its closes */
#define FDS_REGS 0x20U	  /* the fd's epoll registrations are recorded */
#define FDS_CLOSED 0x40U  /* closed while claimed: the claimer clears it on release */
#define FDS_UNKNOWN 0x80U /* an epoll_ctl on the fd could not be recorded: ask /proc */
#define FDS_FIRST 0x100U  /* connected through the library, no byte from the peer yet */
/*
 * What a connect would otherwise ask the kernel (fdtable_mode_of): FDS_KNOWN
 * when the library saw the socket made and every change since, in the
 * fork epoch whose low bits are the word's high half.
 */
#define FDS_KNOWN 0x200U    /* FDS_NONBLOCK and FDS_OWNTIMEO are true */
#define FDS_NONBLOCK 0x400U /* O_NONBLOCK is set */
#define FDS_OWNTIMEO 0x800U /* the program set a send timeout (SO_SNDTIMEO) of its own */
#define FDS_MODE (FDS_KNOWN | FDS_NONBLOCK | FDS_OWNTIMEO)
#define FDS_EPOCH_SHIFT 16U
#define FDS_FLIGHT 0x1000U   /* fdslot.flight holds a mapping */
#define FDS_NOREPLAY 0x2000U /* something sent was not recorded: never replayed */
/*
 * The socket carries a blocking connect's bound as its send timeout: set
 * while the bounded attempt runs, cleared when the program's own value
 * (none) is given back; still set after a siglongjmp out of the attempt.
 */
#define FDS_BOUND 0x4000U
/* The program ended its side of the connection (shutdown) before its first byte. */
#define FDS_SHUT 0x8000U

/* What the program sent on a connection before its first byte, for BACKOFF_REPLAY. */
#define FLIGHT_MAX 65536U
struct flight {
	uint32_t len; /* bytes recorded, in data */
	unsigned char data[FLIGHT_MAX];
};

/* One registration of the fd in an epoll set; atomics, read while it may change. */
struct fdreg {
	_Atomic int epfd;
	_Atomic uint32_t epgen; /* the set's fdslot.epgen when added: a reused epfd differs */
	_Atomic uint32_t events;
	_Atomic uint64_t data;
};

#define FDREG_INLINE 2

/*
 * The bytes a slot keeps for a managed connect's record, which is the event
 * loop driver's (drivers/conn.h: struct fdconn): the table never reads them.
 */
#define FDTABLE_CONN_BYTES 448U

struct fdslot {
	_Atomic uint32_t word;	/* fdtable_state | FDS_* flags */
	_Atomic uint32_t epgen; /* as an epoll set: bumped at every close */
	_Atomic uint32_t nreg;	/* registrations of this fd recorded in reg[] then more[] */
	_Atomic uint32_t morecap;
	_Atomic(struct fdreg *) more; /* mapped when the fd is in more than FDREG_INLINE sets */
	_Atomic uint64_t
		claimed_ns; /* when claimed (0: just now): a claim left by siglongjmp expires */
	struct fdreg reg[FDREG_INLINE];
	_Alignas(8) unsigned char conn[FDTABLE_CONN_BYTES]; /* the driver's: written by the claimer
							     */
	/* FDS_FIRST: where the connection goes, written before the flag is set */
	struct sockaddr_in6 first_addr;
	socklen_t first_len;
	_Atomic(struct flight *) flight; /* FDS_FLIGHT: written by the claimer */
	/*
	 * The connection is being made again after an early close: by when its
	 * new connection must have answered (monotonic ms; 0: not being made
	 * again).  again_end: 0, the connection is the program's own; else the
	 * library made it again, and the first one ended with again_end - 1
	 * (0: end of file, else its errno), which the program gets if the
	 * library's connections fail, stay silent or end too.  Both end with
	 * the fd's life (fdtable.c: a close of any kind, a socket made on the
	 * number, a fork's child).
	 */
	_Atomic uint64_t again_until_ms;
	_Atomic int again_end;
	/* While made again: the first connection's own address, for getsockname (0: none). */
	struct sockaddr_in6 again_local;
	socklen_t again_local_len;
};

/* Managed connects in the process (those hidden: fdtable_attention): the fast paths read it. */
extern atomic_uint fdtable_managed;

/* Whether any connect is managed: one relaxed load, for every wait hook. */
static inline bool fdtable_any(void)
{
	return atomic_load_explicit(&fdtable_managed, memory_order_relaxed) != 0;
}

/* Connections that have not yet received their first byte (FDS_FIRST). */
extern atomic_uint fdtable_first;

/* Whether any connection awaits its first byte: one relaxed load, for the I/O hooks. */
static inline bool fdtable_any_first(void)
{
	return atomic_load_explicit(&fdtable_first, memory_order_relaxed) != 0;
}

/*
 * Set FDS_FIRST on @s (@on) or clear it; returns whether it changed.  The
 * counter follows.  Lock-free, async-signal-safe.
 */
bool fdtable_set_first(struct fdslot *s, bool on);

/*
 * Take @s's flight (FDS_FLIGHT cleared), or NULL.  The caller owns it: it
 * gives it back with fdtable_flight_put or unmaps it with fdtable_flight_free.
 * Lock-free, async-signal-safe.
 */
struct flight *fdtable_flight_take(struct fdslot *s);

/* Give @f back to @s (its fd still the same socket); unmapped if @s has one already. */
void fdtable_flight_put(struct fdslot *s, struct flight *f);

/*
 * A flight, empty: the one a finished connection left, else a new mapping;
 * NULL if memory cannot be had.  Async-signal-safe; errno untouched.
 */
struct flight *fdtable_flight_new(void);

/*
 * Done with @f (NULL: nothing): kept for the next connection's record, or
 * unmapped if one is kept already.  Async-signal-safe; errno untouched.
 */
void fdtable_flight_free(struct flight *f);

/*
 * Two counts in one word, so that the hooks that send test both with one
 * load: fds whose state masks them from the program (FDS_HIDDEN,
 * FDS_FAILED) in the low half, sockets that carry a connect's bound
 * (FDS_BOUND) in the high half.
 */
extern _Atomic uint64_t fdtable_attention;
#define FDTABLE_HIDDEN_ONE 1ULL
#define FDTABLE_BOUND_ONE (1ULL << 32)

/* Whether any fd is masked or carries a bound: one relaxed load. */
static inline bool fdtable_any_attention(void)
{
	return atomic_load_explicit(&fdtable_attention, memory_order_relaxed) != 0;
}

/* Whether any socket carries a connect's bound: one relaxed load, for the hooks. */
static inline bool fdtable_any_bound(void)
{
	return (atomic_load_explicit(&fdtable_attention, memory_order_relaxed) >> 32) != 0;
}

/*
 * Set FDS_BOUND of @fd, whose slot is @s (NULL: looked up; @on: made if
 * needed), or clear it; returns
 * whether it changed.  The counter follows.  Lock-free, async-signal-safe,
 * errno untouched.
 */
bool fdtable_set_bound(int fd, struct fdslot *s, bool on);

/*
 * sock_connect_from on @fd, whose slot is @s (NULL: looked up): while its
 * bound is @fd's send timeout, the slot says so (FDS_BOUND), so that a
 * siglongjmp out of the attempt leaves it for the next hooked call on @fd to
 * give back (fdtable_give_back_sndtimeo).  0 or its errno; errno may change.
 */
int fdtable_connect_from(int fd, struct fdslot *s, const struct sockaddr *addr, socklen_t len,
			 uint64_t now_ms, uint64_t deadline_ms, enum sock_own_timeo own);

/*
 * A blocking connect on @fd was left by a siglongjmp with its bound still
 * the socket's send timeout: the program's own (none) is given back.  No
 * system call unless it was left so.  errno untouched; async-signal-safe.
 * (A call on the fd from another thread while the attempt runs gives it
 * back early too: the attempt then waits as it would without the library.)
 */
void fdtable_give_back_sndtimeo(int fd);

/* Before any call on @fd that the send timeout changes: one relaxed load, usually. */
#define GIVE_BACK_SNDTIMEO(fd)                                \
	do {                                                  \
		if (__builtin_expect(fdtable_any_bound(), 0)) \
			fdtable_give_back_sndtimeo(fd);       \
	} while (0)

/* Whether any fd needs an emulated answer: one relaxed load, for the I/O hooks. */
static inline bool fdtable_any_hidden(void)
{
	return (uint32_t)atomic_load_explicit(&fdtable_attention, memory_order_relaxed) != 0;
}

/* The table's pages (fdtable.c maps them), read by fdtable_peek in every hook. */
struct fdtable_leaf {
	struct fdslot slot[1U << FDTABLE_LEAF_BITS];
};

struct fdtable_mid {
	_Atomic(struct fdtable_leaf *) leaf[1U << FDTABLE_MID_BITS];
};

extern _Atomic(struct fdtable_mid *) fdtable_dir[1U << FDTABLE_DIR_BITS];

/*
 * The slots of fds 0 to 255, in place: every process that makes a socket
 * needs them.  Found without the directory and the middle page, whose first
 * touches cost a short-lived client four page faults (a read maps the zero
 * page, the write that follows a page of its own).
 */
#define FDTABLE_FIRST_FDS (1U << FDTABLE_LEAF_BITS)
extern struct fdtable_leaf fdtable_first_leaf;
/* Whether a slot of them was asked for (fdtable_get): till then fdtable_peek finds none. */
extern atomic_bool fdtable_first_used;

/*
 * The slot of @fd if its page exists, else NULL.  Lock-free,
 * async-signal-safe; a few loads, inlined where every hook calls it.
 */
static inline struct fdslot *fdtable_peek(int fd)
{
	unsigned u = (unsigned)fd;
	struct fdtable_mid *m;
	struct fdtable_leaf *l;

	if (u < FDTABLE_FIRST_FDS)
		return atomic_load_explicit(&fdtable_first_used, memory_order_acquire)
			       ? &fdtable_first_leaf.slot[u]
			       : NULL;
	if (fd < 0 || u >= FDTABLE_MAX_FD)
		return NULL;
	m = atomic_load_explicit(&fdtable_dir[u >> (FDTABLE_LEAF_BITS + FDTABLE_MID_BITS)],
				 memory_order_acquire);
	if (!m)
		return NULL;
	l = atomic_load_explicit(
		&m->leaf[(u >> FDTABLE_LEAF_BITS) & ((1U << FDTABLE_MID_BITS) - 1)],
		memory_order_acquire);
	return l ? &l->slot[u & ((1U << FDTABLE_LEAF_BITS) - 1)] : NULL;
}

/*
 * The slot of @fd, mapping its pages if needed.  NULL if @fd is out of range
 * or memory cannot be had (then one warning, and the stats count it).
 * Async-signal-safe; errno untouched.
 */
struct fdslot *fdtable_get(int fd);

/*
 * @fd's slot is about to hold state: the scans (after a fork, closefrom,
 * close_range) must reach it.  fdtable_get does it; a writer that found the
 * slot with fdtable_peek calls this.  A load, and rarely a store.
 */
void fdtable_cover(int fd);

/* Bumped at every fork: a mode learnt before it may be another process's to change. */
extern atomic_uint fdtable_epoch;

/* The epoch to give fdtable_mode_made: read before the call that makes the socket. */
static inline unsigned fdtable_mode_epoch(void)
{
	return atomic_load_explicit(&fdtable_epoch, memory_order_acquire);
}

/*
 * The socket @fd was just made (socket()) with @bits (FDS_NONBLOCK): its
 * mode is known from now on, unless a fork came after @epoch; what the
 * number held of a socket closed behind the hooks is forgotten.  Lock-free,
 * async-signal-safe, errno untouched.
 */
void fdtable_mode_made(int fd, unsigned epoch, unsigned bits);

/* The program set (@on) or cleared @bit (FDS_NONBLOCK, FDS_OWNTIMEO) of @fd.  As above. */
void fdtable_mode_change(int fd, unsigned bit, bool on);

/*
 * @fd's mode may change behind the hooks (it was duplicated: the copy shares
 * its file status flags and options): ask the kernel from now on.  As above.
 */
void fdtable_mode_forget(int fd);

/*
 * The FDS_MODE bits of the fd whose slot is @s (fdtable_peek; NULL: none):
 * FDS_KNOWN with the others when the library knows them, else 0 (ask the
 * kernel).  A few loads, no system call.
 */
static inline unsigned fdtable_mode_of(const struct fdslot *s)
{
	uint32_t w;

	if (!s)
		return 0;
	w = atomic_load_explicit(&s->word, memory_order_acquire);
	if (!(w & FDS_KNOWN) || (w >> FDS_EPOCH_SHIFT) != (fdtable_mode_epoch() & 0xffffU))
		return 0;
	return w & FDS_MODE;
}

/*
 * A fork was made (in parent and child): every fd open then is shared with
 * another process, which may change its mode: none is known any more.
 */
void fdtable_mode_after_fork(void);

/* The state bits of @s. */
static inline unsigned fdtable_state_of(const struct fdslot *s)
{
	return atomic_load_explicit(&s->word, memory_order_acquire) & FDS_STATE;
}

/*
 * Claim @s for the calling thread: only the claimer changes its state,
 * registrations or connect.  With @wait, spin (yielding) while another thread
 * holds it; without, give up at once.  Returns false if not claimed: a claim
 * held by this very thread (a signal handler inside a hook) is never waited
 * for.  The claimer disables cancellation around any cancellation point it
 * reaches while holding it (fdtable_nocancel).
 */
bool fdtable_claim(struct fdslot *s, bool wait);

/*
 * Disable cancellation (a claim is never left held by a cancelled thread);
 * returns what to give fdtable_cancel_restore.
 */
static inline int fdtable_nocancel(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void fdtable_cancel_restore(int old)
{
	int ignored;

	pthread_setcancelstate(old, &ignored);
}

/*
 * Wait while another thread holds @s (its state is changing), never for the
 * calling thread's own claim; then the state is settled.  Returns the state.
 */
unsigned fdtable_settled(struct fdslot *s);

/*
 * Release a claim, setting the connect state to @state (counters follow).  A
 * close() during the claim wins: the slot is cleared instead.  Returns the
 * state left.
 */
unsigned fdtable_release(struct fdslot *s, unsigned state);

/*
 * @fd was closed or replaced (close, close_range, dup2...): forget its state
 * and registrations; as an epoll set, its registrations elsewhere go stale.
 * Nothing but loads when @fd is unknown.  Waits only for another thread's
 * claim on this very fd (a due retry, short), never for its own thread's:
 * async-signal-safe.
 * A vfork child (sharing its parent's memory) leaves managed connects alone.
 */
void fdtable_forget(int fd);

/* fdtable_forget() for [@lo, @hi], stopping at the highest fd ever seen. */
void fdtable_forget_range(unsigned lo, unsigned hi);

/* The highest fd that has a slot (scans stop there). */
unsigned fdtable_top(void);

/* In a forked child: no thread holds a claim; the parent's connects are not the child's. */
void fdtable_after_fork(void);

/* Whether @fd was connected through the library and has had no byte yet (FDS_FIRST). */
static inline bool fdtable_is_first(int fd)
{
	struct fdslot *s;

	return fdtable_any_first() && (s = fdtable_peek(fd)) != NULL &&
	       (atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FIRST);
}

#endif
