/* late-listener: a test server that takes its address at once but listens only later. */

/*
 * usage: late-listener (--tcp HOST:PORT | --unix PATH) [--after MS] [--send TEXT]
 *                      [--port-file F] [--count N] [--linger-ms MS] [--backlog N] [--stale]
 *                      [--life S]
 *
 * TCP: the socket is bound at start-up (port 0 picks a free port, written to
 * --port-file through a rename so that a reader never sees half a number), but
 * listen() is called only after MS milliseconds: until then the bound port
 * answers every SYN with a reset, so clients see ECONNREFUSED.  AF_UNIX: the
 * socket file is created only after MS milliseconds, so clients see ENOENT;
 * with --stale a socket file that no socket holds is there from the start (a
 * server that died), so clients see ECONNREFUSED, and is replaced at MS.
 *
 * Then it accepts N connections one after the other, writes TEXT to each,
 * shuts the write side down and reads what the peer sent until it closes (or
 * --linger-ms passes), so that the client never gets a reset instead of data.
 * --backlog is listen()'s (64): a handshake past it waits for the server's
 * retransmitted SYN-ACK, seconds later, while the client sees it connected.
 *
 * stdout, one line each, CLOCK_MONOTONIC in milliseconds:
 *   listening mono_ms=NNN
 *   accepted mono_ms=NNN
 * The process ends by itself (SIGALRM) --life S (30) after --after at the latest.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define SAFETY_S 30

static const char *prog = "late-listener";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s (--tcp HOST:PORT | --unix PATH) [--after MS] [--send TEXT]\n"
		"       [--port-file F] [--count N] [--linger-ms MS] [--backlog N] [--stale]\n"
		"       [--life S]\n",
		prog);
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static long parse_long(const char *s, long min, long max)
{
	long v;

	if (number_in(s, min, max, &v) != 0)
		usage();
	return v;
}

/* Fills *ss from "1.2.3.4:80" or "[::1]:80"; returns the address length. */
static socklen_t parse_tcp(const char *spec, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon;
	size_t len;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':')
			usage();
		len = (size_t)(close - spec - 1);
		if (len >= sizeof(host))
			usage();
		memcpy(host, spec + 1, len);
		host[len] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon)
			usage();
		len = (size_t)(colon - spec);
		if (len >= sizeof(host))
			usage();
		memcpy(host, spec, len);
		host[len] = '\0';
	}
	port = parse_long(colon + 1, 0, 65535);

	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		return sizeof(*sin);
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		return sizeof(*sin6);
	}
	usage();
	return 0;
}

static void write_port_file(const char *path, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char tmp[PATH_MAX];
	unsigned port;
	FILE *f;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		die("getsockname");
	if (ss.ss_family == AF_INET6)
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	else
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		die(path);
	}
	f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f, "%u\n", port);
	if (fclose(f) != 0)
		die(tmp);
	if (rename(tmp, path) < 0)
		die(path);
}

static void sleep_until(long long deadline_ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ms / 1000),
		.tv_nsec = (long)(deadline_ms % 1000) * 1000000,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void say_at(const char *what, long long at_ms)
{
	printf("%s mono_ms=%lld\n", what, at_ms);
	fflush(stdout);
}

static void say(const char *what)
{
	say_at(what, mono_ms());
}

/* Sends the text, then waits for the peer to close so it reads all of it. */
static void serve(int conn, const char *text, long linger_ms)
{
	size_t left = strlen(text);
	long long deadline = mono_ms() + linger_ms;
	char buf[4096];

	while (left > 0) {
		ssize_t n = write(conn, text, left);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: write: %s\n", prog, strerror(errno));
			goto out_close;
		}
		text += n;
		left -= (size_t)n;
	}
	shutdown(conn, SHUT_WR);
	for (;;) {
		long long now = mono_ms();
		struct pollfd pfd = { .fd = conn, .events = POLLIN };
		ssize_t n;

		if (now >= deadline)
			break;
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			break;
		n = read(conn, buf, sizeof(buf));
		if (n <= 0)
			break;
	}
out_close:
	close(conn);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tcp", required_argument, NULL, 't' },
		{ "unix", required_argument, NULL, 'u' },
		{ "after", required_argument, NULL, 'a' },
		{ "send", required_argument, NULL, 's' },
		{ "port-file", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "linger-ms", required_argument, NULL, 'l' },
		{ "backlog", required_argument, NULL, 'b' },
		{ "stale", no_argument, NULL, 'S' },
		{ "life", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tcp = NULL, *unix_path = NULL, *text = "", *port_file = NULL;
	long after_ms = 0, count = 1, linger_ms = 2000, backlog = 64, life_s = SAFETY_S;
	long long start = mono_ms(), listened;
	int fd, opt, stale = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			tcp = optarg;
			break;
		case 'u':
			unix_path = optarg;
			break;
		case 'a':
			after_ms = parse_long(optarg, 0, 3600000);
			break;
		case 's':
			text = optarg;
			break;
		case 'p':
			port_file = optarg;
			break;
		case 'c':
			count = parse_long(optarg, 1, 100000);
			break;
		case 'b':
			backlog = parse_long(optarg, 1, 65535);
			break;
		case 'l':
			linger_ms = parse_long(optarg, 0, 60000);
			break;
		case 'S':
			stale = 1;
			break;
		case 'L':
			life_s = parse_long(optarg, 1, 3600);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !tcp == !unix_path)
		usage();

	alarm((unsigned)(after_ms / 1000 + life_s));

	if (tcp) {
		struct sockaddr_storage ss;
		socklen_t len = parse_tcp(tcp, &ss);
		int one = 1;

		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket");
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ss.ss_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, len) < 0)
			die(tcp);
		if (port_file)
			write_port_file(port_file, fd);
		sleep_until(start + after_ms);
	} else {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		if (strlen(unix_path) >= sizeof(sun.sun_path))
			usage();
		strcpy(sun.sun_path, unix_path);
		if (stale) {
			/* Bound, then closed: the file stays, held by no socket. */
			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
				die(unix_path);
			close(fd);
			say_at("stale", mono_ms());
		}
		sleep_until(start + after_ms);
		if (stale && unlink(unix_path) < 0)
			die(unix_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket");
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			die(unix_path);
	}
	/*
	 * The time before listen(): a client may connect, and say so, before
	 * this process is scheduled again after it.
	 */
	listened = mono_ms();
	if (listen(fd, (int)backlog) < 0)
		die("listen");
	say_at("listening", listened);

	for (long i = 0; i < count; i++) {
		int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				i--;
				continue;
			}
			die("accept");
		}
		say("accepted");
		serve(conn, text, linger_ms);
	}
	close(fd);
	if (unix_path)
		unlink(unix_path);
	return 0;
}
