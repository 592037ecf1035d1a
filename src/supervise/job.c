/* One connect of a supervised program, translated into the one way of core. */
#include "supervise/job.h"

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "supervise/task.h"
#include "sys/clock.h"

/* The program's stderr and ids for this thread's log lines, borrowed at the first one. */
static void borrow_stderr(struct log_task *lt)
{
	struct job *j = (struct job *)(void *)((char *)lt - offsetof(struct job, log));
	pid_t tgid = job_tgid(j);

	lt->fd = task_getfd(j->pidfd, STDERR_FILENO);
	lt->pid = tgid > 0 ? tgid : (int)j->n.pid;
	lt->tid = (int)j->n.pid;
}

void job_begin(struct job *j)
{
	j->pidfd = j->dup = -1;
	j->log = (struct log_task){ .borrow = borrow_stderr, .fd = -1 };
	/* The preload writes to the program's stderr: the supervisor's lines of it go there too. */
	log_set_thread_task(&j->log);
}

void job_free(struct job *j)
{
	log_set_thread_task(NULL);
	if (j->log.fd >= 0)
		close(j->log.fd);
	if (j->dup >= 0)
		close(j->dup);
	if (j->pidfd >= 0)
		close(j->pidfd);
	free(j);
}

pid_t job_tgid(struct job *j)
{
	if (j->tgid <= 0)
		j->tgid = task_tgid((pid_t)j->n.pid);
	return j->tgid;
}

/* decide_connect's owner: the program's process, whose budgets its connects spend. */
static pid_t job_owner(void *ctx)
{
	return job_tgid(ctx);
}

uint64_t job_first_deadline(struct job *j)
{
	uint64_t bound = before_bound_ms(j->cfg, &j->target);

	/* The budget and the program's send timeout count from here (decide_connect). */
	j->way.c.started_ms = clock_now_ms();
	return bound == CONFIG_INFINITE ? CONFIG_INFINITE : j->way.c.started_ms + bound;
}

int job_way(struct job *j, int (*attempt)(void *, uint64_t), int (*first)(struct decide_connect *),
	    bool (*later)(void *, const struct before_connect *), bool (*left)(void *),
	    void (*planned)(void *))
{
	j->way = (struct way){
		.c = {
			.fd = j->dup,
			.target = &j->target,
			/* In a thread of its own: always decided here (no event loop's hand). */
			.own_thread = true,
			.owner = job_owner,
			.attempt = attempt,
			.first = first,
			.planned = planned,
			.ctx = j,
		},
		.b = {
			.fd = j->dup,
			.addr = (const struct sockaddr *)&j->addr,
			.len = j->len,
			.target = &j->target,
		},
		.later = later,
		.left = left,
	};
	return way_connect(j->cfg, &j->way);
}
