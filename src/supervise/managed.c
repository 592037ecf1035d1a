/* The supervisor's non-blocking connects: answered at once, retried, their outcome handed over. */
#include "supervise/managed.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <time.h>
#include <unistd.h>

#include "counters/events.h"
#include "drivers/eligible.h"
#include "sys/elf.h"
#include "supervise/notify.h"
#include "supervise/task.h"
#include "sys/clock.h"
#include "sys/sock.h"

/* How often a retrying thread checks that the program still holds the socket, in ms. */
#define CHECK_MS 100
/* How long a failure waits for the program to read it with SO_ERROR, in ms. */
#define COLLECT_MS 30000

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

	if (!task_id_valid(h->id))
		return;
	if (!task_write(h->pid, h->optval, &value, sizeof(value)) ||
	    !task_write(h->pid, h->optlen, &len, sizeof(len))) {
		task_continue(h->id);
		return;
	}
	task_reply(h->id, 0);
}

/* Answer every held getsockopt of @m; under managed_lock. */
static void answer_held(struct managed *m, int value, bool kernel)
{
	unsigned i;

	for (i = 0; i < m->nheld; i++) {
		if (kernel)
			task_continue(m->held[i].id);
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

/*
 * Wait for the attempt under way on @j's socket to settle: 0 connected, its
 * error, or ECANCELED when the program no longer holds the socket or another
 * reader took the error (the kernel's to answer now).
 */
static int managed_settle(struct job *j, uint64_t deadline_ms)
{
	struct managed *m = j->m;
	struct pollfd pfd = { m->dup, POLLOUT, 0 };
	int err;

	for (;;) {
		uint64_t now = clock_now_ms(), left = deadline_ms > now ? deadline_ms - now : 1;

		if (!managed_owned(m))
			return ECANCELED;
		/* At least a moment: the last attempt, at the budget's end, may be answered at
		 * once. */
		if (poll(&pfd, 1, left < CHECK_MS ? (int)left : CHECK_MS) == 0) {
			if (clock_now_ms() < deadline_ms)
				continue;
			/* Unanswered at its deadline: aborted, never abandoned to complete later.
			 */
			sock_abort_connect(m->dup);
			return ETIMEDOUT;
		}
		if (sock_is_connected(m->dup))
			return 0;
		pthread_mutex_lock(&managed_lock);
		err = sock_error(m->dup);
		pthread_mutex_unlock(&managed_lock);
		/* Something else read the error (a second connect() does): the kernel's now. */
		return err ? err : ECANCELED;
	}
}

/* One attempt of a non-blocking connect, settled: 0 or its errno (decide_failed's attempt). */
static int managed_attempt(void *ctx, uint64_t deadline_ms)
{
	struct job *j = ctx;
	struct managed *m = j->m;
	int err;

	if (!m || !managed_owned(m))
		return ECANCELED;
	/*
	 * On loopback the attempt settles inside connect(): its event reaches the
	 * program before connect returns, so a getsockopt must already see an
	 * attempt under way, or a Go program told "wait again" would wait for an
	 * event that has passed.
	 */
	managed_set(m, MANAGED_ATTEMPTING);
	err = sock_connect(m->dup, (const struct sockaddr *)&j->addr, j->len);
	/* Measured: after a failure whose SO_ERROR was read, connect only resets the socket. */
	if (err == ECONNABORTED)
		err = sock_connect(m->dup, (const struct sockaddr *)&j->addr, j->len);
	if (err == EISCONN)
		return 0;
	if (err == EINPROGRESS || err == EALREADY)
		return managed_settle(j, deadline_ms);
	return err;
}

/* The program is told its connect is under way: it learns the outcome from SO_ERROR. */
static void managed_under_way(struct job *j)
{
	if (!j->replied) {
		task_reply(j->n.id, EINPROGRESS);
		j->replied = true;
	}
}

/* A retry of @j is planned: the program is told the attempt is under way, then waits. */
static void managed_planned(void *ctx)
{
	struct job *j = ctx;
	struct managed *m = j->m;

	managed_under_way(j);
	pthread_mutex_lock(&managed_lock);
	m->state = MANAGED_WAITING;
	if (m->go)
		answer_held(m, EINPROGRESS, false);
	pthread_mutex_unlock(&managed_lock);
}

static bool is_go(pid_t tgid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)tgid);
	return elf_inspect(path) == ELF_KIND_GO;
}

/*
 * Start managing the non-blocking connect of @j, whose first attempt is
 * under way (@attempting) or failed: false if it cannot be (the program is
 * gone, or memory is short), then the kernel's answer is the program's.
 */
