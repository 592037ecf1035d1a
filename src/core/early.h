/* Early close: connections that await their first byte, and what a read or send on one tells. */
#ifndef BACKOFF_CORE_EARLY_H
#define BACKOFF_CORE_EARLY_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "core/config.h"
#include "core/fdtable.h"

/*
 * @fd's connect to @addr (early_watched) returned 0 or EINPROGRESS: watch
 * for its first byte (whether the destination is one of the library's is
 * asked at its end).  A few loads and atomic operations, no system call.
 * Async-signal-safe; errno untouched.
 */
void early_watch_inet(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len);

/*
 * Whether a connect to @addr that succeeds or is under way is watched for
 * its first byte (early_watch_inet): over IP.  A few loads.
 */
static inline bool early_watched(const struct sockaddr *addr, socklen_t len)
{
	return addr && len >= sizeof(sa_family_t) &&
	       (addr->sa_family == AF_INET || addr->sa_family == AF_INET6);
}

/* Whether any connection is watched: one relaxed load, for every read and send. */
static inline bool early_any(void)
{
	return fdtable_any_first();
}

/*
 * A read (or, with @sending, a send) on @fd returned @rc with errno @err.  On
 * a watched connection: data ends the watch (its destination's streak of
 * early closes too); an end (0, ECONNRESET, EPIPE) with no byte ever
 * received is an early close (one TCP_INFO tells), decided by
 * decide_early_close.  Returns true when the socket is to be connected again:
 * its connection is aborted and *addr, *len hold the destination.  errno may
 * change.
 */
bool early_seen(const struct config *cfg, int fd, ssize_t rc, int err, bool sending,
		struct sockaddr_storage *addr, socklen_t *len);

/* A send on @fd failed with @err: on a watched connection, maybe an early close.  errno kept. */
void early_sent(const struct config *cfg, int fd, int err);

#endif
