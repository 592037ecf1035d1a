/* One connect of a supervised program, translated into the one decision of core. */
#include "supervise/job.h"

#include <stdlib.h>
#include <unistd.h>

#include "core/decide.h"
#include "core/dest.h"
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
	if (dest_any_clock())
		decide_connected(j->cfg, &j->target, job_tgid(j));
}

uint64_t job_first_deadline(struct job *j)
{
	uint64_t bound = j->cfg->first_attempt_ms;

	j->started_ms = clock_now_ms();
	if (bound == CONFIG_INFINITE ||
	    (j->target.family != AF_INET && j->target.family != AF_INET6))
		return CONFIG_INFINITE;
	if (decide_first_cap_ms(j->cfg, &j->target) < bound)
		bound = decide_first_cap_ms(j->cfg, &j->target);
	return j->started_ms + bound;
}

int job_decide(struct job *j, int err, int (*attempt)(void *, uint64_t), void (*planned)(void *))
{
	struct decide_connect c = {
		.fd = j->dup,
		.target = &j->target,
		.err = err,
		.own_thread = true,
		.owner = job_tgid(j),
		.started_ms = j->started_ms,
		.attempt = attempt,
		.planned = planned,
		.ctx = j,
	};
	int log_fd = borrow_stderr(j);

	(void)decide_connect(j->cfg, &c); /* in a thread of its own: always decided here */
	return_stderr(log_fd);
	return c.err;
}
