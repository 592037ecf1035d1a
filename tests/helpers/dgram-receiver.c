/* dgram-receiver: a test datagram server that starts late, or stops and hands over mid-stream. */

/*
 * usage: dgram-receiver (--unix PATH | --udp HOST:PORT) --out FILE [--after MS]
 *                       [--port-file F] [--until TEXT] [--stop-after N]
 *                       [--on-signal] [--stale-on-exit]
 *
 * Binds after MS milliseconds (AF_UNIX: a stale socket file in the way is
 * removed first; UDP: port 0 picks a free port, written to --port-file at
 * once through a rename, and left unbound until then, so that senders get
 * ECONNREFUSED).  Each datagram is appended to FILE as one line, without
 * its trailing NULs and newlines.
 *
 * It ends after a datagram that contains TEXT (--until), or, AF_UNIX only,
 * hands over after N datagrams (--stop-after) without losing one:
 *   - it removes its socket file, so that sendto() fails with ENOENT;
 *   - with --on-signal, it goes on receiving until SIGUSR1 (sent once the
 *     sender is known to be failing), otherwise at once, it shuts its read
 *     side down, after which no sender can queue a datagram (connected
 *     senders get EPIPE), and reads what is queued;
 *   - with --stale-on-exit, it leaves a socket file nobody listens on at
 *     PATH (never bound there), so that senders get ECONNREFUSED until the
 *     next receiver.
 *
 * stdout, one line each, CLOCK_MONOTONIC in milliseconds:
 *   ready mono_ms=NNN                 (bound)
 *   unlinked mono_ms=NNN              (--stop-after: the socket file is gone)
 *   done received=N mono_ms=NNN
 * UDP: a datagram the kernel dropped for want of buffer space (SO_RXQ_OVFL)
 * makes it print "overflow dropped=N" and exit 3.  Ends by itself (SIGALRM)
 * 60 s after it bound at the latest.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define MAX_DGRAM 65536

static const char *prog = "dgram-receiver";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s (--unix PATH | --udp HOST:PORT) --out FILE [--after MS]\n"
		"       [--port-file F] [--until TEXT] [--stop-after N] [--on-signal]\n"
		"       [--stale-on-exit]\n",
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

/* IPv4 or IPv6 "HOST:PORT"; returns the address length. */
static socklen_t parse_udp(const char *spec, struct sockaddr_storage *ss)
{
	socklen_t len = inet_from_spec(spec, 0, ss);

	if (len == 0)
		usage();
	return len;
}

static in_port_t *port_of(struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? &((struct sockaddr_in6 *)ss)->sin6_port
					 : &((struct sockaddr_in *)ss)->sin_port;
}

/* A free UDP port for @ss, found by binding port 0 and released again. */
static void pick_port(struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t n = len;

	if (fd < 0 || bind(fd, (struct sockaddr *)ss, len) != 0 ||
	    getsockname(fd, (struct sockaddr *)ss, &n) != 0)
		die("picking a port");
	close(fd);
}

static void write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
		die("writing the port file");
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * A socket file at @path that nobody listens on: bound elsewhere, closed,
 * then renamed into place.  Bound at @path itself, it would take datagrams
 * between bind and close, and lose them when closed.
 */
static void leave_stale(const char *path)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int n = snprintf(un.sun_path, sizeof(un.sun_path), "%s.stale", path);

	if (n < 0 || (size_t)n >= sizeof(un.sun_path)) {
		errno = ENAMETOOLONG;
		die("leaving a stale socket file");
	}
	unlink(un.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof(un)) != 0)
		die("leaving a stale socket file");
	close(fd);
	if (rename(un.sun_path, path) != 0)
		die("leaving a stale socket file");
}

static FILE *out;
static long received;
static const char *until;

/* Record one datagram; returns 1 if it was the last one wanted. */
static int record(const char *buf, size_t n)
{
	size_t len = n;

	while (len > 0 && (buf[len - 1] == '\0' || buf[len - 1] == '\n'))
		len--;
	if (fwrite(buf, 1, len, out) != len || fputc('\n', out) == EOF)
		die("writing the output");
	received++;
	return until && memmem(buf, n, until, strlen(until)) != NULL;
}

