/* epoll_ctl/epoll_wait/epoll_pwait/epoll_pwait2: records, hiding by deletion, replay. */
#include <errno.h>
#include <sys/epoll.h>

#include "tables/epollreg.h"
#include "drivers/pending.h"
#include "init.h"
#include "intercept/waitdrv.h"
#include "sys/real.h"

/*
 * Every registration is recorded, so that a connect made after it can be
 * hidden (deleted from every set) and replayed without asking /proc.  While
 * a managed fd is hidden the program's own calls change the record only.
 * errno as epoll_ctl(2) sets it.
 */
EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	uint32_t events = event ? event->events : 0;
	uint64_t data = event ? event->data.u64 : 0;
	int rc, err, saved;

	if (pending_any() && (op == EPOLL_CTL_DEL || event) &&
	    pending_epoll_ctl(epfd, op, fd, events, data, &rc, &err)) {
		if (rc != 0)
			errno = err;
		return rc;
	}
	rc = real_epoll_ctl(epfd, op, fd, event);
	if (rc != 0)
		return rc;
	saved = errno;
	(void)epollreg_record(epfd, op, fd, events, data);
	errno = saved;
	return rc;
}

enum epoll_kind { KIND_WAIT, KIND_PWAIT, KIND_PWAIT2 };

static int epoll_real(enum epoll_kind kind, int epfd, struct epoll_event *events, int max,
		      int64_t timeout_ns, const sigset_t *ss)
{
	struct timespec ts = waitdrv_ns_to_ts(timeout_ns);

	switch (kind) {
	case KIND_WAIT:
		return real_epoll_wait(epfd, events, max, waitdrv_ns_to_ms(timeout_ns));
	case KIND_PWAIT:
		return real_epoll_pwait(epfd, events, max, waitdrv_ns_to_ms(timeout_ns), ss);
	default:
		return real_epoll_pwait2(epfd, events, max, timeout_ns < 0 ? NULL : &ts, ss);
	}
}

/*
 * Whether the program sees event @ev of @epfd.  Its data names a managed fd
 * only if that fd is registered in @epfd with the same data; an fd that is
 * hidden is in no set, so the event is another fd's with the same data and
 * is the program's.  A failure shows as an error or hang-up on the fd's own
 * event.
 */
static bool epoll_keep(int epfd, struct epoll_event *ev)
{
	int fd = epollreg_lookup(epfd, ev->data.u64);
	bool extra = false;
	uint64_t due;

	if (fd < 0 || pending_hidden(fd, &due))
		return true;
	if (!pending_event(fd, ev->events & (EPOLLERR | EPOLLHUP), &extra))
		return false;
	if (extra)
		ev->events |= EPOLLERR;
	return true;
}

static int epoll_managed(enum epoll_kind kind, int epfd, struct epoll_event *events, int max,
			 int64_t timeout_ns, const sigset_t *ss)
{
	struct waitdrv w;
	int saved = errno;

	waitdrv_begin(&w, init_config_get(), timeout_ns);
	for (;;) {
		int rc, i, kept = 0;

		waitdrv_run_due(&w);
		/* Hidden fds are out of the set: the snapshot is the clamp alone. */
		rc = epoll_real(kind, epfd, events, max, waitdrv_timeout(&w, CONFIG_INFINITE), ss);
		if (rc < 0)
			return rc;
		for (i = 0; i < rc; i++)
			if (!pending_any() || epoll_keep(epfd, &events[i]))
				events[kept++] = events[i];
		if (kept > 0 || waitdrv_expired(&w)) {
			errno = saved;
			return kept;
		}
	}
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
	if (!pending_any())
		return real_epoll_wait(epfd, events, max, timeout);
	return epoll_managed(KIND_WAIT, epfd, events, max, waitdrv_ms_to_ns(timeout), NULL);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout,
		       const sigset_t *ss)
{
	if (!pending_any())
		return real_epoll_pwait(epfd, events, max, timeout, ss);
	return epoll_managed(KIND_PWAIT, epfd, events, max, waitdrv_ms_to_ns(timeout), ss);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max,
			const struct timespec *timeout, const sigset_t *ss)
{
	/* A negative timeout is the kernel's EINVAL to give. */
	if (!pending_any() || (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0)))
		return real_epoll_pwait2(epfd, events, max, timeout, ss);
	return epoll_managed(KIND_PWAIT2, epfd, events, max, waitdrv_ts_to_ns(timeout), ss);
}
