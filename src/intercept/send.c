/* send/sendto/sendmsg/sendmmsg: in-progress answers on a hidden connect; failures retried. */
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "core/early.h"
#include "core/engine.h"
#include "core/pending.h"
#include "core/retry.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/sock.h"
#include "sys/real.h"

/* The failure paths: out of line, so that the hooks stay small. */
#define SLOW_PATH __attribute__((noinline, cold))

/* One send call, made again exactly as the program made it. */
struct send_op {
	const char *call; /* for the log */
	int fd, flags;
	const void *buf; /* send, sendto */
	size_t len;
	const struct sockaddr *to; /* the destination the call names, or NULL */
	socklen_t tolen;
	const struct msghdr *msg; /* sendmsg */
	struct mmsghdr *vec;	  /* sendmmsg */
	unsigned vlen;
	ssize_t rc; /* the result of the last attempt */
};

static int send_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_send(op->fd, op->buf, op->len, op->flags);
	return op->rc >= 0 ? 0 : errno;
}

static int sendto_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_sendto(op->fd, op->buf, op->len, op->flags, op->to, op->tolen);
	return op->rc >= 0 ? 0 : errno;
}

static int sendmsg_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_sendmsg(op->fd, op->msg, op->flags);
	return op->rc >= 0 ? 0 : errno;
}

static int sendmmsg_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_sendmmsg(op->fd, op->vec, op->vlen, (compat_mmsg_flags)op->flags);
	return op->rc >= 0 ? 0 : errno;
}

/*
 * Why a send that failed with @err is not retried, or NULL if it is (then
 * @retryable and @t are filled).  "" for an error no send is retried on
 * (EAGAIN, EPIPE, EINTR, ...): those pass unlogged, without a system call.
 */
static const char *why_not(const struct config *cfg, const struct send_op *op, int err,
			   struct config_errset *retryable, struct target_addr *t)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	int family, type;

	if (!cfg->enabled || !cfg->send)
		return "";
	config_send_errors(AF_UNSPEC, 0, true, retryable);
	if (!config_errset_has(retryable, err))
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
	if (!config_errset_has(retryable, err))
		return "errno";
	if (!op->to && (getpeername(op->fd, (struct sockaddr *)&peer, &len) != 0 ||
			!target_from_sockaddr((struct sockaddr *)&peer, len, t)))
		return "family";
	if (!engine_takes(cfg, t))
		return "excluded";
	return NULL;
}

/*
 * The first attempt of @op failed (errno says why).  Retry it with @again if
 * it is eligible.  Returns the result of the attempt that succeeded, or -1;
 * errno is that of the last real attempt that failed.  Blocks the calling
 * thread between attempts; holds nothing across the waits.
 */
SLOW_PATH static ssize_t send_failed(struct send_op *op, int (*again)(void *, uint64_t))
{
	const struct config *cfg = init_config_get();
	struct config_errset retryable;
	struct target_addr target = { .family = 0 };
	int err = errno;
	const char *reason;

	if (early_any())
		early_sent(cfg, op->fd, err);
	reason = why_not(cfg, op, err, &retryable, &target);

	if (reason) {
		if (*reason)
			events_pass(op->call, target.family ? &target : NULL, err, reason);
		goto out_fail;
	}
	{
		struct retry_call call = {
			.what = { .call = op->call, .target = &target },
			.retryable = &retryable,
			.budget_ms = sock_sndtimeo_ms(op->fd),
			.attempt = again,
			.ctx = op,
		};

		err = retry_blocking(cfg, &call, err);
	}
	if (err == 0)
		return op->rc;
out_fail:
	errno = err;
	return -1;
}

/*
 * The hooks keep their arguments in @op, in memory, across the real call, and
 * the failure paths fill in the rest.  Measured with callgrind
 * (tests/bench/fastpath send): a send costs 19 instructions more than without
 * libbackoff this way, 27 when the compiler keeps the arguments in
 * callee-saved registers instead; the empty asm is what makes it store them.
 */
#define KEEP_IN_MEMORY(x) __asm__ volatile("" : : "m"(x))

