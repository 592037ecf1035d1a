/* The supervisor: connect and getsockopt(SO_ERROR) notifications, answered and retried. */
#include "supervise/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/retry.h"
#include "core/share.h"
#include "core/target.h"
#include "supervise/elf.h"
#include "supervise/notify.h"
#include "sys/clock.h"
#include "sys/compat.h"
#include "sys/log.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9: a pidfd for a thread, not only a leader */
#endif

/* How often a retrying thread checks that the program still holds the socket, in ms. */
#define CHECK_MS 100
/* How long a failure waits for the program to read it with SO_ERROR, in ms. */
#define COLLECT_MS 30000

static int listener = -1;
static const struct config *cfg;

/*
 * Mechanism.  A blocking connect is held: the thread that received it
 * retries it on a duplicate of the program's socket (pidfd_getfd: the same open file
 * description, so connecting the duplicate connects the program's socket)
 * and answers the notification with the final result, as the preload does
 * inside the call.
 *
 * A non-blocking connect is answered at once: the supervisor makes the first
 * attempt on the duplicate and the program gets what the kernel said, or
 * EINPROGRESS when the attempt is under way or failed with a retryable error;
 * the same thread then runs the schedule on the duplicate.  The program learns the
 * outcome from getsockopt(SO_ERROR), which the filter also sends here: while
 * retries go on, a Go program (whose dial loop takes EINPROGRESS from
 * SO_ERROR as "wait again", and waits for the next edge of its edge-triggered
 * epoll) is answered EINPROGRESS at once, so its own dial deadline stays
 * exact; any other program's getsockopt is held until the connect has
 * succeeded (the kernel answers it) or failed for good (it gets the error).
 * Between attempts the socket is unconnected, which poll reports as
 * writable: a program that writes without reading SO_ERROR first sees
 * ENOTCONN (documented in the README).
 */

/* One getsockopt(SO_ERROR) waiting for the outcome of a managed connect. */
struct held {
	uint64_t id;
	pid_t pid;
	uint64_t optval, optlen; /* addresses in the task */
};

enum managed_state {
	MANAGED_ATTEMPTING, /* an attempt is under way on the socket */
	MANAGED_WAITING,    /* the socket is unconnected until the next attempt */
	MANAGED_FAILED,	    /* failed for good: the next SO_ERROR read gets ->err */
	MANAGED_DONE,	    /* connected, or left to the kernel */
};

/* A non-blocking connect being retried; the list is under managed_lock. */
struct managed {
	struct managed *next;
	dev_t dev; /* the socket's identity, for getsockopt notifications */
	ino_t ino;
	int dup; /* the supervisor's duplicate of the program's socket */
	pid_t tgid;
	int fd;	 /* the program's fd number, to see it closed (kcmp) */
	bool go; /* the program is a Go program */
	enum managed_state state;
	int err;
	bool collected; /* a getsockopt got ->err */
	struct held *held;
	unsigned nheld, cap;
};

static pthread_mutex_t managed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct managed *managed_list;
static atomic_uint managed_count;

/* Everything a retrying thread needs about one connect. */
struct job {
	struct seccomp_notif n;
	struct sockaddr_storage addr;
	socklen_t len;
	struct target_addr target;
	int pidfd, dup;
	int first_err; /* non-blocking: the first attempt's retryable error, or 0 */
	struct managed *m;
};

