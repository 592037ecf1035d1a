/* stress: many threads connecting to late servers at once, blocking and not, then sending. */

/*
 * usage: stress [--threads N] [--connects M] [--late-max MS] [--watchdog S]
 *
 * Each of N client threads has a server thread of its own.  For each of its M
 * connects the client binds a fresh listening socket (not yet listening, so
 * the port refuses), hands it to its server, which calls listen() only after
 * a random 1..MS ms, and connects at once: only a retry can succeed.  The
 * connects rotate through the styles a program uses:
 *   blocking   connect() on a blocking socket
 *   poll       non-blocking connect(), poll(POLLOUT), SO_ERROR
 *   epoll      the same with epoll, registered after the connect
 *   epoll-pre  the same, registered before the connect (a thread's long-lived set)
 *   gai        getaddrinfo(NULL, port) and each address in turn, as curl does
 *              (IPv6 and IPv4 loopback; the server is dual-stack)
 * After each connect the client sends a request with send() and a datagram
 * with sendto(), reads the reply with recv() and closes.
 *
 * Made to be run under libbackoff: preloaded, or linked with its objects (the
 * ThreadSanitizer build).  Prints one line of counts; exits 0 only if every
 * connect succeeded and every reply arrived, 1 otherwise, 3 if the watchdog
 * (default 600 s) fired first.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define WAIT_MS 30000 /* a connect or a reply taking longer is a failure */
#define REQUEST "ping"
#define REPLY "pong"

enum style { S_BLOCKING, S_POLL, S_EPOLL, S_EPOLL_PRE, S_GAI, S_COUNT };

static const char *const style_names[S_COUNT] = { "blocking", "poll", "epoll", "epoll-pre", "gai" };

struct order {
	int lfd;       /* the listening socket to serve, or -1 to stop */
	long after_ms; /* listen() after this long */
};

struct pair {
	unsigned id;
	int orders[2]; /* client -> server pipe */
	int done[2];   /* server -> client pipe: one byte per served order */
	int udp;       /* the server's datagram socket */
	struct sockaddr_in udp_addr;
	pthread_t client, server;
	uint64_t rng;
};

static long opt_threads = 64, opt_connects = 50, opt_late_max = 40;
static atomic_ulong n_ok[S_COUNT], n_failed[S_COUNT], n_replies, n_datagrams_sent,
	n_datagrams_received;
static atomic_ulong n_server_errors;

