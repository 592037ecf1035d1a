/* One connect of a supervised program, translated into the one decision of core. */
#include "supervise/job.h"

#include <stdlib.h>
#include <unistd.h>

#include "drivers/decide.h"
#include "facts/dest.h"
#include "facts/share.h"
#include "supervise/task.h"
#include "sys/clock.h"
#include "sys/log.h"

void job_free(struct job *j)
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

pid_t job_tgid(struct job *j)
{
	if (j->tgid <= 0)
		j->tgid = task_tgid((pid_t)j->n.pid);
	return j->tgid;
}

void job_connected(struct job *j)
{
	if (dest_any_clock() || decide_down_for(&j->target))
		decide_connected(j->cfg, &j->target, job_tgid(j));
}

enum before_verdict job_before(struct job *j, struct before_connect *b)
{
	*b = (struct before_connect){
		.fd = j->dup,
		.addr = (const struct sockaddr *)&j->addr,
		.len = j->len,
		.target = &j->target,
	};
	int log_fd;
	enum before_verdict v;

	/* The gate first: a few loads for every connect, the program's stderr only past it. */
	if (!share_probing(b->addr, b->len))
		return BEFORE_ATTEMPT;
	/* Waited in this thread, as the preload waits inside the call; no signal comes here. */
	log_fd = borrow_stderr(j);
	v = before_settle(j->cfg, b, NULL, NULL);
	return_stderr(log_fd);
	return v;
}

uint64_t job_first_deadline(struct job *j)
{
	uint64_t bound = before_bound_ms(j->cfg, &j->target);

	j->started_ms = clock_now_ms();
	return bound == CONFIG_INFINITE ? CONFIG_INFINITE : j->started_ms + bound;
}

/* The first attempt of @c: the job's attempt, within its first bound. */
static int job_first(struct decide_connect *c)
{
	struct job *j = c->ctx;
	int err = c->attempt(j, job_first_deadline(j));

	c->started_ms = j->started_ms;
	return err;
}

int job_decide(struct job *j, int err, bool waited, int (*attempt)(void *, uint64_t),
	       void (*planned)(void *))
{
	struct decide_connect c = {
		.fd = j->dup,
		.target = &j->target,
		.err = err,
		.waited = waited,
		.own_thread = true,
		.owner = job_tgid(j),
		.started_ms = j->started_ms,
		.attempt = attempt,
		.first = job_first,
		.planned = planned,
		.ctx = j,
	};
	int log_fd = borrow_stderr(j);

	/* In a thread of its own: always decided here (no event loop's hand). */
	err = decide_failed(j->cfg, &c);
	return_stderr(log_fd);
	return err;
}
