/* real_<call> pointers: the definitions that libbackoff's hooks delegate to. */
#include "sys/real.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/cookie.h"
#include "sys/kcall.h"
#include "sys/startup.h"

/*
 * Each pointer holds a stub until its first call, which resolves that symbol
 * alone (dlsym RTLD_NEXT) and publishes it: a process pays only for the calls
 * it makes, and a hook may run before libbackoff's constructor (another
 * library's constructor, a C++ static initialiser).  Two threads resolving
 * the same symbol publish the same value.  A call made from inside a
 * resolution (an allocator reading a file while dlsym runs) cannot wait for
 * it: it goes to the kernel directly, or fails with ENOSYS where no single
 * system call does the job.
 */
static __thread bool resolving __attribute__((tls_model("initial-exec")));

static void die(const char *name, const char *why);

/* The next definition of @name after libbackoff, or NULL.  errno preserved. */
STARTUP_CODE static void *next_symbol(const char *name)
{
	int saved = errno;
	void *found;

	resolving = true;
	found = dlsym(RTLD_NEXT, name);
	resolving = false;
	errno = saved;
	return found;
}

static long no_syscall(void)
{
	errno = ENOSYS;
	return -1;
}

/* 8: the kernel's sigset size, which the raw calls take. */
#define KSIGSET 8

static int raw_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *ss)
{
	struct timespec copy, *tp = NULL;

	if (ts) {
		copy = *ts; /* the kernel writes the time left back */
		tp = &copy;
	}
	return (int)syscall(SYS_ppoll, fds, n, tp, ss, KSIGSET);
}

static int raw_poll(struct pollfd *fds, nfds_t n, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	return raw_ppoll(fds, n, ms < 0 ? NULL : &ts, NULL);
}

/* The first byte and the end of libbackoff's own image, as the linker lays it out. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _end[] __attribute__((visibility("hidden")));

/*
 * Whether @p lies in libbackoff itself: a symbol found there is a hook's
 * own.  The hooks' addresses themselves would be one relocation each at load.
 */
static bool in_image(const void *p)
{
	return (uintptr_t)p - (uintptr_t)__ehdr_start < (uintptr_t)_end - (uintptr_t)__ehdr_start;
}

/*
 * real_<name>, its stub first_<name> and its resolver: @raw serves calls made
 * during a resolution; @missing (NULL: required) stands in for a symbol that
 * an older C library lacks.  memcpy converts between object and function
 * pointers, which ISO C leaves undefined.  The compare-and-swap leaves a
 * pointer that was set meanwhile (real_mark_connects) as it is.  A pointer
 * starts at its stub, a relocation at load: one started at NULL would cost
 * every call through it a test.
 */
