/* lifecycle: the awkward process lifecycles a preloaded library must live through. */

/*
 * usage:
 *   lifecycle dlopen MODULE IP:PORT
 *       dlopen() MODULE (RTLD_NOW | RTLD_LOCAL) and call its module_connect().
 *   lifecycle vfork-exec PROGRAM [ARGS...]
 *       vfork(), then execv() PROGRAM in the child; wait for it.
 *   lifecycle vfork-busy IP:PORT PROGRAM [ARGS...]
 *       Start a non-blocking connect to IP:PORT, vfork() a child that closes
 *       that socket (as a child closing the fds it must not inherit does) and
 *       execs PROGRAM, then wait for the connect with poll() and SO_ERROR.
 *   lifecycle fork-busy IP:PORT
 *       Start a non-blocking connect to IP:PORT, give it 200 ms in poll(),
 *       then fork() a child that looks at the socket it inherited: it prints
 *       "child read: ENAME" (a read of one byte) and "child poll: N" (a poll
 *       for POLLOUT with no wait) and exits.  Then wait for the connect with
 *       poll() and SO_ERROR.
 *   lifecycle spawn PROGRAM [ARGS...]
 *       posix_spawn() PROGRAM with file actions (a close and a dup2); wait.
 *   lifecycle spawn-busy IP:PORT PROGRAM [ARGS...]
 *       Start a non-blocking connect to IP:PORT, posix_spawn() PROGRAM with
 *       file actions that also close that socket in the child (which runs
 *       in its parent's memory until it execs), then wait for the connect
 *       with poll() and SO_ERROR, and for the child.
 *   lifecycle close-range IP:PORT
 *       List the open fds on stderr ("fds: 0 1 2"), close_range(3, ~0U, 0) as
 *       ssh does at start-up, then a blocking connect and a non-blocking one
 *       (poll) to IP:PORT.
 *
 * Each connect made here prints "NAME OK" or "NAME ENAME" on stdout.  The exit
 * status is 0 if everything succeeded (a waited-for child included), else 1;
 * 2 for a usage error.
 */

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void usage(void)
{
	fprintf(stderr, "usage: lifecycle dlopen MODULE IP:PORT\n"
			"       lifecycle vfork-exec PROGRAM [ARGS...]\n"
			"       lifecycle vfork-busy IP:PORT PROGRAM [ARGS...]\n"
			"       lifecycle fork-busy IP:PORT\n"
			"       lifecycle spawn PROGRAM [ARGS...]\n"
			"       lifecycle spawn-busy IP:PORT PROGRAM [ARGS...]\n"
			"       lifecycle close-range IP:PORT\n");
	exit(2);
}

static void parse_addr(const char *spec, struct sockaddr_in *to, char *ip, size_t ip_size)
{
	const char *colon = strrchr(spec, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - spec) >= ip_size)
		usage();
	memcpy(ip, spec, (size_t)(colon - spec));
	ip[colon - spec] = '\0';
	port = strtol(colon + 1, &end, 10);
	memset(to, 0, sizeof(*to));
	to->sin_family = AF_INET;
	to->sin_port = htons((uint16_t)port);
	if (*end || port < 1 || port > 65535 || inet_pton(AF_INET, ip, &to->sin_addr) != 1)
		usage();
}

static int report(const char *what, int err)
{
	printf("%s %s\n", what, err == 0 ? "OK" : strerrorname_np(err));
	fflush(stdout);
	return err == 0 ? 0 : 1;
}

/* Start a non-blocking connect; the socket, or -1 with the error in *err. */
static int start_connect(const struct sockaddr_in *to, int *err)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*err = 0;
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) != 0 && errno != EINPROGRESS)
		*err = errno;
	return fd;
}

