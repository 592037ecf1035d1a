/* send-probe: one send-family call on a fresh socketpair, its outcome printed. */

/*
 * usage: send-probe [--call send|sendto|sendmsg|sendmmsg] [--type dgram|stream]
 *                   [--nonblock] [--dontwait] [--fastopen] [--fill]
 *                   [--sndtimeo-ms MS]
 *
 * Creates an AF_UNIX socketpair of the given type (default dgram), in
 * blocking mode unless --nonblock, and makes one call of one byte on it,
 * with MSG_DONTWAIT (--dontwait) and MSG_FASTOPEN (--fastopen) as asked.
 * --fill first fills the peer's queue with write() (the socket non-blocking
 * for the fill only), so that the call finds no room: write() and not the
 * send calls, so that a trace of the send calls shows the probe alone.
 *
 * stdout: "ok N" or the errno name of the failure, then "elapsed_ms=E" for
 * the call alone.  Exit status 0 on success, 1 on failure.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "send-probe";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [--call send|sendto|sendmsg|sendmmsg] [--type dgram|stream]\n"
		"       [--nonblock] [--dontwait] [--fastopen] [--fill] [--sndtimeo-ms MS]\n",
		prog);
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void set_nonblock(int fd, int on)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) != 0)
		die("fcntl");
}

static void fill(int fd, int nonblock)
{
	char byte = 'f';

	set_nonblock(fd, 1);
	while (write(fd, &byte, 1) == 1)
		;
	if (errno != EAGAIN)
		die("filling");
	set_nonblock(fd, nonblock);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "call", required_argument, NULL, 'c' },
		{ "type", required_argument, NULL, 't' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "dontwait", no_argument, NULL, 'd' },
		{ "fastopen", no_argument, NULL, 'F' },
		{ "fill", no_argument, NULL, 'f' },
		{ "sndtimeo-ms", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *call = "send";
	int type = SOCK_DGRAM, nonblock = 0, do_fill = 0, flags = 0, opt, sv[2];
	long sndtimeo_ms = 0;
	char byte = 'p';
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = msg };
	long long start;
	ssize_t rc = -1;
	int err;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			call = optarg;
			break;
		case 't':
			if (strcmp(optarg, "dgram") == 0)
				type = SOCK_DGRAM;
			else if (strcmp(optarg, "stream") == 0)
				type = SOCK_STREAM;
			else
				usage();
			break;
		case 'n':
			nonblock = 1;
			break;
		case 'd':
			flags |= MSG_DONTWAIT;
			break;
		case 'F':
			flags |= MSG_FASTOPEN;
			break;
		case 'f':
			do_fill = 1;
			break;
		case 's':
			sndtimeo_ms = strtol(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0)
		die("socketpair");
	if (nonblock)
		set_nonblock(sv[0], 1);
	if (sndtimeo_ms > 0) {
		struct timeval tv = { sndtimeo_ms / 1000, (sndtimeo_ms % 1000) * 1000 };

		if (setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
			die("SO_SNDTIMEO");
	}
	if (do_fill)
		fill(sv[0], nonblock);

	start = mono_us();
	if (strcmp(call, "send") == 0)
		rc = send(sv[0], &byte, 1, flags);
	else if (strcmp(call, "sendto") == 0)
		rc = sendto(sv[0], &byte, 1, flags, NULL, 0);
	else if (strcmp(call, "sendmsg") == 0)
		rc = sendmsg(sv[0], &msg, flags);
	else if (strcmp(call, "sendmmsg") == 0)
		rc = sendmmsg(sv[0], &mm, 1, flags) == 1 ? (ssize_t)mm.msg_len : -1;
	else
		usage();
	err = errno;
	start = mono_us() - start;

	if (rc >= 0) {
		printf("ok %zd\n", rc);
	} else {
		const char *name = strerrorname_np(err);

		printf("%s\n", name ? name : "E?");
	}
	printf("elapsed_ms=%lld\n", start / 1000);
	return rc >= 0 ? 0 : 1;
}
