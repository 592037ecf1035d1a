/* close/close_range/closefrom/dup2/dup3: a closed or replaced fd is no longer managed. */
#include <limits.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "core/pending.h"
#include "init.h"
#include "sys/real.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* State is dropped before the real call: the number may be reused at once after it. */
EXPORT int close(int fd)
{
	if (__builtin_expect(pending_any(), 0))
		pending_closing(init_config_get(), fd);
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

EXPORT int dup2(int old, int new)
{
	if (old != new)
		fdtable_forget(new);
	return real_dup2(old, new);
}

EXPORT int dup3(int old, int new, int flags)
{
	if (old != new)
		fdtable_forget(new);
	return real_dup3(old, new, flags);
}
