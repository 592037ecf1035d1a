/* poll/ppoll/select/pselect (and the fortified poll entries): hide, detect, retry, on time. */
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/select.h>

#include "drivers/pending.h"
#include "init.h"
#include "intercept/waitdrv.h"
#include "sys/real.h"
#include "sys/kcall.h"

/* Positions masked in one poll array: on the stack, else in a mapping made for the call. */
#define MASK_STACK 64

struct masks {
	nfds_t stack[MASK_STACK];
	nfds_t *at;
	nfds_t cap, n;
	size_t mapped;
};

static void masks_init(struct masks *m)
{
	m->at = m->stack;
	m->cap = MASK_STACK;
	m->n = 0;
	m->mapped = 0;
}

/* Room for @total positions; false if memory cannot be had (then nothing is masked). */
static bool masks_room(struct masks *m, nfds_t total)
{
	void *p;

	if (total <= m->cap)
		return true;
	m->mapped = total * sizeof(nfds_t);
	p = kcall_mmap(m->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (p == MAP_FAILED) {
		m->mapped = 0;
		return false;
	}
	m->at = p;
	m->cap = total;
	return true;
}

static void masks_free(struct masks *m)
{
	if (m->mapped)
		kcall_munmap(m->at, m->mapped);
}

/*
 * The snapshot: hidden fds are set to -1 in the program's own array for the
 * duration of the real call (and restored after it, by position), and the
 * earliest of their due retries is returned, read with the hiding itself.
 */
static uint64_t poll_snapshot(struct pollfd *fds, nfds_t n, struct masks *m)
{
	uint64_t earliest = CONFIG_INFINITE;
	nfds_t k;

	m->n = 0;
	for (k = 0; k < n; k++) {
		uint64_t due;

		if (!pending_hidden(fds[k].fd, &due))
			continue;
		if (m->n == m->cap && !masks_room(m, n))
			break;
		m->at[m->n++] = k;
		if (due < earliest)
			earliest = due;
	}
	/* Negative: poll ignores it; the complement restores it. */
	for (k = 0; k < m->n; k++)
		fds[m->at[k]].fd = ~fds[m->at[k]].fd;
	return earliest;
}

static void poll_restore(struct pollfd *fds, const struct masks *m)
{
	nfds_t k;

	for (k = 0; k < m->n; k++) {
		fds[m->at[k]].fd = ~fds[m->at[k]].fd;
		fds[m->at[k]].revents = 0;
	}
}

enum poll_kind { KIND_POLL, KIND_PPOLL, KIND_POLL_CHK, KIND_PPOLL_CHK };

static int poll_real(enum poll_kind kind, struct pollfd *fds, nfds_t n, int64_t timeout_ns,
		     const sigset_t *ss, size_t fdslen)
{
	struct timespec ts = waitdrv_ns_to_ts(timeout_ns);

	switch (kind) {
	case KIND_POLL:
		return real_poll(fds, n, waitdrv_ns_to_ms(timeout_ns));
	case KIND_POLL_CHK:
		return real___poll_chk(fds, n, waitdrv_ns_to_ms(timeout_ns), fdslen);
	case KIND_PPOLL:
		return real_ppoll(fds, n, timeout_ns < 0 ? NULL : &ts, ss);
	default:
		return real___ppoll_chk(fds, n, timeout_ns < 0 ? NULL : &ts, ss, fdslen);
	}
}

/*
 * The poll family with managed connects about: each real call is the one
 * the program made (poll stays poll), a failed attempt with retries left is
 * taken out of the result, and the program's timeout is kept across the
 * extra wake-ups.  errno as the real call leaves it.
 */
static int poll_managed(enum poll_kind kind, struct pollfd *fds, nfds_t n, int64_t timeout_ns,
			const sigset_t *ss, size_t fdslen)
{
	struct waitdrv w;
	struct masks m;
	int saved = errno;

	waitdrv_begin(&w, init_config_get(), timeout_ns);
	masks_init(&m);
	for (;;) {
		int rc, err;
		nfds_t k;

		waitdrv_run_due(&w);
		rc = poll_real(kind, fds, n, waitdrv_timeout(&w, poll_snapshot(fds, n, &m)), ss,
			       fdslen);
		err = errno;
		poll_restore(fds, &m);
		if (rc < 0) {
			masks_free(&m);
			errno = err;
			return rc;
		}
		for (k = 0; rc > 0 && k < n; k++) {
			bool extra;

			if (!fds[k].revents || !pending_managed(fds[k].fd))
				continue;
			if (!pending_event(fds[k].fd, fds[k].revents & (POLLERR | POLLHUP),
					   &extra)) {
				fds[k].revents = 0;
				rc--;
			} else if (extra) {
				fds[k].revents |= POLLERR;
			}
		}
		if (rc > 0 || waitdrv_expired(&w)) {
			masks_free(&m);
			errno = saved;
			return rc;
		}
	}
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!pending_any())
		return real_poll(fds, n, timeout);
	return poll_managed(KIND_POLL, fds, n, waitdrv_ms_to_ns(timeout), NULL, 0);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *ss)
{
	/* A negative timeout is the kernel's EINVAL to give. */
	if (!pending_any() || (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0)))
		return real_ppoll(fds, n, timeout, ss);
	return poll_managed(KIND_PPOLL, fds, n, waitdrv_ts_to_ns(timeout), ss, 0);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	/* An overflowing array is the fortified check's to report. */
	if (!pending_any() || fdslen / sizeof(*fds) < n)
		return real___poll_chk(fds, n, timeout, fdslen);
	return poll_managed(KIND_POLL_CHK, fds, n, waitdrv_ms_to_ns(timeout), NULL, fdslen);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
		       const sigset_t *ss, size_t fdslen)
{
	if (!pending_any() || fdslen / sizeof(*fds) < n ||
	    (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0)))
		return real___ppoll_chk(fds, n, timeout, ss, fdslen);
	return poll_managed(KIND_PPOLL_CHK, fds, n, waitdrv_ts_to_ns(timeout), ss, fdslen);
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

