/* raw-connect: a client that calls the connect system call itself, built with gcc -static. */

/*
 * usage: raw-connect (--tcp HOST:PORT | --unix PATH) [--nonblock] [--wait-ms MS]
 *                    [--undumpable] [--repeat N] [--dgram]
 *
 * Connects with syscall(SYS_connect), out of the preload's reach.  Blocking:
 * one call.  --nonblock: a non-blocking socket, EINPROGRESS, poll(POLLOUT)
 * for at most MS (default 20000), then SO_ERROR, as OpenBSD nc does.  Then
 * reads what the server sends and prints it.  --undumpable: first
 * prctl(PR_SET_DUMPABLE, 0), which denies ptrace access to other processes
 * of the same user, as Yama's ptrace_scope does to non-ancestors.
 * --dgram: a unix datagram socket, which sends "hello" once connected.
 * --repeat N: up to N connects in one process, each on a new socket, until one
 * connects (each failure is printed).
 * stdout: "connected mono_ms=N" then the data; stderr: "raw-connect: ERROR".
 * Exit status: 0 connected, 1 failed.
 */

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "../helpers/common.h"

static int fail(const char *what, int err)
{
	fprintf(stderr, "raw-connect: %s: %s\n", what, strerror(err));
	return 1;
}

/* One connect of @fd: 0, its errno, or -ETIMEDOUT when poll waited @wait_ms in vain. */
static int attempt(int fd, const struct sockaddr_storage *ss, socklen_t len, bool nonblock,
		   long wait_ms)
{
	struct pollfd p = { fd, POLLOUT, 0 };
	int err;
	socklen_t elen = sizeof(err);

	if (syscall(SYS_connect, fd, ss, len) == 0)
		return 0;
	err = errno;
	if (!nonblock || err != EINPROGRESS)
		return err;
	if (poll(&p, 1, (int)wait_ms) == 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
		return errno;
	return err;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	bool nonblock = false, dgram = false;
	long wait_ms = 20000, repeat = 1, r;
	int i, fd = -1, err = 0;
	char buf[512];
	ssize_t n;

	memset(&ss, 0, sizeof(ss));
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--tcp") == 0 && i + 1 < argc) {
			len = inet_from_spec(argv[++i], 1, &ss);
		} else if (strcmp(argv[i], "--unix") == 0 && i + 1 < argc) {
			struct sockaddr_un *un = (struct sockaddr_un *)&ss;

			un->sun_family = AF_UNIX;
			snprintf(un->sun_path, sizeof(un->sun_path), "%s", argv[++i]);
			len = (socklen_t)sizeof(*un);
		} else if (strcmp(argv[i], "--undumpable") == 0) {
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		} else if (strcmp(argv[i], "--dgram") == 0) {
			dgram = true;
		} else if (strcmp(argv[i], "--nonblock") == 0) {
			nonblock = true;
		} else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
			if (number_in(argv[++i], 1, 1000, &repeat) != 0)
				len = 0;
		} else if (strcmp(argv[i], "--wait-ms") == 0 && i + 1 < argc) {
			if (number_in(argv[++i], 0, 600000, &wait_ms) != 0)
				len = 0;
		} else {
			len = 0;
			break;
		}
	}
	if (len == 0) {
		fprintf(stderr, "usage: raw-connect (--tcp HOST:PORT | --unix PATH) [--nonblock] "
				"[--wait-ms MS] [--undumpable] [--repeat N] [--dgram]\n");
		return 2;
	}
	for (r = 1; r <= repeat; r++) {
		if (fd >= 0)
			close(fd);
		fd = socket(ss.ss_family,
			    (dgram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC |
				    (nonblock ? SOCK_NONBLOCK : 0),
			    0);
		if (fd < 0)
			return fail("socket", errno);
		err = attempt(fd, &ss, len, nonblock, wait_ms);
		if (err == 0)
			break;
		fail(err == -ETIMEDOUT ? "poll" : "connect", err < 0 ? -err : err);
		if (r == repeat)
			return 1;
	}
	printf("connected mono_ms=%lld\n", mono_ms());
	fflush(stdout);
	if (dgram)
		return write(fd, "hello", 5) == 5 ? 0 : fail("write", errno);
	if (nonblock)
		fcntl(fd, F_SETFL, 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	if (n < 0)
		return fail("read", errno);
	return 0;
}
