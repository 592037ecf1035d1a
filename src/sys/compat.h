/* What glibc and musl declare differently, given once so that no .c file asks which it is. */
#ifndef BACKOFF_SYS_COMPAT_H
#define BACKOFF_SYS_COMPAT_H

#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>

/* glibc's h_errno for "see errno"; musl has no such value, and its callers read errno anyway. */
#ifndef NETDB_INTERNAL
#define NETDB_INTERNAL (-1)
#endif

/* glibc's getaddrinfo answer for a name with no address of the family asked; musl has none. */
#ifdef EAI_NODATA
#define COMPAT_EAI_NODATA EAI_NODATA
#else
#define COMPAT_EAI_NODATA EAI_NONAME
#endif

/* SO_SNDTIMEO with a 64-bit time on 32-bit systems (Linux 5.1); never SO_SNDTIMEO's value. */
#ifdef SO_SNDTIMEO_NEW
#define COMPAT_SO_SNDTIMEO_NEW SO_SNDTIMEO_NEW
#else
#define COMPAT_SO_SNDTIMEO_NEW 67
#endif

#ifdef __GLIBC__

/* Whether this build is musl's: a program whose loader is the other C library's cannot load it. */
#define COMPAT_LIBC_IS_MUSL 0

/*
 * Under _GNU_SOURCE glibc declares the address arguments of the socket calls
 * as transparent unions; a hook's definition must have the same type.
 */
#define COMPAT_SOCKADDR_ARG __SOCKADDR_ARG
#define COMPAT_CONST_SOCKADDR_ARG __CONST_SOCKADDR_ARG
#define COMPAT_SOCKADDR(arg) ((arg).__sockaddr__)

/* sendmmsg's flags: int in glibc, unsigned in musl. */
typedef int compat_mmsg_flags;

/* ioctl's request: unsigned long in glibc, int in musl. */
typedef unsigned long compat_ioctl_req;

/* The GNU strerror_r: the message, in @buf or a static string. */
static inline const char *compat_strerror(int err, char *buf, size_t size)
{
	return strerror_r(err, buf, size);
}

#else /* musl */

#define COMPAT_LIBC_IS_MUSL 1

#define COMPAT_SOCKADDR_ARG struct sockaddr *
#define COMPAT_CONST_SOCKADDR_ARG const struct sockaddr *
#define COMPAT_SOCKADDR(arg) (arg)

typedef unsigned compat_mmsg_flags;

typedef int compat_ioctl_req;

/* The POSIX strerror_r: the message always in @buf. */
static inline const char *compat_strerror(int err, char *buf, size_t size)
{
	if (strerror_r(err, buf, size) != 0 && size > 0)
		buf[0] = '\0';
	return buf;
}

/*
 * Calls musl does not have (as of 1.2.3), which libbackoff defines as hooks
 * all the same: a program may call them through another library, and the
 * hooks fall back to the system calls (sys/real.c).
 */
int epoll_pwait2(int epfd, struct epoll_event *events, int max, const struct timespec *timeout,
		 const sigset_t *ss);
int close_range(unsigned lo, unsigned hi, int flags);
void closefrom(int lo);
int fcntl64(int fd, int cmd, ...);

/*
 * musl's FD_* macros compute with the fd as given, which -Wsign-conversion
 * rejects for an int; the same operations on the fd as an unsigned number
 * (callers pass fds in [0, FD_SETSIZE), as with any C library).
 */
#undef FD_SET
#undef FD_CLR
#undef FD_ISSET
#define COMPAT_FD_WORD(d) ((size_t)(d) / (8 * sizeof(long)))
#define COMPAT_FD_BIT(d) (1UL << ((size_t)(d) % (8 * sizeof(long))))
#define FD_SET(d, s) ((s)->fds_bits[COMPAT_FD_WORD(d)] |= COMPAT_FD_BIT(d))
#define FD_CLR(d, s) ((s)->fds_bits[COMPAT_FD_WORD(d)] &= ~COMPAT_FD_BIT(d))
#define FD_ISSET(d, s) (!!((s)->fds_bits[COMPAT_FD_WORD(d)] & COMPAT_FD_BIT(d)))

/*
 * musl's ioctl() takes an int request, and the kernel's _IOWR numbers above
 * INT_MAX (the seccomp notifications') draw -Woverflow at every call: the
 * same bits, converted where the call is made.
 */
#define ioctl(fd, request, ...) ioctl((fd), (int)(request), __VA_ARGS__)

#endif

/* execveat(3): glibc 2.34 and later declare it, musl does not; the hook is the same. */
int execveat(int fd, const char *path, char *const argv[], char *const envp[], int flags);

#endif
