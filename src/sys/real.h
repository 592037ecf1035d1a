/* The next definitions of the intercepted calls, each resolved at its first call. */
#ifndef BACKOFF_SYS_REAL_H
#define BACKOFF_SYS_REAL_H

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
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
extern int (*_Atomic real_ptr_connect)(int, const struct sockaddr *, socklen_t);
extern int (*_Atomic real_ptr_getaddrinfo)(const char *, const char *, const struct addrinfo *,
					   struct addrinfo **);
extern struct hostent *(*_Atomic real_ptr_gethostbyname)(const char *);
extern struct hostent *(*_Atomic real_ptr_gethostbyname2)(const char *, int);
extern int (*_Atomic real_ptr_gethostbyname_r)(const char *, struct hostent *, char *, size_t,
					       struct hostent **, int *);
extern int (*_Atomic real_ptr_gethostbyname2_r)(const char *, int, struct hostent *, char *, size_t,
						struct hostent **, int *);
extern int (*_Atomic real_ptr_getsockopt)(int, int, int, void *, socklen_t *);
extern int (*_Atomic real_ptr_poll)(struct pollfd *, nfds_t, int);
extern int (*_Atomic real_ptr_ppoll)(struct pollfd *, nfds_t, const struct timespec *,
				     const sigset_t *);
extern int (*_Atomic real_ptr___poll_chk)(struct pollfd *, nfds_t, int, size_t);
extern int (*_Atomic real_ptr___ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *,
					   const sigset_t *, size_t);
