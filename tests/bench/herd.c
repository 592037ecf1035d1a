/* herd: N client processes that lose their server at the same instant, and the server's return. */

/*
 * usage: herd N AFTER_MS COMMAND [ARGS...]
 *
 * Binds a TCP socket on 127.0.0.1 (a free port) without listening, so that
 * every SYN is answered by a reset (ECONNREFUSED).  Forks N children that
 * each exec COMMAND ARGS... 127.0.0.1:PORT (stdout to /dev/null) with
 * gate.so preloaded (HERD_GATE names it), which parks the loaded program in
 * its constructor; when all N are parked the gate opens (the release) and
 * the herd starts together.  AFTER_MS after the release the socket listens
 * (backlog 4096, so the accept queue does not drop SYNs) and every
 * connection is accepted and closed at once.
 *
 * stdout, CLOCK_MONOTONIC in milliseconds:
 *   port N
 *   released mono_ms=T0
 *   listening mono_ms=T1
 *   accepted mono_ms=T     (one line per connection)
 *   done clients=N ok=K accepted=A cpu_ms=C vcsw=W
 * Ends when every child has exited (their status: 0 counts as ok), at most
 * AFTER_MS + 120 s after the release (SIGALRM).
 *
 * HERD_PRELOAD, if set, is preloaded into the children after gate.so (the
 * herd process itself runs without it).  Without HERD_GATE the children
 * wait on the gate before exec instead, so exec and loading come after the
 * release.
 *
 * HERD_ADDR, an IPv4 address, is bound instead of 127.0.0.1; HERD_NETNS, a
 * network namespace file (/proc/PID/ns/net), is entered by each child before
 * its exec, so that the clients reach the port from another namespace (over
 * a veth pair, say).
 *
 * The done line's cpu_ms is the user + system CPU time of all the children
 * and vcsw their voluntary context switches (how often they went to sleep),
 * both from wait4.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 4096
#define MAX_ARGS 64

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "herd: %s: %s\n", what, strerror(errno));
	exit(1);
}

static long parse_long(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "usage: herd N AFTER_MS COMMAND [ARGS...]\n");
		exit(2);
	}
	return v;
}

static void sleep_until(long long when)
{
	long long left;

	while ((left = when - mono_ms()) > 0) {
		struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	char *args[MAX_ARGS + 2], addr[32];
	long n, after, i, accepted = 0, ok = 0, exited = 0;
	const char *preload = getenv("HERD_PRELOAD"), *gate_so = getenv("HERD_GATE");
	const char *bind_addr = getenv("HERD_ADDR"), *netns = getenv("HERD_NETNS");
	char preload_all[4096] = "", gate_fds[32];
	int gate[2], ready[2], lfd, devnull, nsfd = -1;
	long long released, cpu_us = 0, vcsw = 0;

	if (argc < 4 || argc - 3 > MAX_ARGS)
		parse_long("", 0, 0);
	n = parse_long(argv[1], 1, MAX_CLIENTS);
	after = parse_long(argv[2], 0, 600000);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind_addr && inet_pton(AF_INET, bind_addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "herd: HERD_ADDR %s: not an IPv4 address\n", bind_addr);
		exit(2);
	}
	if (netns && (nsfd = open(netns, O_RDONLY | O_CLOEXEC)) < 0)
		die(netns);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, len) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) < 0)
		die("bind");
	if (!inet_ntop(AF_INET, &sin.sin_addr, addr, sizeof(addr)))
		die("inet_ntop");
	snprintf(addr + strlen(addr), sizeof(addr) - strlen(addr), ":%u",
		 (unsigned)ntohs(sin.sin_port));
	for (i = 0; i < argc - 3; i++)
		args[i] = argv[3 + i];
	args[i++] = addr;
	args[i] = NULL;
	printf("port %u\n", (unsigned)ntohs(sin.sin_port));
	fflush(stdout);

	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	/* Not close-on-exec: the children's gate.so reads gate[0] and writes ready[1]. */
	if (devnull < 0 || pipe(gate) < 0 || pipe(ready) < 0)
		die("pipe");
	fcntl(gate[1], F_SETFD, FD_CLOEXEC);
	fcntl(ready[0], F_SETFD, FD_CLOEXEC);
	snprintf(gate_fds, sizeof(gate_fds), "%d,%d", gate[0], ready[1]);
	if (gate_so)
		snprintf(preload_all, sizeof(preload_all), "%s%s%s", gate_so, preload ? " " : "",
			 preload ? preload : "");
	else if (preload)
		snprintf(preload_all, sizeof(preload_all), "%s", preload);
	alarm((unsigned)(after / 1000 + 120));
	for (i = 0; i < n; i++) {
		pid_t pid = fork();
		char c;

		if (pid < 0)
			die("fork");
		if (pid > 0)
			continue;
		close(gate[1]);
		close(ready[0]);
		if (!gate_so) {
			while (read(gate[0], &c, 1) < 0 && errno == EINTR)
				;
		} else if (setenv("HERD_GATE_FDS", gate_fds, 1) < 0) {
			_exit(127);
		}
		dup2(devnull, STDOUT_FILENO);
		if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET) < 0) {
			fprintf(stderr, "herd: setns %s: %s\n", netns, strerror(errno));
			_exit(127);
		}
		if (preload_all[0] && setenv("LD_PRELOAD", preload_all, 1) < 0)
			_exit(127);
		execvp(args[0], args);
		fprintf(stderr, "herd: %s: %s\n", args[0], strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	close(ready[1]);
	/* With gate.so: wait until every child is loaded and parked (or gone). */
	for (i = 0; gate_so && i < n;) {
		char buf[256];
		ssize_t got = read(ready[0], buf, sizeof(buf));

		if (got == 0)
			break;
		if (got > 0)
			i += got;
		else if (errno != EINTR)
			die("ready pipe");
	}
	released = mono_ms();
	close(gate[1]);
	printf("released mono_ms=%lld\n", released);

	sleep_until(released + after);
	if (listen(lfd, 4096) < 0)
		die("listen");
	printf("listening mono_ms=%lld\n", mono_ms());

	/* Accept while children remain; reap them as they end. */
	while (exited < n) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		struct rusage ru;
		int status;
		pid_t pid;

		if (poll(&pfd, 1, 10) > 0) {
			int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (conn >= 0) {
				printf("accepted mono_ms=%lld\n", mono_ms());
				accepted++;
				close(conn);
			} else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
				die("accept");
			}
		}
		while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
			exited++;
			cpu_us += (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
				  (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
			vcsw += ru.ru_nvcsw;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				ok++;
		}
	}
	/* Connections of clients that ended before their accept. */
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	for (;;) {
		int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (conn < 0)
			break;
		printf("accepted mono_ms=%lld\n", mono_ms());
		accepted++;
		close(conn);
	}
	printf("done clients=%ld ok=%ld accepted=%ld cpu_ms=%lld vcsw=%lld\n", n, ok, accepted,
	       cpu_us / 1000, vcsw);
	return ok == n ? 0 : 1;
}
