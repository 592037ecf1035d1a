/* fastpath: the hot calls an interposer sits on, in a tight loop, for timing with and without. */

/*
 * usage: fastpath MODE N
 *
 * MODE is one of
 *   send          N send() of one byte on a unix datagram socketpair; the
 *                 receiver drains every 64 datagrams with one recvmmsg(),
 *                 which libbackoff does not intercept
 *   poll          N poll() on one ready fd (an eventfd with a count), timeout 0
 *   epoll         N epoll_wait() on one ready fd (level-triggered), timeout 0
 *   close         N dup + close(): the close() hook alone, for the
 *                 instruction counts (dup is the system call itself, past
 *                 the library's dup hook)
 *   write         N write() of one byte to /dev/null: the read/write hooks'
 *                 cost, which every program pays, for the instruction counts
 *   unix-connect  N socket + connect + accept + close + close on a listening
 *                 unix stream socket (abstract name, so nothing to clean up)
 *   tcp-connect   the same on TCP loopback; the client closes with
 *                 SO_LINGER 0 (a reset), so no TIME_WAIT eats the ports
 *   greet         what a client of a server that speaks first does per
 *                 connection: socket, connect, read the server's first
 *                 answer ("220 ready", as an FTP or SMTP greeting), close
 *                 (SO_LINGER 0); the server's side (accept, write, close)
 *                 is made with raw system calls, so that only the client's
 *                 calls meet the library's hooks
 *   request       the same with a request first: the client writes an HTTP
 *                 GET, the server reads it and answers 200 with a short body
 *   greet-noread, request-noread
 *                 the same, but the client closes without reading the
 *                 answer: the difference to greet and request is the cost of
 *                 the first read, where the library looks at the answer
 *   nb-connect    what an event-loop proxy does per upstream connection:
 *                 socket (non-blocking), epoll_ctl ADD before connect (nginx
 *                 does so, data a pointer), connect, accept, epoll_wait for
 *                 EPOLLOUT, SO_ERROR, then close both (SO_LINGER 0)
 *
 * With FASTPATH_INFLIGHT=K in the environment, K non-blocking connects to a
 * port that refuses are started before the loop and left in flight (under
 * the library, with a long BACKOFF_BASE, each stays hidden awaiting its
 * retry): the cost of a hook must not grow with them.
 *
 * N may be 0: only the set-up runs (for subtracting start-up costs).
 * Prints "MODE N loop_ns=T" on stdout, T the time of the loop alone.
 * Exits 1 with a message if a call fails.
 */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static void die(const char *what)
{
	fprintf(stderr, "fastpath: %s: %s\n", what, strerror(errno));
	exit(1);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void drain(int fd, unsigned n)
{
	static char bufs[BATCH][4];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	unsigned i;

	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < n; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (n > 0) {
		int got = recvmmsg(fd, msgs, n, 0, NULL);

		if (got <= 0)
			die("recvmmsg");
		n -= (unsigned)got;
	}
}

static void bench_send(long n)
{
	int sv[2];
	unsigned pending = 0;
	long i;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	for (i = 0; i < n; i++) {
		if (send(sv[0], "x", 1, 0) != 1)
			die("send");
		if (++pending == BATCH) {
			drain(sv[1], pending);
			pending = 0;
		}
	}
	drain(sv[1], pending);
}

static int ready_eventfd(void)
{
	int fd = eventfd(1, EFD_CLOEXEC);

	if (fd < 0)
		die("eventfd");
	return fd;
}

static void bench_poll(long n)
{
	struct pollfd pfd = { .fd = ready_eventfd(), .events = POLLIN };
	long i;

	for (i = 0; i < n; i++)
		if (poll(&pfd, 1, 0) != 1)
			die("poll");
}

static void bench_epoll(long n)
{
	int fd = ready_eventfd(), ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	long i;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll");
	for (i = 0; i < n; i++)
		if (epoll_wait(ep, &ev, 1, 0) != 1)
			die("epoll_wait");
}

static void bench_close(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		int fd = (int)syscall(SYS_dup, 0);

		if (fd < 0 || close(fd) < 0)
			die("dup/close");
	}
}

static void bench_write(long n)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	long i;

	if (fd < 0)
		die("/dev/null");
	for (i = 0; i < n; i++)
		if (write(fd, "x", 1) != 1)
			die("write");
}

static void connect_loop(long n, int family, const struct sockaddr *addr, socklen_t len, int lfd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	long i;

	for (i = 0; i < n; i++) {
		int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), conn;

		if (fd < 0)
			die("socket");
		if (connect(fd, addr, len) < 0)
			die("connect");
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			die("accept");
		if (family == AF_INET && setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
			die("SO_LINGER");
		if (close(fd) < 0 || close(conn) < 0)
			die("close");
	}
}

static void bench_unix_connect(long n)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	int lfd;

	/* Abstract name: sun_path[0] is NUL, the name follows. */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			  (size_t)snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
					   "libbackoff-bench-%ld", (long)getpid()));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, len) < 0 || listen(lfd, 16) < 0)
		die("unix listen");
	connect_loop(n, AF_UNIX, (struct sockaddr *)&sun, len, lfd);
}

