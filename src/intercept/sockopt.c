/*
 * getsockopt(SO_ERROR): a hidden connect is still in progress; an emulated
 * failure is handed over.  setsockopt(SO_SNDTIMEO): the program's own send
 * timeout, followed.  Both give a socket its own send timeout back first,
 * if a siglongjmp left a connect's bound on it.  getpeername/getsockname: the
 * names of a connection being made again after an early close.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "drivers/early.h"
#include "tables/fdtable.h"
#include "drivers/pending.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/real.h"

/* Returns as getsockopt(2); only SO_ERROR of a managed fd is answered here. */
EXPORT int getsockopt(int fd, int level, int name, void *value, socklen_t *len)
{
	/* A bound left by a siglongjmp is not what the program set: its own is read. */
	GIVE_BACK_SNDTIMEO(fd);
	if (level == SOL_SOCKET && name == SO_ERROR) {
		if (pending_any() && value && len && *len >= (socklen_t)sizeof(int)) {
			int err = 0;

			if (pending_so_error(fd, &err) != PENDING_PASS) {
				*(int *)value = err;
				*len = sizeof(int);
				return 0;
			}
		}
		/* A connection of ours: under the supervisor engine, not its to answer. */
		if (fdtable_is_first(fd))
			return real_so_error_mine(fd, value, len);
	}
	return real_getsockopt(fd, level, name, value, len);
}

/*
 * getpeername(2), getsockname(2): while the library connects @fd again after
 * an early close, the names of the connection the program believes it has
 * (early_name); else the kernel's.
 */
EXPORT int getpeername(int fd, COMPAT_SOCKADDR_ARG addr, socklen_t *len)
{
	int rc = real_getpeername(fd, COMPAT_SOCKADDR(addr), len);

	if (__builtin_expect(rc != 0 && pending_any(), 0)) {
		int saved = errno;

		if (early_name(fd, true, COMPAT_SOCKADDR(addr), len))
			return 0;
		errno = saved;
	}
	return rc;
}

EXPORT int getsockname(int fd, COMPAT_SOCKADDR_ARG addr, socklen_t *len)
{
	int rc = real_getsockname(fd, COMPAT_SOCKADDR(addr), len);

	if (__builtin_expect(rc == 0 && pending_any(), 0))
		(void)early_name(fd, false, COMPAT_SOCKADDR(addr), len);
	return rc;
}

/* setsockopt(2) of a send timeout (SO_SNDTIMEO or its 64-bit time twin), followed. */
static __attribute__((noinline)) int set_sndtimeo(int fd, int name, const void *value,
						  socklen_t len)
{
	int rc = real_setsockopt(fd, SOL_SOCKET, name, value, len);
	const struct timeval *tv = value;

	if (rc != 0)
		return rc;
	if (name == SO_SNDTIMEO && tv && len == sizeof(*tv) && tv->tv_sec >= 0)
		fdtable_mode_change(fd, FDS_OWNTIMEO, tv->tv_sec != 0 || tv->tv_usec != 0);
	else
		fdtable_mode_forget(fd);
	return rc;
}

/*
 * Returns as setsockopt(2).  A send timeout of the program's own (which its
 * connects keep, exact) is noted; one the table cannot say as set or unset
 * (a negative time, the 64-bit time option of 32-bit systems) makes the
 * connects ask the kernel.  Any other option passes straight through.
 */
EXPORT int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	GIVE_BACK_SNDTIMEO(fd);
	if (level != SOL_SOCKET || (name != SO_SNDTIMEO && name != COMPAT_SO_SNDTIMEO_NEW))
		return real_setsockopt(fd, level, name, value, len);
	return set_sndtimeo(fd, name, value, len);
}