/* The snapshot of select: hidden fds cleared from the sets, and their earliest due retry. */
static uint64_t select_snapshot(int nfds, fd_set *r, fd_set *w, fd_set *e)
{
	uint64_t earliest = CONFIG_INFINITE, due;
	int fd;

	for (fd = 0; fd < nfds; fd++) {
		if (!(in_set(r, fd) || in_set(w, fd) || in_set(e, fd)) || !pending_hidden(fd, &due))
			continue;
		clear_fd(r, w, e, fd);
		if (due < earliest)
			earliest = due;
	}
	return earliest;
}

/*
 * The select family with managed connects about, on copies of the program's
 * sets (select overwrites them); select stays select.  Like the kernel,
 * *tv_left gets the time that was left.  errno as the real call leaves it.
 */
static int select_managed(int nfds, fd_set *r, fd_set *w, fd_set *e, int64_t timeout_ns,
			  const sigset_t *ss, struct timeval *tv_left, bool is_pselect)
{
	fd_set in_r, in_w, in_e;
	struct waitdrv drv;
	int saved = errno;

	FD_ZERO(&in_r);
	FD_ZERO(&in_w);
	FD_ZERO(&in_e);
	copy_set(&in_r, r);
	copy_set(&in_w, w);
	copy_set(&in_e, e);
	waitdrv_begin(&drv, init_config_get(), timeout_ns);
	for (;;) {
		int64_t t;
		int rc, err, fd;

		waitdrv_run_due(&drv);
		copy_set(r, &in_r);
		copy_set(w, &in_w);
		copy_set(e, &in_e);
		t = waitdrv_timeout(&drv, select_snapshot(nfds, r, w, e));
		if (is_pselect) {
			struct timespec ts = waitdrv_ns_to_ts(t);

			rc = real_pselect(nfds, r, w, e, t < 0 ? NULL : &ts, ss);
		} else {
			struct timeval tv = { (time_t)(t / 1000000000),
					      (suseconds_t)((t % 1000000000 + 999) / 1000) };

			rc = real_select(nfds, r, w, e, t < 0 ? NULL : &tv);
		}
		err = errno;
		if (rc < 0) {
			errno = err;
			return rc;
		}
		for (fd = 0; rc > 0 && fd < nfds; fd++) {
			bool extra;

			if (!(in_set(r, fd) || in_set(w, fd) || in_set(e, fd)) ||
			    !pending_managed(fd))
				continue;
			/* select says nothing of errors: any readiness may be a failure. */
			if (!pending_event(fd, true, &extra))
				rc -= clear_fd(r, w, e, fd);
		}
		if (rc > 0 || waitdrv_expired(&drv)) {
			if (tv_left) {
				uint64_t left = waitdrv_left_ns(&drv);

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
	/* Bad arguments (EINVAL) are the kernel's to give. */
	if (!pending_any() || nfds < 0 || nfds > FD_SETSIZE ||
	    (timeout && (timeout->tv_sec < 0 || timeout->tv_usec < 0)))
		return real_select(nfds, r, w, e, timeout);
	return select_managed(nfds, r, w, e, waitdrv_tv_to_ns(timeout), NULL, timeout, false);
}

EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
		   const sigset_t *ss)
{
	if (!pending_any() || nfds < 0 || nfds > FD_SETSIZE ||
	    (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0)))
		return real_pselect(nfds, r, w, e, timeout, ss);
	return select_managed(nfds, r, w, e, waitdrv_ts_to_ns(timeout), ss, NULL, true);
}
