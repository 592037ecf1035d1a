/* Socket facts for the retry decisions, asked only after a failure. */
#include "sys/sock.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "sys/real.h"

bool sock_is_blocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && !(flags & O_NONBLOCK);
}

int sock_type(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return real_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 ? type : -1;
}

bool sock_kind(int fd, int *family, int *type)
{
	socklen_t len = sizeof(*family);

	if (real_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, family, &len) != 0)
		return false;
	*type = sock_type(fd);
	return *type >= 0;
}

uint64_t sock_sndtimeo_ms(int fd)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);

	if (real_getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) != 0 ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return UINT64_MAX; /* CONFIG_INFINITE: no timeout */
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}