#define RESOLVER(name, missing)                                                          \
	static void resolve_##name(void)                                                 \
	{                                                                                \
		__typeof__(first_##name) *fb_ = (missing), *use_, *stub_ = first_##name; \
		void *found_ = next_symbol(#name);                                       \
		if (!found_ && !fb_)                                                     \
			die(#name, ": not found after libbackoff\n");                    \
		if (found_ && in_image(found_))                                          \
			die(#name, ": resolves to libbackoff itself\n");                 \
		use_ = fb_;                                                              \
		if (found_)                                                              \
			memcpy(&use_, &found_, sizeof(found_));                          \
		atomic_compare_exchange_strong(&real_ptr_##name, &stub_, use_);          \
	}
#define STUB_AS(ret, name, params, args, raw, missing)                    \
	static ret first_##name params;                                   \
	STARTUP_DATA ret(*_Atomic real_ptr_##name) params = first_##name; \
	RESOLVER(name, missing)                                           \
	static ret first_##name params                                    \
	{                                                                 \
		if (resolving)                                            \
			return (ret)(raw);                                \
		resolve_##name();                                         \
		return real_##name args;                                  \
	}
#define STUB(ret, name, params, args, raw) STUB_AS(ret, name, params, args, raw, NULL)

/*
 * The same for a call whose third argument is variadic (fcntl, ioctl): read
 * as a word, as the C library itself reads it, and passed on so.
 */
#define STUB_VARIADIC(name, type2, sysno, missing)                                   \
	static int first_##name(int fd, type2 op, ...);                              \
	STARTUP_DATA int (*_Atomic real_ptr_##name)(int, type2, ...) = first_##name; \
	RESOLVER(name, missing)                                                      \
	static int first_##name(int fd, type2 op, ...)                               \
	{                                                                            \
		va_list ap;                                                          \
		void *arg;                                                           \
		va_start(ap, op);                                                    \
		arg = va_arg(ap, void *);                                            \
		va_end(ap);                                                          \
		if (resolving)                                                       \
			return (int)syscall(sysno, fd, op, arg);                     \
		resolve_##name();                                                    \
		return real_##name(fd, op, arg);                                     \
	}

/* For the optional symbols of older C libraries: the same through the kernel. */
static int fallback_execveat(int fd, const char *path, char *const argv[], char *const envp[],
			     int flags)
{
	return (int)syscall(SYS_execveat, fd, path, argv, envp, flags);
}

static int fallback_poll_chk(struct pollfd *fds, nfds_t n, int ms, size_t len)
{
	(void)len;
	return real_poll(fds, n, ms);
}

static int fallback_ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
			      const sigset_t *ss, size_t len)
{
	(void)len;
	return real_ppoll(fds, n, ts, ss);
}

static int fallback_epoll_pwait2(int epfd, struct epoll_event *ev, int max,
				 const struct timespec *ts, const sigset_t *ss)
{
	return (int)syscall(SYS_epoll_pwait2, epfd, ev, max, ts, ss, KSIGSET);
}

/* fcntl64 is fcntl where off_t has 64 bits already (and in musl). */
static int fallback_fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return real_fcntl(fd, cmd, arg);
}

static int fallback_close_range(unsigned lo, unsigned hi, int flags)
{
	return (int)syscall(SYS_close_range, lo, hi, flags);
}

static void fallback_closefrom(int lo)
{
	syscall(SYS_close_range, (unsigned)lo, ~0U, 0);
}

STUB(int, connect, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l),
     syscall(SYS_connect, fd, a, l))
STUB(int, getaddrinfo,
     (const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res),
     (node, service, hints, res), (errno = ENOSYS, EAI_SYSTEM))
STUB(struct hostent *, gethostbyname, (const char *name), (name),
     (h_errno = NETDB_INTERNAL, errno = ENOSYS, NULL))
STUB(struct hostent *, gethostbyname2, (const char *name, int af), (name, af),
     (h_errno = NETDB_INTERNAL, errno = ENOSYS, NULL))
STUB(int, gethostbyname_r,
     (const char *name, struct hostent *h, char *buf, size_t n, struct hostent **res, int *herr),
     (name, h, buf, n, res, herr), (*res = NULL, *herr = NETDB_INTERNAL, ENOSYS))
STUB(int, gethostbyname2_r,
     (const char *name, int af, struct hostent *h, char *buf, size_t n, struct hostent **res,
      int *herr),
     (name, af, h, buf, n, res, herr), (*res = NULL, *herr = NETDB_INTERNAL, ENOSYS))
STUB(int, getsockopt, (int fd, int level, int name, void *v, socklen_t *l), (fd, level, name, v, l),
     syscall(SYS_getsockopt, fd, level, name, v, l))
STUB(int, poll, (struct pollfd * fds, nfds_t n, int ms), (fds, n, ms), raw_poll(fds, n, ms))
STUB(int, ppoll, (struct pollfd * fds, nfds_t n, const struct timespec *ts, const sigset_t *ss),
     (fds, n, ts, ss), raw_ppoll(fds, n, ts, ss))
STUB_AS(int, __poll_chk, (struct pollfd * fds, nfds_t n, int ms, size_t len), (fds, n, ms, len),
	raw_poll(fds, n, ms), fallback_poll_chk)
STUB_AS(int, __ppoll_chk,
	(struct pollfd * fds, nfds_t n, const struct timespec *ts, const sigset_t *ss, size_t len),
	(fds, n, ts, ss, len), raw_ppoll(fds, n, ts, ss), fallback_ppoll_chk)
STUB(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv), (n, r, w, e, tv),
     no_syscall())
STUB(int, pselect,
     (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *ss),
     (n, r, w, e, ts, ss), no_syscall())
STUB(int, epoll_ctl, (int epfd, int op, int fd, struct epoll_event *ev), (epfd, op, fd, ev),
     syscall(SYS_epoll_ctl, epfd, op, fd, ev))
STUB(int, epoll_wait, (int epfd, struct epoll_event *ev, int max, int ms), (epfd, ev, max, ms),
     syscall(SYS_epoll_pwait, epfd, ev, max, ms, NULL, KSIGSET))
STUB(int, epoll_pwait, (int epfd, struct epoll_event *ev, int max, int ms, const sigset_t *ss),
     (epfd, ev, max, ms, ss), syscall(SYS_epoll_pwait, epfd, ev, max, ms, ss, KSIGSET))
STUB_AS(int, epoll_pwait2,
	(int epfd, struct epoll_event *ev, int max, const struct timespec *ts, const sigset_t *ss),
	(epfd, ev, max, ts, ss), syscall(SYS_epoll_pwait2, epfd, ev, max, ts, ss, KSIGSET),
	fallback_epoll_pwait2)
STUB(ssize_t, read, (int fd, void *b, size_t n), (fd, b, n), syscall(SYS_read, fd, b, n))
STUB(ssize_t, readv, (int fd, const struct iovec *v, int n), (fd, v, n),
     syscall(SYS_readv, fd, v, n))
STUB(ssize_t, recv, (int fd, void *b, size_t n, int f), (fd, b, n, f),
     syscall(SYS_recvfrom, fd, b, n, f, NULL, NULL))
STUB(ssize_t, recvfrom, (int fd, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l),
     (fd, b, n, f, a, l), syscall(SYS_recvfrom, fd, b, n, f, a, l))
STUB(ssize_t, recvmsg, (int fd, struct msghdr *m, int f), (fd, m, f),
     syscall(SYS_recvmsg, fd, m, f))
STUB(ssize_t, write, (int fd, const void *b, size_t n), (fd, b, n), syscall(SYS_write, fd, b, n))
STUB(ssize_t, writev, (int fd, const struct iovec *v, int n), (fd, v, n),
     syscall(SYS_writev, fd, v, n))
STUB(ssize_t, send, (int fd, const void *b, size_t n, int f), (fd, b, n, f),
     syscall(SYS_sendto, fd, b, n, f, NULL, 0))
STUB(ssize_t, sendto,
     (int fd, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l),
     (fd, b, n, f, a, l), syscall(SYS_sendto, fd, b, n, f, a, l))
STUB(ssize_t, sendmsg, (int fd, const struct msghdr *m, int f), (fd, m, f),
     syscall(SYS_sendmsg, fd, m, f))
STUB(int, sendmmsg, (int fd, struct mmsghdr *v, unsigned n, compat_mmsg_flags f), (fd, v, n, f),
     syscall(SYS_sendmmsg, fd, v, n, f))
STUB(int, close, (int fd), (fd), syscall(SYS_close, fd))
STUB_AS(int, close_range, (unsigned lo, unsigned hi, int f), (lo, hi, f),
	syscall(SYS_close_range, lo, hi, f), fallback_close_range)
STUB(int, dup2, (int old, int new), (old, new),
     old == new ? syscall(SYS_fcntl, old, F_GETFD) < 0 ? -1 : new : syscall(SYS_dup3, old, new, 0))
STUB(int, dup3, (int old, int new, int f), (old, new, f), syscall(SYS_dup3, old, new, f))
STUB(int, dup, (int fd), (fd), syscall(SYS_dup, fd))
STUB(int, socket, (int domain, int type, int protocol), (domain, type, protocol),
     syscall(SYS_socket, domain, type, protocol))
STUB(int, setsockopt, (int fd, int level, int name, const void *v, socklen_t l),
     (fd, level, name, v, l), syscall(SYS_setsockopt, fd, level, name, v, l))
STUB(int, shutdown, (int fd, int how), (fd, how), syscall(SYS_shutdown, fd, how))
STUB(int, getpeername, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l),
     syscall(SYS_getpeername, fd, a, l))
STUB(int, getsockname, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l),
     syscall(SYS_getsockname, fd, a, l))
STUB(int, execve, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp),
     syscall(SYS_execve, path, argv, envp))
