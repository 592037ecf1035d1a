/* The real_* calls that the shared log code uses, for a program that preloads nothing. */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/real.h"

/*
 * The supervisor links the core and the log without sys/real.c: there is no
 * hook to step past, so libc's own functions are the real ones.
 */
static ssize_t libc_write(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len);
}

static int libc_close(int fd)
{
	return close(fd);
}

static int libc_getsockopt(int fd, int level, int name, void *value, socklen_t *len)
{
	return getsockopt(fd, level, name, value, len);
}

static int libc_setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	return setsockopt(fd, level, name, value, len);
}

static int libc_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

static int libc_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return connect(fd, addr, len);
}

static int libc_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return getpeername(fd, addr, len);
}

static int libc_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	return poll(fds, n, timeout_ms);
}

ssize_t (*_Atomic real_ptr_write)(int, const void *, size_t) = libc_write;
int (*_Atomic real_ptr_connect)(int, const struct sockaddr *, socklen_t) = libc_connect;
int (*_Atomic real_ptr_getsockopt)(int, int, int, void *, socklen_t *) = libc_getsockopt;
int (*_Atomic real_ptr_close)(int) = libc_close;
int (*_Atomic real_ptr_setsockopt)(int, int, int, const void *, socklen_t) = libc_setsockopt;
int (*_Atomic real_ptr_fcntl)(int, int, ...) = libc_fcntl;
int (*_Atomic real_ptr_poll)(struct pollfd *, nfds_t, int) = libc_poll;
int (*_Atomic real_ptr_getpeername)(int, struct sockaddr *, socklen_t *) = libc_getpeername;