static void reply(uint64_t id, int err)
{
	struct seccomp_notif_resp r = { .id = id, .error = -err };

	/* ENOENT: the task was interrupted or has gone; nothing waits for the answer. */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

/* Let the kernel make the call, as without the supervisor. */
static void reply_continue(uint64_t id)
{
	struct seccomp_notif_resp r = { .id = id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };

	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

static bool id_valid(uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static pid_t task_tgid(pid_t tid)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : -1;
}

/* A pidfd for the task that made the call: a thread of its process, often not the leader. */
static int task_pidfd(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	pid_t tgid;

	if (fd >= 0 || errno != EINVAL)
		return fd;
	tgid = task_tgid(tid);
	return tgid > 0 ? (int)syscall(SYS_pidfd_open, tgid, 0) : -1;
}

static int task_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

/* An address in the task, as a system call argument carries it. */
static void *task_address(uint64_t addr)
{
	return (void *)(uintptr_t)addr;
}

static bool task_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { task_address(addr), len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static bool task_write(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { task_address(addr), len };

	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static const struct config_errset *retryable(const struct target_addr *t)
{
	return t->family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet;
}

static uint64_t sndtimeo_ms(int fd)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);

	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) != 0 ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return CONFIG_INFINITE;
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Answer a held getsockopt(SO_ERROR) with @value, as the kernel writes it. */
static void answer_value(const struct held *h, int value)
{
	socklen_t len = sizeof(value);

	if (!id_valid(h->id))
		return;
	if (!task_write(h->pid, h->optval, &value, sizeof(value)) ||
	    !task_write(h->pid, h->optlen, &len, sizeof(len))) {
		reply_continue(h->id);
		return;
	}
	reply(h->id, 0);
}

/* Answer every held getsockopt of @m; under managed_lock. */
static void answer_held(struct managed *m, int value, bool kernel)
{
	unsigned i;

	for (i = 0; i < m->nheld; i++) {
		if (kernel)
			reply_continue(m->held[i].id);
		else
			answer_value(&m->held[i], value);
		/* SO_ERROR is read once: a second reader gets what the kernel has, 0. */
		if (value)
			kernel = true;
	}
	m->nheld = 0;
}

/* Whether the program still holds the socket at the same fd number. */
static bool managed_owned(const struct managed *m)
{
	return syscall(SYS_kcmp, m->tgid, getpid(), KCMP_FILE, m->fd, m->dup) == 0;
}

static bool sock_connected(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return getpeername(fd, (struct sockaddr *)&ss, &len) == 0;
}

static int sock_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : errno;
}

static bool sock_ready(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };

	return poll(&p, 1, 0) > 0;
}

static enum managed_state managed_get(struct managed *m, bool *collected)
{
	enum managed_state state;

	pthread_mutex_lock(&managed_lock);
	state = m->state;
	if (collected)
		*collected = m->collected;
	pthread_mutex_unlock(&managed_lock);
	return state;
}

static void managed_set(struct managed *m, enum managed_state state)
{
	pthread_mutex_lock(&managed_lock);
	m->state = state;
	pthread_mutex_unlock(&managed_lock);
}

/* Failed for good with @err: hand the error to the program. */
static void managed_fail(struct managed *m, int err)
{
	pthread_mutex_lock(&managed_lock);
	m->state = MANAGED_FAILED;
	m->err = err;
	if (m->nheld > 0) {
		m->collected = true;
		answer_held(m, err, false);
	} else if (m->go) {
		/*
		 * A Go program told "wait again" sleeps until the socket's next
		 * event; shutdown() of an unconnected socket makes one.
		 */
		shutdown(m->dup, SHUT_RDWR);
	}
	pthread_mutex_unlock(&managed_lock);
}

static void managed_done(struct managed *m)
{
	pthread_mutex_lock(&managed_lock);
	m->state = MANAGED_DONE;
	answer_held(m, 0, true);
	pthread_mutex_unlock(&managed_lock);
}

static void managed_remove(struct managed *m)
{
	struct managed **p;

	pthread_mutex_lock(&managed_lock);
	for (p = &managed_list; *p && *p != m; p = &(*p)->next)
		;
	if (*p)
		*p = m->next;
	if (m->state == MANAGED_FAILED && !m->collected && m->nheld > 0)
		answer_held(m, m->err, false);
	answer_held(m, 0, true);
	atomic_fetch_sub(&managed_count, 1);
	pthread_mutex_unlock(&managed_lock);
	free(m->held);
	free(m);
}

/* After a failed attempt: schedule the next one, or fail for good. */
static bool managed_plan(struct job *j, const struct retry_call *c, struct retry_progress *p,
			 int err, uint64_t *wake)
{
	struct managed *m = j->m;

	if (!config_errset_has(c->retryable, err)) {
		managed_fail(m, err);
		return false;
	}
	if (!retry_plan(cfg, c, p, err, clock_now_ms(), wake)) {
		managed_fail(m, err);
		return false;
	}
	pthread_mutex_lock(&managed_lock);
	m->state = MANAGED_WAITING;
	if (m->go)
		answer_held(m, EINPROGRESS, false);
	pthread_mutex_unlock(&managed_lock);
	return true;
}

/* One step of an attempt under way: false once the connect is settled. */
static bool managed_poll(struct job *j, const struct retry_call *c, struct retry_progress *p,
			 uint64_t *wake)
{
	struct managed *m = j->m;
	struct pollfd pfd = { m->dup, POLLOUT, 0 };
	int err;

	if (poll(&pfd, 1, CHECK_MS) == 0) {
		if (clock_now_ms() < p->deadline_ms)
			return true;
		/* The budget is spent: the attempt under way is the last, the kernel's to finish.
		 */
		(void)retry_plan(cfg, c, p, 0, clock_now_ms(), wake);
		managed_done(m);
		return false;
	}
	if (sock_connected(m->dup)) {
		retry_succeeded(c, p, clock_now_ms());
		managed_done(m);
		return false;
	}
	pthread_mutex_lock(&managed_lock);
	err = sock_error(m->dup);
	pthread_mutex_unlock(&managed_lock);
	if (err == 0) {
		/* Something else read the error (a second connect() does): the kernel's now. */
		managed_done(m);
		return false;
	}
	return managed_plan(j, c, p, err, wake);
}