/* Wait for the connect of @fd as an event loop does; 0 or the error. */
static int finish_connect(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	if (poll(&pfd, 1, 20000) != 1)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return errno;
	return err;
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int run_dlopen(char **argv)
{
	int (*module_connect)(const char *, unsigned);
	struct sockaddr_in to;
	char ip[INET_ADDRSTRLEN];
	void *module, *sym;

	if (!argv[0] || !argv[1])
		usage();
	parse_addr(argv[1], &to, ip, sizeof(ip));
	module = dlopen(argv[0], RTLD_NOW | RTLD_LOCAL);
	if (!module) {
		fprintf(stderr, "lifecycle: %s\n", dlerror());
		return 1;
	}
	sym = dlsym(module, "module_connect");
	if (!sym) {
		fprintf(stderr, "lifecycle: %s\n", dlerror());
		return 1;
	}
	memcpy(&module_connect, &sym, sizeof(sym));
	return report("dlopen", module_connect(ip, ntohs(to.sin_port)));
}

static int run_vfork_exec(char **argv)
{
	pid_t pid;

	if (!argv[0])
		usage();
	fflush(NULL);
	pid = vfork();
	if (pid < 0)
		return report("vfork", errno);
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	return wait_child(pid);
}

static int run_vfork_busy(char **argv)
{
	struct sockaddr_in to;
	char ip[INET_ADDRSTRLEN];
	int fd, err, child;
	pid_t pid;

	if (!argv[0] || !argv[1])
		usage();
	parse_addr(argv[0], &to, ip, sizeof(ip));
	fd = start_connect(&to, &err);
	if (fd < 0 || err != 0)
		return report("parent", err);
	fflush(NULL);
	pid = vfork();
	if (pid < 0)
		return report("vfork", errno);
	if (pid == 0) {
		/* The child shares the parent's memory until it execs. */
		close(fd);
		execv(argv[1], argv + 1);
		_exit(127);
	}
	err = finish_connect(fd);
	child = wait_child(pid);
	close(fd);
	return report("parent", err) | child;
}

static int run_fork_busy(char **argv)
{
	struct pollfd pfd;
	struct sockaddr_in to;
	char ip[INET_ADDRSTRLEN];
	int fd, err, child;
	pid_t pid;

	if (!argv[0])
		usage();
	parse_addr(argv[0], &to, ip, sizeof(ip));
	fd = start_connect(&to, &err);
	if (fd < 0 || err != 0)
		return report("parent", err);
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&pfd, 1, 200) != 0)
		fprintf(stderr,
			"lifecycle: the connect ended within 200 ms: nothing was pending\n");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return report("fork", errno);
	if (pid == 0) {
		char c;
		ssize_t n = read(fd, &c, 1);

		printf("child read: %s\n", n < 0 ? strerrorname_np(errno) : "data");
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		printf("child poll: %d\n", poll(&pfd, 1, 0));
		fflush(NULL);
		_exit(0);
	}
	child = wait_child(pid);
	err = finish_connect(fd);
	close(fd);
	return report("parent", err) | child;
}

/* posix_spawn() @argv with file actions, closing @also_close too if not -1; 0 or the error. */
static int spawn_with_actions(char **argv, int also_close, pid_t *pid)
{
	posix_spawn_file_actions_t actions;
	int pipefd[2], rc;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return errno;
	posix_spawn_file_actions_init(&actions);
	if (also_close >= 0)
		posix_spawn_file_actions_addclose(&actions, also_close);
	posix_spawn_file_actions_addclose(&actions, pipefd[0]);
	posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, pipefd[1]);
	posix_spawn_file_actions_addclose(&actions, pipefd[1]);
	rc = posix_spawn(pid, argv[0], &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(pipefd[0]);
	close(pipefd[1]);
	return rc;
}

static int run_spawn(char **argv)
{
	pid_t pid;
	int rc;

	if (!argv[0])
		usage();
	rc = spawn_with_actions(argv, -1, &pid);
	if (rc != 0)
		return report("spawn", rc);
	return wait_child(pid);
}

static int run_spawn_busy(char **argv)
{
	struct sockaddr_in to;
	char ip[INET_ADDRSTRLEN];
	int fd, err, child;
	pid_t pid;

	if (!argv[0] || !argv[1])
		usage();
	parse_addr(argv[0], &to, ip, sizeof(ip));
	fd = start_connect(&to, &err);
	if (fd < 0 || err != 0)
		return report("parent", err);
	fflush(NULL);
	err = spawn_with_actions(argv + 1, fd, &pid);
	if (err != 0)
		return report("spawn", err);
	err = finish_connect(fd);
	child = wait_child(pid);
	close(fd);
	return report("parent", err) | child;
}

static void list_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *d;

	fprintf(stderr, "fds:");
	while (dir && (d = readdir(dir)) != NULL) {
		if (d->d_name[0] != '.' && atoi(d->d_name) != dirfd(dir))
			fprintf(stderr, " %s", d->d_name);
	}
	fprintf(stderr, "\n");
	if (dir)
		closedir(dir);
}

static int run_close_range(char **argv)
{
	struct sockaddr_in to;
	char ip[INET_ADDRSTRLEN];
	int fd, err, failed;

	if (!argv[0])
		usage();
	parse_addr(argv[0], &to, ip, sizeof(ip));
	list_fds();
	if (close_range(3, ~0U, 0) != 0)
		return report("close_range", errno);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return report("blocking", errno);
	err = connect(fd, (const struct sockaddr *)&to, sizeof(to)) == 0 ? 0 : errno;
	close(fd);
	failed = report("blocking", err);
	fd = start_connect(&to, &err);
	if (fd >= 0 && err == 0)
		err = finish_connect(fd);
	if (fd >= 0)
		close(fd);
	return failed | report("nonblocking", err);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "dlopen") == 0)
		return run_dlopen(argv + 2);
	if (strcmp(argv[1], "vfork-exec") == 0)
		return run_vfork_exec(argv + 2);
	if (strcmp(argv[1], "vfork-busy") == 0)
		return run_vfork_busy(argv + 2);
	if (strcmp(argv[1], "fork-busy") == 0)
		return run_fork_busy(argv + 2);
	if (strcmp(argv[1], "spawn") == 0)
		return run_spawn(argv + 2);
	if (strcmp(argv[1], "spawn-busy") == 0)
		return run_spawn_busy(argv + 2);
	if (strcmp(argv[1], "close-range") == 0)
		return run_close_range(argv + 2);
	usage();
}