SLOW_PATH static ssize_t send_retry(struct send_op *op)
{
	op->call = "send";
	op->to = NULL;
	op->tolen = 0;
	return send_failed(op, send_again);
}

SLOW_PATH static ssize_t sendto_retry(struct send_op *op)
{
	op->call = "sendto";
	if (op->tolen == 0)
		op->to = NULL;
	return send_failed(op, sendto_again);
}

SLOW_PATH static ssize_t sendmsg_retry(struct send_op *op)
{
	op->call = "sendmsg";
	op->to = op->msg && op->msg->msg_namelen > 0 ? op->msg->msg_name : NULL;
	op->tolen = op->msg ? op->msg->msg_namelen : 0;
	return send_failed(op, sendmsg_again);
}

/* -1 means the first message was not sent: nothing was, so the whole call is made again. */
SLOW_PATH static int sendmmsg_retry(struct send_op *op)
{
	const struct msghdr *first = op->vec && op->vlen > 0 ? &op->vec[0].msg_hdr : NULL;

	op->call = "sendmmsg";
	op->to = first && first->msg_namelen > 0 ? first->msg_name : NULL;
	op->tolen = first ? first->msg_namelen : 0;
	return (int)send_failed(op, sendmmsg_again);
}

/* @op sent @rc bytes on a connection that may await its first byte: recorded for a replay. */
SLOW_PATH static ssize_t send_seen(const struct send_op *op, ssize_t rc)
{
	if (op->msg) {
		early_record(init_config_get(), op->fd, op->msg->msg_iov, (int)op->msg->msg_iovlen,
			     (size_t)rc);
	} else {
		struct iovec one = { (void *)op->buf, op->len };

		early_record(init_config_get(), op->fd, &one, 1, (size_t)rc);
	}
	return rc;
}

/*
 * Each hook returns what the real call returned, at once on success; a call
 * that failed with nothing sent (-1) on a blocking socket with a transient
 * error is made again, unchanged, within the budget: then it returns the
 * result of the attempt that succeeded or -1.  errno is left as the program's
 * own retry loop would leave it: the error of the last failed attempt, even
 * after a later one succeeded.  Saving errno up front would cost every send
 * a call to __errno_location.  Thread-safe; async-signal-safe as the call is.
 */
EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct send_op op;
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	op.fd = fd;
	op.buf = buf;
	op.len = n;
	op.flags = flags;
	op.msg = NULL;
	KEEP_IN_MEMORY(op);
	rc = real_send(fd, buf, n, flags);
	if (__builtin_expect(rc >= 0, 1))
		return __builtin_expect(early_any(), 0) ? send_seen(&op, rc) : rc;
	return send_retry(&op);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, COMPAT_CONST_SOCKADDR_ARG to,
		      socklen_t tolen)
{
	struct send_op op;
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	op.fd = fd;
	op.buf = buf;
	op.len = n;
	op.flags = flags;
	op.to = COMPAT_SOCKADDR(to);
	op.tolen = tolen;
	op.msg = NULL;
	KEEP_IN_MEMORY(op);
	rc = real_sendto(fd, buf, n, flags, COMPAT_SOCKADDR(to), tolen);
	if (__builtin_expect(rc >= 0, 1))
		return __builtin_expect(early_any(), 0) ? send_seen(&op, rc) : rc;
	return sendto_retry(&op);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct send_op op;
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	op.fd = fd;
	op.msg = msg;
	op.flags = flags;
	KEEP_IN_MEMORY(op);
	rc = real_sendmsg(fd, msg, flags);
	if (__builtin_expect(rc >= 0, 1))
		return __builtin_expect(early_any(), 0) && msg ? send_seen(&op, rc) : rc;
	return sendmsg_retry(&op);
}

EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, compat_mmsg_flags flags)
{
	struct send_op op;
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	op.fd = fd;
	op.vec = vec;
	op.vlen = vlen;
	op.flags = (int)flags;
	KEEP_IN_MEMORY(op);
	rc = real_sendmmsg(fd, vec, vlen, flags);
	return __builtin_expect(rc >= 0, 1) ? (int)rc : sendmmsg_retry(&op);
}
