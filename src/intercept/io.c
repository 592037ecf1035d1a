/* read/readv/recv/recvfrom/recvmsg/write/writev on a hidden connect: answered as in progress. */
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/pending.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/real.h"

bool io_masked(int fd, int *err)
{
	return pending_io_answer(fd, err) != PENDING_PASS;
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	ANSWER_IF_MASKED(fd);
	return real_read(fd, buf, n);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	ANSWER_IF_MASKED(fd);
	return real_readv(fd, iov, n);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	ANSWER_IF_MASKED(fd);
	return real_recv(fd, buf, n, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, COMPAT_SOCKADDR_ARG from,
			socklen_t *fromlen)
{
	ANSWER_IF_MASKED(fd);
	return real_recvfrom(fd, buf, n, flags, COMPAT_SOCKADDR(from), fromlen);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ANSWER_IF_MASKED(fd);
	return real_recvmsg(fd, msg, flags);
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	ANSWER_IF_MASKED(fd);
	return real_write(fd, buf, n);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	ANSWER_IF_MASKED(fd);
	return real_writev(fd, iov, n);
}
