/* The supervisor's non-blocking connects: answered at once, retried, their outcome handed over. */
#ifndef BACKOFF_SUPERVISE_MANAGED_H
#define BACKOFF_SUPERVISE_MANAGED_H

#include <linux/seccomp.h>
#include <stdbool.h>

#include "supervise/job.h"

/* Whether any connect is managed: one load, for every getsockopt notification. */
bool managed_any(void);

/*
 * The non-blocking connect of @j, its whole way through core (job_way), in
 * this thread: answered at once with the kernel's answer, or EINPROGRESS
 * while it is delayed, left to the prober, under way or retried (then the
 * program learns the outcome from SO_ERROR).  Frees @j.
 */
void managed_connect(struct job *j);

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
