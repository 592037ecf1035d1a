/* send/sendto/sendmsg: answered as in progress on a hidden connect. */
#include <errno.h>
#include <sys/socket.h>

#include "core/pending.h"
#include "init.h"
#include "intercept/io.h"
#include "sys/real.h"

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	ANSWER_IF_MASKED(fd);
	return real_send(fd, buf, n, flags);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG to,
		      socklen_t tolen)
{
	ANSWER_IF_MASKED(fd);
	return real_sendto(fd, buf, n, flags, to.__sockaddr__, tolen);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ANSWER_IF_MASKED(fd);
	return real_sendmsg(fd, msg, flags);
}
