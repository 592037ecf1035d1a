/* The next definitions of the intercepted calls, each resolved at its first call. */
#ifndef BACKOFF_SYS_REAL_H
#define BACKOFF_SYS_REAL_H

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "sys/compat.h"

/*
 * libbackoff's own code calls these, never the hooked names, so that it
 * neither recurses into its hooks nor takes its own locks twice.  Each holds
 * a stub until its first call, which resolves it with dlsym(RTLD_NEXT), or
 * aborts with a message if a required symbol is missing or resolves to
 * libbackoff's own hook: a process pays only for the calls it makes.
 */
extern int (*_Atomic real_connect)(int, const struct sockaddr *, socklen_t);
extern int (*_Atomic real_getaddrinfo)(const char *, const char *, const struct addrinfo *,
				       struct addrinfo **);
extern struct hostent *(*_Atomic real_gethostbyname)(const char *);
extern struct hostent *(*_Atomic real_gethostbyname2)(const char *, int);
extern int (*_Atomic real_gethostbyname_r)(const char *, struct hostent *, char *, size_t,
					   struct hostent **, int *);
extern int (*_Atomic real_gethostbyname2_r)(const char *, int, struct hostent *, char *, size_t,
					    struct hostent **, int *);
extern int (*_Atomic real_getsockopt)(int, int, int, void *, socklen_t *);
extern int (*_Atomic real_poll)(struct pollfd *, nfds_t, int);
extern int (*_Atomic real_ppoll)(struct pollfd *, nfds_t, const struct timespec *,
				 const sigset_t *);
extern int (*_Atomic real___poll_chk)(struct pollfd *, nfds_t, int, size_t);
extern int (*_Atomic real___ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *,
				       const sigset_t *, size_t);
extern int (*_Atomic real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
extern int (*_Atomic real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
				   const sigset_t *);
extern int (*_Atomic real_epoll_ctl)(int, int, int, struct epoll_event *);
extern int (*_Atomic real_epoll_wait)(int, struct epoll_event *, int, int);
extern int (*_Atomic real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
extern int (*_Atomic real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
					const sigset_t *);
extern ssize_t (*_Atomic real_read)(int, void *, size_t);
extern ssize_t (*_Atomic real_readv)(int, const struct iovec *, int);
extern ssize_t (*_Atomic real_recv)(int, void *, size_t, int);
extern ssize_t (*_Atomic real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
extern ssize_t (*_Atomic real_recvmsg)(int, struct msghdr *, int);
extern ssize_t (*_Atomic real_write)(int, const void *, size_t);
extern ssize_t (*_Atomic real_writev)(int, const struct iovec *, int);
extern ssize_t (*_Atomic real_send)(int, const void *, size_t, int);
extern ssize_t (*_Atomic real_sendto)(int, const void *, size_t, int, const struct sockaddr *,
				      socklen_t);
extern ssize_t (*_Atomic real_sendmsg)(int, const struct msghdr *, int);
extern int (*_Atomic real_sendmmsg)(int, struct mmsghdr *, unsigned, compat_mmsg_flags);
extern int (*_Atomic real_close)(int);
extern int (*_Atomic real_close_range)(unsigned, unsigned, int);
extern void (*_Atomic real_closefrom)(int);
extern int (*_Atomic real_dup2)(int, int);
extern int (*_Atomic real_dup3)(int, int, int);
extern int (*_Atomic real_dup)(int);
extern int (*_Atomic real_socket)(int, int, int);
extern int (*_Atomic real_setsockopt)(int, int, int, const void *, socklen_t);
/* The variadic three: their last argument passed on as the word it was given as. */
extern int (*_Atomic real_fcntl)(int, int, ...);
extern int (*_Atomic real_fcntl64)(int, int, ...);
extern int (*_Atomic real_ioctl)(int, compat_ioctl_req, ...);

/* The fortified poll entry points have no public declaration. */
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *ss,
		size_t fdslen);

/*
 * Resolve, at load, the calls that a signal handler may make while its
 * thread is inside another hook (connect, write, close, send, sendto,
 * sendmsg, poll): dlsym is no call for a handler.  Aborts as a first call
 * does.
 */
void real_resolve_signal_safe(void);

/*
 * Make real_connect a direct system call carrying the cookie of
 * sys/cookie.h, so that the supervisor engine leaves the preload's connects
 * alone.  Call once, at load.
 */
void real_mark_connects(void);

/*
 * getsockopt(SO_ERROR) of a connection made through real_connect: marked as
 * real_connect is, so that the supervisor engine lets it through.
 */
int real_so_error_mine(int fd, void *value, socklen_t *len);

#endif
