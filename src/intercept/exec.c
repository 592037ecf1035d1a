/* The exec family and posix_spawn: a program only the supervisor reaches is run through it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init.h"
#include "sys/compat.h"
#include "sys/elf.h"
#include "sys/real.h"
#include "sys/kcall.h"

/*
 * Each hook may run in a vfork child or in the child of a multithreaded
 * fork (posix_spawn's, Python's subprocess): system calls and the stack only,
 * no malloc, no lock.  The argument vectors are built on the stack, as the C
 * library's own execvp does for a script; a command's argument count is
 * bounded by the kernel's ARG_MAX.
 */

/* The supervisor's words before the program's own: PATH, --exec, FILE, --. */
#define EXEC_EXTRA 4

/*
 * The supervisor to exec @path through, or NULL to exec it as it is: a
 * static or Go program (or a script whose interpreter is one), executable and
 * neither set-user-ID nor with file capabilities, in a process that the
 * launcher's default engine runs outside the supervisor.  errno preserved.
 */
static const char *exec_supervisor_for(const char *path, char *const argv[])
{
	const char *supervisor;
	enum elf_kind kind;
	bool privileged;
	int saved = errno;

	supervisor = init_config_get()->enabled ? init_supervisor : NULL;
	if (!supervisor || !path || !argv || !argv[0])
		return NULL;
	kind = elf_exec_kind(path, &privileged);
	/* A filter installed as non-root would void the privileges: never wrapped. */
	if (privileged || !elf_kind_needs_supervisor(kind) || kcall_access(path, X_OK) != 0)
		supervisor = NULL;
	errno = saved;
	return supervisor;
}

static size_t count(char *const v[])
{
	size_t n = 0;

	while (v[n])
		n++;
	return n;
}

/* Fill @out (count(@argv) + EXEC_EXTRA + 1 words) with the supervisor's command line. */
static char **exec_wrapped_argv(char **out, const char *supervisor, const char *path,
				char *const argv[])
{
	size_t n = count(argv);

	out[0] = (char *)supervisor;
	out[1] = "--exec";
	out[2] = (char *)path;
	out[3] = "--";
	memcpy(out + EXEC_EXTRA, argv, (n + 1) * sizeof(*out));
	return out;
}

/* The supervisor's command line, on the stack of the caller (not in an argument list). */
#define WRAPPED_ARGV(name, supervisor, path, argv)                                       \
	char **name = __builtin_alloca((count(argv) + EXEC_EXTRA + 1) * sizeof(char *)); \
	exec_wrapped_argv(name, (supervisor), (path), (argv))

/*
 * The file that execvp(@file) would run, as the C library searches PATH (the
 * default path if unset): @file itself if it holds a slash, else the first
 * executable regular file of that name, written into @buf; NULL if none.
 * Under secure execution PATH is not read, but then nothing is wrapped.
 */
static const char *exec_search(const char *file, char *buf)
{
	const char *path = secure_getenv("PATH"), *p, *end;
	size_t len = strlen(file);

	if (strchr(file, '/'))
		return file;
	if (!path)
		path = "/bin:/usr/bin";
	if (len == 0 || len >= NAME_MAX)
		return NULL;
	for (p = path;; p = end + 1) {
		struct stat st;
		size_t n;

		end = strchrnul(p, ':');
		n = (size_t)(end - p);
		if (n + 1 + len < PATH_MAX) {
			/* An empty element is the current directory. */
			if (n > 0) {
				memcpy(buf, p, n);
				buf[n++] = '/';
			}
			memcpy(buf + n, file, len + 1);
			if (kcall_stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
			    kcall_access(buf, X_OK) == 0)
				return buf;
		}
		if (!*end)
			return NULL;
	}
}

/* Exec through @supervisor, if any, the program the supervisor finds at @path: as execve(2). */
#define EXEC_THROUGH(supervisor, path, argv, envp)                            \
	do {                                                                  \
		if (supervisor) {                                             \
			int saved_ = errno;                                   \
			WRAPPED_ARGV(wrapped_, (supervisor), (path), (argv)); \
			real_execve((supervisor), wrapped_, (envp));          \
			errno = saved_;                                       \
		}                                                             \
	} while (0)

/* Exec @path with @argv and @envp, through the supervisor when it needs it.  As execve(2). */
static int exec_file(const char *path, char *const argv[], char *const envp[])
{
	const char *supervisor = exec_supervisor_for(path, argv);

	EXEC_THROUGH(supervisor, path, argv, envp);
	return real_execve(path, argv, envp);
}

/* The same for a file found on PATH.  As execvpe(3). */
static int exec_search_file(const char *file, char *const argv[], char *const envp[])
{
	char buf[PATH_MAX];
	int saved = errno;
	const char *path = exec_search(file, buf);
	const char *supervisor = exec_supervisor_for(path, argv);

	errno = saved;
	EXEC_THROUGH(supervisor, path, argv, envp);
	return real_execvpe(file, argv, envp);
}

