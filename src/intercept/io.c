/*
 * read/readv/recv/recvfrom/recvmsg/write/writev: on a hidden connect answered
 * as in progress; a read that meets an early close may connect again, and
 * what a connection sends before its first byte may be recorded for it.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "drivers/early.h"
#include "drivers/pending.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/real.h"
#include "sys/sock.h"

bool io_masked(int fd, int opt, int *err)
{
	enum pending_answer a = pending_io_answer(fd, err);
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int saved = errno, rc;
	uint64_t own;

	/*
	 * A blocking call on a connect held for its retry: the program made the
	 * socket blocking again meanwhile (redis-py between its non-blocking
	 * look and its send).  The kernel's call would wait for the connect, so
	 * this one does, as the program's poll would (the poll hook makes the
	 * retries), at most the socket's own timeout; then the call is the
	 * kernel's, or gets the connect's last error.
	 */
	if (a != PENDING_IN_PROGRESS || !sock_is_blocking(fd))
		return a != PENDING_PASS;
	own = sock_timeo_ms(fd, opt); /* the socket's own timeout, as poll's */
	rc = poll(&p, 1, own == UINT64_MAX ? -1 : own > INT_MAX ? INT_MAX : (int)own);
	if (rc < 0) {
		*err = errno; /* EINTR: a signal, as in the kernel's wait */
		errno = saved;
		return true;
	}
	errno = saved;
	if (rc == 0) {
		*err = EAGAIN; /* the socket's own timeout */
		return true;
	}
	return pending_io_answer(fd, err) != PENDING_PASS;
}

/*
 * A read of @fd returned *rc on a connection that awaits its first byte:
 * whether to read again, the connection made again (it was closed before its
 * first byte, and the program had sent nothing, or what it sent is sent
 * again).  A non-blocking socket's new attempt is under way (or waits for
 * its time) in the program's event loop, which awaits its first byte by its
 * time too (drivers/pending.h): *rc -1 with EAGAIN, as a read before any data.
 * Otherwise *rc and errno are the read's: a new connection that fails or
 * stays silent leaves the program the end it met, as without libbackoff.
 */
