/* evloop: non-blocking connects driven by event loops of the program's own. */

/*
 * usage: evloop [--wait W[,W...]] [--register before|after[,...]] [--detect sockopt|connect]
 *               [--threads N] [--timeout MS] [--elapsed] ADDR...
 *        evloop --reuse close|close_range|dup2|fclose|syscall[-back] --dead ADDR [--live ADDR]
 *               [--wait poll|epoll-lt] [--hold MS] [--under-way [--unix-b]]
 *
 * ADDR is HOST:PORT, [V6]:PORT or unix:PATH (numeric, no name resolution).
 *
 * Connect mode: N threads (default 1) start together; thread I connects a
 * non-blocking socket to ADDR[I % count] and waits in a loop of its own with
 * W[I % count] (poll, ppoll, select, pselect, epoll-lt, epoll-et; epoll: an
 * epoll instance of the thread's own, the socket added before or after
 * connect() as --register[I % count] says, default after).  The outcome is
 * read from SO_ERROR (--detect sockopt, the default: curl, libpq, asyncio,
 * node) or from a second connect() (--detect connect: 0 or EISCONN means
 * connected, EALREADY not yet, anything else is the failure: hiredis, perl).
 * A claimed success is checked with getpeername().  Then the thread reads
 * what the server sends until EOF, through the same loop.  All of it within
 * --timeout MS (default 10000).
 *
 * Output, one line per thread in order, connect_ms (the time connect() and
 * the wait for its outcome took) with --elapsed only:
 *   thread I OK <bytes received> [connect_ms=N]
 *   thread I <errno name> [connect_ms=N]     (ETIMEDOUT: the loop's own timeout)
 * Exit 0 only if every thread printed OK.
 *
 * With --under-way (close, fclose or syscall), A is closed as soon as its
 * connect() returned, its attempt under way (--dead: a destination that
 * does not answer), and B, a new socket on its number, is left unconnected
 * for --hold MS, waited for with poll now and then (a library that took B
 * for A would hide it, or connect it to --dead); then B is asked what a
 * program would ask (poll, SO_ERROR, getpeername) and, with --live,
 * connected there and read.  With --unix-b, B is one end of a unix
 * socketpair instead (made past any socket() hook), read from the other.
 *
 * Reuse mode: the fd-reuse guard of a library that retries connects behind
 * the program's back.  A non-blocking socket A connects to --dead (refused)
 * and waits once (100 ms) with poll or epoll, so that a retrying library
 * hides the failure and schedules a retry.  A is then asked what a program
 * would ask meanwhile: a second connect(), SO_ERROR and a read.  A is then closed in the chosen
 * way (fclose of an fdopen()ed stream and syscall(SYS_close) go around any
 * close() hook), and a new socket B gets the same number (dup2: a new socket
 * is dup2()ed onto A's number).  With -back (close-back, close_range-back,
 * dup2-back), B is A's own socket again: a dup() of A made before the close
 * (dup() is not hooked) is moved back onto A's number with fcntl(F_DUPFD),
 * after dup2-back has put the number free with syscall(SYS_close), so that
 * only the hook named can have told the library that the number was given
 * up: the socket, being the same, passes any identity check.  B is looked at as the kernel sees it,
 * optionally connected to --live, then the program waits in poll/epoll on
 * something else until --hold MS (default 1000) after the start, past A's
 * retry, and looks at B again.  Each line is "WHAT: RESULT":
 *   A connect: EINPROGRESS          A wait: 0 (nothing seen)     A again: EALREADY
 *   A SO_ERROR: 0                   A read: EAGAIN               A closed: METHOD
 *   B fd: same | different           B poll: 1 OUT|HUP            B SO_ERROR: 0
 *   B read: ENOTCONN                 [B connect: EINPROGRESS      B connected: 0]
 *   B in epoll set: no               B peer: ADDR | ENOTCONN      [B data: TEXT]
 * Exit 0 once all the steps ran (the lines are for the caller to judge).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define MAX_THREADS 256
#define MAX_LIST 16
#define REPLY_MAX 256

enum wait_kind { W_POLL, W_PPOLL, W_SELECT, W_PSELECT, W_EPOLL_LT, W_EPOLL_ET };

static const char *const wait_names[] = {
	[W_POLL] = "poll",	 [W_PPOLL] = "ppoll",	    [W_SELECT] = "select",
	[W_PSELECT] = "pselect", [W_EPOLL_LT] = "epoll-lt", [W_EPOLL_ET] = "epoll-et",
};

struct address {
	struct sockaddr_storage ss;
	socklen_t len;
};

struct options {
	enum wait_kind waits[MAX_LIST];
	unsigned nwaits;
	int before[MAX_LIST]; /* register in epoll before connect() */
	unsigned nbefore;
	int detect_connect;
	int elapsed;
	long threads;
	long timeout_ms;
	struct address addrs[MAX_LIST];
	unsigned naddrs;
};

