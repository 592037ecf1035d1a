/* probe: one connect() in a chosen style, its outcome printed as OK or an errno name. */

/*
 * usage: probe [--mode M] [--timeout MS] [--type stream|dgram] [--sndtimeo MS]
 *              [--alarm MS] [--sa-restart] [--read] [--fork N] [--first ADDR]
 *              [--elapsed] [--errno] ADDR
 *
 * ADDR is HOST:PORT, [V6]:PORT or unix:PATH (numeric addresses only, so no
 * name resolution is involved).
 *
 * --mode blocking (default) calls connect() on a blocking socket.  The other
 * modes (poll, ppoll, select, pselect, epoll-lt, epoll-et) connect on a
 * non-blocking socket the way OpenBSD nc's timeout_connect() does: wait until
 * the socket is writable (at most --timeout MS, default forever), read
 * SO_ERROR into errno, restore the file flags.  A timeout is ETIMEDOUT.
 *
 * Output on stdout: "OK" (with --read: "OK <bytes received until EOF>") and
 * status 0, or the errno name (strerrorname_np) and status 1.  A connect that
 * claims success on a socket that has no peer prints ENOTCONN.
 *
 * --alarm MS arms a one-shot ITIMER_REAL MS ms before the connect, caught by a
 * handler installed with or without SA_RESTART (--sa-restart); with --alarm
 * or --elapsed, "elapsed_ms=N alarms=K" goes to stderr after connect returns.
 *
 * --fork N forks N children that each do the connect; the parent waits for
 * them and exits 0 only if all of them succeeded.
 *
 * --first ADDR: before anything else, a non-blocking connect to ADDR, given
 * 100 ms in poll() and closed, its outcome ("first: OK", "first: ETIMEDOUT")
 * on stderr.  Against a closed port the library draws a delay for it in this
 * process: with --fork, the children are forked after their parent drew.
 *
 * --errno sets errno to EDOM before the connect (in the non-blocking modes,
 * again before the wait) and, if the connect succeeds, prints "errno=NAME"
 * on stderr: what a successful connect left in errno.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

enum mode { M_BLOCKING, M_POLL, M_PPOLL, M_SELECT, M_PSELECT, M_EPOLL_LT, M_EPOLL_ET };

struct probe_opts {
	enum mode mode;
	/* -1: wait forever */
	long timeout_ms;
	int type;
	/* 0: not set */
	long sndtimeo_ms;
	/* 0: no alarm */
	long alarm_ms;
	int sa_restart;
	int read_reply;
	int elapsed;
	int errno_check;
	long forks;
	const char *first;
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

static volatile sig_atomic_t alarms;

static void usage(void)
{
	fprintf(stderr,
		"usage: probe [--mode blocking|poll|ppoll|select|pselect|epoll-lt|epoll-et]\n"
		"             [--timeout MS] [--type stream|dgram] [--sndtimeo MS] [--alarm MS]\n"
		"             [--sa-restart] [--read] [--fork N] [--first ADDR] [--elapsed]\n"
		"             [--errno] ADDR\n");
	exit(2);
}

static long parse_long(const char *s, long min, long max)
{
	long v;

	if (number_in(s, min, max, &v) != 0)
		usage();
	return v;
}

static enum mode parse_mode(const char *name)
{
	if (strcmp(name, "blocking") == 0)
		return M_BLOCKING;
	if (strcmp(name, "poll") == 0)
		return M_POLL;
	if (strcmp(name, "ppoll") == 0)
		return M_PPOLL;
	if (strcmp(name, "select") == 0)
		return M_SELECT;
	if (strcmp(name, "pselect") == 0)
		return M_PSELECT;
	if (strcmp(name, "epoll-lt") == 0)
		return M_EPOLL_LT;
	if (strcmp(name, "epoll-et") == 0)
		return M_EPOLL_ET;
	usage();
	return M_BLOCKING;
}

