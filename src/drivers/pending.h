/* Managed non-blocking connects: the state machine of hiding and retrying, and its answers. */
#ifndef BACKOFF_DRIVERS_PENDING_H
#define BACKOFF_DRIVERS_PENDING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/config.h"
#include "tables/fdtable.h"
#include "config/target.h"

/* Whether any connect is managed: one relaxed load, for every wait hook. */
static inline bool pending_any(void)
{
	return fdtable_any();
}

/* Whether any fd needs an emulated answer: one relaxed load, for the I/O hooks. */
static inline bool pending_any_masked(void)
{
	return fdtable_any_hidden();
}

/*
 * Start managing @fd after its non-blocking connect to @addr returned
 * EINPROGRESS (@sync_err 0), or failed at once with the retryable @sync_err
 * (then a retry is scheduled and the caller reports EINPROGRESS).  Returns
 * true if managed; false (no memory, registrations unknown, no retry left)
 * means the caller passes the kernel's answer through.  No system call
 * when the attempt is under way (its identity is read at its first answer);
 * one (fstat) when it is hidden at once.  errno untouched.
 */
bool pending_manage(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		    const struct target_addr *t, int sync_err);

/*
 * Start managing @fd, whose non-blocking connect to @addr is not to be made
 * before @due_ms (its destination is damped): hidden until then, when the
 * event loop makes its first attempt.  Returns true if managed, as
 * pending_manage.  errno untouched.
 */
bool pending_manage_later(const struct config *cfg, int fd, const struct sockaddr *addr,
			  socklen_t len, const struct target_addr *t, uint64_t due_ms);

/* The answer a managed fd gives instead of the kernel's. */
enum pending_answer {
	PENDING_PASS,	     /* not masked: ask the kernel */
	PENDING_IN_PROGRESS, /* hidden while a retry is pending */
	PENDING_FAILED,	     /* the outcome is an error: *err (handed over, entry freed) */
	PENDING_CONNECTING,  /* managed, visible: ask the kernel, then pending_release() */
};

/*
 * For connect() on a managed fd: hidden -> EALREADY, failed -> the error.
 * These answers are lock-free and async-signal-safe.
 */
enum pending_answer pending_connect_answer(int fd, int *err);

/*
 * The program learnt the outcome of @fd's connect by itself (@connected: it
 * succeeded): stop managing it.
 */
void pending_release(const struct config *cfg, int fd, bool connected);

/* For getsockopt(SO_ERROR): hidden -> 0, failed -> the error; may detect a failure. */
enum pending_answer pending_so_error(int fd, int *err);

/* For read/recv/write/send: hidden -> EAGAIN, failed -> the error. */
enum pending_answer pending_io_answer(int fd, int *err);

/*
 * Whether @fd is hidden now (checked against fd reuse: one fstat); if so
 * *due_ms is when its retry is due.  errno untouched.
 */
bool pending_hidden(int fd, uint64_t *due_ms);

/* Whether @fd is a managed connect (in any state). */
bool pending_managed(int fd);

/* Earliest due retry of the process as monotonic ms (maybe earlier), or CONFIG_INFINITE. */
uint64_t pending_next_due(void);

/*
 * Make every retry that is due at @now_ms.  One load when none is; a scan of
 * the table, by one thread at a time, when some is.
 */
void pending_run_due(const struct config *cfg, uint64_t now_ms);

/*
 * After a wait reported @fd ready (@maybe_failed: the readiness may mean a
 * failure: an error or hang-up in poll/epoll, any readiness in select),
 * decide whether the program sees it.  A failed attempt with retries left is hidden
 * and rescheduled here (returns false); success or the last failure are handed
 * over (returns true).  *extra_err is set when an emulated error must be added.
 */
bool pending_event(int fd, bool maybe_failed, bool *extra_err);

/*
 * epoll_ctl() on a managed fd: returns false if @fd is not managed (the caller
 * calls the kernel).  Otherwise applies the call to the kernel (visible fd) or
 * to the record only (hidden fd, with the kernel's EEXIST/ENOENT semantics) and
 * sets *rc and *err as epoll_ctl would.
 */
bool pending_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data, int *rc, int *err);

/*
 * The program ends its side of @fd (shutdown) while the library connects it
 * again after an early close: the new connection is given up
 * (early_abandon), the fd shown again to its epoll sets and no longer
 * managed.  Whether it was; then the program's shutdown answers as on the
 * connection it believes it has (0).  errno untouched.
 */
bool pending_again_shut(int fd);

/*
 * The program closes @fd: if its connect is being retried, the program ended
 * the call (decide_loop_closed).  Async-signal-safe; errno untouched.
 */
void pending_closing(int fd);

/* In a forked child: the parent's connects are not the child's to retry. */
void pending_after_fork(void);

#endif
