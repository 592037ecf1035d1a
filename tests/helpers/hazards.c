/*
 * hazards: programs that put the event-loop hooks where a careless library
 * hangs, loses an event or changes errno; one MODE per run.  Each prints
 * what it saw and exits 0 when the program behaved as it does without the
 * library, 1 otherwise (a hang is the caller's timeout to catch).
 *
 *   hazards signals ADDR       a 50 us SIGALRM whose handler writes to a
 *                              self-pipe and closes a dup, while a managed
 *                              connect is polled; must connect
 *   hazards cancel ADDR        a thread whose poll loop runs due retries is
 *                              cancelled; then close() and a new managed
 *                              connect in another thread must not hang
 *   hazards race ADDR          one thread polls a hidden connect with a 20 s
 *                              timeout while two others run its retries;
 *                              it must see the connection within 8 s
 *   hazards shared-data ADDR   a pipe and a hidden socket share epoll data 0:
 *                              the pipe's events arrive, the socket's
 *                              failure does not show
 *   hazards huge-timeout ADDR  select, ppoll and epoll_pwait2 with a timeout
 *                              of 2^62 s return the pipe that becomes ready
 *   hazards errno-ctl ADDR     a successful epoll_ctl of a hidden fd into five
 *                              more sets leaves errno as it was
 *   hazards threads N ADDR     N threads each connect non-blocking (poll) and
 *                              read the greeting; prints how many got it
 *   hazards cancel-connect ADDR a thread's blocking connect to a silent ADDR
 *                              is cancelled after 300 ms; prints whether it
 *                              was, and the socket's send timeout after it
 *   hazards fork-connect ADDR  a thread's blocking connect to a silent ADDR;
 *                              300 ms in, the process forks, and the child
 *                              connects to ADDR with a send timeout of its
 *                              own of 200 ms; prints each one's outcome
 *   hazards jump-connect ADDR  a blocking connect to a silent ADDR left by
 *                              siglongjmp from a SIGALRM handler 300 ms in,
 *                              twice: then the socket's send timeout is read
 *                              and a blocking send made (cut by a SIGALRM
 *                              1500 ms later: EINTR if it waits), in one
 *                              order and then the other; prints what each saw
 *
 * ADDR is HOST:PORT; for cancel, shared-data, huge-timeout and errno-ctl it
 * refuses (run with a long BACKOFF_BASE so that the socket stays hidden).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static struct sockaddr_storage target;
static socklen_t target_len;
static int self_pipe[2];

static int start_connect(void)
{
	int fd = socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 ||
	    (connect(fd, (struct sockaddr *)&target, target_len) != 0 && errno != EINPROGRESS)) {
		perror("hazards: connect");
		exit(1);
	}
	return fd;
}

/* SO_ERROR of @fd once poll says it is writable, within @ms; -1 on timeout. */
static int await(int fd, long long ms)
{
	long long end = mono_ms() + ms;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		long long left = end - mono_ms();
		int err = 0, n;
		socklen_t len = sizeof(err);

		if (left <= 0)
			return -1;
		n = poll(&p, 1, (int)(left < 100 ? left : 100));
		if (n < 0 && errno != EINTR)
			return errno;
		if (n <= 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			return errno;
		if (err == EINPROGRESS || err == EALREADY)
			continue;
		return err;
	}
}

static void on_alarm(int sig)
{
	int saved = errno, d;
	ssize_t ignored;

	(void)sig;
	ignored = write(self_pipe[1], "x", 1);
	(void)ignored;
	d = dup(self_pipe[0]);
	if (d >= 0)
		close(d);
	errno = saved;
}

static int mode_signals(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	long long end = mono_ms() + 10000;
	int fd, err = -1;

	if (pipe2(self_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	fd = start_connect();
	while (mono_ms() < end) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLOUT },
				       { .fd = self_pipe[0], .events = POLLIN } };
		char buf[256];
		socklen_t len = sizeof(err);

		if (poll(p, 2, 50) < 0 && errno != EINTR)
			break;
		while (read(self_pipe[0], buf, sizeof(buf)) > 0)
			;
		if (!(p[0].revents & (POLLOUT | POLLERR | POLLHUP)))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err != EINPROGRESS && err != EALREADY)
			break;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signals: %s\n", err == 0  ? "connected"
				: err < 0 ? "timeout"
					  : strerrorname_np(err));
	return err == 0 ? 0 : 1;
}

#define CANCEL_FDS 64
static int cancel_fds[CANCEL_FDS];

static void *poll_forever(void *arg)
{
	struct pollfd p[CANCEL_FDS];
	int i;

	(void)arg;
	for (i = 0; i < CANCEL_FDS; i++) {
		cancel_fds[i] = start_connect();
		p[i].fd = cancel_fds[i];
		p[i].events = POLLOUT;
	}
	for (;;)
		poll(p, CANCEL_FDS, 1); /* each wake runs due retries: cancellation points */
	return NULL;
}