struct worker {
	pthread_t tid;
	unsigned index;
	const struct options *o;
	int err; /* 0: OK */
	long long connect_ms;
	char reply[REPLY_MAX];
};

static pthread_barrier_t start_line;

static void usage(void)
{
	fprintf(stderr,
		"usage: evloop [--wait W[,W...]] [--register before|after[,...]]\n"
		"              [--detect sockopt|connect] [--threads N] [--timeout MS] "
		"[--elapsed]\n"
		"              ADDR...\n"
		"       evloop --reuse close|close_range|dup2|fclose|syscall[-back] --dead ADDR\n"
		"              [--live ADDR] [--wait poll|epoll-lt] [--hold MS]\n");
	exit(2);
}

static long parse_long(const char *s, long min, long max)
{
	long v;

	if (number_in(s, min, max, &v) != 0)
		usage();
	return v;
}

static void parse_addr(const char *spec, struct address *a)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon;
	size_t len;
	uint16_t port;
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->ss;

	memset(a, 0, sizeof(*a));
	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&a->ss;

		if (strlen(spec + 5) >= sizeof(sun->sun_path))
			usage();
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, spec + 5);
		a->len = sizeof(*sun);
		return;
	}
	if (spec[0] == '[') {
		const char *close_br = strchr(spec, ']');

		if (!close_br || close_br[1] != ':')
			usage();
		len = (size_t)(close_br - spec - 1);
		colon = close_br + 1;
		spec++;
	} else {
		colon = strrchr(spec, ':');
		if (!colon)
			usage();
		len = (size_t)(colon - spec);
	}
	if (len >= sizeof(host))
		usage();
	memcpy(host, spec, len);
	host[len] = '\0';
	port = htons((uint16_t)parse_long(colon + 1, 0, 65535));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = port;
		a->len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = port;
		a->len = sizeof(*sin6);
	} else {
		usage();
	}
}

static enum wait_kind parse_wait(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(wait_names) / sizeof(wait_names[0]); i++)
		if (strcmp(s, wait_names[i]) == 0)
			return (enum wait_kind)i;
	usage();
	return W_POLL;
}

/* Splits a comma list into its items, each handed to @item with @ctx and its index. */
static unsigned parse_list(const char *s, void (*item)(const char *, void *, unsigned), void *ctx)
{
	char buf[512], *save = NULL, *tok;
	unsigned n = 0;

	if (strlen(s) >= sizeof(buf))
		usage();
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_LIST)
			usage();
		item(tok, ctx, n++);
	}
	if (n == 0)
		usage();
	return n;
}

static void wait_item(const char *s, void *ctx, unsigned i)
{
	((struct options *)ctx)->waits[i] = parse_wait(s);
}

static void register_item(const char *s, void *ctx, unsigned i)
{
	if (strcmp(s, "before") != 0 && strcmp(s, "after") != 0)
		usage();
	((struct options *)ctx)->before[i] = strcmp(s, "before") == 0;
}

