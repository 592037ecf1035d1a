/* connect(): pass through at once on success; retry eligible failures, blocking or not. */
#include <errno.h>
#include <sys/socket.h>

#include "core/addrlist.h"
#include "core/dest.h"
#include "core/pending.h"
#include "core/retry.h"
#include "core/share.h"
#include "init.h"
#include "intercept/sock.h"
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

/*
 * Why a failed connect is not retried, or NULL if it is.  Checked only after
 * a failure, so the success path makes no system call of its own.
 * @in_progress: the kernel said EINPROGRESS (a non-blocking attempt under way).
 */
static const char *why_not(const struct config *cfg, int fd, const struct target_addr *t, int err,
			   bool *blocking)
{
	const struct config_errset *set =
		t->family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet;
	int type;

	if (err == EINPROGRESS) {
		/*
		 * Only a connection-mode socket that is non-blocking (or blocking
		 * with SO_SNDTIMEO expired: then the program does not wait for it,
		 * and a retry checks the mode first) answers so: no system call.
		 */
		*blocking = false;
		goto destination;
	}
	if (!config_errset_has(set, err))
		return "errno";
	type = sock_type(fd);
	/* An AF_UNIX datagram connect fails too while the receiver is missing. */
	if (type != SOCK_STREAM && !(type == SOCK_DGRAM && t->family == AF_UNIX))
		return "not-stream";
	*blocking = sock_is_blocking(fd);
	/* A datagram connect ends at once: no attempt is under way for the event loop. */
	if (!*blocking && type == SOCK_DGRAM)
		return "nonblocking";
destination:
	if (!*blocking && !cfg->nonblock)
		return "nonblocking";
	if (!target_matches(&cfg->targets, t))
		return "excluded";
	/*
	 * Programs that try several addresses move on at once, as without
	 * libbackoff.  An attempt under way is asked at its first failure.
	 */
	if (err != EINPROGRESS && addrlist_find(t, clock_now_ms()) == ADDRLIST_NOT_LAST)
		return "not-last-address";
	return NULL;
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
 * The shared slot of a blocking stream connect to @t, or NULL; *look_ns: how
 * often its prober looks for a listener (a local destination), else 0.
 */
static struct share_slot *shared_slot(const struct config *cfg, int fd, const struct target_addr *t,
				      uint64_t *look_ns)
{
	struct share_slot *s;

	*look_ns = 0;
	/* Stream sockets only: a datagram receiver is no listener, and no other's probe. */
	if (!cfg->shared || sock_type(fd) != SOCK_STREAM)
		return NULL;
	s = share_get(cfg, t);
	if (s && share_is_local(t))
		*look_ns = cfg->local_probe_ms * 1000000;
	return s;
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
	int err, rc;
	struct target_addr target;
	bool blocking = true, done, waited = false;
	const char *reason;

	if (attempted)
		goto failed; /* errno holds the error of the attempt the fast path made */
	if (__builtin_expect(pending_any(), 0)) {
		rc = connect_managed(cfg, fd, addr, len, &done);
		if (done)
			return rc;
		if (rc != 0)
			goto failed; /* connect_managed made this attempt */
	}
	if (__builtin_expect(share_probing(addr, len), 0)) {
		err = left_to_prober(cfg, fd, addr, len, &target);
		if (err) {
			waited = true;
			goto failed_waited;
		}
	}
	if (real_connect(fd, addr, len) == 0) {
		/* A destination whose clock runs is up again (rare: one load otherwise). */
		if (__builtin_expect(dest_any_clock(), 0) && cfg->enabled &&
		    target_from_sockaddr(addr, len, &target))
			dest_succeeded(dest_of(cfg, &target));
		errno = saved;
		return 0;
	}
failed:
	err = errno;
	if (!cfg->enabled || !target_from_sockaddr(addr, len, &target))
		goto out_fail;
failed_waited:
	reason = why_not(cfg, fd, &target, err, &blocking);
	if (reason && waited)
		goto own_attempt; /* not ours to retry: the program's own attempt, now */
	if (reason) {
		if (err != EINPROGRESS)
			retry_log_pass("connect", &target, err, reason);
		goto out_fail;
	}
	if (!blocking) {
		/* A synchronous failure becomes an attempt in progress, retried in the event loop.
		 */
		if (pending_manage(cfg, fd, addr, len, &target, err == EINPROGRESS ? 0 : err)) {
			if (waited)
				retry_count_shared(true);
			err = EINPROGRESS;
		} else if (waited) {
			goto own_attempt;
		}
		goto out_fail;
	}
	{
		struct connect_ctx ctx = { fd, addr, len };
		struct dest *d = dest_of(cfg, &target);
		uint64_t budget, sndtimeo;
		struct retry_call call = {
			.call = "connect",
			.target = &target,
			.retryable =
				target.family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet,
			.attempt = connect_again,
			.ctx = &ctx,
			.first_waited = waited,
		};

		if (dest_down(d)) {
			/* Its budget ran out: the kernel's answer, at once, as without libbackoff.
			 */
			if (waited)
				goto own_attempt;
			retry_log_pass("connect", &target, err, "known-down");
			goto out_fail;
		}
		call.shared = shared_slot(cfg, fd, &target, &call.look_ns);
		if (waited && !call.shared)
			goto own_attempt;
		budget = dest_budget_left(cfg, d, clock_now_ms());
		sndtimeo = sock_sndtimeo_ms(fd);
		call.budget_ms = sndtimeo < budget ? sndtimeo : budget;
		err = retry_blocking(cfg, &call, err);
		if (err == 0)
			dest_succeeded(d);
		else
			dest_gave_up(cfg, d, &target, clock_now_ms());
	}
	if (err == 0) {
	out_ok:
		errno = saved;
		return 0;
	}
out_fail:
	errno = err;
	return -1;
own_attempt:
	/*
	 * The first attempt was left to a prober, but this connect is not one
	 * to wait with it: the program's own attempt, now, handled as any.
	 */
	waited = false;
	if (real_connect(fd, addr, len) == 0)
		goto out_ok;
	goto failed;
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
