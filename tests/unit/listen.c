/* Tests of sys/listen against real sockets of this process, each answer checked by a connect. */
#include "sys/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config/target.h"
#include "unit.h"

static struct target_addr inet(int family, const char *ip, uint16_t port)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct target_addr t;

	if (family == AF_INET) {
		inet_pton(AF_INET, ip, &in.sin_addr);
		target_from_sockaddr((struct sockaddr *)&in, sizeof(in), &t);
	} else {
		inet_pton(AF_INET6, ip, &in6.sin6_addr);
		target_from_sockaddr((struct sockaddr *)&in6, sizeof(in6), &t);
	}
	return t;
}

/* The sockaddr_un of a path, or of an abstract name when @abstract. */
static socklen_t unix_addr(struct sockaddr_un *un, const char *name, bool abstract)
{
	size_t n = strlen(name), at = abstract ? 1 : 0;

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path + at, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + at + n + (abstract ? 0 : 1));
}

static struct target_addr unix_target(const char *name, bool abstract)
{
	struct sockaddr_un un;
	socklen_t len = unix_addr(&un, name, abstract);
	struct target_addr t;

	target_from_sockaddr((struct sockaddr *)&un, len, &t);
	return t;
}

/* Whether a real connect to @t is taken: the oracle of every answer. */
static bool connects(const struct target_addr *t)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, r;

	memset(&ss, 0, sizeof(ss));
	if (t->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(t->port);
		memcpy(&in->sin_addr, t->ip, 4);
		len = sizeof(*in);
	} else if (t->family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(t->port);
		memcpy(&in6->sin6_addr, t->ip, 16);
		len = sizeof(*in6);
	} else {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;
		size_t at = t->abstract ? 1 : 0;

		un->sun_family = AF_UNIX;
		memcpy(un->sun_path + at, t->path, t->path_len);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + at + t->path_len);
	}
	fd = socket(t->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	r = connect(fd, (struct sockaddr *)&ss, len);
	close(fd);
	return r == 0;
}

/*
 * listen_probe(@t) is @want and leaves errno as it was; a real connect then
 * agrees (for -1: is refused, as a connect to a stale socket file is).
 */
#define PROBE(t, want) probe_check((t), (want), __LINE__)

static void probe_check(struct target_addr t, int want, int line)
{
	char name[TARGET_TEXT_MAX];
	int got, err;
	bool taken;

	target_format(&t, name, sizeof(name));
	errno = ERANGE;
	got = listen_probe(&t);
	err = errno;
	taken = connects(&t);
	if (got == want && err == ERANGE && taken == (want == 1)) {
		unit_passed++;
		return;
	}
	unit_failed++;
	fprintf(stderr, "listen.c:%d: listen_probe(%s) = %d (errno %d), want %d; connect %s\n",
		line, name, got, err, want, taken ? "taken" : "refused");
}

/* A TCP socket bound to @ip port 0 (listening when @backlog >= 0), its port in *@port. */
static int tcp_socket(int family, const char *ip, int v6only, int backlog, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&ss, 0, sizeof(ss));
	if (fd < 0)
		return -1;
	if (family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, ip, &in6->sin6_addr);
		len = sizeof(*in6);
		if (v6only >= 0)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		inet_pton(AF_INET, ip, &in->sin_addr);
		len = sizeof(*in);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 ||
	    (backlog >= 0 && listen(fd, backlog) != 0) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset in sockaddr_in6 */
	return fd;
}