static const char *errno_name(int err)
{
	static _Thread_local char buf[16];
	const char *name = strerrorname_np(err);

	if (name)
		return name;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(out, size, "%s:%u", host, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(out, size, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		snprintf(out, size, "unix:%s", ((const struct sockaddr_un *)ss)->sun_path);
	} else {
		snprintf(out, size, "family-%d", ss->ss_family);
	}
}

static void format_revents(short revents, char *out, size_t size)
{
	static const struct {
		short bit;
		const char *name;
	} bits[] = { { POLLIN, "IN" },	 { POLLPRI, "PRI" }, { POLLOUT, "OUT" },
		     { POLLERR, "ERR" }, { POLLHUP, "HUP" }, { POLLNVAL, "NVAL" } };
	size_t i, used = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		if (!(revents & bits[i].bit))
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%s", used ? "|" : "",
					 bits[i].name);
		if (used >= size)
			return;
	}
	if (used == 0)
		snprintf(out, size, "0");
}

/* ---- connect mode ---- */

struct loop {
	enum wait_kind kind;
	int fd;
	int ep; /* epoll kinds */
	uint64_t token;
};

static uint32_t epoll_bits(const struct loop *l, uint32_t events)
{
	return events | (l->kind == W_EPOLL_ET ? (uint32_t)EPOLLET : 0U);
}

static int loop_register(struct loop *l, int op, uint32_t events)
{
	struct epoll_event ev = { .events = epoll_bits(l, events), .data.u64 = l->token };

	return epoll_ctl(l->ep, op, l->fd, &ev);
}

/*
 * One wait for @events (POLLIN or POLLOUT) on the loop's fd, until @deadline
 * at the latest.  Returns 1 when the fd was reported, 0 at the deadline, -1
 * with errno on an error.  EINTR is waited through.
 */