static void parse_addr(const char *spec, struct probe_opts *o)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon;
	size_t len;
	uint16_t port;

	memset(&o->addr, 0, sizeof(o->addr));
	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&o->addr;

		if (strlen(spec + 5) >= sizeof(sun->sun_path))
			usage();
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, spec + 5);
		o->addr_len = sizeof(*sun);
		return;
	}
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':')
			usage();
		len = (size_t)(close - spec - 1);
		colon = close + 1;
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

	struct sockaddr_in *sin = (struct sockaddr_in *)&o->addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->addr;

	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = port;
		o->addr_len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = port;
		o->addr_len = sizeof(*sin6);
	} else {
		usage();
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void arm_alarm(const struct probe_opts *o)
{
	struct sigaction sa;
	struct itimerval it = {
		.it_value = {
			.tv_sec = o->alarm_ms / 1000,
			.tv_usec = (o->alarm_ms % 1000) * 1000,
		},
	};

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = o->sa_restart ? SA_RESTART : 0;
	if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &it, NULL) < 0) {
		perror("probe: alarm");
		exit(2);
	}
}

static long remaining_ms(long long deadline)
{
	long long left;

	if (deadline < 0)
		return -1;
	left = deadline - mono_ms();
	return left > 0 ? (long)left : 0;
}

/* Waits for EPOLLOUT (edge-triggered or not) on a fresh epoll instance. */
static int wait_epoll(int fd, int edge, int timeout_ms)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.fd = fd };
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int n, saved;

	if (ep < 0)
		return -1;
	if (edge)
		ev.events |= EPOLLET;
	n = epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	if (n == 0) {
		n = epoll_wait(ep, &ev, 1, timeout_ms);
		saved = errno;
		if (n >= 0)
			epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	} else {
		saved = errno;
	}
	close(ep);
	errno = saved;
	return n;
}

/* Waits until fd is writable; returns 1 if it is, 0 on timeout, -1 with errno. */
static int wait_writable(int fd, enum mode mode, long long deadline)
{
	long left = remaining_ms(deadline);
	struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000 };
	struct timeval tv = { .tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000 };
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	fd_set wfds;

	switch (mode) {
	case M_POLL:
		return poll(&pfd, 1, (int)left);
	case M_PPOLL:
		return ppoll(&pfd, 1, left < 0 ? NULL : &ts, NULL);
	case M_SELECT:
	case M_PSELECT:
		if (fd >= FD_SETSIZE) {
			errno = EMFILE;
			return -1;
		}
		FD_ZERO(&wfds);
		FD_SET(fd, &wfds);
		if (mode == M_SELECT)
			return select(fd + 1, NULL, &wfds, NULL, left < 0 ? NULL : &tv);
		return pselect(fd + 1, NULL, &wfds, NULL, left < 0 ? NULL : &ts, NULL);
	case M_EPOLL_LT:
	case M_EPOLL_ET:
		return wait_epoll(fd, mode == M_EPOLL_ET, (int)left);
	case M_BLOCKING:
		break;
	}
	errno = EINVAL;
	return -1;
}

/* Non-blocking connect as in OpenBSD nc: returns 0, or -1 with errno set. */
static int connect_nonblocking(int fd, const struct probe_opts *o)
{
	long long deadline = o->timeout_ms < 0 ? -1 : mono_ms() + o->timeout_ms;
	int flags = fcntl(fd, F_GETFL);
	int ret, err = 0;
	socklen_t len = sizeof(err);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	ret = connect(fd, (struct sockaddr *)&o->addr, o->addr_len);
	if (ret == 0 || errno != EINPROGRESS)
		goto out_restore_flags;
	if (o->errno_check)
		errno = EDOM;
	for (;;) {
		int n = wait_writable(fd, o->mode, deadline);

		if (n > 0)
			break;
		if (n == 0) {
			errno = ETIMEDOUT;
			ret = -1;
			goto out_restore_flags;
		}
		if (errno != EINTR) {
			ret = -1;
			goto out_restore_flags;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
		ret = -1;
	} else if (err != 0) {
		errno = err;
		ret = -1;
	} else {
		ret = 0;
	}
out_restore_flags:
	if (ret < 0) {
		int saved = errno;

		fcntl(fd, F_SETFL, flags);
		errno = saved;
	} else {
		fcntl(fd, F_SETFL, flags);
	}
	return ret;
}

static void print_errno(int err)
{
	const char *name = strerrorname_np(err);

	if (name)
		printf("%s\n", name);
	else
		printf("E%d\n", err);
}

/* Reads until EOF (5 s at most) and prints OK with the bytes, newlines trimmed. */
static void print_reply(int fd)
{
	struct timeval tv = { .tv_sec = 5 };
	char buf[4096];
	size_t got = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
		got--;
	buf[got] = '\0';
	printf("OK %s\n", buf);
}

/* One probe; returns the process exit status. */
static int probe_once(const struct probe_opts *o)
{
	long long start;
	int fd, ret, err;

	fd = socket(o->addr.ss_family, o->type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("probe: socket");
		return 2;
	}
	if (o->sndtimeo_ms > 0) {
		struct timeval tv = {
			.tv_sec = o->sndtimeo_ms / 1000,
			.tv_usec = (o->sndtimeo_ms % 1000) * 1000,
		};

		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	start = mono_ms();
	if (o->alarm_ms > 0)
		arm_alarm(o);
	if (o->errno_check)
		errno = EDOM;
	if (o->mode == M_BLOCKING)
		ret = connect(fd, (struct sockaddr *)&o->addr, o->addr_len);
	else
		ret = connect_nonblocking(fd, o);
	err = errno;
	if (o->errno_check && ret == 0)
		fprintf(stderr, "errno=%s\n", err ? strerrorname_np(err) : "0");
	if (o->alarm_ms > 0 || o->elapsed)
		fprintf(stderr, "elapsed_ms=%lld alarms=%d\n", mono_ms() - start, (int)alarms);

	if (ret == 0) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);

		if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0) {
			ret = -1;
			err = errno;
		}
	}
	if (ret < 0) {
		print_errno(err);
		close(fd);
		return 1;
	}
	if (o->read_reply)
		print_reply(fd);
	else
		printf("OK\n");
	close(fd);
	return 0;
}