static int mode_cancel(void)
{
	pthread_t t;
	int i, k;

	for (i = 0; i < 20; i++) {
		struct timespec ts = { 0, 20 * 1000000 };
		int fd;

		pthread_create(&t, NULL, poll_forever, NULL);
		nanosleep(&ts, NULL);
		pthread_cancel(t);
		pthread_join(t, NULL);
		/* Whatever the cancelled thread held must not stop this one. */
		for (k = 0; k < CANCEL_FDS; k++)
			close(cancel_fds[k]);
		fd = start_connect();
		await(fd, 30);
		close(fd);
	}
	printf("cancel: survived\n");
	return 0;
}

static int attempt_fd;

static void *connect_blocking(void *arg)
{
	(void)arg;
	connect(attempt_fd, (struct sockaddr *)&target, target_len);
	return NULL;
}

static int mode_cancel_connect(void)
{
	struct timespec ts = { 0, 300 * 1000000 };
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);
	void *ret = NULL;
	pthread_t t;

	attempt_fd = socket(target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (attempt_fd < 0 || pthread_create(&t, NULL, connect_blocking, NULL) != 0)
		return 1;
	nanosleep(&ts, NULL);
	pthread_cancel(t);
	pthread_join(t, &ret);
	if (getsockopt(attempt_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) != 0)
		return 1;
	printf("cancelled=%d sndtimeo=%ld.%06ld\n", ret == PTHREAD_CANCELED, (long)tv.tv_sec,
	       (long)tv.tv_usec);
	return ret == PTHREAD_CANCELED && tv.tv_sec == 0 && tv.tv_usec == 0 ? 0 : 1;
}

static int attempt_err;

static void *connect_blocking_err(void *arg)
{
	(void)arg;
	attempt_err = connect(attempt_fd, (struct sockaddr *)&target, target_len) == 0 ? 0 : errno;
	return NULL;
}

static const char *err_name(int err)
{
	const char *name = err ? strerrorname_np(err) : "OK";

	return name ? name : "?";
}

static int mode_fork_connect(void)
{
	struct timespec ts = { 0, 300 * 1000000 };
	struct timeval own = { 0, 200 * 1000 };
	long long start;
	pid_t child;
	int status = 0;
	pthread_t t;

	attempt_fd = socket(target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (attempt_fd < 0 || pthread_create(&t, NULL, connect_blocking_err, NULL) != 0)
		return 1;
	nanosleep(&ts, NULL);
	child = fork();
	if (child == 0) {
		int fd = socket(target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

		start = mono_ms();
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &own, sizeof(own));
		err = connect(fd, (struct sockaddr *)&target, target_len) == 0 ? 0 : errno;
		printf("child %s ms=%lld\n", err_name(err), mono_ms() - start);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 1;
	pthread_join(t, NULL);
	printf("parent %s\n", err_name(attempt_err));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static sigjmp_buf jump_out;

static void jump_on_alarm(int sig)
{
	(void)sig;
	siglongjmp(jump_out, 1);
}

static void interrupt_on_alarm(int sig)
{
	(void)sig;
}

/* A one-shot SIGALRM in @ms (0: none), caught by @handler without SA_RESTART. */
static void alarm_in(long ms, void (*handler)(int))
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

/* A blocking send of one byte on @fd, cut by a signal 1500 ms in: its errno name, or "sent". */
static const char *send_cut(int fd)
{
	ssize_t n;
	int err;

	alarm_in(1500, interrupt_on_alarm);
	n = send(fd, "x", 1, MSG_NOSIGNAL);
	err = errno;
	alarm_in(0, interrupt_on_alarm);
	return n >= 0 ? "sent" : err_name(err);
}

/* One round of jump-connect: @send_first or the send timeout first. */
static int jump_round(bool send_first)
{
	int fd = socket(target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	volatile int jumped = 0;
	struct timeval tv = { -1, 0 };
	socklen_t len = sizeof(tv);
	const char *sent = "?";

	if (fd < 0)
		return 1;
	if (sigsetjmp(jump_out, 1) == 0) {
		alarm_in(300, jump_on_alarm);
		connect(fd, (struct sockaddr *)&target, target_len);
		alarm_in(0, jump_on_alarm);
	} else {
		jumped = 1;
	}
	if (send_first)
		sent = send_cut(fd);
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) != 0)
		return 1;
	if (!send_first)
		sent = send_cut(fd);
	printf("%s first: jumped=%d sndtimeo=%ld.%06ld send=%s\n", send_first ? "send" : "sndtimeo",
	       jumped, (long)tv.tv_sec, (long)tv.tv_usec, sent);
	close(fd);
	return jumped && tv.tv_sec == 0 && tv.tv_usec == 0 && strcmp(sent, "EINTR") == 0 ? 0 : 1;
}

static int mode_jump_connect(void)
{
	int rc = jump_round(false);

	return jump_round(true) | rc;
}

static atomic_bool race_done;

static void *run_retries(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_done))
		poll(NULL, 0, 0); /* every wait hook runs the due retries */
	return NULL;
}