static int loop_wait(struct loop *l, short events, long long deadline)
{
	for (;;) {
		long long left = deadline - mono_ms();
		struct timespec ts;
		struct timeval tv;
		struct pollfd pfd = { .fd = l->fd, .events = events };
		struct epoll_event evs[4];
		fd_set set;
		int n, i;

		if (left < 0)
			left = 0;
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		tv.tv_sec = (time_t)(left / 1000);
		tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
		switch (l->kind) {
		case W_POLL:
			n = poll(&pfd, 1, (int)left);
			break;
		case W_PPOLL:
			n = ppoll(&pfd, 1, &ts, NULL);
			break;
		case W_SELECT:
		case W_PSELECT:
			FD_ZERO(&set);
			FD_SET(l->fd, &set);
			if (l->kind == W_SELECT)
				n = select(l->fd + 1, events == POLLIN ? &set : NULL,
					   events == POLLOUT ? &set : NULL, NULL, &tv);
			else
				n = pselect(l->fd + 1, events == POLLIN ? &set : NULL,
					    events == POLLOUT ? &set : NULL, NULL, &ts, NULL);
			if (n > 0 && !FD_ISSET(l->fd, &set)) {
				errno = EPROTO; /* select counted an fd it was not given */
				return -1;
			}
			break;
		default:
			n = epoll_wait(l->ep, evs, 4, (int)left);
			for (i = 0; i < n; i++) {
				if (evs[i].data.u64 != l->token) {
					errno = EPROTO; /* an event with data the program never gave
							 */
					return -1;
				}
			}
			break;
		}
		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* Waits for the connect's outcome; returns 0 when connected, else an errno. */
static int await_connected(struct loop *l, const struct options *o, const struct address *a,
			   long long deadline)
{
	for (;;) {
		int n = loop_wait(l, POLLOUT, deadline), err = 0;
		socklen_t len = sizeof(err);

		if (n == 0)
			return ETIMEDOUT;
		if (n < 0)
			return errno;
		if (o->detect_connect) {
			/* hiredis, perl: connect() again says where the attempt stands. */
			if (connect(l->fd, (const struct sockaddr *)&a->ss, a->len) == 0 ||
			    errno == EISCONN)
				return 0;
			/* Readiness was reported: EINPROGRESS here is a failure (perl). */
			if (errno == EALREADY)
				continue;
			return errno;
		}
		if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			return errno;
		return err;
	}
}

/* Reads until EOF through the loop; returns 0 or an errno. */
static int read_reply(struct loop *l, char *out, size_t size, long long deadline)
{
	size_t got = 0;

	if (l->kind >= W_EPOLL_LT && loop_register(l, EPOLL_CTL_MOD, EPOLLIN) < 0)
		return errno;
	for (;;) {
		char buf[512];
		ssize_t n = read(l->fd, buf, sizeof(buf));

		if (n > 0) {
			size_t take = (size_t)n < size - 1 - got ? (size_t)n : size - 1 - got;

			memcpy(out + got, buf, take);
			got += take;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno;
		n = loop_wait(l, POLLIN, deadline);
		if (n == 0)
			return ETIMEDOUT;
		if (n < 0)
			return errno;
	}
	while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == '\r'))
		got--;
	out[got] = '\0';
	return 0;
}

static int run_worker(struct worker *w)
{
	const struct options *o = w->o;
	const struct address *a = &o->addrs[w->index % o->naddrs];
	struct loop l = {
		.kind = o->waits[w->index % o->nwaits],
		.ep = -1,
		.token = 0x5eed000000000000ULL | w->index,
	};
	int before = o->nbefore ? o->before[w->index % o->nbefore] : 0;
	long long start, deadline;
	int err, registered = 0;

	l.fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l.fd < 0)
		return errno;
	if ((l.kind == W_SELECT || l.kind == W_PSELECT) && l.fd >= FD_SETSIZE)
		return EMFILE;
	if (l.kind >= W_EPOLL_LT) {
		l.ep = epoll_create1(EPOLL_CLOEXEC);
		if (l.ep < 0)
			return errno;
		if (before) {
			if (loop_register(&l, EPOLL_CTL_ADD, EPOLLOUT) < 0)
				return errno;
			registered = 1;
		}
	}
	pthread_barrier_wait(&start_line);
	start = mono_ms();
	deadline = start + o->timeout_ms;
	if (connect(l.fd, (const struct sockaddr *)&a->ss, a->len) == 0)
		err = 0;
	else
		err = errno == EINPROGRESS ? EINPROGRESS : errno;
	if (err == EINPROGRESS) {
		if (l.kind >= W_EPOLL_LT && !before) {
			if (loop_register(&l, EPOLL_CTL_ADD, EPOLLOUT) < 0)
				return errno;
			registered = 1;
		}
		err = await_connected(&l, o, a, deadline);
	}
	w->connect_ms = mono_ms() - start;
	if (err == 0) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);

		/* A connect reported done on a socket with no peer would be a lie. */
		if (getpeername(l.fd, (struct sockaddr *)&peer, &len) < 0)
			err = errno;
	}
	if (err == 0 && l.kind >= W_EPOLL_LT && !registered &&
	    loop_register(&l, EPOLL_CTL_ADD, EPOLLOUT) < 0)
		err = errno; /* connected at once, before any registration */
	if (err == 0)
		err = read_reply(&l, w->reply, sizeof(w->reply), deadline);
	if (l.ep >= 0)
		close(l.ep);
	close(l.fd);
	return err;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->err = run_worker(w);
	return NULL;
}

static int connect_mode(struct options *o)
{
	static struct worker workers[MAX_THREADS];
	long i;
	int failed = 0;

	if (pthread_barrier_init(&start_line, NULL, (unsigned)o->threads) != 0) {
		perror("evloop: barrier");
		return 2;
	}
	for (i = 0; i < o->threads; i++) {
		workers[i].index = (unsigned)i;
		workers[i].o = o;
		if (pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]) != 0) {
			perror("evloop: pthread_create");
			exit(2);
		}
	}
	for (i = 0; i < o->threads; i++) {
		pthread_join(workers[i].tid, NULL);
		if (workers[i].err == 0)
			printf("thread %ld OK %s", i, workers[i].reply);
		else
			printf("thread %ld %s", i, errno_name(workers[i].err));
		if (o->elapsed)
			printf(" connect_ms=%lld", workers[i].connect_ms);
		printf("\n");
		failed |= workers[i].err != 0;
	}
	return failed;
}