STUB(int, execvpe, (const char *file, char *const argv[], char *const envp[]), (file, argv, envp),
     no_syscall())
STUB(int, fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp),
     syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH))
STUB_AS(int, execveat,
	(int fd, const char *path, char *const argv[], char *const envp[], int flags),
	(fd, path, argv, envp, flags), syscall(SYS_execveat, fd, path, argv, envp, flags),
	fallback_execveat)
STUB(int, posix_spawn,
     (pid_t * pid, const char *path, const posix_spawn_file_actions_t *fa,
      const posix_spawnattr_t *attr, char *const argv[], char *const envp[]),
     (pid, path, fa, attr, argv, envp), ENOSYS)
STUB(int, posix_spawnp,
     (pid_t * pid, const char *file, const posix_spawn_file_actions_t *fa,
      const posix_spawnattr_t *attr, char *const argv[], char *const envp[]),
     (pid, file, fa, attr, argv, envp), ENOSYS)
STUB_VARIADIC(fcntl, int, SYS_fcntl, NULL)
STUB_VARIADIC(fcntl64, int, SYS_fcntl, fallback_fcntl64)
STUB_VARIADIC(ioctl, compat_ioctl_req, SYS_ioctl, NULL)

/* closefrom returns nothing: its stub is written out. */
static void first_closefrom(int lo);
STARTUP_DATA void (*_Atomic real_ptr_closefrom)(int) = first_closefrom;
RESOLVER(closefrom, fallback_closefrom)

