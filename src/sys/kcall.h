/*
 * The system calls the library makes for itself, through syscall().
 *
 * Each C library wrapper the library imports is one more symbol that every
 * preloaded process binds at load, about a thousand instructions each under
 * -z now, whether or not it ever connects; syscall() is imported anyway.
 * These give the wrappers' results and errno, and are never cancellation
 * points (the library's own files and sleeps are not the program's to
 * cancel).  Under a sanitizer, and on an architecture whose calls differ
 * (32-bit time and offsets), the wrappers stay, so that the
 * sanitizer's runtime sees every mapping and file.
 */
#ifndef BACKOFF_SYS_KCALL_H
#define BACKOFF_SYS_KCALL_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KCALL_WRAPPERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define KCALL_WRAPPERS 1
#endif
#endif
#if !defined(KCALL_WRAPPERS) && !defined(__x86_64__) && !defined(__aarch64__)
#define KCALL_WRAPPERS 1
#endif
#if !defined(KCALL_WRAPPERS) && defined(__ILP32__)
#define KCALL_WRAPPERS 1 /* x32: 64-bit registers, 32-bit longs */
#endif

/* No wrapper either way: glibc before 2.30 and older musl have none. */
static inline pid_t kcall_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

#ifdef KCALL_WRAPPERS

static inline int kcall_open(const char *path, int flags, mode_t mode)
{
	return open(path, flags, mode);
}

static inline int kcall_access(const char *path, int mode)
{
	return access(path, mode);
}

static inline int kcall_stat(const char *path, struct stat *st)
{
	return stat(path, st);
}

static inline int kcall_lstat(const char *path, struct stat *st)
{
	return lstat(path, st);
}

static inline int kcall_unlink(const char *path)
{
	return unlink(path);
}

static inline int kcall_fstat(int fd, struct stat *st)
{
	return fstat(fd, st);
}

static inline int kcall_ftruncate(int fd, off_t len)
{
	return ftruncate(fd, len);
}

static inline ssize_t kcall_pread(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off);
}

static inline ssize_t kcall_readlink(const char *path, char *buf, size_t n)
{
	return readlink(path, buf, n);
}

static inline ssize_t kcall_fgetxattr(int fd, const char *name, void *buf, size_t n)
{
	return fgetxattr(fd, name, buf, n);
}

static inline void *kcall_mmap(size_t len, int prot, int flags, int fd)
{
	return mmap(NULL, len, prot, flags, fd, 0);
}

static inline int kcall_munmap(void *p, size_t len)
{
	return munmap(p, len);
}

static inline pid_t kcall_getpid(void)
{
	return getpid();
}

static inline uid_t kcall_geteuid(void)
{
	return geteuid();
}

static inline ssize_t kcall_getrandom(void *buf, size_t n, unsigned flags)
{
	return getrandom(buf, n, flags);
}

static inline void kcall_sched_yield(void)
{
	(void)sched_yield();
}

static inline int kcall_prctl(int op, unsigned long a2)
{
	return prctl(op, a2, 0UL, 0UL, 0UL);
}

/* clock_nanosleep's contract: 0 or an error number; errno untouched. */
static inline int kcall_clock_nanosleep(clockid_t clock, int flags, const struct timespec *ts)
{
	return clock_nanosleep(clock, flags, ts, NULL);
}

static inline _Noreturn void kcall_exit(int status)
{
	_exit(status);
}

/* sigaction(@sig, NULL, ...): the handler of @sig and its flags; -1 if there is none to read. */
static inline int kcall_disposition(int sig, void (**handler)(int), unsigned long *flags)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) != 0)
		return -1;
	*handler = sa.sa_handler;
	*flags = (unsigned long)sa.sa_flags;
	return 0;
}

#else

static inline int kcall_open(const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static inline int kcall_access(const char *path, int mode)
{
	return (int)syscall(SYS_faccessat, AT_FDCWD, path, mode);
}

static inline int kcall_stat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}

static inline int kcall_lstat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

static inline int kcall_unlink(const char *path)
{
	return (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

static inline int kcall_fstat(int fd, struct stat *st)
{
	/* As the C library's fstat: the same call, so that a trace reads the same. */
	return (int)syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH);
}

static inline int kcall_ftruncate(int fd, off_t len)
{
	return (int)syscall(SYS_ftruncate, fd, len);
}

static inline ssize_t kcall_pread(int fd, void *buf, size_t n, off_t off)
{
	return (ssize_t)syscall(SYS_pread64, fd, buf, n, off);
}

static inline ssize_t kcall_readlink(const char *path, char *buf, size_t n)
{
	return (ssize_t)syscall(SYS_readlinkat, AT_FDCWD, path, buf, n);
}

static inline ssize_t kcall_fgetxattr(int fd, const char *name, void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_fgetxattr, fd, name, buf, n);
}

static inline void *kcall_mmap(size_t len, int prot, int flags, int fd)
{
	/* -1 on failure: MAP_FAILED, as the wrapper's. */
	return (void *)syscall(SYS_mmap, NULL, len, prot, flags, fd, (off_t)0);
}

static inline int kcall_munmap(void *p, size_t len)
{
	return (int)syscall(SYS_munmap, p, len);
}

static inline pid_t kcall_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

static inline uid_t kcall_geteuid(void)
{
	return (uid_t)syscall(SYS_geteuid);
}

static inline ssize_t kcall_getrandom(void *buf, size_t n, unsigned flags)
{
	return (ssize_t)syscall(SYS_getrandom, buf, n, flags);
}

static inline void kcall_sched_yield(void)
{
	(void)syscall(SYS_sched_yield);
}

static inline int kcall_prctl(int op, unsigned long a2)
{
	return (int)syscall(SYS_prctl, op, a2, 0UL, 0UL, 0UL);
}

/* clock_nanosleep's contract: 0 or an error number; errno untouched. */
static inline int kcall_clock_nanosleep(clockid_t clock, int flags, const struct timespec *ts)
{
	int saved = errno, err = 0;

	if (syscall(SYS_clock_nanosleep, clock, flags, ts, NULL) != 0)
		err = errno;
	errno = saved;
	return err;
}

/* _exit's call: the whole process, every thread. */
static inline _Noreturn void kcall_exit(int status)
{
	for (;;)
		(void)syscall(SYS_exit_group, status);
}

/*
 * The C library's own signals (thread cancellation, set*id across threads:
 * glibc's first two real-time signals, musl's three), which its sigaction
 * refuses with EINVAL.
 */
#ifdef __GLIBC__
#define KCALL_LIBC_SIGNALS 2
#else
#define KCALL_LIBC_SIGNALS 3
#endif

/*
 * sigaction(@sig, NULL, ...): the handler of @sig and its flags; -1 if there
 * is none to read, the C library's own signals included.  The kernel's record
 * starts with the handler and the flags on both architectures served so.
 */
static inline int kcall_disposition(int sig, void (**handler)(int), unsigned long *flags)
{
	unsigned long k[4]; /* handler, flags, restorer, mask */

	if (sig >= 32 && sig < 32 + KCALL_LIBC_SIGNALS)
		return -1;
	if (syscall(SYS_rt_sigaction, sig, NULL, k, sizeof(k[3])) != 0)
		return -1;
	*handler = (void (*)(int))k[0];
	*flags = k[1];
	return 0;
}

#endif

#endif