/* One attempt after a wait: false once the connect is settled. */
static bool managed_attempt(struct job *j, const struct retry_call *c, struct retry_progress *p,
			    uint64_t *wake)
{
	struct managed *m = j->m;
	int err;

	p->attempt++;
	/*
	 * On loopback the attempt settles inside connect(): its event reaches the
	 * program before connect returns, so a getsockopt must already see an
	 * attempt under way, or a Go program told "wait again" would wait for an
	 * event that has passed.
	 */
	managed_set(m, MANAGED_ATTEMPTING);
	err = connect(m->dup, (const struct sockaddr *)&j->addr, j->len) == 0 ? 0 : errno;
	/* Measured: after a failure whose SO_ERROR was read, connect only resets the socket. */
	if (err == ECONNABORTED)
		err = connect(m->dup, (const struct sockaddr *)&j->addr, j->len) == 0 ? 0 : errno;
	if (err == 0 || err == EISCONN) {
		retry_succeeded(c, p, clock_now_ms());
		managed_done(m);
		return false;
	}
	if (err == EINPROGRESS || err == EALREADY)
		return true;
	return managed_plan(j, c, p, err, wake);
}

static void job_free(struct job *j)
{
	if (j->dup >= 0)
		close(j->dup);
	if (j->pidfd >= 0)
		close(j->pidfd);
	free(j);
}

/* Borrow the program's stderr for this thread's log lines, as the preload writes there. */
static int borrow_stderr(const struct job *j)
{
	int fd = task_getfd(j->pidfd, STDERR_FILENO);
	pid_t tgid = task_tgid((pid_t)j->n.pid);

	log_set_thread_task(fd, tgid > 0 ? tgid : (int)j->n.pid, (int)j->n.pid);
	return fd;
}

static void return_stderr(int fd)
{
	log_set_thread_task(-1, 0, 0);
	if (fd >= 0)
		close(fd);
}

static void managed_retry(struct job *j)
{
	struct managed *m = j->m;
	struct retry_call c = {
		.call = "connect",
		.target = &j->target,
		.retryable = retryable(&j->target),
		.budget_ms = sndtimeo_ms(j->dup),
	};
	struct retry_progress p;
	uint64_t wake = 0, failed_ms = 0;
	int log_fd = borrow_stderr(j);
	bool going = true, collected = false;

	retry_begin(cfg, &p, c.budget_ms, clock_now_ms());
	if (j->first_err)
		going = managed_plan(j, &c, &p, j->first_err, &wake);
	while (going) {
		if (!managed_owned(m))
			break;
		if (managed_get(m, NULL) == MANAGED_ATTEMPTING) {
			going = managed_poll(j, &c, &p, &wake);
		} else {
			uint64_t now = clock_now_ms();

			if (now < wake)
				sleep_ms(wake - now < CHECK_MS ? wake - now : CHECK_MS);
			else
				going = managed_attempt(j, &c, &p, &wake);
		}
	}
	/* A failure waits, bounded, for the program to read it. */
	while (managed_get(m, &collected) == MANAGED_FAILED && !collected && managed_owned(m) &&
	       failed_ms < COLLECT_MS) {
		sleep_ms(CHECK_MS);
		failed_ms += CHECK_MS;
	}
	return_stderr(log_fd);
	managed_remove(m);
	job_free(j);
}

static int attempt_while_valid(void *ctx)
{
	struct job *j = ctx;

	if (!id_valid(j->n.id))
		return ECANCELED; /* interrupted or gone: not retried */
	return connect(j->dup, (const struct sockaddr *)&j->addr, j->len) == 0 ? 0 : errno;
}