static void bench_tcp_connect(long n)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, len) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) < 0)
		die("tcp listen");
	connect_loop(n, AF_INET, (struct sockaddr *)&sin, len, lfd);
}

static void bench_nb_connect(long n)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	socklen_t len = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ep = epoll_create1(EPOLL_CLOEXEC);
	static long token;
	long i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || ep < 0 || bind(lfd, (struct sockaddr *)&sin, len) < 0 ||
	    listen(lfd, 64) < 0 || getsockname(lfd, (struct sockaddr *)&sin, &len) < 0)
		die("tcp listen");
	for (i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), conn,
		    err = 0;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET,
					  .data.ptr = &token };
		socklen_t elen = sizeof(err);

		if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			die("socket/epoll_ctl");
		if (connect(fd, (struct sockaddr *)&sin, len) < 0 && errno != EINPROGRESS)
			die("connect");
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			die("accept");
		do {
			if (epoll_wait(ep, &ev, 1, 1000) < 0)
				die("epoll_wait");
		} while (!(ev.events & EPOLLOUT));
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0)
			die("SO_ERROR");
		if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
			die("SO_LINGER");
		if (close(fd) < 0 || close(conn) < 0)
			die("close");
	}
}

static const char greeting[] = "220 ready\r\n";
static const char request[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
			       "Connection: close\r\n\r\nok\n";

/* Raw system calls for the server's side: the hooks see the client's calls alone. */
static long raw_io(long nr, int fd, const void *buf, size_t n)
{
	long rc;

	do
		rc = syscall(nr, fd, buf, n);
	while (rc < 0 && errno == EINTR);
	return rc;
}

static void answer_loop(long n, int ask, int take)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	socklen_t len = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	const char *answer = ask ? response : greeting;
	size_t alen = ask ? sizeof(response) - 1 : sizeof(greeting) - 1;
	char buf[512];
	long i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, len) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) < 0)
		die("tcp listen");
	for (i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), conn;

		if (fd < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&sin, len) < 0)
			die("connect");
		conn = (int)syscall(SYS_accept4, lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			die("accept");
		if (ask) {
			if (write(fd, request, sizeof(request) - 1) != (ssize_t)sizeof(request) - 1)
				die("write");
			if (raw_io(SYS_read, conn, buf, sizeof(buf)) <= 0)
				die("server read");
		}
		if (raw_io(SYS_write, conn, answer, alen) != (long)alen)
			die("server write");
		/* One read takes the whole answer: it is in the socket before the read. */
		if (take && read(fd, buf, sizeof(buf)) != (ssize_t)alen)
			die("read");
		if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
			die("SO_LINGER");
		if (close(fd) < 0 || syscall(SYS_close, conn) < 0)
			die("close");
	}
}

static void bench_greet(long n)
{
	answer_loop(n, 0, 1);
}

static void bench_greet_noread(long n)
{
	answer_loop(n, 0, 0);
}

static void bench_request(long n)
{
	answer_loop(n, 1, 1);
}

static void bench_request_noread(long n)
{
	answer_loop(n, 1, 0);
}

/* K non-blocking connects to a port that refuses, left in flight. */
static void start_inflight(long k)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int dead = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (dead < 0 || bind(dead, (struct sockaddr *)&sin, len) < 0 ||
	    getsockname(dead, (struct sockaddr *)&sin, &len) < 0)
		die("bind");
	for (i = 0; i < k; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (fd < 0)
			die("socket (raise the fd limit)");
		connect(fd, (struct sockaddr *)&sin, len);
		poll(&p, 1, 0); /* the first failure is seen, and hidden, here */
	}
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(long n);
	} modes[] = {
		{ "send", bench_send },
		{ "poll", bench_poll },
		{ "epoll", bench_epoll },
		{ "close", bench_close },
		{ "write", bench_write },
		{ "unix-connect", bench_unix_connect },
		{ "tcp-connect", bench_tcp_connect },
		{ "nb-connect", bench_nb_connect },
		{ "greet", bench_greet },
		{ "greet-noread", bench_greet_noread },
		{ "request", bench_request },
		{ "request-noread", bench_request_noread },
	};
	const char *inflight = getenv("FASTPATH_INFLIGHT");
	long long start;
	char *end;
	long n;
	size_t i;

	if (argc != 3)
		goto usage;
	errno = 0;
	n = strtol(argv[2], &end, 10);
	if (errno || end == argv[2] || *end || n < 0)
		goto usage;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[1], modes[i].name) == 0) {
			if (inflight)
				start_inflight(strtol(inflight, NULL, 10));
			start = now_ns();
			modes[i].run(n);
			printf("%s %ld loop_ns=%lld\n", argv[1], n, now_ns() - start);
			return 0;
		}
	}
usage:
	fprintf(stderr, "usage: fastpath send|poll|epoll|close|write|unix-connect|tcp-connect|"
			"nb-connect|greet|greet-noread|request|request-noread N\n");
	return 2;
}
