/* One connect of a supervised program: what the supervisor took of it, and its decision. */
#ifndef BACKOFF_SUPERVISE_JOB_H
#define BACKOFF_SUPERVISE_JOB_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "drivers/before.h"
#include "config/config.h"
#include "config/target.h"

struct managed;

/* Everything a retrying thread needs about one connect. */
struct job {
	const struct config *cfg;
	struct seccomp_notif n;
	struct sockaddr_storage addr;
	socklen_t len;
	struct target_addr target;
	int pidfd, dup;
	pid_t tgid;	     /* the program's process, once known (its destinations' budgets) */
	uint64_t started_ms; /* when the first attempt began (monotonic) */
	bool replied;	     /* a non-blocking connect was answered EINPROGRESS */
	struct managed *m;
};

/* Close what @j holds and free it. */
void job_free(struct job *j);

/* The program's process, found once per job; -1 if it is gone. */
pid_t job_tgid(struct job *j);

/* A connect of @j to its target succeeded: its destination is up for the program. */
void job_connected(struct job *j);

/*
 * Before the first attempt of @j: decided as the preload decides
 * (drivers/before), into @b, its log lines on the program's stderr.  A blocking
 * socket's delay is waited in this thread (then b->past_delay is set).
 * Returns BEFORE_ATTEMPT, BEFORE_LATER (a non-blocking socket: not before
 * b->until_ns) or BEFORE_LEFT (the prober's errno in b->err).
 */
enum before_verdict job_before(struct job *j, struct before_connect *b);

/*
 * When the first attempt of @j, begun now, is to end if still unanswered
 * (monotonic ms; CONFIG_INFINITE: the kernel's own end): an internet
 * destination's first attempt has the bound the preload gives it.
 */
uint64_t job_first_deadline(struct job *j);

/*
 * The first attempt of @j failed with @err, or was left to the prober
 * (@waited, @err its finding): decided as the preload decides (drivers/decide),
 * waiting in this thread, its log lines on the program's stderr; @attempt
 * makes one more attempt (a first one too, when a first attempt left is not
 * for this call to wait with), @planned (or NULL) is told of each retry
 * planned.  Returns the outcome: 0 or the errno to give.
 */
int job_decide(struct job *j, int err, bool waited, int (*attempt)(void *, uint64_t),
	       void (*planned)(void *));

#endif