/* ---- reuse mode ---- */

static void say(const char *what, const char *result)
{
	printf("%s: %s\n", what, result);
	fflush(stdout);
}

static void say_errno(const char *what, int rc)
{
	say(what, rc == 0 ? "0" : errno_name(errno));
}

/* Closes @fd the way @how says; for dup2, a new socket takes the number. */
static void close_by(const char *how, int fd, int family)
{
	int rc;

	if (strcmp(how, "close") == 0) {
		rc = close(fd);
	} else if (strcmp(how, "close_range") == 0) {
		rc = close_range((unsigned)fd, (unsigned)fd, 0);
	} else if (strcmp(how, "syscall") == 0) {
		rc = (int)syscall(SYS_close, fd);
	} else if (strcmp(how, "fclose") == 0) {
		/* glibc's fclose closes the descriptor internally, past any close() hook. */
		FILE *f = fdopen(fd, "r+");

		rc = f ? fclose(f) : -1;
	} else if (strcmp(how, "dup2") == 0) {
		int other = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		rc = other < 0 ? -1 : dup2(other, fd);
		if (rc >= 0) {
			rc = 0;
			close(other);
		}
	} else {
		usage();
		return;
	}
	say("A closed", rc == 0 ? how : errno_name(errno));
}

/* One wait on @fd with poll or epoll (@ep), at most @ms; says what was seen. */
static void wait_once(const char *what, int fd, int ep, short events, int ms)
{
	char text[64], revents[32];
	int n;

	if (ep < 0) {
		struct pollfd pfd = { .fd = fd, .events = events };

		n = poll(&pfd, 1, ms);
		format_revents(pfd.revents, revents, sizeof(revents));
	} else {
		struct epoll_event ev;

		n = epoll_wait(ep, &ev, 1, ms);
		format_revents(n > 0 ? (short)ev.events : 0, revents, sizeof(revents));
	}
	if (n < 0)
		snprintf(text, sizeof(text), "%s", errno_name(errno));
	else if (n == 0)
		snprintf(text, sizeof(text), "0");
	else
		snprintf(text, sizeof(text), "%d %s", n, revents);
	say(what, text);
}

/* "B fd: " the number B took: A's, or another. */
static void say_fd(int a, int b)
{
	if (b == a)
		say("B fd", "same");
	else
		printf("B fd: different (A %d, B %d)\n", a, b);
}

/* "WHAT: " @fd's pending error (SO_ERROR): 0 or its name. */
static void say_so_error(const char *what, int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		say_errno(what, -1);
	else
		say(what, err ? errno_name(err) : "0");
}

/* "WHAT: " @fd's peer (getpeername): its address, or the errno's name. */
static void say_peer(const char *what, int fd)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	char text[128];

	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0) {
		say_errno(what, -1);
	} else {
		format_addr(&peer, text, sizeof(text));
		say(what, text);
	}
}

