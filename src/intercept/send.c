/* send/sendto/sendmsg/sendmmsg: in-progress answers on a hidden connect; failures retried. */
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "drivers/call.h"
#include "drivers/early.h"
#include "drivers/pending.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/sock.h"
#include "sys/real.h"

/* The failure paths: out of line, so that the hooks stay small. */
#define SLOW_PATH __attribute__((noinline, cold))

/* One send call, made again exactly as the program made it. */
struct send_op {
	struct call_send s; /* what the engine sees of it */
	const void *buf;    /* send, sendto */
	size_t len;
	const struct msghdr *msg; /* sendmsg */
	struct mmsghdr *vec;	  /* sendmmsg */
	unsigned vlen;
	ssize_t rc; /* the result of the last attempt */
};

static int send_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_send(op->s.fd, op->buf, op->len, op->s.flags);
	return op->rc >= 0 ? 0 : errno;
}

static int sendto_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_sendto(op->s.fd, op->buf, op->len, op->s.flags, op->s.to, op->s.tolen);
	return op->rc >= 0 ? 0 : errno;
}

static int sendmsg_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_sendmsg(op->s.fd, op->msg, op->s.flags);
	return op->rc >= 0 ? 0 : errno;
}

static int sendmmsg_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct send_op *op = ctx;

	op->rc = real_sendmmsg(op->s.fd, op->vec, op->vlen, (compat_mmsg_flags)op->s.flags);
	return op->rc >= 0 ? 0 : errno;
}

/*
 * The first attempt of @op failed (errno says why): made again with @again
 * if it is eligible (call_send_failed).  Returns the result of the attempt
 * that succeeded, or -1; errno is that of the last real attempt that failed.
 */
SLOW_PATH static ssize_t send_failed(struct send_op *op, int (*again)(void *, uint64_t))
{
	int err = call_send_failed(init_config_get(), &op->s, errno, again, op);

	if (err == 0)
		return op->rc;
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
	op->s.call = "send";
	op->s.to = NULL;
	op->s.tolen = 0;
	return send_failed(op, send_again);
}

SLOW_PATH static ssize_t sendto_retry(struct send_op *op)
{
	op->s.call = "sendto";
	if (op->s.tolen == 0)
		op->s.to = NULL;
	return send_failed(op, sendto_again);
}

SLOW_PATH static ssize_t sendmsg_retry(struct send_op *op)
{
	op->s.call = "sendmsg";
	op->s.to = op->msg && op->msg->msg_namelen > 0 ? op->msg->msg_name : NULL;
	op->s.tolen = op->msg ? op->msg->msg_namelen : 0;
	return send_failed(op, sendmsg_again);
}

/* -1 means the first message was not sent: nothing was, so the whole call is made again. */
SLOW_PATH static int sendmmsg_retry(struct send_op *op)
{
	const struct msghdr *first = op->vec && op->vlen > 0 ? &op->vec[0].msg_hdr : NULL;

	op->s.call = "sendmmsg";
	op->s.to = first && first->msg_namelen > 0 ? first->msg_name : NULL;
	op->s.tolen = first ? first->msg_namelen : 0;
	return (int)send_failed(op, sendmmsg_again);
}

/* @op sent @rc bytes on a connection that may await its first byte: recorded for a replay. */
SLOW_PATH static ssize_t send_seen(const struct send_op *op, ssize_t rc)
{
	if (op->msg) {
		early_record(init_config_get(), op->s.fd, op->msg->msg_iov,
			     (int)op->msg->msg_iovlen, (size_t)rc);
	} else {
		struct iovec one = { (void *)op->buf, op->len };

		early_record(init_config_get(), op->s.fd, &one, 1, (size_t)rc);
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
	op.s.fd = fd;
	op.buf = buf;
	op.len = n;
	op.s.flags = flags;
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
	op.s.fd = fd;
	op.buf = buf;
	op.len = n;
	op.s.flags = flags;
	op.s.to = COMPAT_SOCKADDR(to);
	op.s.tolen = tolen;
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
	op.s.fd = fd;
	op.msg = msg;
	op.s.flags = flags;
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
	op.s.fd = fd;
	op.vec = vec;
	op.vlen = vlen;
	op.s.flags = (int)flags;
	KEEP_IN_MEMORY(op);
	rc = real_sendmmsg(fd, vec, vlen, flags);
	return __builtin_expect(rc >= 0, 1) ? (int)rc : sendmmsg_retry(&op);
}
