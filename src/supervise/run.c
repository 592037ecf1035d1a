/* Start the supervisor, install the filter on this process, become the program. */
#include "supervise/run.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_dests.h"
#include "drivers/before.h"
#include "counters/events.h"
#include "supervise/filter.h"
#include "supervise/serve.h"
#include "sys/cookie.h"
#include "sys/elf.h"
#include "sys/log.h"
#include "sys/rng.h"

/*
 * The mark of libbackoff's own programs (sys/elf.h): a preloaded process
 * execs the launcher or the supervisor as it is, never through a supervisor.
 */
__attribute__((section(ELF_ENGINE_SECTION), used)) static const char engine_mark[] = "libbackoff";

/*
 * Close every fd from 3 up but @keep and, if @also_next, @keep + 1 (bats and
 * pipelines must not wait for the supervisor).
 */
static void close_others(int keep, bool also_next)
{
	/* The system call: musl has no close_range(). */
	if (keep > 3)
		syscall(SYS_close_range, 3U, (unsigned)keep - 1, 0);
	syscall(SYS_close_range, (unsigned)keep + (also_next ? 2 : 1), ~0U, 0);
}

static int receive_fd(int sock)
{
	char data, control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &data, 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

static int send_fd(int sock, int fd)
{
	char data = 'L', control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &data, 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *c;

	memset(control, 0, sizeof(control));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/*
 * The supervisor process: a grandchild, reparented at once, so the program
 * cannot wait() for it; in a session of its own, so the terminal's signals
 * are the program's alone; with no fd of the program's (stdin, stdout and
 * stderr are /dev/null, so out=$(backoff -- prog) ends with the program).
 * With BACKOFF_STATS it keeps the launcher's stderr for the summary line,
 * written in the name of @program, the launched command's PID.
 */
static _Noreturn void supervisor(int sock, const struct config *cfg, pid_t program)
{
	int stats_fd = -1, null_fd, listener;
	pid_t self = getpid();
	struct log_stats s;

	setsid();
	signal(SIGPIPE, SIG_IGN);
	/* The stats line's fd goes right after @sock, the one other fd kept. */
	if (cfg->stats)
		stats_fd = dup3(STDERR_FILENO, sock + 1, O_CLOEXEC);
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		dup2(null_fd, STDIN_FILENO);
		dup2(null_fd, STDOUT_FILENO);
		dup2(null_fd, STDERR_FILENO);
	}
	close_others(sock, stats_fd >= 0);
	listener = receive_fd(sock);
	if (listener < 0 || write(sock, &self, sizeof(self)) != (ssize_t)sizeof(self))
		_exit(0);
	close(sock);
	rng_configure(cfg->seeded, cfg->seed);
	log_configure(cfg->log_level, cfg->log_json, config_log_file(cfg));
	serve_run(listener, cfg);
	events_stats_read(&s);
	if (stats_fd >= 0 && s.calls > 0) {
		struct log_task to_program = { .fd = stats_fd, .pid = program, .tid = program };

		log_set_thread_task(&to_program);
		log_stats(&s);
	}
	_exit(0);
}

/* Yama's ptrace_scope, or 0 without Yama. */
static int yama_scope(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	return c >= '0' && c <= '9' ? c - '0' : 0;
}

/*
 * The system call the supervisor needs that this process is refused, or
 * NULL: it reads a connect's address with process_vm_readv and takes the
 * program's socket with pidfd_getfd, both of which a container's default
 * seccomp profile refuses without CAP_SYS_PTRACE.  Asked of this process,
 * which the same filter governs as the supervisor it starts.
 */
static const char *refused_call(void)
{
	char here = 'b', there = 0;
	struct iovec local = { &there, 1 }, remote = { &here, 1 };
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0), fd;
	const char *refused = NULL;

	if (pidfd < 0)
		return "pidfd_open";
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, pidfd, 0);
	if (fd < 0)
		refused = "pidfd_getfd";
	else
		close(fd);
	if (!refused && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1)
		refused = "process_vm_readv";
	fd = errno;
	close(pidfd);
	errno = fd;
	return refused;
}

/*
 * Start the supervisor and install the filter on this process.  Returns 0,
 * or -1 with *why and errno, having changed nothing that the program sees.
 */