static int unix_socket(int type, const char *name, bool abstract)
{
	struct sockaddr_un un;
	socklen_t len = unix_addr(&un, name, abstract);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&un, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_tcp4(void)
{
	uint16_t port, other;
	int fd = tcp_socket(AF_INET, "127.0.0.1", -1, -1, &port);
	int fd2 = tcp_socket(AF_INET, "127.0.0.1", -1, -1, &other);

	CHECK(fd >= 0 && fd2 >= 0);
	PROBE(inet(AF_INET, "127.0.0.1", port), 0); /* bound, not listening */
	CHECK(listen(fd, 16) == 0);
	PROBE(inet(AF_INET, "127.0.0.1", port), 1);
	PROBE(inet(AF_INET, "127.0.0.2", port), 0); /* another address of lo */
	PROBE(inet(AF_INET, "0.0.0.0", port), 1);   /* connect's loopback */
	PROBE(inet(AF_INET, "127.0.0.1", other), 0);
	close(fd);
	PROBE(inet(AF_INET, "127.0.0.1", port), 0);
	close(fd2);

	fd = tcp_socket(AF_INET, "0.0.0.0", -1, 16, &port);
	CHECK(fd >= 0);
	PROBE(inet(AF_INET, "127.0.0.1", port), 1);
	PROBE(inet(AF_INET, "127.0.0.2", port), 1);
	close(fd);
	PROBE(inet(AF_INET, "127.0.0.2", port), 0);
}

static void test_tcp6(void)
{
	uint16_t port;
	int fd = tcp_socket(AF_INET6, "::1", -1, 16, &port);

	if (fd < 0) {
		printf("listen: no IPv6 loopback (%s): its cases skipped\n", strerror(errno));
		return;
	}
	PROBE(inet(AF_INET6, "::1", port), 1);
	PROBE(inet(AF_INET6, "::", port), 1);
	PROBE(inet(AF_INET, "127.0.0.1", port), 0);
	close(fd);
	PROBE(inet(AF_INET6, "::1", port), 0);

	/* [::] takes IPv4 too, unless IPV6_V6ONLY. */
	fd = tcp_socket(AF_INET6, "::", 0, 16, &port);
	CHECK(fd >= 0);
	PROBE(inet(AF_INET, "127.0.0.1", port), 1);
	PROBE(inet(AF_INET, "127.0.0.2", port), 1);
	PROBE(inet(AF_INET6, "::ffff:127.0.0.1", port), 1);
	PROBE(inet(AF_INET6, "::1", port), 1);
	close(fd);
	PROBE(inet(AF_INET, "127.0.0.1", port), 0);

	fd = tcp_socket(AF_INET6, "::", 1, 16, &port);
	CHECK(fd >= 0);
	PROBE(inet(AF_INET, "127.0.0.1", port), 0);
	PROBE(inet(AF_INET6, "::1", port), 1);
	close(fd);

	/* A v6 socket on a v4-mapped address takes that IPv4 address alone. */
	fd = tcp_socket(AF_INET6, "::ffff:127.0.0.1", 0, 16, &port);
	CHECK(fd >= 0);
	PROBE(inet(AF_INET, "127.0.0.1", port), 1);
	PROBE(inet(AF_INET, "127.0.0.2", port), 0);
	PROBE(inet(AF_INET6, "::1", port), 0);
	close(fd);

	/* A v4 listener takes no IPv6 destination. */
	fd = tcp_socket(AF_INET, "0.0.0.0", -1, 16, &port);
	CHECK(fd >= 0);
	PROBE(inet(AF_INET6, "::1", port), 0);
	close(fd);
}

/* Sockets bound to paths in @dir; returns the listener on DIR/a.sock, left open. */
static int test_unix_path(const char *dir)
{
	char a[256], b[256], c[256], d[256], link[256], sub[256];
	struct stat st;
	int listener, other, dgram, fd, cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	snprintf(a, sizeof(a), "%s/a.sock", dir);
	snprintf(b, sizeof(b), "%s/b.sock", dir);
	snprintf(c, sizeof(c), "%s/plain", dir);
	snprintf(d, sizeof(d), "%s/d.sock", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(sub, sizeof(sub), "%s/plain/a.sock", dir);

	PROBE(unix_target(a, false), 0); /* no such file */
	listener = unix_socket(SOCK_STREAM, a, false);
	CHECK(listener >= 0);
	PROBE(unix_target(a, false), 0); /* bound, not listening */
	CHECK(listen(listener, 16) == 0);
	PROBE(unix_target(a, false), 1);

	/* unix_diag's dev is the kernel's encoding, stat's another: do they differ here? */
	if (stat(a, &st) == 0) {
		unsigned long kdev = (unsigned long)major(st.st_dev) << 20 | minor(st.st_dev);

		printf("listen: %s on dev %u:%u, stat 0x%lx, unix_diag 0x%lx%s\n", dir,
		       major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_dev, kdev,
		       kdev == st.st_dev ? " (the same: the conversion goes untested here)" : "");
	}

	other = unix_socket(SOCK_STREAM, b, false);
	CHECK(other >= 0);
	PROBE(unix_target(b, false), 0); /* another socket file, not listening */
	dgram = unix_socket(SOCK_DGRAM, d, false);
	CHECK(dgram >= 0);
	PROBE(unix_target(d, false), 0);
	fd = open(c, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	PROBE(unix_target(c, false), 0);   /* not a socket */
	PROBE(unix_target(sub, false), 0); /* ENOTDIR */
	PROBE(unix_target("", false), 0);
	CHECK(symlink(a, link) == 0);
	PROBE(unix_target(link, false), 1);
	CHECK(chdir(dir) == 0);
	PROBE(unix_target("a.sock", false), 1);
	PROBE(unix_target("b.sock", false), 0);
	CHECK(cwd >= 0 && fchdir(cwd) == 0);
	close(cwd);
	close(other);
	close(dgram);
	unlink(b);
	unlink(c);
	unlink(d);
	unlink(link);
	return listener;
}

/* The listener closes and leaves its file: stale, or another namespace's, for all a probe knows. */
static void test_unix_stale(const char *dir, int listener)
{
	char a[256];

	snprintf(a, sizeof(a), "%s/a.sock", dir);
	close(listener);
	PROBE(unix_target(a, false), -1);
	unlink(a);
	PROBE(unix_target(a, false), 0);
}

static void test_unix_abstract(void)
{
	char name[64], longer[80], prefix[64];
	int fd;

	snprintf(name, sizeof(name), "libbackoff-listen-%ld", (long)getpid());
	snprintf(longer, sizeof(longer), "%s-b", name);
	snprintf(prefix, sizeof(prefix), "%.*s", (int)strlen(name) - 1, name);
	PROBE(unix_target(name, true), 0);
	fd = unix_socket(SOCK_STREAM, name, true);
	CHECK(fd >= 0);
	PROBE(unix_target(name, true), 0); /* bound, not listening */
	CHECK(listen(fd, 16) == 0);
	PROBE(unix_target(name, true), 1);
	PROBE(unix_target(longer, true), 0);
	PROBE(unix_target(prefix, true), 0);
	close(fd);
	PROBE(unix_target(name, true), 0);
}

/* Dumps longer than one read: hundreds of listeners, the one looked for among them. */
static void test_many(const char *dir)
{
	enum { MANY = 400 };
	int fds[MANY], i, opened = 0, listener;
	char name[96], path[256];

	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "libbackoff-listen-%ld-many-%d", (long)getpid(), i);
		fds[i] = unix_socket(SOCK_STREAM, name, true);
		if (fds[i] < 0 || listen(fds[i], 1) != 0)
			break;
		opened++;
	}
	CHECK(opened == MANY);
	snprintf(name, sizeof(name), "libbackoff-listen-%ld-many-%d", (long)getpid(), 0);
	PROBE(unix_target(name, true), 1);
	snprintf(name, sizeof(name), "libbackoff-listen-%ld-many-%d", (long)getpid(), opened - 1);
	PROBE(unix_target(name, true), 1);
	snprintf(name, sizeof(name), "libbackoff-listen-%ld-many-%d", (long)getpid(), MANY);
	PROBE(unix_target(name, true), 0);
	snprintf(path, sizeof(path), "%s/many.sock", dir);
	listener = unix_socket(SOCK_STREAM, path, false);
	CHECK(listener >= 0 && listen(listener, 1) == 0);
	PROBE(unix_target(path, false), 1);
	close(listener);
	unlink(path);
	for (i = 0; i < opened; i++)
		close(fds[i]);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* No descriptor left behind, and what a probe costs. */
static void test_fds_and_cost(void)
{
	uint16_t port;
	int bound = tcp_socket(AF_INET, "127.0.0.1", -1, -1, &port); /* a port none listens on */
	struct target_addr t = inet(AF_INET, "127.0.0.1", port);
	int before = open("/dev/null", O_RDONLY | O_CLOEXEC), after, i, bad = 0;
	struct rlimit lim, low;
	double start = now_us();

	CHECK(bound >= 0);
	close(before);
	for (i = 0; i < 1000; i++)
		bad += listen_probe(&t) != 0;
	printf("listen: %.1f us a probe of a v4 destination\n", (now_us() - start) / 1000);
	CHECK(bad == 0);

	/* No descriptor for the netlink socket: cannot tell, and errno stays. */
	CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
	low = lim;
	low.rlim_cur = (rlim_t)before;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	PROBE(t, -1);
	CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);

	t = unix_target("libbackoff-listen-none", true);
	for (i = 0; i < 100; i++)
		bad += listen_probe(&t) != 0;
	CHECK(bad == 0);
	after = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(after);
	CHECK(after == before);
	t.family = AF_PACKET;
	CHECK(listen_probe(&t) == -1);
	close(bound);
}

/* A connection waits in its listener's accept queue (0) until accepted (1); -1 unconnected. */
static void test_accepted(int family, const char *ip)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint16_t port;
	int l = tcp_socket(family, ip, -1, 16, &port), c = socket(family, SOCK_STREAM, 0), a;

	CHECK(l >= 0 && c >= 0);
	CHECK_U64((uint64_t)(listen_accepted(c) + 1), 0); /* not connected: cannot tell */
	CHECK(getsockname(l, (struct sockaddr *)&ss, &len) == 0);
	CHECK(connect(c, (struct sockaddr *)&ss, len) == 0);
	CHECK_U64((uint64_t)listen_accepted(c), 0);
	errno = 12345;
	a = accept(l, NULL, NULL);
	CHECK(a >= 0);
	CHECK_U64((uint64_t)listen_accepted(c), 1);
	CHECK_U64((uint64_t)errno, 12345);
	close(a);
	close(c);
	close(l);
}

int main(void)
{
	char dir[] = "/tmp/libbackoff-listen-XXXXXX";
	const char *made;

	test_tcp4();
	test_tcp6();
	test_accepted(AF_INET, "127.0.0.1");
	test_accepted(AF_INET6, "::1");
	test_unix_abstract();
	made = mkdtemp(dir);
	CHECK(made != NULL);
	if (made) {
		test_unix_stale(dir, test_unix_path(dir));
		test_many(dir);
		rmdir(dir);
	}
	test_fds_and_cost();
	return unit_report("listen");
}