static int reuse_mode(const char *how, int use_epoll, const struct address *dead,
		      const struct address *live, long hold_ms)
{
	long long start = mono_ms();
	const char *suffix = strstr(how, "-back");
	int back = suffix && strcmp(suffix, "-back") == 0;
	int a, b, keep = -1, ep = -1, err = 0, pipefd[2], put_back = 0;
	char method[32];
	socklen_t len = sizeof(err);
	struct epoll_event ev;
	char text[128];

	snprintf(method, sizeof(method), "%.*s", back ? (int)(suffix - how) : (int)strlen(how),
		 how);
	if (use_epoll && (ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("evloop: epoll_create1");
		return 2;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		perror("evloop: pipe2");
		return 2;
	}
	a = socket(dead->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a < 0) {
		perror("evloop: socket");
		return 2;
	}
	say_errno("A connect", connect(a, (const struct sockaddr *)&dead->ss, dead->len));
	if (ep >= 0) {
		ev.events = EPOLLOUT;
		ev.data.fd = a;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev) < 0)
			say_errno("A epoll add", -1);
	}
	wait_once("A wait", a, ep, POLLOUT, 100);

	/* A's retry is pending: what a program asking now is told. */
	say_errno("A again", connect(a, (const struct sockaddr *)&dead->ss, dead->len));
	say_so_error("A SO_ERROR", a);
	{
		char c;

		say("A read", read(a, &c, 1) < 0 ? errno_name(errno) : "data");
	}

	if (back)
		keep = dup(a);
	close_by(method, a, dead->ss.ss_family);

	if (back) {
		if (strcmp(method, "dup2") == 0)
			syscall(SYS_close, a);
		b = keep < 0 ? -1 : fcntl(keep, F_DUPFD_CLOEXEC, a);
		if (keep >= 0)
			close(keep);
	} else if (strcmp(method, "dup2") == 0) {
		b = a;
	} else {
		b = socket(dead->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (b < 0) {
		perror("evloop: socket");
		return 2;
	}
	say_fd(a, b);

	/* A new socket, as the kernel answers for it. */
	wait_once("B poll", b, -1, POLLOUT, 0);
	say_so_error("B SO_ERROR", b);
	{
		char c;

		say("B read", read(b, &c, 1) < 0 ? errno_name(errno) : "data");
	}

	if (live) {
		int rc = connect(b, (const struct sockaddr *)&live->ss, live->len);

		say("B connect", rc == 0 ? "0" : errno_name(errno));
		if (rc == 0 || errno == EINPROGRESS) {
			struct pollfd pfd = { .fd = b, .events = POLLOUT };

			poll(&pfd, 1, 3000);
			len = sizeof(err);
			err = 0;
			if (getsockopt(b, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
				err = errno;
			say("B connected", err ? errno_name(err) : "0");
		}
	}

	/* Wait past A's retry inside the wait hooks, on something else entirely. */
	for (;;) {
		long long left = start + hold_ms - mono_ms();
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };

		if (left <= 0)
			break;
		if (ep >= 0 && !put_back) {
			/* A's set, empty now: anything it reports was put back behind our back. */
			if (epoll_wait(ep, &ev, 1, (int)left) > 0) {
				printf("hold: epoll event 0x%x data %d\n", ev.events, ev.data.fd);
				put_back = 1;
			}
		} else {
			poll(&pfd, 1, (int)left);
		}
	}

	if (ep >= 0) {
		ev.events = EPOLLOUT;
		ev.data.fd = b;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev) == 0)
			say("B in epoll set", "no");
		else
			say("B in epoll set", errno == EEXIST ? "yes" : errno_name(errno));
	}
	say_peer("B peer", b);
	if (live) {
		struct loop l = { .kind = W_POLL, .fd = b, .ep = -1 };
		int rc = read_reply(&l, text, sizeof(text), mono_ms() + 3000);

		say("B data", rc ? errno_name(rc) : text);
	}
	close(b);
	return 0;
}

