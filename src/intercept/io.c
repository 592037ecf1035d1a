/*
 * read/readv/recv/recvfrom/recvmsg/write/writev: on a hidden connect answered
 * as in progress; a read that meets an early close may connect again, and
 * what a connection sends before its first byte may be recorded for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/early.h"
#include "core/pending.h"
#include "core/ready.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/real.h"
#include "sys/sock.h"

bool io_masked(int fd, int *err)
{
	return pending_io_answer(fd, err) != PENDING_PASS;
}

/* Send @n bytes at @p on @fd, whole (MSG_NOSIGNAL: an end shows in the read that follows). */
static bool send_all(int fd, const unsigned char *p, uint32_t n)
{
	uint32_t done = 0;

	while (done < n) {
		ssize_t k = real_send(fd, p + done, n - done, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		done += (uint32_t)k;
	}
	return true;
}

/* The server's one-byte answer on @fd (blocking, within 10 s) is @want. */
static bool answered(int fd, unsigned char want)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	unsigned char got = 0;

	return real_poll(&p, 1, 10000) == 1 && real_recv(fd, &got, 1, 0) == 1 && got == want;
}

/*
 * Send @fl again on @fd's new connection: a start-up that negotiated first
 * (PostgreSQL's SSLRequest) stops for the server's answer, which must be the
 * one the program had (in the clear), before the rest.
 */
static bool send_flight(int fd, const struct flight *fl)
{
	uint32_t pause = ready_pause(fl->data, fl->len);

	if (pause == 0 || pause >= fl->len)
		return send_all(fd, fl->data, fl->len);
	return send_all(fd, fl->data, pause) && answered(fd, READY_GO_ON) &&
	       send_all(fd, fl->data + pause, fl->len - pause);
}

/*
 * Connect @fd to @addr again and send @fl again on it (EARLY_REPLAY): on a
 * non-blocking socket too, in this call, blocking (the request is the
 * program's only business on it until the answer comes).  Returns whether
 * it is connected.
 */
static bool replay(int fd, const struct sockaddr_storage *addr, socklen_t len, struct flight *fl)
{
	int flags = fcntl(fd, F_GETFL);
	bool nonblocking = flags >= 0 && (flags & O_NONBLOCK), ok;

	if (nonblocking)
		(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	ok = connect(fd, (const struct sockaddr *)addr, len) == 0 && send_flight(fd, fl);
	if (nonblocking)
		(void)fcntl(fd, F_SETFL, flags);
	early_flight_done(fd, fl);
	return ok;
}

/*
 * A read of @fd returned *rc on a connection that awaits its first byte:
 * whether to read again, the connection made again (it was closed before its
 * first byte, and the program had sent nothing, or what it sent is sent
 * again).  A non-blocking socket's new attempt is under way (or waits for
 * its time): *rc -1 with EAGAIN, as a read before any data.  Otherwise *rc
 * and errno are the read's.
 */
static __attribute__((noinline)) bool read_again(int fd, ssize_t *rc, struct iovec got)
{
	struct sockaddr_storage addr;
	struct flight *fl = NULL;
	socklen_t len = 0;
	int err = errno;

	switch (early_seen(init_config_get(), fd, *rc, err, false, &got, &addr, &len, &fl)) {
	case EARLY_REPLAY:
		if (replay(fd, &addr, len, fl))
			return true;
		break;
	case EARLY_RECONNECT:
		if (connect(fd, (const struct sockaddr *)&addr, len) == 0)
			return true;
		if (errno == EINPROGRESS) {
			errno = EAGAIN;
			*rc = -1;
			return false;
		}
		break;
	case EARLY_NONE:
		break;
	}
	/* Not connected again: the program sees the end it met, as without libbackoff. */
	errno = err;
	return false;
}

/* Make the read @call, again while the connection is made again; @got: its first buffer. */
#define READ_WATCHED(fd, call, got)                                                      \
	do {                                                                             \
		ssize_t rc_;                                                             \
		ANSWER_IF_MASKED(fd);                                                    \
		do                                                                       \
			rc_ = (call);                                                    \
		while (__builtin_expect(early_any(), 0) && read_again((fd), &rc_, got)); \
		return rc_;                                                              \
	} while (0)

static const struct iovec none = { NULL, 0 };

__attribute__((noinline, cold)) void io_sndtimeo_back(int fd)
{
	if (fdtable_set_bound(fd, NULL, false))
		sock_sndtimeo_none(fd);
}

bool io_masked_given_back(int fd, int *err)
{
	GIVE_BACK_SNDTIMEO(fd);
	return pending_any_masked() && io_masked(fd, err);
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	READ_WATCHED(fd, real_read(fd, buf, n), ((struct iovec){ buf, n }));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	READ_WATCHED(fd, real_readv(fd, iov, n), (n > 0 ? iov[0] : none));
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	READ_WATCHED(fd, real_recv(fd, buf, n, flags), ((struct iovec){ buf, n }));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, COMPAT_SOCKADDR_ARG from,
			socklen_t *fromlen)
{
	READ_WATCHED(fd, real_recvfrom(fd, buf, n, flags, COMPAT_SOCKADDR(from), fromlen),
		     ((struct iovec){ buf, n }));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	READ_WATCHED(fd, real_recvmsg(fd, msg, flags),
		     (msg && msg->msg_iovlen > 0 ? msg->msg_iov[0] : none));
}

/* A write on a connection that awaits its first byte: recorded, or an early close, maybe. */
static __attribute__((noinline)) void write_seen(int fd, ssize_t rc, const struct iovec *iov,
						 int iovcnt)
{
	int err = errno;

	if (rc > 0)
		early_record(init_config_get(), fd, iov, iovcnt, (size_t)rc);
	else if (rc < 0)
		early_sent(init_config_get(), fd, err);
	errno = err;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	rc = real_write(fd, buf, n);
	if (__builtin_expect(early_any(), 0)) {
		struct iovec one = { (void *)buf, n };

		write_seen(fd, rc, &one, 1);
	}
	return rc;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	rc = real_writev(fd, iov, n);
	if (__builtin_expect(early_any(), 0))
		write_seen(fd, rc, iov, n);
	return rc;
}

EXPORT int shutdown(int fd, int how)
{
	if (__builtin_expect(early_any(), 0))
		early_shutdown(fd, how);
	return real_shutdown(fd, how);
}
