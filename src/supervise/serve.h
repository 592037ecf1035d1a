/* The supervisor: answers the notifications of the seccomp filter, retrying connects. */
#ifndef BACKOFF_SUPERVISE_SERVE_H
#define BACKOFF_SUPERVISE_SERVE_H

#include "config/config.h"

/*
 * Answer the notifications of @listener with the configuration @cfg until
 * every task under the filter has exited (the listener reports POLLHUP).
 * Returns then; the caller writes the stats and exits.
 */
void serve_run(int listener, const struct config *cfg);

#endif
