/* The next definitions of the intercepted calls, resolved once at load. */
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
 * neither recurses into its hooks nor takes its own locks twice.
 */
extern int (*real_connect)(int, const struct sockaddr *, socklen_t);
extern int (*real_getaddrinfo)(const char *, const char *, const struct addrinfo *,
			       struct addrinfo **);
extern struct hostent *(*real_gethostbyname)(const char *);
extern struct hostent *(*real_gethostbyname2)(const char *, int);
extern int (*real_gethostbyname_r)(const char *, struct hostent *, char *, size_t,
				   struct hostent **, int *);
extern int (*real_gethostbyname2_r)(const char *, int, struct hostent *, char *, size_t,
				    struct hostent **, int *);
extern int (*real_getsockopt)(int, int, int, void *, socklen_t *);
extern int (*real_poll)(struct pollfd *, nfds_t, int);
extern int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
extern int (*real___poll_chk)(struct pollfd *, nfds_t, int, size_t);
extern int (*real___ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *,
			       size_t);
extern int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
extern int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			   const sigset_t *);
extern int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
extern int (*real_epoll_wait)(int, struct epoll_event *, int, int);
extern int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
extern int (*real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
				const sigset_t *);
extern ssize_t (*real_read)(int, void *, size_t);
extern ssize_t (*real_readv)(int, const struct iovec *, int);
extern ssize_t (*real_recv)(int, void *, size_t, int);
extern ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
extern ssize_t (*real_recvmsg)(int, struct msghdr *, int);
extern ssize_t (*real_write)(int, const void *, size_t);
extern ssize_t (*real_writev)(int, const struct iovec *, int);
extern ssize_t (*real_send)(int, const void *, size_t, int);
extern ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
extern ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
extern int (*real_sendmmsg)(int, struct mmsghdr *, unsigned, compat_mmsg_flags);
extern int (*real_close)(int);
extern int (*real_close_range)(unsigned, unsigned, int);
extern void (*real_closefrom)(int);
extern int (*real_dup2)(int, int);
extern int (*real_dup3)(int, int, int);

/* The fortified poll entry points have no public declaration. */
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *ss,
		size_t fdslen);

/*
 * Resolve every real_* pointer with dlsym(RTLD_NEXT), once (later calls
 * return at once).  Aborts with a message if a required symbol is missing or
 * resolves to libbackoff's own hook.  Before it has run, each pointer holds a
 * stub that calls it first, so a hook is safe to call at any time.
 */
void real_resolve(void);

/*
 * Make real_connect a direct system call carrying the cookie of
 * sys/cookie.h, so that the supervisor engine leaves the preload's connects
 * alone.  Call once, at load, before any thread starts.
 */
void real_mark_connects(void);

#endif