/* --reuse HOW --under-way: A closed while its attempt is under way; B left alone meanwhile. */
static int reuse_under_way(const char *how, const struct address *dead, const struct address *live,
			   long hold_ms, int unix_b)
{
	long long start = mono_ms();
	char text[128];
	int a, b, pair[2] = { -1, -1 };

	a = socket(dead->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a < 0) {
		perror("evloop: socket");
		return 2;
	}
	say_errno("A connect", connect(a, (const struct sockaddr *)&dead->ss, dead->len));
	close_by(how, a, dead->ss.ss_family);
	if (unix_b)
		b = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) == 0
			    ? pair[0]
			    : -1;
	else
		b = socket(dead->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (b < 0) {
		perror("evloop: socket");
		return 2;
	}
	say_fd(a, b);
	/* Past A's attempt's deadline, B waited for as a program's loop would. */
	while (mono_ms() - start < hold_ms) {
		struct pollfd pfd = { .fd = b, .events = POLLOUT };

		if (poll(&pfd, 1, 50) != 1 ||
		    pfd.revents != (unix_b ? POLLOUT : POLLOUT | POLLHUP)) {
			format_revents(pfd.revents, text, sizeof(text));
			printf("hold: B poll %s\n", text);
			break;
		}
		usleep(50000);
	}
	wait_once("B poll", b, -1, POLLOUT, 0);
	say_so_error("B SO_ERROR", b);
	if (unix_b) {
		struct loop l = { .kind = W_POLL, .fd = b, .ep = -1 };
		int rc = write(pair[1], "pair", 4) == 4 ? 0 : errno;

		close(pair[1]);
		if (rc == 0)
			rc = read_reply(&l, text, sizeof(text), mono_ms() + 3000);
		say("B data", rc ? errno_name(rc) : text);
	} else {
		say_peer("B peer", b);
	}
	if (live && !unix_b) {
		struct loop l = { .kind = W_POLL, .fd = b, .ep = -1 };
		int rc = connect(b, (const struct sockaddr *)&live->ss, live->len);

		say("B connect", rc == 0 ? "0" : errno_name(errno));
		rc = read_reply(&l, text, sizeof(text), mono_ms() + 3000);
		say("B data", rc ? errno_name(rc) : text);
	}
	close(b);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wait", required_argument, NULL, 'w' },
		{ "register", required_argument, NULL, 'r' },
		{ "detect", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "elapsed", no_argument, NULL, 'e' },
		{ "reuse", required_argument, NULL, 'u' },
		{ "dead", required_argument, NULL, 'D' },
		{ "live", required_argument, NULL, 'L' },
		{ "hold", required_argument, NULL, 'h' },
		{ "under-way", no_argument, NULL, 'U' },
		{ "unix-b", no_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	static struct options o = { .nwaits = 1, .threads = 1, .timeout_ms = 10000 };
	const char *reuse = NULL, *dead = NULL, *live = NULL;
	long hold_ms = 1000;
	int opt, under_way = 0, unix_b = 0;

	o.waits[0] = W_POLL;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'w':
			o.nwaits = parse_list(optarg, wait_item, &o);
			break;
		case 'r':
			o.nbefore = parse_list(optarg, register_item, &o);
			break;
		case 'd':
			if (strcmp(optarg, "sockopt") != 0 && strcmp(optarg, "connect") != 0)
				usage();
			o.detect_connect = strcmp(optarg, "connect") == 0;
			break;
		case 'n':
			o.threads = parse_long(optarg, 1, MAX_THREADS);
			break;
		case 't':
			o.timeout_ms = parse_long(optarg, 0, 3600000);
			break;
		case 'e':
			o.elapsed = 1;
			break;
		case 'u':
			reuse = optarg;
			break;
		case 'D':
			dead = optarg;
			break;
		case 'L':
			live = optarg;
			break;
		case 'h':
			hold_ms = parse_long(optarg, 0, 3600000);
			break;
		case 'U':
			under_way = 1;
			break;
		case 'X':
			unix_b = 1;
			break;
		default:
			usage();
		}
	}
	if (reuse) {
		struct address d, l;

		if (!dead || optind != argc || o.nwaits != 1 ||
		    (o.waits[0] != W_POLL && o.waits[0] != W_EPOLL_LT))
			usage();
		parse_addr(dead, &d);
		if (live)
			parse_addr(live, &l);
		if (under_way)
			return reuse_under_way(reuse, &d, live ? &l : NULL, hold_ms, unix_b);
		return reuse_mode(reuse, o.waits[0] == W_EPOLL_LT, &d, live ? &l : NULL, hold_ms);
	}
	if (optind == argc || argc - optind > MAX_LIST)
		usage();
	for (; optind < argc; optind++)
		parse_addr(argv[optind], &o.addrs[o.naddrs++]);
	return connect_mode(&o);
}
