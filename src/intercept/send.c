/* send/sendto/sendmsg/sendmmsg: in-progress answers on a hidden connect; failures retried. */
#include <errno.h>
#include <sys/socket.h>

#include "core/pending.h"
#include "core/retry.h"
#include "init.h"
#include "intercept/io.h"
#include "intercept/sock.h"
#include "sys/real.h"

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

static int send_again(void *ctx)
{
	struct send_op *op = ctx;

	op->rc = real_send(op->fd, op->buf, op->len, op->flags);
	return op->rc >= 0 ? 0 : errno;
}

static int sendto_again(void *ctx)
{
	struct send_op *op = ctx;

	op->rc = real_sendto(op->fd, op->buf, op->len, op->flags, op->to, op->tolen);
	return op->rc >= 0 ? 0 : errno;
}

static int sendmsg_again(void *ctx)
{
	struct send_op *op = ctx;

	op->rc = real_sendmsg(op->fd, op->msg, op->flags);
	return op->rc >= 0 ? 0 : errno;
}

static int sendmmsg_again(void *ctx)
{
	struct send_op *op = ctx;

	op->rc = real_sendmmsg(op->fd, op->vec, op->vlen, op->flags);
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
	retry_send_errors(AF_UNSPEC, 0, true, retryable);
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
	retry_send_errors(family, type, op->to != NULL, retryable);
	if (!config_errset_has(retryable, err))
		return "errno";
	if (!op->to && (getpeername(op->fd, (struct sockaddr *)&peer, &len) != 0 ||
			!target_from_sockaddr((struct sockaddr *)&peer, len, t)))
		return "family";
	if (!target_matches(&cfg->targets, t))
		return "excluded";
	return NULL;
}

/*
 * The first attempt of @op failed (errno says why).  Retry it with @again if
 * it is eligible.  Returns the result of the attempt that succeeded, with
 * errno @saved; or -1 with the errno of the last real attempt.  Blocks the
 * calling thread between attempts; holds nothing across the waits.
 */
static ssize_t send_failed(struct send_op *op, int (*again)(void *), int saved)
{
	const struct config *cfg = init_config_get();
	struct config_errset retryable;
	struct target_addr target = { .family = 0 };
	int err = errno;
	const char *reason = why_not(cfg, op, err, &retryable, &target);

	if (reason) {
		if (*reason)
			retry_log_pass(op->call, target.family ? &target : NULL, err, reason);
		goto out_fail;
	}
	{
		struct retry_call call = {
			.call = op->call,
			.target = &target,
			.retryable = &retryable,
			.budget_ms = sock_sndtimeo_ms(op->fd),
			.attempt = again,
			.ctx = op,
		};

		err = retry_blocking(cfg, &call, err);
	}
	if (err == 0) {
		errno = saved;
		return op->rc;
	}
out_fail:
	errno = err;
	return -1;
}

/*
 * Each hook returns what the real call returned, at once on success; a call
 * that failed with nothing sent (-1) on a blocking socket with a transient
 * error is made again, unchanged, within the budget: then it returns the
 * result of the attempt that succeeded (errno untouched) or -1 with the errno
 * of the last real attempt.  Thread-safe; async-signal-safe as the call is.
 */
EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	int saved = errno;
	ssize_t rc;

	ANSWER_IF_MASKED(fd);
	rc = real_send(fd, buf, n, flags);
	if (__builtin_expect(rc >= 0, 1))
		return rc;
	{
		struct send_op op = {
			.call = "send", .fd = fd, .flags = flags, .buf = buf, .len = n
		};

		return send_failed(&op, send_again, saved);
	}
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG to,
		      socklen_t tolen)
{
	int saved = errno;
	ssize_t rc;

	ANSWER_IF_MASKED(fd);
	rc = real_sendto(fd, buf, n, flags, to.__sockaddr__, tolen);
	if (__builtin_expect(rc >= 0, 1))
		return rc;
	{
		struct send_op op = {
			.call = "sendto",
			.fd = fd,
			.flags = flags,
			.buf = buf,
			.len = n,
			.to = tolen > 0 ? to.__sockaddr__ : NULL,
			.tolen = tolen,
		};

		return send_failed(&op, sendto_again, saved);
	}
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	int saved = errno;
	ssize_t rc;

	ANSWER_IF_MASKED(fd);
	rc = real_sendmsg(fd, msg, flags);
	if (__builtin_expect(rc >= 0, 1))
		return rc;
	{
		struct send_op op = {
			.call = "sendmsg",
			.fd = fd,
			.flags = flags,
			.msg = msg,
			.to = msg && msg->msg_namelen > 0 ? msg->msg_name : NULL,
			.tolen = msg ? msg->msg_namelen : 0,
		};

		return send_failed(&op, sendmsg_again, saved);
	}
}

/* -1 means the first message was not sent: nothing was, so the whole call is made again. */
EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags)
{
	int saved = errno, rc;

	ANSWER_IF_MASKED(fd);
	rc = real_sendmmsg(fd, vec, vlen, flags);
	if (__builtin_expect(rc >= 0, 1))
		return rc;
	{
		const struct msghdr *first = vec && vlen > 0 ? &vec[0].msg_hdr : NULL;
		struct send_op op = {
			.call = "sendmmsg",
			.fd = fd,
			.flags = flags,
			.vec = vec,
			.vlen = vlen,
			.to = first && first->msg_namelen > 0 ? first->msg_name : NULL,
			.tolen = first ? first->msg_namelen : 0,
		};

		return (int)send_failed(&op, sendmmsg_again, saved);
	}
}
