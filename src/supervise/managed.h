/* The supervisor's non-blocking connects: answered at once, retried, their outcome handed over. */
#ifndef BACKOFF_SUPERVISE_MANAGED_H
#define BACKOFF_SUPERVISE_MANAGED_H

#include <linux/seccomp.h>
#include <stdbool.h>

#include "supervise/job.h"

/* Whether any connect is managed: one load, for every getsockopt notification. */
bool managed_any(void);

/*
 * Start managing the non-blocking connect of @j, whose first attempt is under
 * way (@attempting) or failed; false if it cannot be (the caller answers).
 */
bool managed_start(struct job *j, bool attempting);

/*
 * Retry the managed connect of @j, whose first attempt was made with @err,
 * in this thread; the program is answered EINPROGRESS as soon as it is
 * retried or under way, then learns the outcome from SO_ERROR.  Frees @j.
 */
void managed_retry(struct job *j, int err);

/*
 * Before the first attempt of the non-blocking connect of @j (drivers/before):
 * if its destination is damped, or its first attempt is left to the
 * prober, the program is answered EINPROGRESS and the connect is managed
 * from there, in this thread (the attempt made when the delay ends, or the
 * prober's finding retried as any failure): true, @j freed.  False: the
 * caller makes the first attempt now.
 */
bool managed_before(struct job *j);

/*
 * A second connect() on a socket being retried (perl and ssh check completion
 * so): answered as the kernel would for the attempt the program believes in,
 * EALREADY while it is under way, the error once it failed.  Returns false
 * if the socket is not being retried.
 */
bool managed_connect_again(struct job *j);

/* A getsockopt(SO_ERROR) notification: answered for a managed socket, else the kernel's. */
void managed_getsockopt(const struct seccomp_notif *n);

#endif
