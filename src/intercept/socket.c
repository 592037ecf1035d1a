/* socket(): an internet socket's blocking mode is known from its birth, so connect need not ask. */
#include <sys/socket.h>

#include "tables/fdtable.h"
#include "init.h"
#include "sys/real.h"

/* An internet socket: made, and its mode known from now on. */
static __attribute__((noinline)) int socket_inet(int domain, int type, int protocol)
{
	unsigned epoch;
	int fd;

	/* The fork handlers that make a known mode unknown are in place before it is known. */
	(void)init_config_get();
	epoch = fdtable_mode_epoch();
	fd = real_socket(domain, type, protocol);
	if (fd >= 0)
		fdtable_mode_made(fd, epoch, (type & SOCK_NONBLOCK) ? FDS_NONBLOCK : 0);
	return fd;
}

/* Returns as socket(2); errno untouched on success.  Other families pass straight through. */
EXPORT int socket(int domain, int type, int protocol)
{
	if (domain != AF_INET && domain != AF_INET6)
		return real_socket(domain, type, protocol);
	return socket_inet(domain, type, protocol);
}