static int start(const struct config *cfg, const char **why, pid_t *supervisor_pid)
{
	pid_t child, sup = 0, program = getpid();
	int sv[2], listener, status, err, scope = yama_scope();

	/*
	 * Yama 3 forbids every attach; 2 leaves it to CAP_SYS_PTRACE.  (1 is
	 * handled: this process names the supervisor as its tracer below.)
	 */
	if (scope >= 3 || (scope == 2 && geteuid() != 0)) {
		*why = scope >= 3 ? "Yama ptrace_scope 3" : "Yama ptrace_scope 2";
		errno = EPERM;
		return -1;
	}
	*why = refused_call();
	if (*why)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		*why = "socketpair";
		return -1;
	}
	child = fork();
	if (child < 0) {
		err = errno;
		close(sv[0]);
		close(sv[1]);
		*why = "fork";
		errno = err;
		return -1;
	}
	if (child == 0) {
		close(sv[0]);
		if (fork() != 0)
			_exit(0);
		supervisor(sv[1], cfg, program);
	}
	close(sv[1]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	listener = filter_install(why);
	if (listener < 0) {
		err = errno;
		close(sv[0]); /* the supervisor reads EOF and exits */
		errno = err;
		return -1;
	}
	/* From here on the filter is in place: without its supervisor, connect fails. */
	if (send_fd(sv[0], listener) != 0 || read(sv[0], &sup, sizeof(sup)) != sizeof(sup)) {
		fprintf(stderr, "backoff: the supervisor did not start\n");
		_exit(2);
	}
	close(listener);
	close(sv[0]);
	/* Yama ptrace_scope 1: name the supervisor as this process's tracer (EINVAL without Yama).
	 */
	(void)prctl(PR_SET_PTRACER, (unsigned long)sup, 0, 0, 0);
	*supervisor_pid = sup;
	return 0;
}

/*
 * For a program of the other C library, which cannot load this build: this
 * build's library in LD_PRELOAD replaced by the other build's (musl/ next to
 * the glibc build, the glibc build above musl/), or taken out where there is
 * none.  This program lives next to its library.
 */
static void preload_other_build(void)
{
	char dir[PATH_MAX], ours[PATH_MAX + 16], other[PATH_MAX + 32], *slash, *value, *out;
	const char *current = getenv("LD_PRELOAD"), *p;
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	size_t len;

	if (!current || n <= 0)
		return;
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(ours, sizeof(ours), "%s/libbackoff.so", dir);
	len = strlen(dir);
	if (len >= 5 && strcmp(dir + len - 5, "/musl") == 0)
		snprintf(other, sizeof(other), "%.*s/libbackoff.so", (int)(len - 5), dir);
	else
		snprintf(other, sizeof(other), "%s/musl/libbackoff.so", dir);
	value = malloc(strlen(current) + strlen(other) + 2);
	if (!value)
		return;
	out = value;
	/* ld.so separates LD_PRELOAD entries with colons or spaces. */
	for (p = current; *p; p += *p != '\0') {
		size_t w = strcspn(p, ": ");
		const char *entry = p;

		p += w;
		if (w == strlen(ours) && memcmp(entry, ours, w) == 0) {
			if (access(other, R_OK) != 0)
				continue;
			entry = other;
			w = strlen(other);
		}
		if (w == 0)
			continue;
		if (out != value)
			*out++ = ':';
		memcpy(out, entry, w);
		out += w;
	}
	*out = '\0';
	if (out == value)
		unsetenv("LD_PRELOAD");
	else
		setenv("LD_PRELOAD", value, 1);
	free(value);
}

int supervise_run(const char *preload, const char *path, char **command)
{
	static struct config_dest dests[CONFIG_DESTS_MAX]; /* served by cfg */
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;
	const char *why = NULL;
	char pid_text[16];
	bool privileged;
	pid_t sup = 0;

	/* The launcher has reported the problems already; the program's preload reports them. */
	config_parse(config_getenv, NULL, &cfg, &problems);
	config_dests_build(&cfg, dests, CONFIG_DESTS_MAX, &problems);
	before_configure(&cfg);
	/*
	 * So are unknown names, but without --preload no preload is there to say
	 * them (--engine supervise): said here, before the program starts.
	 */
	if (!preload && !getenv(CONFIG_NAMES_SAID_ENV)) {
		log_configure(cfg.log_level, cfg.log_json, config_log_file(&cfg));
		if (config_unknown_scan(environ, config_say_unknown, NULL) > 0 && cfg.strict)
			return 2;
	}
	if (cfg.enabled && start(&cfg, &why, &sup) != 0)
		fprintf(stderr, "backoff: the supervisor engine cannot run here (%s: %s%s): %s\n",
			why, strerror(errno),
			errno == EPERM && strncmp(why, "Yama", 4) != 0
				? "; a container's seccomp profile refuses it without "
				  "CAP_SYS_PTRACE: run it with --cap-add SYS_PTRACE"
				: "",
			preload ? "the preload alone retries, for dynamically linked programs"
				: "running the command without retries");
	else if (cfg.enabled && (preload || path)) {
		snprintf(pid_text, sizeof(pid_text), "%d", (int)sup);
		setenv(COOKIE_ENV, pid_text, 1);
	}
	if (preload)
		setenv("LD_PRELOAD", preload, 1);
	if (path && elf_exec_kind(path, &privileged) == ELF_KIND_FOREIGN)
		preload_other_build();
	if (path) {
		/* The system call: a preload in this process would send the exec here again. */
		syscall(SYS_execve, path, command, environ);
		fprintf(stderr, "backoff: %s: %s\n", path, strerror(errno));
	} else {
		execvp(command[0], command);
		fprintf(stderr, "backoff: %s: %s\n", command[0], strerror(errno));
	}
	return errno == ENOENT ? 127 : 126;
}