static long parse_long(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "stress: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Reads exactly @n bytes (pipes between the threads). */
static int read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- the server side: listen late, answer one request ---- */

static void serve_one(struct pair *p, const struct order *o)
{
	struct pollfd pfd = { .fd = o->lfd, .events = POLLIN };
	char buf[16];
	int conn;

	sleep_ms(o->after_ms);
	if (listen(o->lfd, 4) != 0 || poll(&pfd, 1, WAIT_MS) != 1) {
		atomic_fetch_add(&n_server_errors, 1);
		return;
	}
	conn = accept(o->lfd, NULL, NULL);
	if (conn < 0) {
		atomic_fetch_add(&n_server_errors, 1);
		return;
	}
	pfd.fd = conn;
	if (poll(&pfd, 1, WAIT_MS) == 1 && recv(conn, buf, sizeof(buf), 0) > 0)
		send(conn, REPLY, strlen(REPLY), MSG_NOSIGNAL);
	close(conn);
	/* The client's datagrams, as they came. */
	while (recv(p->udp, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		atomic_fetch_add(&n_datagrams_received, 1);
}

static void *server_main(void *arg)
{
	struct pair *p = arg;
	struct order o;

	while (read_all(p->orders[0], &o, sizeof(o)) == 0 && o.lfd >= 0) {
		char byte = 1;

		serve_one(p, &o);
		close(o.lfd);
		if (write_all(p->done[1], &byte, 1) != 0)
			break;
	}
	/* The last datagrams, if they are in by now. */
	while (recv(p->udp, &o, sizeof(o), MSG_DONTWAIT) > 0)
		atomic_fetch_add(&n_datagrams_received, 1);
	return NULL;
}

/* ---- the client side ---- */

/* A bound, not yet listening socket on 127.0.0.1 (or dual-stack [::]); its port in *port. */
static int bound_socket(bool dual, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, zero = 0, fd;

	memset(&ss, 0, sizeof(ss));
	if (dual) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (dual)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(dual ? ((struct sockaddr_in6 *)&ss)->sin6_port
			   : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* Waits for the outcome of a non-blocking connect of @fd; 0 or -1 with errno. */
static int await_connect(int fd, enum style style, int epfd)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.fd = fd };
	socklen_t len = sizeof(int);
	int n, err = 0;

	if (style == S_POLL || style == S_GAI) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };

		n = poll(&pfd, 1, WAIT_MS);
	} else {
		if (style == S_EPOLL && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
			return -1;
		n = epoll_wait(epfd, &ev, 1, WAIT_MS);
		epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
	}
	if (n < 0)
		return -1;
	if (n == 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return -1;
	errno = err;
	return err ? -1 : 0;
}

/* One connect of @style to @addr on a fresh socket; the connected fd or -1. */
static int connect_to(const struct sockaddr *addr, socklen_t alen, enum style style, int epfd)
{
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), flags;

	if (fd < 0)
		return -1;
	if (style == S_BLOCKING) {
		if (connect(fd, addr, alen) == 0)
			return fd;
		goto out_close;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
		goto out_close;
	if (style == S_EPOLL_PRE) {
		struct epoll_event ev = { .events = EPOLLOUT, .data.fd = fd };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
			goto out_close;
	}
	if (connect(fd, addr, alen) != 0 &&
	    (errno != EINPROGRESS || await_connect(fd, style, epfd) != 0))
		goto out_close;
	if (style == S_EPOLL_PRE)
		epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
	fcntl(fd, F_SETFL, flags);
	return fd;
out_close:
	close(fd);
	return -1;
}

/* Every address of getaddrinfo(NULL, port) in turn, as a program walking its list does. */
static int connect_by_list(uint16_t port, int epfd)
{
	struct addrinfo hints, *res, *ai;
	char service[8];
	int fd = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	if (getaddrinfo(NULL, service, &hints, &res) != 0)
		return -1;
	for (ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_to(ai->ai_addr, ai->ai_addrlen, S_GAI, epfd);
	freeaddrinfo(res);
	return fd;
}

static bool exchange(struct pair *p, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[16];
	ssize_t n;
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (udp >= 0) {
		if (sendto(udp, "dgram", 5, 0, (struct sockaddr *)&p->udp_addr,
			   sizeof(p->udp_addr)) == 5)
			atomic_fetch_add(&n_datagrams_sent, 1);
		close(udp);
	}
	if (send(fd, REQUEST, strlen(REQUEST), MSG_NOSIGNAL) != (ssize_t)strlen(REQUEST))
		return false;
	if (poll(&pfd, 1, WAIT_MS) != 1)
		return false;
	n = recv(fd, buf, sizeof(buf), 0);
	return n == (ssize_t)strlen(REPLY) && memcmp(buf, REPLY, strlen(REPLY)) == 0;
}

static void *client_main(void *arg)
{
	struct pair *p = arg;
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	long i;

	for (i = 0; i < opt_connects; i++) {
		enum style style = (enum style)((p->id + (unsigned long)i) % S_COUNT);
		struct order o = { .lfd = -1 };
		struct sockaddr_in to;
		uint16_t port;
		char byte;
		int fd;

		o.lfd = bound_socket(style == S_GAI, &port);
		if (o.lfd < 0 && style == S_GAI) /* no IPv6 here: the IPv4 address of the list */
			o.lfd = bound_socket(false, &port);
		o.after_ms = 1 + (long)(next_random(&p->rng) % (uint64_t)opt_late_max);
		if (o.lfd < 0 || write_all(p->orders[1], &o, sizeof(o)) != 0) {
			atomic_fetch_add(&n_failed[style], 1);
			break;
		}
		if (style == S_GAI) {
			fd = connect_by_list(port, epfd);
		} else {
			memset(&to, 0, sizeof(to));
			to.sin_family = AF_INET;
			to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			to.sin_port = htons(port);
			fd = connect_to((struct sockaddr *)&to, sizeof(to), style, epfd);
		}
		if (fd >= 0) {
			atomic_fetch_add(&n_ok[style], 1);
			if (exchange(p, fd))
				atomic_fetch_add(&n_replies, 1);
			close(fd);
		} else {
			fprintf(stderr, "stress: thread %u connect %ld (%s) to port %u: %s\n",
				p->id, i, style_names[style], (unsigned)port,
				strerrorname_np(errno) ? strerrorname_np(errno) : "?");
			atomic_fetch_add(&n_failed[style], 1);
		}
		/* The server is done with the listening socket before the next one. */
		if (read_all(p->done[0], &byte, 1) != 0)
			break;
	}
	{
		struct order stop = { .lfd = -1 };

		write_all(p->orders[1], &stop, sizeof(stop));
	}
	if (epfd >= 0)
		close(epfd);
	return NULL;
}

static int setup_pair(struct pair *p, unsigned id)
{
	socklen_t len = sizeof(p->udp_addr);

	memset(p, 0, sizeof(*p));
	p->id = id;
	p->rng = ((uint64_t)getpid() << 20) ^ id ^ (uint64_t)time(NULL);
	if (pipe2(p->orders, O_CLOEXEC) != 0 || pipe2(p->done, O_CLOEXEC) != 0)
		return -1;
	p->udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (p->udp < 0)
		return -1;
	p->udp_addr.sin_family = AF_INET;
	p->udp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(p->udp, (struct sockaddr *)&p->udp_addr, len) != 0 ||
	    getsockname(p->udp, (struct sockaddr *)&p->udp_addr, &len) != 0)
		return -1;
	return 0;
}

/* Straight to the kernel: the hooks may be what hangs (their lock held for ever). */
static void on_watchdog(int sig)
{
	static const char msg[] = "stress: watchdog: still running, giving up\n";

	(void)sig;
	syscall(SYS_write, STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(3);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "connects", required_argument, NULL, 'c' },
		{ "late-max", required_argument, NULL, 'l' },
		{ "watchdog", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long ok = 0, failed = 0, total;
	long watchdog = 600;
	long long start;
	struct pair *pairs;
	int opt, s;
	long i;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			opt_threads = parse_long(optarg, 1, 1024);
			break;
		case 'c':
			opt_connects = parse_long(optarg, 1, 100000);
			break;
		case 'l':
			opt_late_max = parse_long(optarg, 1, 10000);
			break;
		case 'w':
			watchdog = parse_long(optarg, 1, 86400);
			break;
		default:
			fprintf(stderr, "usage: stress [--threads N] [--connects M] "
					"[--late-max MS] [--watchdog S]\n");
			return 2;
		}
	}
	signal(SIGALRM, on_watchdog);
	alarm((unsigned)watchdog);
	pairs = calloc((size_t)opt_threads, sizeof(*pairs));
	if (!pairs)
		return 2;
	start = mono_ms();
	for (i = 0; i < opt_threads; i++) {
		if (setup_pair(&pairs[i], (unsigned)i) != 0 ||
		    pthread_create(&pairs[i].server, NULL, server_main, &pairs[i]) != 0 ||
		    pthread_create(&pairs[i].client, NULL, client_main, &pairs[i]) != 0) {
			perror("stress: set-up");
			return 2;
		}
	}
	for (i = 0; i < opt_threads; i++) {
		pthread_join(pairs[i].client, NULL);
		pthread_join(pairs[i].server, NULL);
	}
	total = (unsigned long)(opt_threads * opt_connects);
	printf("stress: threads=%ld connects=%lu", opt_threads, total);
	for (s = 0; s < S_COUNT; s++) {
		ok += atomic_load(&n_ok[s]);
		failed += atomic_load(&n_failed[s]);
		printf(" %s=%lu/%lu", style_names[s], atomic_load(&n_ok[s]),
		       atomic_load(&n_ok[s]) + atomic_load(&n_failed[s]));
	}
	printf(" ok=%lu failed=%lu replies=%lu datagrams=%lu/%lu server_errors=%lu "
	       "elapsed_ms=%lld\n",
	       ok, failed, atomic_load(&n_replies), atomic_load(&n_datagrams_received),
	       atomic_load(&n_datagrams_sent), atomic_load(&n_server_errors), mono_ms() - start);
	for (i = 0; i < opt_threads; i++) {
		close(pairs[i].orders[0]);
		close(pairs[i].orders[1]);
		close(pairs[i].done[0]);
		close(pairs[i].done[1]);
		close(pairs[i].udp);
	}
	free(pairs);
	return ok == total && failed == 0 && atomic_load(&n_replies) == total ? 0 : 1;
}
