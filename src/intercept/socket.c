/* socket(): an internet socket's blocking mode is known from its birth, so connect need not ask. */
#include <sys/socket.h>

#include "core/fdtable.h"
#include "init.h"
#include "sys/real.h"

/* Returns as socket(2); errno untouched on success. */
EXPORT int socket(int domain, int type, int protocol)
{
	unsigned epoch;
	int fd;

	/* The fork handlers that make a known mode unknown are in place before it is known. */
	(void)init_config_get();
	epoch = fdtable_mode_epoch();
	fd = real_socket(domain, type, protocol);
	if (fd >= 0 && (domain == AF_INET || domain == AF_INET6))
		fdtable_mode_made(fd, epoch, (type & SOCK_NONBLOCK) ? FDS_NONBLOCK : 0);
	return fd;
}
