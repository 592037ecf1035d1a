/* The supervisor: connect and getsockopt(SO_ERROR) notifications, answered and retried. */
#include "config/config_dests.h"
#include "supervise/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "drivers/eligible.h"
#include "facts/share.h"
#include "supervise/job.h"
#include "supervise/managed.h"
#include "supervise/notify.h"
#include "supervise/task.h"
#include "sys/sock.h"
#include "sys/compat.h"

static int listener = -1;
static const struct config *cfg;

/*
 * A blocking connect is held: the thread that received it retries it on a
 * duplicate of the program's socket (pidfd_getfd: the same open file
 * description, so connecting the duplicate connects the program's socket)
 * and answers the notification with the final result, as the preload does
 * inside the call.  A non-blocking one is supervise/managed.c's.
 */

/*
 * The blocking connects being retried, by socket.  A call interrupted by a
 * signal and restarted arrives as a new notification: it takes over the job
 * already at work on its socket (the job answers the newest one), so that two
 * threads never connect one socket, nor set and restore its send timeout.
 */
struct blocking {
	struct blocking *next;
	dev_t dev;
	ino_t ino;
	struct job *j;
};

static pthread_mutex_t blocking_lock = PTHREAD_MUTEX_INITIALIZER;
static struct blocking *blocking_list;

/* The notification @j answers now: the newest of its socket's call. */
static uint64_t blocking_id(const struct job *j)
{
	return __atomic_load_n(&j->n.id, __ATOMIC_ACQUIRE);
}

/* Whether a job is at work on the socket of @st: if so it takes over @n, and true. */
static bool blocking_take_over(const struct stat *st, const struct seccomp_notif *n)
{
	struct blocking *b;

	pthread_mutex_lock(&blocking_lock);
	for (b = blocking_list; b && !(b->dev == st->st_dev && b->ino == st->st_ino); b = b->next)
		;
	if (b)
		__atomic_store_n(&b->j->n.id, n->id, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&blocking_lock);
	return b != NULL;
}

static int attempt_while_valid(void *ctx, uint64_t deadline_ms)
{
	struct job *j = ctx;

	if (!task_id_valid(blocking_id(j)))
		return ECANCELED; /* interrupted or gone: not retried */
	return sock_connect_until(j->dup, (const struct sockaddr *)&j->addr, j->len, deadline_ms,
				  SOCK_TIMEO_ASK, NULL);
}

/*
 * The first attempt of the blocking connect of @c, within its first bound;
 * not made if the call ended while it waited (a signal during its delay).
 */
static int blocking_first(struct decide_connect *c)
{
	struct job *j = c->ctx;

	if ((j->way.b.past_delay || c->waited) && !task_id_valid(blocking_id(j)))
		return ECANCELED;
	return sock_connect_until(j->dup, (const struct sockaddr *)&j->addr, j->len,
				  job_first_deadline(j), SOCK_TIMEO_ASK, NULL);
}

static void blocking_retry(struct job *j)
{
	struct blocking self = { .j = j };
	struct stat st;
	bool listed = fstat(j->dup, &st) == 0;
	int err;

	if (listed && blocking_take_over(&st, &j->n)) {
		job_free(j); /* the call restarted: the job at work answers it */
		return;
	}
	if (listed) {
		self.dev = st.st_dev;
		self.ino = st.st_ino;
		pthread_mutex_lock(&blocking_lock);
		self.next = blocking_list;
		blocking_list = &self;
		pthread_mutex_unlock(&blocking_lock);
	}
	/* A blocking socket: its destination's delay is waited in this thread, as in the call. */
	err = job_way(j, attempt_while_valid, blocking_first, NULL, NULL, NULL);
	if (listed) {
		struct blocking **p;

		/* Off the list first: a restart from now on starts a job of its own. */
		pthread_mutex_lock(&blocking_lock);
		for (p = &blocking_list; *p && *p != &self; p = &(*p)->next)
			;
		if (*p)
			*p = self.next;
		pthread_mutex_unlock(&blocking_lock);
	}
	task_reply(blocking_id(j), err);
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

/* Whether no task is left under the filter (POLLHUP on the listener). */
static bool listener_hung_up(void)
{
	struct pollfd p = { listener, 0, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
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
		/*
		 * ENOENT: the task went away meanwhile, or none is left under the
		 * filter: then every receive fails at once, and the receiver ends
		 * instead of starting others in a loop until the supervisor exits.
		 * EINTR: nothing was taken.
		 */
		if (rc != 0 && errno == ENOENT && listener_hung_up()) {
			atomic_fetch_sub(&receivers_idle, 1);
			return NULL;
		}
		if (atomic_fetch_sub(&receivers_idle, 1) <= RECEIVERS_SPARE)
			(void)receiver_start();
		if (rc == 0)
			dispatch(&n);
		if (atomic_load(&receivers_idle) >= RECEIVERS_IDLE_MAX)
			return NULL;
	}
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

static void on_connect(const struct seccomp_notif *n)
{
	struct job *j = calloc(1, sizeof(*j));
	int type = 0, flags;
	socklen_t tlen = sizeof(type);

	if (!j) {
		task_continue(n->id);
		return;
	}
	job_begin(j);
	j->cfg = cfg;
	j->n = *n;
	if (!connect_eligible(j))
		goto out_continue;
	j->cfg = config_for(cfg, &j->target); /* BACKOFF_DESTINATIONS: its own policy */
	j->pidfd = task_pidfd((pid_t)n->pid);
	if (j->pidfd < 0)
		goto out_continue;
	j->dup = task_getfd(j->pidfd, (int)n->data.args[0]);
	/* Not an fd (EBADF), not a socket, not one the library retries: the kernel's answer. */
	if (j->dup < 0 || getsockopt(j->dup, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 ||
	    (flags = fcntl(j->dup, F_GETFL)) < 0 ||
	    eligible_why_not(j->cfg, &j->target, type, !(flags & O_NONBLOCK)))
		goto out_continue;
	/* The task may have exec'd or closed the fd meanwhile: the duplicate must be its. */
	if (!task_id_valid(n->id))
		goto out_free;
	if (!(flags & O_NONBLOCK)) {
		blocking_retry(j);
		return;
	}
	if (managed_any() && managed_connect_again(j))
		goto out_free;
	managed_connect(j);
	return;
out_continue:
	task_continue(n->id);
out_free:
	job_free(j);
}

static void dispatch(const struct seccomp_notif *n)
{
	if (n->data.nr == __NR_connect)
		on_connect(n);
	else
		managed_getsockopt(n);
}

void serve_run(int fd, const struct config *config)
{
	unsigned i;

	listener = fd;
	cfg = config;
	/* The state file is mapped at the first connect's look, as in a preloaded program. */
	share_init(cfg);
	task_listen(fd);
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
