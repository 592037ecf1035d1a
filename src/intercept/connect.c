/* connect(): pass through at once on success; retry eligible failures, blocking or not. */
#include <errno.h>
#include <sys/socket.h>

#include "core/decide.h"
#include "core/dest.h"
#include "core/events.h"
#include "core/pending.h"
#include "core/share.h"
#include "init.h"
#include "sys/sock.h"
#include "sys/clock.h"
#include "sys/real.h"

struct connect_ctx {
	int fd;
	const struct sockaddr *addr;
	socklen_t len;
};

static int connect_again(void *ctx)
{
	const struct connect_ctx *c = ctx;

	return real_connect(c->fd, c->addr, c->len) == 0 ? 0 : errno;
}

/* A second connect() on a managed fd: answered for a hidden attempt, else the kernel's. */
static int connect_managed(const struct config *cfg, int fd, const struct sockaddr *addr,
			   socklen_t len, bool *done)
{
	int err = 0, rc;

	*done = true;
	switch (pending_connect_answer(fd, &err)) {
	case PENDING_IN_PROGRESS:
	case PENDING_FAILED:
		errno = err;
		return -1;
	case PENDING_CONNECTING:
		/* hiredis and perl check completion so: the kernel answers them. */
		rc = real_connect(fd, addr, len);
		if (rc != 0 && errno == EALREADY)
			return rc;
		err = errno;
		pending_release(cfg, fd, rc == 0 || err == EISCONN);
		errno = err;
		/* A new attempt: the number was reused behind the hooks; managed afresh. */
		if (rc != 0 && err == EINPROGRESS) {
			*done = false;
			return -1;
		}
		return rc;
	default:
		*done = false;
		return 0;
	}
}

/*
 * Some destination of this user is being probed: if @addr is a local one that
 * another thread probes and found down a moment ago, this first attempt is
 * left to it (no failed attempt of ours, which the herd would multiply):
 * returns the errno it saw, else 0 (make the attempt).  errno untouched.
 */
static int left_to_prober(const struct config *cfg, int fd, const struct sockaddr *addr,
			  socklen_t len, struct target_addr *t)
{
	struct share_slot *s;
	int saved = errno, err = 0;

	if (!cfg->enabled || !cfg->shared || !cfg->local_probe_ms ||
	    !target_from_sockaddr(addr, len, t) || !share_is_local(t))
		return 0;
	s = share_find(t);
	if (s)
		err = share_fresh_down(s, clock_now_ns(), 3 * cfg->local_probe_ms * 1000000,
				       t->family == AF_UNIX ? &cfg->errors_unix
							    : &cfg->errors_inet);
	if (err && sock_type(fd) != SOCK_STREAM)
		err = 0;
	if (err)
		share_note_saved(s);
	errno = saved;
	return err;
}

/*
 * connect() in full; @attempted: the fast path made the attempt, which failed
 * (errno holds its error), @saved: errno before the call.  Returns 0 with
 * errno untouched on success, else -1 with the errno of the last real
 * attempt, or EINPROGRESS for a non-blocking connect whose retry is
 * scheduled.  Thread-safe.  Async-signal-safe: a signal handler may call
 * it while its thread is inside another hook (nothing here waits for a
 * lock); a blocking retry sleeps in the handler, as the program asked.
 */
static __attribute__((noinline)) int connect_slow(int fd, const struct sockaddr *addr,
						  socklen_t len, int saved, bool attempted)
{
	const struct config *cfg = init_config_get();
	struct connect_ctx ctx = { fd, addr, len };
	struct target_addr target;
	struct decide_connect c = {
		.fd = fd,
		.target = &target,
		.attempt = connect_again,
		.ctx = &ctx,
	};
	bool done;
	int rc;

	c.err = errno; /* the error of the attempt the fast path made, if it made one */
	if (!attempted && __builtin_expect(pending_any(), 0)) {
		rc = connect_managed(cfg, fd, addr, len, &done);
		if (done)
			return rc;
		attempted = rc != 0; /* connect_managed made this attempt */
		c.err = errno;
	}
	if (!attempted && __builtin_expect(share_probing(addr, len), 0)) {
		c.err = left_to_prober(cfg, fd, addr, len, &target);
		c.waited = attempted = c.err != 0;
	}
	if (!attempted) {
		if (real_connect(fd, addr, len) == 0)
			goto out_connected;
		c.err = errno;
	}
	if (!cfg->enabled || !target_from_sockaddr(addr, len, &target))
		goto out_fail;
	for (;;) {
		switch (decide_connect(cfg, &c)) {
		case DECIDE_DONE:
			if (c.err == 0)
				goto out_ok;
			goto out_fail;
		case DECIDE_EVENT_LOOP:
			/* A synchronous failure becomes an attempt in progress, retried there. */
			if (pending_manage(cfg, fd, addr, len, &target,
					   c.err == EINPROGRESS ? 0 : c.err)) {
				if (c.waited)
					events_waited();
				c.err = EINPROGRESS;
				goto out_fail;
			}
			if (!c.waited)
				goto out_fail;
			break;
		case DECIDE_ATTEMPT:
			break;
		}
		/*
		 * The first attempt was left to a prober, but this connect is not
		 * one to wait with it: the program's own attempt, now, decided as any.
		 */
		c.waited = false;
		c.err = connect_again(&ctx);
		if (c.err == 0)
			goto out_connected;
	}
out_connected:
	/* A destination whose clock runs is up again (rare: one load otherwise). */
	if (dest_any_clock() && cfg->enabled && target_from_sockaddr(addr, len, &target))
		decide_connected(cfg, &target, 0);
out_ok:
	errno = saved;
	return 0;
out_fail:
	errno = c.err;
	return -1;
}

/*
 * The fast path: nothing managed in the process, no prober of this user in
 * the destination's bucket, no destination's clock running: one attempt,
 * errno as it was on success; anything else is connect_slow's.
 */
EXPORT int connect(int fd, COMPAT_CONST_SOCKADDR_ARG arg, socklen_t len)
{
	/* glibc declares a transparent union under _GNU_SOURCE; the hook must match. */
	const struct sockaddr *addr = COMPAT_SOCKADDR(arg);
	int saved;

	(void)init_config_get();
	saved = errno;
	if (__builtin_expect(pending_any() || share_probing(addr, len) || dest_any_clock(), 0))
		return connect_slow(fd, addr, len, saved, false);
	if (__builtin_expect(real_connect(fd, addr, len) == 0, 1)) {
		errno = saved;
		return 0;
	}
	return connect_slow(fd, addr, len, saved, true);
}
