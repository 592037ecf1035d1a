/*
 * read/readv/recv/recvfrom/recvmsg/write/writev: on a hidden connect answered
 * as in progress; a read that meets an early close may connect again.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/early.h"
#include "core/pending.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/real.h"

bool io_masked(int fd, int *err)
{
	return pending_io_answer(fd, err) != PENDING_PASS;
}

/*
 * A read of @fd returned *rc on a connection that awaits its first byte:
 * whether to read again, the connection made again (it was closed before its
 * first byte, and the program had sent nothing).  A non-blocking socket's
 * new attempt is under way (or waits for its time): *rc -1 with EAGAIN, as
 * a read before any data.  Otherwise *rc and errno are the read's.
 */
static __attribute__((noinline)) bool read_again(int fd, ssize_t *rc)
{
	struct sockaddr_storage addr;
	socklen_t len = 0;
	int err = errno;

	if (early_seen(init_config_get(), fd, *rc, err, false, &addr, &len)) {
		if (connect(fd, (const struct sockaddr *)&addr, len) == 0)
			return true;
		if (errno == EINPROGRESS) {
			errno = EAGAIN;
			*rc = -1;
			return false;
		}
	}
	/* Not connected again: the program sees the end it met, as without libbackoff. */
	errno = err;
	return false;
}

/* Make the read @call, again while the connection is made again. */
#define READ_WATCHED(fd, call)                                                      \
	do {                                                                        \
		ssize_t rc_;                                                        \
		ANSWER_IF_MASKED(fd);                                               \
		do                                                                  \
			rc_ = (call);                                               \
		while (__builtin_expect(early_any(), 0) && read_again((fd), &rc_)); \
		return rc_;                                                         \
	} while (0)

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	READ_WATCHED(fd, real_read(fd, buf, n));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	READ_WATCHED(fd, real_readv(fd, iov, n));
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	READ_WATCHED(fd, real_recv(fd, buf, n, flags));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, COMPAT_SOCKADDR_ARG from,
			socklen_t *fromlen)
{
	READ_WATCHED(fd, real_recvfrom(fd, buf, n, flags, COMPAT_SOCKADDR(from), fromlen));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	READ_WATCHED(fd, real_recvmsg(fd, msg, flags));
}

/* A write that failed on a connection that awaits its first byte: an early close, maybe. */
#define WRITE_WATCHED(fd, call)                                                         \
	do {                                                                            \
		ssize_t rc_;                                                            \
		ANSWER_IF_MASKED(fd);                                                   \
		rc_ = (call);                                                           \
		if (__builtin_expect(rc_ < 0, 0) && __builtin_expect(early_any(), 0)) { \
			int err_ = errno;                                               \
			early_sent(init_config_get(), (fd), err_);                      \
			errno = err_;                                                   \
		}                                                                       \
		return rc_;                                                             \
	} while (0)

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	WRITE_WATCHED(fd, real_write(fd, buf, n));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	WRITE_WATCHED(fd, real_writev(fd, iov, n));
}
