/* The connect and send families past their hooks' gates: decided and carried out here. */
#include "config/config_dests.h"
#include "drivers/call.h"

#include <errno.h>
#include <fcntl.h>

#include "drivers/before.h"
#include "drivers/decide.h"
#include "facts/record.h"
#include "drivers/early.h"
#include "engine/engine.h"
#include "counters/events.h"
#include "tables/fdtable.h"
#include "drivers/pending.h"
#include "drivers/retry.h"
#include "drivers/way.h"
#include "facts/share.h"
#include "sys/clock.h"
#include "sys/real.h"
#include "sys/sock.h"

struct connect_ctx {
	int fd;
	const struct sockaddr *addr;
	socklen_t len;
	const struct config *cfg;
	struct fdslot *slot;		  /* the fd's, once looked up */
	const struct target_addr *target; /* its destination, once known */
};

/* One more attempt of a blocking connect, aborted at @deadline_ms if still unanswered. */
static int connect_again(void *ctx, uint64_t deadline_ms)
{
	struct connect_ctx *c = ctx;

	return fdtable_connect_from(c->fd, NULL, c->addr, c->len, clock_now_ms(), deadline_ms,
				    SOCK_TIMEO_ASK);
}

/*
 * Whether @fd (its slot @s, or NULL) is blocking, and *own what is known of
 * its own send timeout: from the fd table when the library saw the socket
 * made (no system call), else from the kernel.  errno may change.
 */
static inline bool is_blocking(int fd, const struct fdslot *s, enum sock_own_timeo *own)
{
	unsigned mode = fdtable_mode_of(s);
	int flags;

	if (mode & FDS_KNOWN) {
		*own = (mode & FDS_OWNTIMEO) ? SOCK_TIMEO_OWN : SOCK_TIMEO_NONE;
		return !(mode & FDS_NONBLOCK);
	}
	*own = SOCK_TIMEO_ASK;
	flags = real_fcntl(fd, F_GETFL);
	return flags >= 0 && !(flags & O_NONBLOCK);
}

/*
 * The first attempt of @c: on a blocking socket bounded by before_bound_ms
 * (a non-blocking one is bounded in the event loop, at no cost here);
 * *started_ms: when it began, if the clock was read; *slot: the fd's slot,
 * if it was looked up (else left).  Returns 0 or its errno.  errno may change.
 * Inlined: in connect_bounded, the success path, @c lives in registers.
 */
static inline __attribute__((always_inline)) int first_attempt(const struct config *cfg,
							       struct connect_ctx *c,
							       uint64_t *started_ms,
							       struct fdslot **slot)
{
	struct target_addr t;
	uint64_t bound;
	enum sock_own_timeo own;
	int err;

	if (!target_from_sockaddr(c->addr, c->len, &t) ||
	    (bound = before_bound_ms(cfg, &t)) == CONFIG_INFINITE ||
	    !is_blocking(c->fd, *slot = fdtable_peek(c->fd), &own))
		return sock_connect(c->fd, c->addr, c->len);
	*started_ms = clock_now_ms();
	err = fdtable_connect_from(c->fd, *slot, c->addr, c->len, *started_ms, *started_ms + bound,
				   own);
	/* Non-blocking after all: its mode changed where the hooks could not see. */
	if (err == EINPROGRESS)
		fdtable_mode_forget(c->fd);
	return err;
}

/* The first attempt of @c: first_attempt for its context. */
static int connect_first(struct decide_connect *c)
{
	struct connect_ctx *x = c->ctx;

	return first_attempt(x->cfg, x, &c->started_ms, &x->slot);
}

/* BEFORE_LATER: the event loop makes the first attempt when @b's delay ends, if it can. */
static bool connect_later(void *ctx, const struct before_connect *b)
{
	struct connect_ctx *c = ctx;

	return pending_manage_later(c->cfg, c->fd, c->addr, c->len, b->target,
				    b->until_ns / 1000000);
}

/*
 * DECIDE's hand: a failure at once becomes an attempt in progress, retried
 * in the event loop with the one under way; whether it is managed.
 */