/* --first: a non-blocking connect given 100 ms, then closed; its outcome on stderr. */
static void probe_first(const struct probe_opts *o)
{
	struct probe_opts first = *o;
	const char *name;
	int fd, ret;

	parse_addr(o->first, &first);
	first.mode = M_POLL;
	first.timeout_ms = 100;
	first.errno_check = 0;
	fd = socket(first.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("probe: socket");
		exit(2);
	}
	ret = connect_nonblocking(fd, &first);
	name = ret == 0 ? "OK" : strerrorname_np(errno);
	fprintf(stderr, "first: %s\n", name ? name : "?");
	close(fd);
}

static int probe_forked(const struct probe_opts *o)
{
	int failed = 0;

	fflush(NULL);
	for (long i = 0; i < o->forks; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("probe: fork");
			failed = 1;
			break;
		}
		if (pid == 0) {
			int status = probe_once(o);

			fflush(NULL);
			_exit(status);
		}
	}
	for (;;) {
		int status;
		pid_t pid = wait(&status);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	}
	return failed;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ "type", required_argument, NULL, 'y' },
		{ "sndtimeo", required_argument, NULL, 's' },
		{ "alarm", required_argument, NULL, 'a' },
		{ "sa-restart", no_argument, NULL, 'r' },
		{ "read", no_argument, NULL, 'R' },
		{ "fork", required_argument, NULL, 'f' },
		{ "elapsed", no_argument, NULL, 'e' },
		{ "first", required_argument, NULL, 'F' },
		{ "errno", no_argument, NULL, 'E' },
		{ NULL, 0, NULL, 0 },
	};
	struct probe_opts o = { .mode = M_BLOCKING, .timeout_ms = -1, .type = SOCK_STREAM };
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			o.mode = parse_mode(optarg);
			break;
		case 't':
			o.timeout_ms = parse_long(optarg, -1, 3600000);
			break;
		case 'y':
			if (strcmp(optarg, "stream") == 0)
				o.type = SOCK_STREAM;
			else if (strcmp(optarg, "dgram") == 0)
				o.type = SOCK_DGRAM;
			else
				usage();
			break;
		case 's':
			o.sndtimeo_ms = parse_long(optarg, 1, 3600000);
			break;
		case 'a':
			o.alarm_ms = parse_long(optarg, 1, 3600000);
			break;
		case 'r':
			o.sa_restart = 1;
			break;
		case 'R':
			o.read_reply = 1;
			break;
		case 'f':
			o.forks = parse_long(optarg, 1, 64);
			break;
		case 'e':
			o.elapsed = 1;
			break;
		case 'F':
			o.first = optarg;
			break;
		case 'E':
			o.errno_check = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	parse_addr(argv[optind], &o);
	if (o.first)
		probe_first(&o);
	if (o.forks > 0)
		return probe_forked(&o);
	return probe_once(&o);
}