/* Returns as execve(2): only on failure, -1 with errno. */
EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_file(path, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
	return exec_file(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_search_file(file, argv, envp);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_search_file(file, argv, environ);
}

/*
 * argv of an execl-family call, on the stack: @last is the named argument
 * that starts the list.  Sets @argv and, with @with_env, @envp (the word
 * after the list's NULL).  The C library declares @last non-null; a NULL
 * (an empty argv) is met all the same: the compiler is not let assume it.
 */
#define EXEC_LIST(last, argv, with_env, envp)                         \
	do {                                                          \
		va_list ap_;                                          \
		size_t n_ = 0, i_;                                    \
		const char *first_ = (last);                          \
		__asm__("" : "+r"(first_));                           \
		va_start(ap_, last);                                  \
		if (first_)                                           \
			while (va_arg(ap_, char *))                   \
				n_++;                                 \
		va_end(ap_);                                          \
		(argv) = __builtin_alloca((n_ + 2) * sizeof(char *)); \
		(argv)[0] = (char *)first_;                           \
		va_start(ap_, last);                                  \
		for (i_ = 1; i_ <= n_; i_++)                          \
			(argv)[i_] = va_arg(ap_, char *);             \
		(argv)[first_ ? n_ + 1 : 1] = NULL;                   \
		if (first_)                                           \
			(void)va_arg(ap_, char *);                    \
		if (with_env)                                         \
			(envp) = va_arg(ap_, char **);                \
		va_end(ap_);                                          \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv, **envp = environ;

	EXEC_LIST(arg, argv, false, envp);
	return exec_file(path, argv, envp);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;

	EXEC_LIST(arg, argv, true, envp);
	return exec_file(path, argv, envp);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv, **envp = environ;

	EXEC_LIST(arg, argv, false, envp);
	return exec_search_file(file, argv, envp);
}

/*
 * /proc/self/fd/@fd (@fd >= 0) into @path (at least 32 bytes).  Built by
 * hand: snprintf is not async-signal-safe.
 */
static void fd_name(char *path, int fd)
{
	char digits[12];
	size_t n = 0, i = 0;
	unsigned v = (unsigned)fd;

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	memcpy(path, "/proc/self/fd/", 14);
	while (n > 0)
		path[14 + i++] = digits[--n];
	path[14 + i] = '\0';
}

/*
 * The program open at @fd as the supervisor reaches it after the exec:
 * /proc/self/fd/@fd into @path (at least 32 bytes), if the fd survives the
 * exec (not close-on-exec).  errno preserved.
 */
static bool fd_path(char *path, int fd)
{
	int saved = errno, flags = fd >= 0 ? real_fcntl(fd, F_GETFD) : -1;

	errno = saved;
	if (flags < 0 || (flags & FD_CLOEXEC))
		return false;
	fd_name(path, fd);
	return true;
}

/* fexecve: the program is the file open at @fd. */
EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	char path[32];
	const char *supervisor = fd_path(path, fd) ? exec_supervisor_for(path, argv) : NULL;

	EXEC_THROUGH(supervisor, path, argv, envp);
	return real_fexecve(fd, argv, envp);
}

/*
 * execveat: the program is @path, relative to @dirfd (AT_FDCWD: the working
 * directory) unless absolute, or with AT_EMPTY_PATH and an empty @path the
 * file open at @dirfd.  The supervisor finds a relative one under the
 * directory's path, read now (its fd may not survive the exec).  With
 * AT_SYMLINK_NOFOLLOW the program is run as it is: the supervisor's exec
 * would follow the link.
 */
EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	char buf[PATH_MAX], fd[32];
	const char *file = NULL, *supervisor = NULL, *p = path;
	int saved = errno;

	/* Declared non-null; a NULL is the kernel's EFAULT all the same. */
	__asm__("" : "+r"(p));
	if (p && !(flags & AT_SYMLINK_NOFOLLOW)) {
		if (path[0] == '/' || (path[0] && dirfd == AT_FDCWD)) {
			file = path;
		} else if (!path[0] && (flags & AT_EMPTY_PATH)) {
			file = fd_path(fd, dirfd) ? fd : NULL;
		} else if (path[0]) {
			size_t len = strlen(path);
			ssize_t n = -1;

			/* The directory's path, whether or not its fd survives. */
			if (dirfd >= 0) {
				fd_name(fd, dirfd);
				n = kcall_readlink(fd, buf, sizeof(buf));
			}
			if (n > 0 && buf[0] == '/' && (size_t)n + 1 + len < sizeof(buf)) {
				buf[n] = '/';
				memcpy(buf + n + 1, path, len + 1);
				file = buf;
			}
		}
	}
	errno = saved;
	if (file)
		supervisor = exec_supervisor_for(file, argv);
	EXEC_THROUGH(supervisor, file, argv, envp);
	return real_execveat(dirfd, path, argv, envp, flags);
}

/* Returns as posix_spawn(3): 0, or an error number. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	const char *supervisor = exec_supervisor_for(path, argv);

	if (supervisor) {
		WRAPPED_ARGV(wrapped, supervisor, path, argv);
		if (real_posix_spawn(pid, supervisor, actions, attr, wrapped, envp) == 0)
			return 0;
	}
	return real_posix_spawn(pid, path, actions, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	char buf[PATH_MAX];
	int saved = errno;
	const char *path = exec_search(file, buf);
	const char *supervisor = exec_supervisor_for(path, argv);

	errno = saved;
	if (supervisor) {
		WRAPPED_ARGV(wrapped, supervisor, path, argv);
		if (real_posix_spawn(pid, supervisor, actions, attr, wrapped, envp) == 0)
			return 0;
	}
	return real_posix_spawnp(pid, file, actions, attr, argv, envp);
}