static void first_closefrom(int lo)
{
	if (resolving) {
		syscall(SYS_close_range, (unsigned)lo, ~0U, 0);
		return;
	}
	resolve_closefrom();
	real_closefrom(lo);
}

static void die(const char *name, const char *why)
{
	static const char prefix[] = "backoff: cannot resolve ";
	ssize_t ignored;

	/* The system call itself: the write() symbol is libbackoff's own hook. */
	ignored = syscall(SYS_write, STDERR_FILENO, prefix, sizeof(prefix) - 1);
	ignored = syscall(SYS_write, STDERR_FILENO, name, strlen(name));
	ignored = syscall(SYS_write, STDERR_FILENO, why, strlen(why));
	(void)ignored;
	/* abort's signal, then its end should a handler return (abort itself: one more import). */
	(void)syscall(SYS_tgkill, kcall_getpid(), kcall_gettid(), SIGABRT);
	kcall_exit(127);
}

STARTUP_CODE void real_resolve_signal_safe(void)
{
	resolve_connect();
	resolve_write();
	resolve_close();
	resolve_send();
	resolve_sendto();
	resolve_sendmsg();
	resolve_poll();
}

/* connect(2) with the supervisor engine's cookie in the arguments it ignores. */
static int marked_connect(int fd, const struct sockaddr *a, socklen_t l)
{
	return (int)syscall(SYS_connect, fd, a, l, COOKIE_ARG3, COOKIE_ARG4, 0);
}

/* Read by every SO_ERROR query: with the hot words the constructor writes, not a page of its own.
 */
STARTUP_DATA static atomic_bool marking;

void real_mark_connects(void)
{
	atomic_store(&marking, true);
	atomic_store(&real_ptr_connect, marked_connect);
}

int real_so_error_mine(int fd, void *value, socklen_t *len)
{
	if (!atomic_load_explicit(&marking, memory_order_relaxed))
		return real_getsockopt(fd, SOL_SOCKET, SO_ERROR, value, len);
	return (int)syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, value, len, COOKIE_ARG5);
}
