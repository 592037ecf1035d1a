/*
 * close/close_range/closefrom/dup/dup2/dup3/fcntl/ioctl: a closed or replaced
 * fd is no longer managed; a socket's blocking mode is followed as it changes.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "drivers/call.h"
#include "tables/fdtable.h"
#include "drivers/pending.h"
#include "facts/share.h"
#include "init.h"
#include "sys/real.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* State is dropped before the real call: the number may be reused at once after it. */
EXPORT int close(int fd)
{
	if (__builtin_expect(share_any_full(), 0))
		call_closing(init_config_get(), fd);
	if (__builtin_expect(pending_any(), 0))
		pending_closing(fd);
	fdtable_forget(fd);
	return real_close(fd);
}

EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	if (lo <= hi && !((unsigned)flags & CLOSE_RANGE_CLOEXEC))
		fdtable_forget_range(lo, hi);
	return real_close_range(lo, hi, flags);
}

EXPORT void closefrom(int lo)
{
	fdtable_forget_range(lo < 0 ? 0 : (unsigned)lo, UINT_MAX);
	real_closefrom(lo);
}

/*
 * A duplicate shares the original's file status flags and socket options: a
 * change through either would be seen on one number only.  Neither's mode is
 * known any more (the original's forgotten before the call: a connect in
 * another thread must not trust it meanwhile).
 */
EXPORT int dup(int fd)
{
	int rc;

	fdtable_mode_forget(fd);
	rc = real_dup(fd);
	if (rc >= 0)
		fdtable_mode_forget(rc);
	return rc;
}

EXPORT int dup2(int old, int new)
{
	fdtable_mode_forget(old);
	if (old != new)
		fdtable_forget(new);
	return real_dup2(old, new);
}

EXPORT int dup3(int old, int new, int flags)
{
	fdtable_mode_forget(old);
	if (old != new)
		fdtable_forget(new);
	return real_dup3(old, new, flags);
}

/* fcntl's command @cmd with @arg on @fd returned @rc: the table follows.  errno untouched. */
static int fcntl_seen(int fd, int cmd, void *arg, int rc)
{
	if (rc < 0)
		return rc;
	if (cmd == F_SETFL)
		fdtable_mode_change(fd, FDS_NONBLOCK, ((int)(intptr_t)arg & O_NONBLOCK) != 0);
	else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
		fdtable_mode_forget(fd);
		fdtable_mode_forget(rc);
	}
	return rc;
}

/* The third argument, of the type @cmd says, read as a word as the C library reads it. */
#define VARIADIC_ARG(last, arg)              \
	do {                                 \
		va_list ap_;                 \
		va_start(ap_, last);         \
		(arg) = va_arg(ap_, void *); \
		va_end(ap_);                 \
	} while (0)

EXPORT int fcntl(int fd, int cmd, ...)
{
	void *arg;

	VARIADIC_ARG(cmd, arg);
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		fdtable_mode_forget(fd);
	return fcntl_seen(fd, cmd, arg, real_fcntl(fd, cmd, arg));
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	void *arg;

	VARIADIC_ARG(cmd, arg);
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		fdtable_mode_forget(fd);
	return fcntl_seen(fd, cmd, arg, real_fcntl64(fd, cmd, arg));
}

/* ioctl(FIONBIO) sets or clears O_NONBLOCK as fcntl(F_SETFL) does (libuv, CPython). */
EXPORT int(ioctl)(int fd, compat_ioctl_req request, ...)
{
	void *arg;
	int rc;

	VARIADIC_ARG(request, arg);
	rc = real_ioctl(fd, request, arg);
	if (rc == 0 && request == FIONBIO && arg)
		fdtable_mode_change(fd, FDS_NONBLOCK, *(const int *)arg != 0);
	return rc;
}
