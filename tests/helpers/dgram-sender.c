/* dgram-sender: a test client sending numbered datagrams on a blocking socket. */

/*
 * usage: dgram-sender (--unix PATH | --udp HOST:PORT) [--connect]
 *                     [--call send|sendto|sendmsg|sendmmsg] [--count N]
 *                     [--interval-us U]
 *
 * Sends N datagrams "0", "1", ... "N-1" (default 10000), one call each, with
 * the chosen call (default: send when connected, sendto otherwise).  With
 * --connect the socket is connected first and the calls name no address;
 * without it each call names the destination.  --interval-us paces the
 * sends (UDP has no flow control: a receiver that falls behind drops).
 *
 * It does nothing about errors but report them, as a plain program would:
 * on the first failed call it prints "error at I: ERRNO" on stderr and exits
 * 1.  At the end: "sent N" on stdout.  Ends by itself (SIGALRM) after 60 s.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static const char *prog = "dgram-sender";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s (--unix PATH | --udp HOST:PORT) [--connect]\n"
		"       [--call send|sendto|sendmsg|sendmmsg] [--count N] [--interval-us U]\n",
		prog);
	exit(2);
}

static long parse_long(const char *s, long min, long max)
{
	long v;

	if (number_in(s, min, max, &v) != 0)
		usage();
	return v;
}

/* IPv4 or IPv6 "HOST:PORT"; returns the address length. */
static socklen_t parse_udp(const char *spec, struct sockaddr_storage *ss)
{
	socklen_t len = inet_from_spec(spec, 1, ss);

	if (len == 0)
		usage();
	return len;
}

static socklen_t parse_unix(const char *path, struct sockaddr_storage *ss)
{
	struct sockaddr_un *un = (struct sockaddr_un *)ss;
	size_t n = strlen(path);

	if (n >= sizeof(un->sun_path))
		usage();
	memset(ss, 0, sizeof(*ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, path, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

static void fail(const char *what, long i)
{
	const char *name = strerrorname_np(errno);

	fprintf(stderr, "error at %ld: %s (%s)\n", i, name ? name : "E?", what);
	exit(1);
}

static void pace(struct timespec *next, long interval_us)
{
	if (interval_us == 0)
		return;
	next->tv_nsec += interval_us * 1000;
	while (next->tv_nsec >= 1000000000L) {
		next->tv_nsec -= 1000000000L;
		next->tv_sec++;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
		;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "unix", required_argument, NULL, 'u' },
		{ "udp", required_argument, NULL, 'p' },
		{ "connect", no_argument, NULL, 'c' },
		{ "call", required_argument, NULL, 'C' },
		{ "count", required_argument, NULL, 'n' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_storage ss;
	socklen_t len = 0;
	const char *call = NULL;
	int family = 0, connected = 0, opt, fd;
	long count = 10000, interval_us = 0, i;
	struct timespec next;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			len = parse_unix(optarg, &ss);
			family = AF_UNIX;
			break;
		case 'p':
			len = parse_udp(optarg, &ss);
			family = ss.ss_family;
			break;
		case 'c':
			connected = 1;
			break;
		case 'C':
			call = optarg;
			break;
		case 'n':
			count = parse_long(optarg, 0, 100000000);
			break;
		case 'i':
			interval_us = parse_long(optarg, 0, 1000000);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || family == 0)
		usage();
	if (!call)
		call = connected ? "send" : "sendto";
	if (strcmp(call, "send") == 0 && !connected)
		usage();
	alarm(60);
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fail("socket", -1);
	if (connected && connect(fd, (struct sockaddr *)&ss, len) != 0)
		fail("connect", -1);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (i = 0; i < count; i++) {
		char buf[32];
		int n = snprintf(buf, sizeof(buf), "%ld", i);
		struct iovec iov = { buf, (size_t)n };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct mmsghdr mm;
		ssize_t rc;

		if (!connected) {
			msg.msg_name = &ss;
			msg.msg_namelen = len;
		}
		if (strcmp(call, "send") == 0) {
			rc = send(fd, buf, (size_t)n, 0);
		} else if (strcmp(call, "sendto") == 0) {
			rc = sendto(fd, buf, (size_t)n, 0,
				    connected ? NULL : (struct sockaddr *)&ss, connected ? 0 : len);
		} else if (strcmp(call, "sendmsg") == 0) {
			rc = sendmsg(fd, &msg, 0);
		} else if (strcmp(call, "sendmmsg") == 0) {
			mm.msg_hdr = msg;
			mm.msg_len = 0;
			rc = sendmmsg(fd, &mm, 1, 0) == 1 ? (ssize_t)mm.msg_len : -1;
		} else {
			usage();
			return 2;
		}
		if (rc != n)
			fail(call, i);
		pace(&next, interval_us);
	}
	printf("sent %ld\n", count);
	return 0;
}
