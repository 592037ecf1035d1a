/* getsockopt(SO_ERROR): a hidden connect is still in progress; an emulated failure is handed over.
 */
#include <errno.h>
#include <sys/socket.h>

#include "core/pending.h"
#include "init.h"
#include "sys/real.h"

/* Returns as getsockopt(2); only SO_ERROR of a managed fd is answered here. */
EXPORT int getsockopt(int fd, int level, int name, void *value, socklen_t *len)
{
	if (level == SOL_SOCKET && name == SO_ERROR && pending_any() && value && len &&
	    *len >= (socklen_t)sizeof(int)) {
		int err = 0;

		if (pending_so_error(init_config_get(), fd, &err) != PENDING_PASS) {
			*(int *)value = err;
			*len = sizeof(int);
			return 0;
		}
	}
	return real_getsockopt(fd, level, name, value, len);
}
