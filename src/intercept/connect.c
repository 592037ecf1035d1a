/* connect(): pass through at once on success; the rest is drivers/call's. */
#include <errno.h>
#include <sys/socket.h>

#include "drivers/call.h"
#include "drivers/decide.h"
#include "facts/record.h"
#include "drivers/early.h"
#include "tables/fdtable.h"
#include "drivers/pending.h"
#include "facts/share.h"
#include "init.h"
#include "sys/real.h"

/*
 * The fast path: nothing managed in the process, no prober of this user in
 * the destination's bucket, no destination's clock running: one attempt,
 * errno as it was on success; anything else is call_connect's.  A connect
 * over IP is too (CALL_BOUNDED): its first attempt has a bound, and a
 * connection made or under way is watched until its first byte.  errno is
 * read where it is kept: a call that succeeds leaves it alone.
 */
EXPORT int connect(int fd, COMPAT_CONST_SOCKADDR_ARG arg, socklen_t len)
{
	/* glibc declares a transparent union under _GNU_SOURCE; the hook must match. */
	const struct sockaddr *addr = COMPAT_SOCKADDR(arg);
	const struct config *cfg = init_config_get();
	int saved;

	if (__builtin_expect(pending_any() || share_probing(addr, len) || dest_any_clock() ||
				     fdtable_any_bound(),
			     0))
		return call_connect(cfg, fd, addr, len, errno, CALL_NOTHING);
	/* Over IP: the first attempt's bound, and the watch for the first byte. */
	if (early_watched(addr, len))
		return call_connect(cfg, fd, addr, len, errno, CALL_BOUNDED);
	saved = errno;
	/* A connect that succeeds sets no errno (libc's, or the cookie's raw system call). */
	if (__builtin_expect(real_connect(fd, addr, len) == 0, 1)) {
		if (__builtin_expect(decide_any_down(addr, len), 0))
			decide_up(cfg, addr, len);
		return 0;
	}
	return call_connect(cfg, fd, addr, len, saved, CALL_FAILED);
}
