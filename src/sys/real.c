/* real_<call> pointers: the definitions that libbackoff's hooks delegate to. */
#include "sys/real.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int (*real_connect)(int, const struct sockaddr *, socklen_t);
int (*real_getaddrinfo)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
int (*real_getsockopt)(int, int, int, void *, socklen_t *);
int (*real_poll)(struct pollfd *, nfds_t, int);
int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
int (*real___poll_chk)(struct pollfd *, nfds_t, int, size_t);
int (*real___ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
int (*real_epoll_wait)(int, struct epoll_event *, int, int);
int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
int (*real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
ssize_t (*real_read)(int, void *, size_t);
ssize_t (*real_readv)(int, const struct iovec *, int);
ssize_t (*real_recv)(int, void *, size_t, int);
ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
ssize_t (*real_recvmsg)(int, struct msghdr *, int);
ssize_t (*real_write)(int, const void *, size_t);
ssize_t (*real_writev)(int, const struct iovec *, int);
ssize_t (*real_send)(int, const void *, size_t, int);
ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
int (*real_close)(int);
int (*real_close_range)(unsigned, unsigned, int);
void (*real_closefrom)(int);
int (*real_dup2)(int, int);
int (*real_dup3)(int, int, int);

static void die(const char *name, const char *why)
{
	static const char prefix[] = "backoff: cannot resolve ";
	ssize_t ignored;

	ignored = write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
	ignored = write(STDERR_FILENO, name, strlen(name));
	ignored = write(STDERR_FILENO, why, strlen(why));
	(void)ignored;
	abort();
}

/*
 * memcpy converts between object and function pointers, which ISO C leaves
 * undefined.  An optional symbol (absent from older C libraries) stays NULL;
 * its hook is then never called either.
 */
#define RESOLVE_AS(name, required)                                       \
	do {                                                             \
		void *found_ = dlsym(RTLD_NEXT, #name), *self_;          \
		__typeof__(real_##name) hook_ = name;                    \
		memcpy(&self_, &hook_, sizeof(self_));                   \
		if (!found_ && (required))                               \
			die(#name, ": not found after libbackoff\n");    \
		if (found_ && found_ == self_)                           \
			die(#name, ": resolves to libbackoff itself\n"); \
		memcpy(&real_##name, &found_, sizeof(found_));           \
	} while (0)
#define RESOLVE(name) RESOLVE_AS(name, 1)
#define RESOLVE_OPTIONAL(name) RESOLVE_AS(name, 0)

void real_resolve(void)
{
	RESOLVE(connect);
	RESOLVE(getaddrinfo);
	RESOLVE(getsockopt);
	RESOLVE(poll);
	RESOLVE(ppoll);
	RESOLVE_OPTIONAL(__poll_chk);
	RESOLVE_OPTIONAL(__ppoll_chk);
	RESOLVE(select);
	RESOLVE(pselect);
	RESOLVE(epoll_ctl);
	RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait);
	RESOLVE_OPTIONAL(epoll_pwait2);
	RESOLVE(read);
	RESOLVE(readv);
	RESOLVE(recv);
	RESOLVE(recvfrom);
	RESOLVE(recvmsg);
	RESOLVE(write);
	RESOLVE(writev);
	RESOLVE(send);
	RESOLVE(sendto);
	RESOLVE(sendmsg);
	RESOLVE(close);
	RESOLVE_OPTIONAL(close_range);
	RESOLVE_OPTIONAL(closefrom);
	RESOLVE(dup2);
	RESOLVE(dup3);
}