static void check_overflow(struct msghdr *msg)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
			unsigned dropped;

			memcpy(&dropped, CMSG_DATA(c), sizeof(dropped));
			if (dropped) {
				printf("overflow dropped=%u\n", dropped);
				fflush(out);
				exit(3);
			}
		}
	}
}

/* Receive one datagram; returns its length, or -1 with errno (EAGAIN with @flags). */
static ssize_t receive(int fd, char *buf, int flags)
{
	union {
		char space[CMSG_SPACE(sizeof(unsigned))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { buf, MAX_DGRAM };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	msg.msg_control = control.space;
	msg.msg_controllen = sizeof(control.space);
	n = recvmsg(fd, &msg, flags);
	if (n >= 0)
		check_overflow(&msg);
	return n;
}

/* Read whatever is queued, without waiting. */
static void drain(int fd, char *buf)
{
	ssize_t n;

	while ((n = receive(fd, buf, MSG_DONTWAIT)) > 0)
		record(buf, (size_t)n);
	if (n < 0 && errno != EAGAIN)
		die("draining");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "unix", required_argument, NULL, 'u' },
		{ "udp", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ "after", required_argument, NULL, 'a' },
		{ "port-file", required_argument, NULL, 'f' },
		{ "until", required_argument, NULL, 'U' },
		{ "stop-after", required_argument, NULL, 's' },
		{ "on-signal", no_argument, NULL, 'S' },
		{ "stale-on-exit", no_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	static char buf[MAX_DGRAM];
	struct sockaddr_storage ss;
	socklen_t len = 0;
	const char *path = NULL, *out_path = NULL, *port_file = NULL;
	long after = 0, stop_after = -1;
	int on_signal = 0, stale = 0, opt, fd, one = 1, sfd = -1, rcvbuf = 8 << 20;
	sigset_t usr1;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			path = optarg;
			if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
				usage();
			memset(&ss, 0, sizeof(ss));
			ss.ss_family = AF_UNIX;
			strcpy(((struct sockaddr_un *)&ss)->sun_path, path);
			len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) +
					  1);
			break;
		case 'p':
			len = parse_udp(optarg, &ss);
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'a':
			after = parse_long(optarg, 0, 600000);
			break;
		case 'f':
			port_file = optarg;
			break;
		case 'U':
			until = optarg;
			break;
		case 's':
			stop_after = parse_long(optarg, 0, 100000000);
			break;
		case 'S':
			on_signal = 1;
			break;
		case 'x':
			stale = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || len == 0 || !out_path || (stop_after >= 0 && !path))
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	out = fopen(out_path, "a");
	if (!out)
		die(out_path);
	/* SIGUSR1 is read from a signalfd, never delivered as a signal. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &usr1, NULL) != 0)
		die("sigprocmask");

	if (!path && *port_of(&ss) == 0)
		pick_port(&ss, len);
	if (port_file)
		write_port_file(port_file, ntohs(*port_of(&ss)));
	sleep_ms(after);
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (path) {
		unlink(path);
	} else {
		if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) != 0)
			die("SO_RXQ_OVFL");
		/* Room for a stall of the reader: beyond rmem_max where allowed. */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	}
	if (bind(fd, (struct sockaddr *)&ss, len) != 0)
		die("bind");
	alarm(60);
	printf("ready mono_ms=%lld\n", mono_ms());

	for (;;) {
		ssize_t n = receive(fd, buf, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("recvmsg");
		}
		if (record(buf, (size_t)n))
			goto out_done;
		if (received == stop_after)
			break;
	}

	/* The hand-over: no datagram queued for this receiver may be left unread. */
	if (unlink(path) != 0)
		die("unlink");
	printf("unlinked mono_ms=%lld\n", mono_ms());
	if (on_signal) {
		struct pollfd p[2];

		sfd = signalfd(-1, &usr1, SFD_CLOEXEC);
		if (sfd < 0)
			die("signalfd");
		p[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		while (!(p[1].revents & POLLIN)) {
			if (poll(p, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				die("poll");
			}
			if (p[0].revents & POLLIN)
				drain(fd, buf);
		}
	}
	if (shutdown(fd, SHUT_RD) != 0)
		die("shutdown");
	drain(fd, buf);
	if (stale)
		leave_stale(path);
out_done:
	if (fflush(out) != 0)
		die("writing the output");
	printf("done received=%ld mono_ms=%lld\n", received, mono_ms());
	return 0;
}