extern int (*_Atomic real_ptr_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
extern int (*_Atomic real_ptr_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
				       const sigset_t *);
extern int (*_Atomic real_ptr_epoll_ctl)(int, int, int, struct epoll_event *);
extern int (*_Atomic real_ptr_epoll_wait)(int, struct epoll_event *, int, int);
extern int (*_Atomic real_ptr_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
extern int (*_Atomic real_ptr_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
					    const sigset_t *);
extern ssize_t (*_Atomic real_ptr_read)(int, void *, size_t);
extern ssize_t (*_Atomic real_ptr_readv)(int, const struct iovec *, int);
extern ssize_t (*_Atomic real_ptr_recv)(int, void *, size_t, int);
extern ssize_t (*_Atomic real_ptr_recvfrom)(int, void *, size_t, int, struct sockaddr *,
					    socklen_t *);
extern ssize_t (*_Atomic real_ptr_recvmsg)(int, struct msghdr *, int);
extern ssize_t (*_Atomic real_ptr_write)(int, const void *, size_t);
extern ssize_t (*_Atomic real_ptr_writev)(int, const struct iovec *, int);
extern ssize_t (*_Atomic real_ptr_send)(int, const void *, size_t, int);
extern ssize_t (*_Atomic real_ptr_sendto)(int, const void *, size_t, int, const struct sockaddr *,
					  socklen_t);
extern ssize_t (*_Atomic real_ptr_sendmsg)(int, const struct msghdr *, int);
extern int (*_Atomic real_ptr_sendmmsg)(int, struct mmsghdr *, unsigned, compat_mmsg_flags);
extern int (*_Atomic real_ptr_close)(int);
extern int (*_Atomic real_ptr_close_range)(unsigned, unsigned, int);
extern void (*_Atomic real_ptr_closefrom)(int);
extern int (*_Atomic real_ptr_dup2)(int, int);
extern int (*_Atomic real_ptr_dup3)(int, int, int);
extern int (*_Atomic real_ptr_dup)(int);
extern int (*_Atomic real_ptr_socket)(int, int, int);
extern int (*_Atomic real_ptr_setsockopt)(int, int, int, const void *, socklen_t);
extern int (*_Atomic real_ptr_shutdown)(int, int);
extern int (*_Atomic real_ptr_getpeername)(int, struct sockaddr *, socklen_t *);
extern int (*_Atomic real_ptr_getsockname)(int, struct sockaddr *, socklen_t *);
/* The variadic three: their last argument passed on as the word it was given as. */
extern int (*_Atomic real_ptr_fcntl)(int, int, ...);
extern int (*_Atomic real_ptr_fcntl64)(int, int, ...);
extern int (*_Atomic real_ptr_ioctl)(int, compat_ioctl_req, ...);
extern int (*_Atomic real_ptr_execve)(const char *, char *const[], char *const[]);
extern int (*_Atomic real_ptr_execvpe)(const char *, char *const[], char *const[]);
extern int (*_Atomic real_ptr_fexecve)(int, char *const[], char *const[]);
extern int (*_Atomic real_ptr_execveat)(int, const char *, char *const[], char *const[], int);
extern int (*_Atomic real_ptr_posix_spawn)(pid_t *, const char *,
					   const posix_spawn_file_actions_t *,
					   const posix_spawnattr_t *, char *const[], char *const[]);
extern int (*_Atomic real_ptr_posix_spawnp)(pid_t *, const char *,
					    const posix_spawn_file_actions_t *,
					    const posix_spawnattr_t *, char *const[],
					    char *const[]);

/*
 * Each call reads its pointer with an explicit atomic load: GCC compiles a
 * call through an _Atomic function pointer as a plain load, which races with
 * the first call's store in another thread.  Relaxed: the pointer publishes
 * nothing but code that is already mapped.
 */
#define REAL_LOAD(p) atomic_load_explicit(&(p), memory_order_relaxed)
#define real_connect REAL_LOAD(real_ptr_connect)
#define real_getaddrinfo REAL_LOAD(real_ptr_getaddrinfo)
#define real_gethostbyname REAL_LOAD(real_ptr_gethostbyname)
#define real_gethostbyname2 REAL_LOAD(real_ptr_gethostbyname2)
#define real_gethostbyname_r REAL_LOAD(real_ptr_gethostbyname_r)
#define real_gethostbyname2_r REAL_LOAD(real_ptr_gethostbyname2_r)
#define real_getsockopt REAL_LOAD(real_ptr_getsockopt)
#define real_poll REAL_LOAD(real_ptr_poll)
#define real_ppoll REAL_LOAD(real_ptr_ppoll)
#define real___poll_chk REAL_LOAD(real_ptr___poll_chk)
#define real___ppoll_chk REAL_LOAD(real_ptr___ppoll_chk)
#define real_select REAL_LOAD(real_ptr_select)
#define real_pselect REAL_LOAD(real_ptr_pselect)
#define real_epoll_ctl REAL_LOAD(real_ptr_epoll_ctl)
#define real_epoll_wait REAL_LOAD(real_ptr_epoll_wait)
#define real_epoll_pwait REAL_LOAD(real_ptr_epoll_pwait)
#define real_epoll_pwait2 REAL_LOAD(real_ptr_epoll_pwait2)
#define real_read REAL_LOAD(real_ptr_read)
#define real_readv REAL_LOAD(real_ptr_readv)
#define real_recv REAL_LOAD(real_ptr_recv)
#define real_recvfrom REAL_LOAD(real_ptr_recvfrom)
#define real_recvmsg REAL_LOAD(real_ptr_recvmsg)
#define real_write REAL_LOAD(real_ptr_write)
#define real_writev REAL_LOAD(real_ptr_writev)
#define real_send REAL_LOAD(real_ptr_send)
#define real_sendto REAL_LOAD(real_ptr_sendto)
#define real_sendmsg REAL_LOAD(real_ptr_sendmsg)
#define real_sendmmsg REAL_LOAD(real_ptr_sendmmsg)
#define real_close REAL_LOAD(real_ptr_close)
#define real_close_range REAL_LOAD(real_ptr_close_range)
#define real_closefrom REAL_LOAD(real_ptr_closefrom)
#define real_dup2 REAL_LOAD(real_ptr_dup2)
#define real_dup3 REAL_LOAD(real_ptr_dup3)
#define real_dup REAL_LOAD(real_ptr_dup)
#define real_socket REAL_LOAD(real_ptr_socket)
#define real_setsockopt REAL_LOAD(real_ptr_setsockopt)
#define real_shutdown REAL_LOAD(real_ptr_shutdown)
#define real_getpeername REAL_LOAD(real_ptr_getpeername)
#define real_getsockname REAL_LOAD(real_ptr_getsockname)
#define real_fcntl REAL_LOAD(real_ptr_fcntl)
#define real_fcntl64 REAL_LOAD(real_ptr_fcntl64)
#define real_ioctl REAL_LOAD(real_ptr_ioctl)
#define real_execve REAL_LOAD(real_ptr_execve)
#define real_execvpe REAL_LOAD(real_ptr_execvpe)
#define real_fexecve REAL_LOAD(real_ptr_fexecve)
#define real_execveat REAL_LOAD(real_ptr_execveat)
#define real_posix_spawn REAL_LOAD(real_ptr_posix_spawn)
#define real_posix_spawnp REAL_LOAD(real_ptr_posix_spawnp)

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