static __attribute__((noinline)) bool read_again(int fd, ssize_t *rc, struct iovec got)
{
	struct sockaddr_storage addr;
	struct flight *fl = NULL;
	socklen_t len = 0;
	int err = errno, end = 0;

	switch (early_seen(init_config_get(), fd, *rc, err, false, &got, &addr, &len, &fl, &end)) {
	case EARLY_REPLAY:
		if (early_again_blocking(init_config_get(), fd, &addr, len, fl, &end))
			return true;
		break;
	case EARLY_RECONNECT:
		if (sock_is_blocking(fd)) {
			if (early_again_blocking(init_config_get(), fd, &addr, len, NULL, &end))
				return true;
			break;
		}
		/* What the event loop knew of the first connection is over. */
		if (pending_any())
			pending_release(init_config_get(), fd, false);
		if (connect(fd, (const struct sockaddr *)&addr, len) == 0)
			return true;
		if (errno == EINPROGRESS) {
			errno = EAGAIN;
			*rc = -1;
			return false;
		}
		end = early_end(fd, errno, EVENTS_END_SILENT);
		break;
	case EARLY_END:
		break;
	case EARLY_NONE:
		errno = err;
		return false;
	}
	/*
	 * Not connected again: the program sees the end the first connection
	 * met, as without libbackoff (an answer it read stays its own).
	 */
	if (*rc <= 0) {
		*rc = end ? -1 : 0;
		err = end;
	}
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

/*
 * Nothing masked nor watched in the process (an fd is watched from its
 * connect on, so from before any read on it): the call itself, as a tail
 * call with no frame of the hook's own; else @watched, which is READ_WATCHED.
 */
#define READ_OR_WATCHED(call, watched)                                          \
	do {                                                                    \
		if (__builtin_expect(!pending_any_masked() && !early_any(), 1)) \
			return (call);                                          \
		return (watched);                                               \
	} while (0)

static const struct iovec none = { NULL, 0 };

bool io_masked_given_back(int fd, int *err)
{
	GIVE_BACK_SNDTIMEO(fd);
	return pending_any_masked() && io_masked(fd, SO_SNDTIMEO, err);
}

static __attribute__((noinline)) ssize_t read_watched(int fd, void *buf, size_t n)
{
	READ_WATCHED(fd, real_read(fd, buf, n), ((struct iovec){ buf, n }));
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	READ_OR_WATCHED(real_read(fd, buf, n), read_watched(fd, buf, n));
}

static __attribute__((noinline)) ssize_t readv_watched(int fd, const struct iovec *iov, int n)
{
	READ_WATCHED(fd, real_readv(fd, iov, n), (n > 0 ? iov[0] : none));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	READ_OR_WATCHED(real_readv(fd, iov, n), readv_watched(fd, iov, n));
}

static __attribute__((noinline)) ssize_t recv_watched(int fd, void *buf, size_t n, int flags)
{
	READ_WATCHED(fd, real_recv(fd, buf, n, flags), ((struct iovec){ buf, n }));
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	READ_OR_WATCHED(real_recv(fd, buf, n, flags), recv_watched(fd, buf, n, flags));
}

static __attribute__((noinline)) ssize_t recvfrom_watched(int fd, void *buf, size_t n, int flags,
							  struct sockaddr *from, socklen_t *fromlen)
{
	READ_WATCHED(fd, real_recvfrom(fd, buf, n, flags, from, fromlen),
		     ((struct iovec){ buf, n }));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, COMPAT_SOCKADDR_ARG from,
			socklen_t *fromlen)
{
	READ_OR_WATCHED(real_recvfrom(fd, buf, n, flags, COMPAT_SOCKADDR(from), fromlen),
			recvfrom_watched(fd, buf, n, flags, COMPAT_SOCKADDR(from), fromlen));
}

static __attribute__((noinline)) ssize_t recvmsg_watched(int fd, struct msghdr *msg, int flags)
{
	READ_WATCHED(fd, real_recvmsg(fd, msg, flags),
		     (msg && msg->msg_iovlen > 0 ? msg->msg_iov[0] : none));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	READ_OR_WATCHED(real_recvmsg(fd, msg, flags), recvmsg_watched(fd, msg, flags));
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

/* write() on an fd that may be masked, carry a bound or await its first byte. */
static __attribute__((noinline)) ssize_t write_watched(int fd, const void *buf, size_t n)
{
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	rc = real_write(fd, buf, n);
	if (early_any()) {
		struct iovec one = { (void *)buf, n };

		write_seen(fd, rc, &one, 1);
	}
	return rc;
}

/*
 * Nothing masked, bound or watched in the process (an fd is watched from its
 * connect on, so from before any write on it): the call itself, as a tail
 * call, with no frame of the hook's own.
 */
EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (__builtin_expect(!fdtable_any_attention() && !early_any(), 1))
		return real_write(fd, buf, n);
	return write_watched(fd, buf, n);
}

static __attribute__((noinline)) ssize_t writev_watched(int fd, const struct iovec *iov, int n)
{
	ssize_t rc;

	ANSWER_IF_MASKED_GIVE_BACK(fd);
	rc = real_writev(fd, iov, n);
	if (early_any())
		write_seen(fd, rc, iov, n);
	return rc;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (__builtin_expect(!fdtable_any_attention() && !early_any(), 1))
		return real_writev(fd, iov, n);
	return writev_watched(fd, iov, n);
}

/*
 * A connection the library is making again after an early close is given
 * up: the program ends the one it believes it has, whose shutdown succeeds
 * (the socket, aborted, takes @how and reads as ended).
 */
EXPORT int shutdown(int fd, int how)
{
	if (__builtin_expect(pending_any(), 0) && pending_again_shut(fd)) {
		int saved = errno;

		(void)real_shutdown(fd, how);
		errno = saved;
		return 0;
	}
	if (__builtin_expect(early_any(), 0))
		early_shutdown(fd, how);
	return real_shutdown(fd, how);
}
