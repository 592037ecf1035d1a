/* One connect of a supervised program: what the supervisor took of it, and its decision. */
#ifndef BACKOFF_SUPERVISE_JOB_H
#define BACKOFF_SUPERVISE_JOB_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "drivers/before.h"
#include "drivers/way.h"
#include "config/config.h"
#include "config/target.h"
#include "sys/log.h"

struct managed;

/* Everything a retrying thread needs about one connect. */
struct job {
	const struct config *cfg;
	struct seccomp_notif n;
	struct sockaddr_storage addr;
	socklen_t len;
	struct target_addr target;
	int pidfd, dup;
	pid_t tgid;	/* the program's process, once known (its destinations' budgets) */
	bool replied;	/* a non-blocking connect was answered EINPROGRESS */
	int kernel_err; /* the answer of a first attempt that could not be managed */
	struct managed *m;
	struct way way;	     /* its way through core (job_way) */
	struct log_task log; /* this thread's log lines: the program's stderr and ids */
};

/* @j, zeroed, is this thread's connect: no fd yet, its log lines the program's. */
void job_begin(struct job *j);

/* Close what @j holds and free it; this thread's log lines are its own again. */
void job_free(struct job *j);

/* The program's process, found once per job; -1 if it is gone. */
pid_t job_tgid(struct job *j);

/*
 * When the first attempt of @j, begun now, is to end if still unanswered
 * (monotonic ms; CONFIG_INFINITE: the kernel's own end): an internet
 * destination's first attempt has the bound the preload gives it.  Its
 * start is the way's (@j->way.c.started_ms).
 */
uint64_t job_first_deadline(struct job *j);

/*
 * The connect of @j, its whole way through core (way_connect), the
 * preload's, in this thread: its first attempt @first (which may read
 * @j->way.b.past_delay), its retries @attempt, @later, @left and @planned
 * (or NULL) as struct way and struct decide_connect say.  Returns 0 or the
 * errno to give.
 */
int job_way(struct job *j, int (*attempt)(void *, uint64_t), int (*first)(struct decide_connect *),
	    bool (*later)(void *, const struct before_connect *), bool (*left)(void *),
	    void (*planned)(void *));

#endif
