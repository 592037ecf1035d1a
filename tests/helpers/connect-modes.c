/* connect-modes: one TCP connect on a socket whose mode the program sets one way or another. */

/*
 * usage: connect-modes HOW ADDR
 *
 * Twice: makes a TCP socket, sets it up as HOW says and connects it to
 * ADDR ("127.0.0.1:PORT"); the first socket is closed at once (what a
 * process does once, at its first connect of a kind, is done).  For the
 * second, getppid() is called just before and
 * just after that connect, so that a trace can count the system calls of
 * the connect alone.  HOW is one of
 *   blocking       socket() as it comes
 *   nonblocking    socket() with SOCK_NONBLOCK
 *   setfl          socket(), then fcntl(F_SETFL, O_NONBLOCK)
 *   fionbio        socket(), then ioctl(FIONBIO, 1)
 *   setfl-dup      socket(), dup(), then fcntl(F_SETFL, O_NONBLOCK) on the
 *                  copy: the original is non-blocking too
 *   setfl-fork     socket(), then a child sets O_NONBLOCK on its copy and
 *                  exits before the connect
 *   setfl-raw      socket(), then O_NONBLOCK set by the system call itself,
 *                  where no hook sees it
 *   unset          socket() with SOCK_NONBLOCK, then fcntl(F_SETFL, 0)
 *   sndtimeo       socket(), then setsockopt(SO_SNDTIMEO, 5 s 250 ms)
 *   sndtimeo-off   the same, then setsockopt(SO_SNDTIMEO, 0)
 *
 * Prints "connect=0" or "connect=<errno name>", then "sndtimeo=S.UUUUUU":
 * the send timeout the socket has after the connect.  Exits 0, or 1 if a
 * set-up call fails.
 */

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static int die(const char *what)
{
	fprintf(stderr, "connect-modes: %s: %s\n", what, strerror(errno));
	return 1;
}

static int set_sndtimeo(int fd, long sec, long usec)
{
	struct timeval tv = { sec, usec };

	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Sets @fd up as @how says; returns 0, or -1 with errno. */
static int set_up(int fd, const char *how)
{
	int on = 1;
	pid_t pid;

	if (strcmp(how, "blocking") == 0 || strcmp(how, "nonblocking") == 0)
		return 0;
	if (strcmp(how, "setfl") == 0)
		return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (strcmp(how, "fionbio") == 0)
		return ioctl(fd, FIONBIO, &on);
	if (strcmp(how, "setfl-dup") == 0) {
		int copy = dup(fd);

		if (copy < 0 || fcntl(copy, F_SETFL, O_NONBLOCK | O_RDWR) != 0)
			return -1;
		return close(copy);
	}
	if (strcmp(how, "setfl-fork") == 0) {
		int status;

		pid = fork();
		if (pid == 0)
			_exit(fcntl(fd, F_SETFL, O_NONBLOCK | O_RDWR) == 0 ? 0 : 1);
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return -1;
		return 0;
	}
	if (strcmp(how, "setfl-raw") == 0)
		return (int)syscall(SYS_fcntl, fd, F_SETFL, O_NONBLOCK | O_RDWR);
	if (strcmp(how, "unset") == 0)
		return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (strcmp(how, "sndtimeo") == 0)
		return set_sndtimeo(fd, 5, 250000);
	if (strcmp(how, "sndtimeo-off") == 0)
		return set_sndtimeo(fd, 5, 250000) != 0 ? -1 : set_sndtimeo(fd, 0, 0);
	errno = EINVAL;
	return -1;
}

/* A TCP socket for @ss set up as @how says, or -1 (said on stderr). */
static int made(const struct sockaddr_storage *ss, const char *how)
{
	int nonblock = strcmp(how, "nonblocking") == 0 || strcmp(how, "unset") == 0,
	    fd = socket(ss->ss_family, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return die("socket"), -1;
	if (set_up(fd, how) != 0)
		return die(how), -1;
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	struct timeval tv = { 0, 0 };
	socklen_t len, tvlen = sizeof(tv);
	int fd, rc, err;

	if (argc != 3 || !(len = inet_from_spec(argv[2], 1, &ss))) {
		fprintf(stderr, "usage: connect-modes HOW ADDR\n");
		return 2;
	}
	fd = made(&ss, argv[1]);
	if (fd < 0)
		return 1;
	rc = connect(fd, (struct sockaddr *)&ss, len);
	if ((rc != 0 && errno != EINPROGRESS) || close(fd) != 0)
		return die("the first connect");
	fd = made(&ss, argv[1]);
	if (fd < 0)
		return 1;
	(void)getppid();
	rc = connect(fd, (struct sockaddr *)&ss, len);
	err = errno;
	(void)getppid();
	if (rc == 0)
		printf("connect=0\n");
	else
		printf("connect=%s\n", err == EINPROGRESS ? "EINPROGRESS" : strerror(err));
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &tvlen) != 0)
		return die("getsockopt");
	printf("sndtimeo=%ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
	return 0;
}