static void blocking_retry(struct job *j)
{
	int err = connect(j->dup, (const struct sockaddr *)&j->addr, j->len) == 0 ? 0 : errno;

	if (err && config_errset_has(retryable(&j->target), err)) {
		struct retry_call c = {
			.call = "connect",
			.target = &j->target,
			.retryable = retryable(&j->target),
			.budget_ms = sndtimeo_ms(j->dup),
			.attempt = attempt_while_valid,
			.ctx = j,
		};
		int log_fd = borrow_stderr(j), type = 0;
		socklen_t type_len = sizeof(type);

		/* Shared fate with every process of the user, preloaded or supervised. */
		if (cfg->shared && getsockopt(j->dup, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 &&
		    type == SOCK_STREAM) {
			c.shared = share_get(cfg, &j->target);
			if (c.shared && share_is_local(&j->target))
				c.look_ns = cfg->local_probe_ms * 1000000;
		}

		err = retry_blocking(cfg, &c, err);
		return_stderr(log_fd);
	}
	reply(j->n.id, err);
	job_free(j);
}

/*
 * Receivers: threads that each take a notification from the listener and
 * answer it themselves, retries included, so that a connect costs no hand-off
 * between threads.  One more is started whenever none would be left waiting,
 * so a long retry never makes another connect wait; a receiver that finds
 * enough others waiting ends.
 */
#define RECEIVERS_SPARE 1
#define RECEIVERS_IDLE_MAX 4

static atomic_uint receivers_idle;

static void dispatch(const struct seccomp_notif *n);

static void *receiver(void *arg);

static bool receiver_start(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)256 * 1024);
	rc = pthread_create(&t, &attr, receiver, NULL);
	pthread_attr_destroy(&attr);
	return rc == 0;
}

static void *receiver(void *arg)
{
	(void)arg;
	for (;;) {
		struct seccomp_notif n;
		int rc;

		memset(&n, 0, sizeof(n));
		atomic_fetch_add(&receivers_idle, 1);
		rc = ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n);
		if (atomic_fetch_sub(&receivers_idle, 1) <= RECEIVERS_SPARE)
			(void)receiver_start();
		/* ENOENT: the task went away meanwhile; EINTR: nothing was taken. */
		if (rc == 0)
			dispatch(&n);
		if (atomic_load(&receivers_idle) >= RECEIVERS_IDLE_MAX)
			return NULL;
	}
}

static bool is_go(pid_t tgid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)tgid);
	return elf_inspect(path) == ELF_KIND_GO;
}

/* Start managing the non-blocking connect of @j; false if it cannot be. */
static bool managed_start(struct job *j, int first_err)
{
	struct managed *m = calloc(1, sizeof(*m));
	struct stat st;

	if (!m || fstat(j->dup, &st) != 0)
		goto out_free;
	m->tgid = task_tgid((pid_t)j->n.pid);
	if (m->tgid <= 0)
		goto out_free;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->dup = j->dup;
	m->fd = (int)j->n.data.args[0];
	m->go = is_go(m->tgid);
	m->state = first_err ? MANAGED_WAITING : MANAGED_ATTEMPTING;
	j->m = m;
	j->first_err = first_err;
	pthread_mutex_lock(&managed_lock);
	m->next = managed_list;
	managed_list = m;
	atomic_fetch_add(&managed_count, 1);
	pthread_mutex_unlock(&managed_lock);
	return true;
out_free:
	free(m);
	return false;
}

/*
 * The eligibility checks that need no socket (supervise/notify.c): length,
 * address, family, target filter.  False: the call goes back to the kernel.
 */
static bool connect_eligible(struct job *j)
{
	const struct seccomp_notif *n = &j->n;
	size_t len = notify_address_len(n->data.args[2]);
	bool readable = len > 0 && task_read((pid_t)n->pid, n->data.args[1], &j->addr, len);

	j->len = (socklen_t)len;
	return notify_connect_eligible(cfg, n->data.args[2], &j->addr, readable ? len : 0,
				       &j->target);
}

/*
 * A second connect() on a socket being retried (perl and ssh check completion
 * so): answered as the kernel would for the attempt the program believes in,
 * EALREADY while it is under way, the error once it failed.  Returns false
 * if the socket is not being retried.
 */
static bool connect_again(struct job *j)
{
	struct managed *m;
	struct stat st;

	if (fstat(j->dup, &st) != 0)
		return false;
	pthread_mutex_lock(&managed_lock);
	for (m = managed_list; m && !(m->dev == st.st_dev && m->ino == st.st_ino); m = m->next)
		;
	if (!m || m->state == MANAGED_DONE || (m->state == MANAGED_FAILED && m->collected)) {
		pthread_mutex_unlock(&managed_lock);
		return false;
	}
	if (m->state == MANAGED_FAILED) {
		m->collected = true;
		reply(j->n.id, m->err);
	} else {
		reply(j->n.id, EALREADY);
	}
	pthread_mutex_unlock(&managed_lock);
	return true;
}

