/* Managed non-blocking connects: a fixed-size table and the rules of hiding and retrying. */
#ifndef BACKOFF_CORE_PENDING_H
#define BACKOFF_CORE_PENDING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/config.h"
#include "core/target.h"

#define PENDING_MAX 256 /* managed connects at once; more pass through */
#define PENDING_REGS 4	/* epoll sets one managed fd can be in */

/* Entries in use, and entries the program must not see as they are (fast paths). */
extern atomic_uint pending_active;
extern atomic_uint pending_masked;

/* Whether any connect is managed: one relaxed load, for every wait hook. */
static inline bool pending_any(void)
{
	return atomic_load_explicit(&pending_active, memory_order_relaxed) != 0;
}

/* Whether any fd needs an emulated answer: one relaxed load, for the I/O hooks. */
static inline bool pending_any_masked(void)
{
	return atomic_load_explicit(&pending_masked, memory_order_relaxed) != 0;
}

/*
 * Start managing @fd after its non-blocking connect to @addr returned
 * EINPROGRESS (@sync_err 0), or failed at once with the retryable @sync_err
 * (then a retry is scheduled and the caller reports EINPROGRESS).  Returns
 * true if managed; false (table full, registrations unknown, no retry left)
 * means the caller passes the kernel's answer through.
 */
bool pending_manage(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		    const struct target_addr *t, int sync_err);

/* The answer a masked fd gives instead of the kernel's. */
enum pending_answer {
	PENDING_PASS,	     /* not masked: ask the kernel */
	PENDING_IN_PROGRESS, /* hidden while a retry is pending */
	PENDING_FAILED,	     /* the outcome is an error: *err (handed over, entry freed) */
	PENDING_CONNECTING,  /* managed, visible: ask the kernel, then pending_release() */
};

/* For connect() on a managed fd: hidden -> EALREADY, failed -> the error. */
enum pending_answer pending_connect_answer(int fd, int *err);

/* The program learnt the outcome of @fd's connect by itself: stop managing it. */
void pending_release(int fd);

/*
 * The managed fds (and which are hidden), at most @max, each checked against
 * its socket's inode; a snapshot, so each is re-checked before use.
 */
unsigned pending_list(int *fds, bool *hidden, unsigned max);

/* For getsockopt(SO_ERROR): hidden -> 0, failed -> the error; may detect a failure. */
enum pending_answer pending_so_error(const struct config *cfg, int fd, int *err);

/* For read/recv/write/send: hidden -> EAGAIN, failed -> the error. */
enum pending_answer pending_io_answer(int fd, int *err);

/* Earliest due retry as monotonic ms, or CONFIG_INFINITE. */
uint64_t pending_next_due(void);

/* Make every retry that is due at @now_ms. */
void pending_run_due(const struct config *cfg, uint64_t now_ms);

/*
 * After a wait reported @fd ready (@maybe_failed: the readiness may mean a
 * failure: an error or hang-up in poll/epoll, any readiness in select),
 * decide whether the program sees it.  A failed attempt with retries left is hidden
 * and rescheduled here (returns false); success or the last failure are handed
 * over (returns true).  *extra_err is set when an emulated error must be added.
 */
bool pending_event(const struct config *cfg, int fd, bool maybe_failed, bool *extra_err);

/* The managed fd registered in @epfd with @data, or -1. */
int pending_fd_by_epoll(int epfd, uint64_t data);

/*
 * epoll_ctl() on a managed fd: returns false if @fd is not managed (the caller
 * calls the kernel).  Otherwise applies the call to the kernel (visible fd) or
 * to the record only (hidden fd, with the kernel's EEXIST/ENOENT semantics) and
 * sets *rc and *err as epoll_ctl would.
 */
bool pending_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data, int *rc, int *err);

/* An unmanaged fd was added to @epfd: remember it, so a later manage finds it. */
void pending_note_epoll_add(int epfd, int fd);

/* The fds [@lo, @hi] were closed or replaced: drop their state and their epoll records. */
void pending_forget(unsigned lo, unsigned hi);

/* fds ever added to an epoll set while unmanaged: one bit each, below this. */
#define PENDING_ADDED_FDS (1U << 20)
extern atomic_uint_fast64_t pending_added_bits[PENDING_ADDED_FDS / 64];

/*
 * pending_forget() for one fd, for every close(): two relaxed loads when the
 * fd was never in an epoll set and no connect is managed.
 */
static inline void pending_forget_fd(int fd)
{
	unsigned u = (unsigned)fd;

	if (fd < 0)
		return;
	if (u < PENDING_ADDED_FDS && !pending_any() &&
	    !((atomic_load_explicit(&pending_added_bits[u / 64], memory_order_relaxed) >>
	       (u % 64)) &
	      1))
		return;
	pending_forget(u, u);
}

/* In a forked child: the parent's connects are not the child's to retry. */
void pending_after_fork(void);

#endif