static bool connect_hand(void *ctx, int err)
{
	struct connect_ctx *c = ctx;

	return pending_manage(c->cfg, c->fd, c->addr, c->len, c->target,
			      err == EINPROGRESS ? 0 : err);
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
 * connect() in full (call_connect); @attempted: the hook made the attempt,
 * which failed (errno holds its error), @saved: errno before the call.
 */
static int connect_slow(const struct config *cfg, int fd, const struct sockaddr *addr,
			socklen_t len, int saved, bool attempted, uint64_t started_ms)
{
	struct target_addr target;
	struct connect_ctx ctx = { fd, addr, len, cfg, NULL, &target };
	struct way w = {
		.c = {
			.fd = fd,
			.target = &target,
			.err = errno, /* the error of the attempt the fast path made, if it made one */
			.attempt = connect_again,
			.first = connect_first,
			.hand = connect_hand,
			.ctx = &ctx,
			.started_ms = started_ms,
		},
		.b = { .fd = fd, .addr = addr, .len = len, .target = &target, .looks = true },
		.later = connect_later,
		.attempted = attempted,
	};
	bool done;
	int rc;

	/* A bound a siglongjmp left is not the program's: its own counts, and is given back. */
	if (!attempted)
		GIVE_BACK_SNDTIMEO(fd);
	if (!attempted && __builtin_expect(pending_any(), 0)) {
		rc = connect_managed(cfg, fd, addr, len, &done);
		if (done)
			return rc;
		w.attempted = rc != 0; /* connect_managed made this attempt */
		w.c.err = errno;
	}
	rc = way_connect(cfg, &w);
	/* A connection made or under way is watched: its end may come before its first byte. */
	if ((rc == 0 || rc == EINPROGRESS) && early_watched(addr, len))
		early_watch_inet(cfg, fd, ctx.slot, addr, len);
	if (rc == 0) {
		errno = saved;
		return 0;
	}
	errno = rc;
	return -1;
}

/*
 * The first attempt of a connect over IP, with a bound of its own
 * (first_attempt): @started_ms when it began, the errno of a failure left
 * for connect_slow; a connection made is watched for its first byte.
 */
static int connect_bounded(const struct config *cfg, int fd, const struct sockaddr *addr,
			   socklen_t len, int saved)
{
	struct connect_ctx ctx = { .fd = fd, .addr = addr, .len = len };
	struct fdslot *slot = NULL;
	uint64_t started = 0;
	int err = first_attempt(cfg, &ctx, &started, &slot);

	if (err == 0) {
		early_watch_inet(cfg, fd, slot, addr, len);
		if (__builtin_expect(decide_any_down(addr, len), 0))
			decide_up(cfg, addr, len);
		errno = saved;
		return 0;
	}
	errno = err;
	return connect_slow(cfg, fd, addr, len, saved, true, started);
}

/*
 * Why a send that failed with @err is not retried, or NULL if it is (then
 * @retryable and @t are filled).  "" for an error no send is retried on
 * (EAGAIN, EPIPE, EINTR, ...): those pass unlogged, without a system call.
 */
static const char *send_why_not(const struct config *cfg, const struct call_send *op, int err,
				struct config_errset *retryable, struct target_addr *t)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	int family, type;

	if (!cfg->enabled || !cfg->send)
		return "";
	config_send_errors(AF_UNSPEC, 0, true, retryable);
	if (!engine_retries(retryable, err))
		return "";
	if (op->to && !target_from_sockaddr(op->to, op->tolen, t))
		return "family";
	/* The SYN may have carried the data: sending it again could duplicate it. */
	if (op->flags & MSG_FASTOPEN)
		return "fastopen";
	if ((op->flags & MSG_DONTWAIT) || !sock_is_blocking(op->fd))
		return "nonblocking";
	if (!sock_kind(op->fd, &family, &type))
		return "errno";
	config_send_errors(family, type, op->to != NULL, retryable);
	if (!engine_retries(retryable, err))
		return "errno";
	/* The peer, as the program's getpeername says it (early_name while connected again). */
	if (!op->to && ((real_getpeername(op->fd, (struct sockaddr *)&peer, &len) != 0 &&
			 !early_name(op->fd, true, (struct sockaddr *)&peer, &len)) ||
			!target_from_sockaddr((struct sockaddr *)&peer, len, t)))
		return "family";
	if (!engine_takes(cfg, t))
		return "excluded";
	return NULL;
}

int call_send_failed(const struct config *cfg, const struct call_send *op, int err,
		     int (*again)(void *ctx, uint64_t deadline_ms), void *ctx)
{
	struct config_errset retryable;
	struct target_addr target = { .family = 0 };
	struct retry_call call = {
		.what = { .call = op->call, .target = &target },
		.retryable = &retryable,
		.attempt = again,
		.ctx = ctx,
	};
	const char *reason;

	if (early_any())
		early_sent(cfg, op->fd, err);
	reason = send_why_not(cfg, op, err, &retryable, &target);
	if (reason) {
		if (*reason)
			events_pass(op->call, target.family ? &target : NULL, err, reason);
		return err;
	}
	call.budget_ms = sock_sndtimeo_ms(op->fd);
	return retry_blocking(config_for(cfg, &target), &call, err);
}

void call_lookup_failed(const struct config *cfg, const struct call_lookup *op,
			enum config_dns_result first, int (*again)(void *ctx, uint64_t deadline_ms),
			void *ctx)
{
	int saved = errno;
	struct config_errset retryable;
	struct retry_call call = {
		.what = { .call = op->call, .name = op->shown, .err_name = op->err_name },
		.retryable = &retryable,
		.budget_ms = CONFIG_INFINITE,
		.attempt = again,
		.ctx = ctx,
	};

	if (cfg->enabled && cfg->dns) {
		config_dns_errors(cfg, op->name, &retryable);
		if (engine_retries(&retryable, (int)first)) {
			retry_blocking(cfg, &call, (int)first);
			return;
		}
	}
	errno = saved;
}

int call_connect(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		 int saved, enum call_first first)
{
	struct target_addr t;

	/* BACKOFF_DESTINATIONS: the destination's own policy serves the whole call. */
	if (__builtin_expect(cfg->dest_count > 0, 0) && target_from_sockaddr(addr, len, &t))
		cfg = config_for(cfg, &t);
	if (first == CALL_BOUNDED)
		return connect_bounded(cfg, fd, addr, len, saved);
	return connect_slow(cfg, fd, addr, len, saved, first == CALL_FAILED, 0);
}

void call_closing(const struct config *cfg, int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	struct target_addr t;
	int saved = errno;

	if (real_getpeername(fd, (struct sockaddr *)&a, &len) == 0 && len <= sizeof(a) &&
	    target_from_sockaddr((const struct sockaddr *)&a, len, &t))
		share_note_closing(&t, clock_now_ns(),
				   engine_streak_stale_ms(config_for(cfg, &t)) * 1000000,
				   ENGINE_STREAK_STALE_MAX_MS * 1000000);
	errno = saved;
}