static int mode_race(void)
{
	pthread_t q[2];
	long long t0 = mono_ms();
	int fd, err, i;

	for (i = 0; i < 2; i++)
		pthread_create(&q[i], NULL, run_retries, NULL);
	fd = start_connect();
	err = -1;
	while (mono_ms() - t0 < 8000) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		socklen_t len = sizeof(err);

		/* The program's own timeout is long: only the library may wake it. */
		if (poll(&p, 1, 20000) <= 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err != EINPROGRESS && err != EALREADY)
			break;
	}
	atomic_store(&race_done, true);
	for (i = 0; i < 2; i++)
		pthread_join(q[i], NULL);
	printf("race: %s after %lld ms\n",
	       err == 0	 ? "connected"
	       : err < 0 ? "timeout"
			 : strerrorname_np(err),
	       mono_ms() - t0);
	return err == 0 && mono_ms() - t0 < 8000 ? 0 : 1;
}

/* Wait until the first attempt of @fd has failed and been hidden: epoll_wait says nothing. */
static void let_it_hide(int ep)
{
	struct epoll_event ev[4];
	int i;

	for (i = 0; i < 3; i++)
		epoll_wait(ep, ev, 4, 100);
}

static int mode_shared_data(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 }, out[4];
	int ep = epoll_create1(EPOLL_CLOEXEC), fd, i, bad = 0;

	if (pipe2(self_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		return 1;
	epoll_ctl(ep, EPOLL_CTL_ADD, self_pipe[0], &ev);
	fd = socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ev.events = EPOLLOUT;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	if (connect(fd, (struct sockaddr *)&target, target_len) == 0 || errno != EINPROGRESS) {
		printf("shared-data: connect did not start (%s)\n", strerrorname_np(errno));
		return 1;
	}
	let_it_hide(ep);
	for (i = 0; i < 5; i++) {
		long long t0 = mono_ms();
		char c;
		int n, k, got_in = 0;

		if (write(self_pipe[1], "x", 1) != 1)
			return 1;
		n = epoll_wait(ep, out, 4, 1000);
		for (k = 0; k < n; k++) {
			got_in |= (out[k].events & EPOLLIN) != 0;
			bad |= (out[k].events & (EPOLLERR | EPOLLHUP)) != 0;
		}
		printf("shared-data: round %d: %d event(s)%s%s in %lld ms\n", i, n,
		       got_in ? ", the pipe's" : "", bad ? ", a failure shown" : "",
		       mono_ms() - t0);
		if (!got_in)
			bad = 1;
		while (read(self_pipe[0], &c, 1) == 1)
			;
	}
	return bad;
}

static void *write_later(void *arg)
{
	struct timespec ts = { 0, 300 * 1000000 };

	(void)arg;
	nanosleep(&ts, NULL);
	if (write(self_pipe[1], "x", 1) != 1)
		perror("hazards: write");
	return NULL;
}

static int mode_huge_timeout(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), fd, rc, bad = 0, round;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };

	if (pipe2(self_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		return 1;
	epoll_ctl(ep, EPOLL_CTL_ADD, self_pipe[0], &ev);
	fd = start_connect();
	(void)fd;
	for (round = 0; round < 3; round++) {
		long long t0 = mono_ms();
		pthread_t t;
		char c;

		pthread_create(&t, NULL, write_later, NULL);
		if (round == 0) {
			struct timeval tv = { (time_t)1 << 62, 0 };
			fd_set r;

			FD_ZERO(&r);
			FD_SET(self_pipe[0], &r);
			rc = select(self_pipe[0] + 1, &r, NULL, NULL, &tv);
		} else if (round == 1) {
			struct timespec ts = { (time_t)1 << 62, 0 };
			struct pollfd p = { .fd = self_pipe[0], .events = POLLIN };

			rc = ppoll(&p, 1, &ts, NULL);
		} else {
			struct timespec ts = { (time_t)1 << 62, 0 };
			struct epoll_event out;

			rc = epoll_pwait2(ep, &out, 1, &ts, NULL);
		}
		pthread_join(t, NULL);
		printf("huge-timeout: %s returned %d after %lld ms\n",
		       round == 0   ? "select"
		       : round == 1 ? "ppoll"
				    : "epoll_pwait2",
		       rc, mono_ms() - t0);
		bad |= rc != 1;
		while (read(self_pipe[0], &c, 1) == 1)
			;
	}
	return bad;
}

/*
 * A connect that stays in progress, visible: to a listener whose backlog is
 * full, which drops the SYN (ADDR is not used).
 */
static int connect_in_progress(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), filler, fd;

	if (l < 0 || bind(l, (struct sockaddr *)&a, len) != 0 || listen(l, 0) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) != 0)
		return -1;
	filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(filler, (struct sockaddr *)&a, len) != 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (connect(fd, (struct sockaddr *)&a, len) == 0 || errno != EINPROGRESS)
		return -1;
	return fd;
}

