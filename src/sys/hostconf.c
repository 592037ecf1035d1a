/* The host-wide settings file: found, checked for who may have written it, and read, bounded. */
#include "sys/hostconf.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/real.h"
#include "sys/startup.h"
#include "sys/kcall.h"

/*
 * Read @size bytes of @fd into @buf, or up to an end that comes sooner, their
 * count into *@len: 0, or -1 on an error.  The read hook is not ready at load,
 * and the file is no socket of the program's: the system call itself.
 */
STARTUP_CODE static int read_upto(int fd, char *buf, size_t size, size_t *len)
{
	*len = 0;
	while (*len < size) {
		long n = syscall(SYS_read, fd, buf + *len, size - *len);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return 0;
}

STARTUP_CODE enum hostconf_result hostconf_read(const char *path, char *buf, size_t *len,
						const char **why)
{
	enum hostconf_result result = HOSTCONF_IGNORED;
	int saved = errno, fd;
	struct stat st;

	/* Non-blocking: a FIFO put in its place must not hold up every program's start. */
	fd = kcall_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0) {
		errno = saved;
		return HOSTCONF_ABSENT;
	}
	if (kcall_fstat(fd, &st) != 0) /* defensive: an open file can be examined */
		*why = "cannot be examined: ignored";
	else if (!S_ISREG(st.st_mode))
		*why = "is not a regular file: ignored";
	else if (st.st_uid != 0)
		*why = "is not owned by root: ignored";
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		*why = "is writable by others than root: ignored";
	else if (st.st_size > HOSTCONF_MAX)
		*why = "holds more than 8192 bytes: ignored";
	/* Up to the size fstat saw: a read more to find the end is a system call more. */
	else if (read_upto(fd, buf, (size_t)st.st_size, len) != 0)
		*why = "cannot be read: ignored";
	else
		result = HOSTCONF_READ;
	real_close(fd);
	errno = saved;
	return result;
}