static bool managed_start(struct job *j, bool attempting)
{
	struct managed *m = calloc(1, sizeof(*m));
	struct stat st;

	if (!m || fstat(j->dup, &st) != 0)
		goto out_free;
	m->tgid = job_tgid(j);
	if (m->tgid <= 0)
		goto out_free;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->dup = j->dup;
	m->fd = (int)j->n.data.args[0];
	m->go = is_go(m->tgid);
	m->state = attempting ? MANAGED_ATTEMPTING : MANAGED_WAITING;
	j->m = m;
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

/* Sleep until @until_ns while the program holds @m's socket. */
static void managed_delay(struct managed *m, uint64_t until_ns)
{
	uint64_t now;

	while ((now = clock_now_ns()) < until_ns && managed_owned(m)) {
		uint64_t left_ms = (until_ns - now + 999999) / 1000000;

		sleep_ms(left_ms < CHECK_MS ? left_ms : CHECK_MS);
	}
}

/*
 * The first attempt of @c: after its destination's delay, managed already;
 * else made at once, and managed if it is under way (then the program is
 * told so, and it is awaited within its first bound) or failed with an
 * error worth another attempt.  A connect
 * that cannot be managed gets the kernel's answer: its error is kept, and
 * ECANCELED (no verdict) returned.
 */
static int managed_first(struct decide_connect *c)
{
	struct job *j = c->ctx;
	int err;

	if (j->m)
		return managed_attempt(j, job_first_deadline(j));
	err = sock_connect(j->dup, (const struct sockaddr *)&j->addr, j->len);
	/* Not worth another attempt (EALREADY, EISCONN, EACCES...): nothing to manage. */
	if (err == 0 || (err != EINPROGRESS && !eligible_retryable(j->cfg, &j->target, err)))
		return err;
	if (!managed_start(j, err == EINPROGRESS)) {
		j->kernel_err = err;
		return ECANCELED;
	}
	if (err != EINPROGRESS)
		return err;
	managed_under_way(j);
	return managed_settle(j, job_first_deadline(j));
}

/*
 * The connect of @j is managed from now on, unmade (a delay, a first
 * attempt left to the prober), the program told it is under way; false if
 * it cannot be managed (then the driver makes its first attempt now).
 */
static bool managed_begin(struct job *j)
{
	if (!j->m && !managed_start(j, false))
		return false;
	managed_under_way(j);
	return true;
}

/*
 * Its destination's delay (before_settle's later): the program is told the
 * connect is under way, and this thread waits the delay; the first attempt
 * is made when it ends, as in the preload.  Never the event loop's.
 */
static bool managed_later(void *ctx, const struct before_connect *b)
{
	struct job *j = ctx;

	if (managed_begin(j))
		managed_delay(j->m, b->until_ns);
	return false; /* the attempt is made here when the delay ends */
}

/* Its first attempt left to the prober: under way for the program, its finding decided here. */
static bool managed_left(void *ctx)
{
	struct job *j = ctx;

	if (!managed_begin(j))
		return false;
	events_waited();
	return true;
}

void managed_connect(struct job *j)
{
	uint64_t failed_ms = 0;
	bool collected = false;
	struct managed *m;
	int err = job_way(j, managed_attempt, managed_first, managed_later, managed_left,
			  managed_planned);

	if (err == ECANCELED && j->kernel_err)
		err = j->kernel_err;
	m = j->m;
	if (!j->replied)
		task_reply(j->n.id, err); /* not retried: the kernel's answer, at once */
	else if (err == 0 || err == ECANCELED)
		managed_done(m);
	else
		managed_fail(m, err);
	/* A failure waits, bounded, for the program to read it. */
	while (j->replied && managed_get(m, &collected) == MANAGED_FAILED && !collected &&
	       managed_owned(m) && failed_ms < COLLECT_MS) {
		sleep_ms(CHECK_MS);
		failed_ms += CHECK_MS;
	}
	if (m)
		managed_remove(m);
	job_free(j);
}

/*
 * The connect of the socket @st still answered for the program, or NULL (not
 * managed, done, or its failure read).  Under managed_lock.
 */
static struct managed *managed_find(const struct stat *st)
{
	struct managed *m;

	for (m = managed_list; m && !(m->dev == st->st_dev && m->ino == st->st_ino); m = m->next)
		;
	if (!m || m->state == MANAGED_DONE || (m->state == MANAGED_FAILED && m->collected))
		return NULL;
	return m;
}

bool managed_connect_again(struct job *j)
{
	struct managed *m;
	struct stat st;

	if (fstat(j->dup, &st) != 0)
		return false;
	pthread_mutex_lock(&managed_lock);
	m = managed_find(&st);
	if (!m) {
		pthread_mutex_unlock(&managed_lock);
		return false;
	}
	if (m->state == MANAGED_FAILED) {
		m->collected = true;
		task_reply(j->n.id, m->err);
	} else {
		task_reply(j->n.id, EALREADY);
	}
	pthread_mutex_unlock(&managed_lock);
	return true;
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

void managed_getsockopt(const struct seccomp_notif *n)
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
	m = managed_find(&st);
	if (!m) {
		pthread_mutex_unlock(&managed_lock);
		goto out_continue;
	}
	if (m->state == MANAGED_FAILED) {
		m->collected = true;
		answer_value(&h, m->err);
	} else if (m->go && (m->state == MANAGED_WAITING || !sock_is_writable(m->dup))) {
		answer_value(&h, EINPROGRESS);
	} else if (!held_add(m, &h)) {
		pthread_mutex_unlock(&managed_lock);
		goto out_continue;
	}
	pthread_mutex_unlock(&managed_lock);
	return;
out_continue:
	task_continue(n->id);
}

bool managed_any(void)
{
	return atomic_load(&managed_count) > 0;
}
