/* Whether a connect is the library's at all: by its destination, its socket and its error. */
#ifndef BACKOFF_DRIVERS_ELIGIBLE_H
#define BACKOFF_DRIVERS_ELIGIBLE_H

#include <stdbool.h>
#include <sys/socket.h>

#include "config/config.h"
#include "config/target.h"

/*
 * Whether a connect to @addr (@len bytes) is one the library retries at all
 * (BACKOFF on, BACKOFF_TARGETS takes it): *t is filled from @addr.
 */
bool eligible_takes(const struct config *cfg, const struct sockaddr *addr, socklen_t len,
		    struct target_addr *t);

/*
 * Why a connect to @t on a socket of @type (@blocking or not) is never
 * retried ("not-stream", "nonblocking", "excluded"), or NULL (engine_why_not).
 */
const char *eligible_why_not(const struct config *cfg, const struct target_addr *t, int type,
			     bool blocking);

/* Whether a connect to @t that failed with @err may be retried: BACKOFF_ERRORS for its family. */
bool eligible_retryable(const struct config *cfg, const struct target_addr *t, int err);

#endif
