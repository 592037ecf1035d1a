/* epoll_ctl/epoll_wait/epoll_pwait/epoll_pwait2: records, hiding by deletion, replay. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>

#include "core/pending.h"
#include "init.h"
#include "intercept/waitclock.h"
#include "sys/real.h"

/*
 * Registrations of a managed fd are recorded so that a failed attempt can
 * be deleted from every set and replayed after the reconnect; while the fd
 * is hidden the program's own calls change the record only.  errno as
 * epoll_ctl(2) sets it.
 */
EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	int rc, err;

	if (pending_any() && (op == EPOLL_CTL_DEL || event)) {
		uint32_t events = event ? event->events : 0;
		uint64_t data = event ? event->data.u64 : 0;

		if (pending_epoll_ctl(epfd, op, fd, events, data, &rc, &err)) {
			if (rc != 0)
				errno = err;
			return rc;
		}
	}
	rc = real_epoll_ctl(epfd, op, fd, event);
	if (rc == 0 && op == EPOLL_CTL_ADD)
		pending_note_epoll_add(epfd, fd);
	return rc;
}

/* Kernels before 5.11 have no epoll_pwait2: then waits are in milliseconds, rounded up. */
static atomic_bool no_pwait2;

/* One real wait with a timespec timeout (NULL: unbounded). */
static int wait_once(int epfd, struct epoll_event *events, int max, const struct timespec *ts,
		     const sigset_t *ss)
{
	int ms, rc;

	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		rc = real_epoll_pwait2(epfd, events, max, ts, ss);
		if (rc >= 0 || errno != ENOSYS)
			return rc;
		atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
	}
	if (!ts)
		ms = -1;
	else if (ts->tv_sec > 1000000)
		ms = 1000000000;
	else /* rounded up: a wait never ends early */
		ms = (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
	return real_epoll_pwait(epfd, events, max, ms, ss);
}

static int epoll_managed(int epfd, struct epoll_event *events, int max, int64_t timeout_ns,
			 const sigset_t *ss)
{
	const struct config *cfg = init_config_get();
	struct waitclock clock;
	int saved = errno;

	waitclock_start(&clock, timeout_ns);
	for (;;) {
		struct timespec ts;
		int rc, err, i, kept = 0;

		pending_run_due(cfg, clock_now_ms());
		rc = wait_once(epfd, events, max, waitclock_next(&clock, &ts) ? &ts : NULL, ss);
		err = errno;
		if (rc < 0) {
			errno = err;
			return rc;
		}
		for (i = 0; i < rc; i++) {
			int fd = pending_any() ? pending_fd_by_epoll(epfd, events[i].data.u64) : -1;
			bool extra = false;

			if (fd >= 0 &&
			    !pending_event(cfg, fd, events[i].events & (EPOLLERR | EPOLLHUP),
					   &extra))
				continue;
			if (extra)
				events[i].events |= EPOLLERR;
			events[kept++] = events[i];
		}
		if (kept > 0 || waitclock_expired(&clock)) {
			errno = saved;
			return kept;
		}
	}
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
	if (!pending_any())
		return real_epoll_wait(epfd, events, max, timeout);
	return epoll_managed(epfd, events, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000,
			     NULL);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout,
		       const sigset_t *ss)
{
	if (!pending_any())
		return real_epoll_pwait(epfd, events, max, timeout, ss);
	return epoll_managed(epfd, events, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, ss);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max,
			const struct timespec *timeout, const sigset_t *ss)
{
	int64_t ns = -1;

	if (!pending_any() || (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0)))
		return real_epoll_pwait2(epfd, events, max, timeout, ss);
	if (timeout)
		ns = (int64_t)timeout->tv_sec * 1000000000 + timeout->tv_nsec;
	return epoll_managed(epfd, events, max, ns, ss);
}