static void on_connect(const struct seccomp_notif *n)
{
	struct job *j = calloc(1, sizeof(*j));
	int type = 0, flags, err;
	socklen_t tlen = sizeof(type);

	if (!j) {
		reply_continue(n->id);
		return;
	}
	j->n = *n;
	j->pidfd = j->dup = -1;
	if (!connect_eligible(j))
		goto out_continue;
	j->pidfd = task_pidfd((pid_t)n->pid);
	if (j->pidfd < 0)
		goto out_continue;
	j->dup = task_getfd(j->pidfd, (int)n->data.args[0]);
	/* Not an fd (EBADF), not a socket, not a stream: the kernel's answer. */
	if (j->dup < 0 || getsockopt(j->dup, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 ||
	    type != SOCK_STREAM)
		goto out_continue;
	flags = fcntl(j->dup, F_GETFL);
	if (flags < 0)
		goto out_continue;
	/* The task may have exec'd or closed the fd meanwhile: the duplicate must be its. */
	if (!id_valid(n->id))
		goto out_free;
	if (!(flags & O_NONBLOCK)) {
		blocking_retry(j);
		return;
	}
	if (!cfg->nonblock)
		goto out_continue;
	if (atomic_load(&managed_count) > 0 && connect_again(j))
		goto out_free;
	err = connect(j->dup, (const struct sockaddr *)&j->addr, j->len) == 0 ? 0 : errno;
	if (err != EINPROGRESS && !config_errset_has(retryable(&j->target), err)) {
		reply(n->id, err);
		goto out_free;
	}
	if (!managed_start(j, err == EINPROGRESS ? 0 : err)) {
		reply(n->id, err);
		goto out_free;
	}
	reply(n->id, EINPROGRESS);
	managed_retry(j);
	return;
out_continue:
	reply_continue(n->id);
out_free:
	job_free(j);
}

/* Keep @h until @m settles; under managed_lock.  The list grows as signals restart calls. */
static bool held_add(struct managed *m, const struct held *h)
{
	struct held *grown;

	if (m->nheld == m->cap) {
		grown = realloc(m->held, (m->cap * 2 + 4) * sizeof(*h));
		if (!grown)
			return false;
		m->held = grown;
		m->cap = m->cap * 2 + 4;
	}
	m->held[m->nheld++] = *h;
	return true;
}

static void on_getsockopt(const struct seccomp_notif *n)
{
	struct held h = { n->id, (pid_t)n->pid, n->data.args[3], n->data.args[4] };
	struct managed *m;
	struct stat st;
	socklen_t optlen = 0;
	int pidfd, dup, rc;

	if (atomic_load(&managed_count) == 0)
		goto out_continue;
	pidfd = task_pidfd((pid_t)n->pid);
	if (pidfd < 0)
		goto out_continue;
	dup = task_getfd(pidfd, (int)n->data.args[0]);
	close(pidfd);
	if (dup < 0)
		goto out_continue;
	rc = fstat(dup, &st);
	close(dup);
	if (rc != 0 || !task_read(h.pid, h.optlen, &optlen, sizeof(optlen)) ||
	    !notify_optlen_fits(optlen))
		goto out_continue;
	pthread_mutex_lock(&managed_lock);
	for (m = managed_list; m && !(m->dev == st.st_dev && m->ino == st.st_ino); m = m->next)
		;
	if (!m || m->state == MANAGED_DONE || (m->state == MANAGED_FAILED && m->collected)) {
		pthread_mutex_unlock(&managed_lock);
		goto out_continue;
	}
	if (m->state == MANAGED_FAILED) {
		m->collected = true;
		answer_value(&h, m->err);
	} else if (m->go && (m->state == MANAGED_WAITING || !sock_ready(m->dup))) {
		answer_value(&h, EINPROGRESS);
	} else if (!held_add(m, &h)) {
		pthread_mutex_unlock(&managed_lock);
		goto out_continue;
	}
	pthread_mutex_unlock(&managed_lock);
	return;
out_continue:
	reply_continue(n->id);
}

static void dispatch(const struct seccomp_notif *n)
{
	if (n->data.nr == __NR_connect)
		on_connect(n);
	else
		on_getsockopt(n);
}

void serve_run(int fd, const struct config *config)
{
	unsigned i;

	listener = fd;
	cfg = config;
	for (i = 0; i < RECEIVERS_SPARE + 1; i++)
		if (!receiver_start())
			return;
	/* POLLHUP, reported whatever the events asked: no task is left under the filter. */
	for (;;) {
		struct pollfd p = { fd, 0, 0 };

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return;
		if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
			return;
	}
}