static int mode_errno_ctl(void)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 1 };
	int ep = epoll_create1(EPOLL_CLOEXEC), fd, i, bad = 0, round;

	/* Round 0: a hidden fd (its attempt refused); round 1: a visible one, in progress. */
	for (round = 0; round < 2; round++) {
		if (round == 0) {
			fd = socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0);
			epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
			if (connect(fd, (struct sockaddr *)&target, target_len) == 0 ||
			    errno != EINPROGRESS) {
				printf("errno-ctl: connect did not start (%s)\n",
				       strerrorname_np(errno));
				return 1;
			}
			let_it_hide(ep);
		} else {
			fd = connect_in_progress();
			if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
				printf("errno-ctl: no connect in progress\n");
				return 1;
			}
		}
		for (i = 0; i < 5; i++) {
			int more = epoll_create1(EPOLL_CLOEXEC), rc;

			errno = 4242;
			rc = epoll_ctl(more, EPOLL_CTL_ADD, fd, &ev);
			printf("errno-ctl: %s fd, set %d: rc %d errno %d\n",
			       round == 0 ? "hidden" : "visible", i + 2, rc, errno);
			bad |= rc != 0 || errno != 4242;
		}
	}
	return bad;
}

static atomic_int connected;
/* Why the others did not: the errno of the connect, or of the read (+1000), or EOF (999). */
static atomic_int why[2048];

static void *one_client(void *arg)
{
	int fd = start_connect(), err;
	char buf[64];
	long long end = mono_ms() + 15000;

	(void)arg;
	err = await(fd, 15000);
	if (err != 0) {
		atomic_fetch_add(&why[err < 0 ? ETIMEDOUT : err % 1000], 1);
		close(fd);
		return NULL;
	}
	while (mono_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		poll(&p, 1, 100);
		n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			atomic_fetch_add(&connected, 1);
			break;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			atomic_fetch_add(&why[n == 0 ? 999 : 1000 + errno % 1000], 1);
			break;
		}
	}
	close(fd);
	return NULL;
}

static int mode_threads(long n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	long i;

	if (!t)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, one_client, NULL) != 0) {
			perror("hazards: pthread_create");
			return 1;
		}
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("threads: %d of %ld got the greeting", atomic_load(&connected), n);
	for (i = 0; i < 2048; i++)
		if (atomic_load(&why[i]))
			printf(" %s%s=%d", i >= 1000 ? "read " : "",
			       i == 999 ? "EOF" : strerrorname_np((int)(i % 1000)),
			       atomic_load(&why[i]));
	printf("\n");
	free(t);
	return atomic_load(&connected) == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = 0;
	int a = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "threads") == 0 && (argc < 3 || number_in(argv[a++], 1, 100000, &n) != 0))
		goto usage;
	if (argc != a + 1 || !(target_len = inet_from_spec(argv[a], 1, &target)))
		goto usage;
	if (strcmp(mode, "signals") == 0)
		return mode_signals();
	if (strcmp(mode, "cancel") == 0)
		return mode_cancel();
	if (strcmp(mode, "race") == 0)
		return mode_race();
	if (strcmp(mode, "shared-data") == 0)
		return mode_shared_data();
	if (strcmp(mode, "huge-timeout") == 0)
		return mode_huge_timeout();
	if (strcmp(mode, "errno-ctl") == 0)
		return mode_errno_ctl();
	if (strcmp(mode, "threads") == 0)
		return mode_threads(n);
	if (strcmp(mode, "cancel-connect") == 0)
		return mode_cancel_connect();
	if (strcmp(mode, "fork-connect") == 0)
		return mode_fork_connect();
	if (strcmp(mode, "jump-connect") == 0)
		return mode_jump_connect();
usage:
	fprintf(stderr, "usage: hazards "
			"signals|cancel|race|shared-data|huge-timeout|errno-ctl|cancel-connect|"
			"fork-connect|jump-connect "
			"ADDR\n       hazards threads N ADDR\n");
	return 2;
}
