/* poll/ppoll/select/pselect (and the fortified poll entries): hide, detect, retry, on time. */
#include <errno.h>
#include <poll.h>
#include <sys/select.h>

#include "core/pending.h"
#include "init.h"
#include "intercept/waitclock.h"
#include "sys/real.h"

static int64_t ms_to_ns(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000000;
}

static int64_t ts_to_ns(const struct timespec *ts)
{
	if (!ts)
		return -1;
	if (ts->tv_sec < 0 || ts->tv_nsec < 0)
		return 0;
	if (ts->tv_sec > INT64_MAX / 1000000000 - 1)
		return -1;
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* Whether @fd is in the @n entries of @fds. */
static bool listed(int fd, const int *fds, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

/*
 * The poll family with managed connects about: hidden fds are set to -1 in
 * the program's own array for the duration of the real call (and restored),
 * a failed attempt with retries left is taken out of the result, and the
 * program's timeout is kept across the extra wake-ups.  errno as the real
 * call leaves it.
 */
static int poll_managed(struct pollfd *fds, nfds_t n, int64_t timeout_ns, const sigset_t *ss)
{
	const struct config *cfg = init_config_get();
	int managed[PENDING_MAX], masked_fd[PENDING_MAX];
	bool hidden[PENDING_MAX];
	nfds_t masked_at[PENDING_MAX];
	struct waitclock clock;
	int saved = errno;

	waitclock_start(&clock, timeout_ns);
	for (;;) {
		unsigned nmanaged, nmasked = 0, i;
		struct timespec ts;
		int rc, err;
		nfds_t k;

		pending_run_due(cfg, clock_now_ms());
		nmanaged = pending_list(managed, hidden, PENDING_MAX);
		for (k = 0; k < n && nmasked < PENDING_MAX; k++) {
			for (i = 0; i < nmanaged; i++) {
				if (hidden[i] && fds[k].fd == managed[i]) {
					masked_at[nmasked] = k;
					masked_fd[nmasked++] = fds[k].fd;
					fds[k].fd = -1;
					break;
				}
			}
		}
		rc = real_ppoll(fds, n, waitclock_next(&clock, &ts) ? &ts : NULL, ss);
		err = errno;
		for (i = 0; i < nmasked; i++) {
			fds[masked_at[i]].fd = masked_fd[i];
			fds[masked_at[i]].revents = 0;
		}
		if (rc < 0) {
			errno = err;
			return rc;
		}
		/* Another thread may have started managing an fd meanwhile. */
		nmanaged = pending_list(managed, hidden, PENDING_MAX);
		for (k = 0; rc > 0 && k < n; k++) {
			bool extra;

			if (!fds[k].revents || !listed(fds[k].fd, managed, nmanaged))
				continue;
			if (!pending_event(cfg, fds[k].fd, fds[k].revents & (POLLERR | POLLHUP),
					   &extra)) {
				fds[k].revents = 0;
				rc--;
			} else if (extra) {
				fds[k].revents |= POLLERR;
			}
		}
		if (rc > 0 || waitclock_expired(&clock)) {
			errno = saved;
			return rc;
		}
	}
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!pending_any())
		return real_poll(fds, n, timeout);
	return poll_managed(fds, n, ms_to_ns(timeout), NULL);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *ss)
{
	if (!pending_any())
		return real_ppoll(fds, n, timeout, ss);
	return poll_managed(fds, n, ts_to_ns(timeout), ss);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	/* An overflowing array is the fortified check's to report. */
	if (!pending_any() || fdslen / sizeof(*fds) < n)
		return real___poll_chk(fds, n, timeout, fdslen);
	return poll_managed(fds, n, ms_to_ns(timeout), NULL);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
		       const sigset_t *ss, size_t fdslen)
{
	if (!pending_any() || fdslen / sizeof(*fds) < n)
		return real___ppoll_chk(fds, n, timeout, ss, fdslen);
	return poll_managed(fds, n, ts_to_ns(timeout), ss);
}

static void copy_set(fd_set *dst, const fd_set *src)
{
	if (dst && src)
		*dst = *src;
}

static bool in_set(const fd_set *set, int fd)
{
	return set && FD_ISSET(fd, set);
}

/* Clear @fd from the sets; returns how many of them held it. */
static int clear_fd(fd_set *r, fd_set *w, fd_set *e, int fd)
{
	int held = in_set(r, fd) + in_set(w, fd) + in_set(e, fd);

	if (r)
		FD_CLR(fd, r);
	if (w)
		FD_CLR(fd, w);
	if (e)
		FD_CLR(fd, e);
	return held;
}

/*
 * The select family with managed connects about, on copies of the program's
 * sets (select overwrites them).  Like the kernel, *tv_left gets the time
 * that was left.  errno as the real call leaves it.
 */
static int select_managed(int nfds, fd_set *r, fd_set *w, fd_set *e, int64_t timeout_ns,
			  const sigset_t *ss, struct timeval *tv_left)
{
	const struct config *cfg = init_config_get();
	fd_set in_r, in_w, in_e;
	int managed[PENDING_MAX];
	bool hidden[PENDING_MAX];
	struct waitclock clock;
	int saved = errno;

	FD_ZERO(&in_r);
	FD_ZERO(&in_w);
	FD_ZERO(&in_e);
	copy_set(&in_r, r);
	copy_set(&in_w, w);
	copy_set(&in_e, e);
	waitclock_start(&clock, timeout_ns);
	for (;;) {
		unsigned nmanaged, i;
		struct timespec ts;
		int rc, err;

		pending_run_due(cfg, clock_now_ms());
		copy_set(r, &in_r);
		copy_set(w, &in_w);
		copy_set(e, &in_e);
		nmanaged = pending_list(managed, hidden, PENDING_MAX);
		for (i = 0; i < nmanaged; i++)
			if (hidden[i] && managed[i] < nfds)
				clear_fd(r, w, e, managed[i]);
		rc = real_pselect(nfds, r, w, e, waitclock_next(&clock, &ts) ? &ts : NULL, ss);
		err = errno;
		if (rc < 0) {
			errno = err;
			return rc;
		}
		nmanaged = pending_list(managed, hidden, PENDING_MAX);
		for (i = 0; rc > 0 && i < nmanaged; i++) {
			int fd = managed[i];
			bool extra;

			if (fd >= nfds || !(in_set(r, fd) || in_set(w, fd) || in_set(e, fd)))
				continue;
			/* select says nothing of errors: any readiness may be a failure. */
			if (!pending_event(cfg, fd, true, &extra))
				rc -= clear_fd(r, w, e, fd);
		}
		if (rc > 0 || waitclock_expired(&clock)) {
			if (tv_left) {
				uint64_t left = waitclock_left_ns(&clock);

				tv_left->tv_sec = (time_t)(left / 1000000000ULL);
				tv_left->tv_usec = (suseconds_t)(left % 1000000000ULL / 1000);
			}
			errno = saved;
			return rc;
		}
	}
}

EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
	int64_t ns = -1;

	if (!pending_any() || nfds < 0 || nfds > FD_SETSIZE)
		return real_select(nfds, r, w, e, timeout);
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_usec < 0)
			return real_select(nfds, r, w, e,
					   timeout); /* EINVAL is the kernel's to give */
		ns = (int64_t)timeout->tv_sec * 1000000000 + (int64_t)timeout->tv_usec * 1000;
	}
	return select_managed(nfds, r, w, e, ns, NULL, timeout);
}

EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
		   const sigset_t *ss)
{
	if (!pending_any() || nfds < 0 || nfds > FD_SETSIZE ||
	    (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0)))
		return real_pselect(nfds, r, w, e, timeout, ss);
	return select_managed(nfds, r, w, e, ts_to_ns(timeout), ss, NULL);
}
