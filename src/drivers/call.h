/*
 * One entry per call family of the preload: a connect() or a send past the
 * hook's one-load gate is decided and carried out here, with the program's
 * real calls as its attempts; the hook only translates its arguments.
 */
#ifndef BACKOFF_DRIVERS_CALL_H
#define BACKOFF_DRIVERS_CALL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "config/config.h"

/* What the hook did of a connect() before handing it over. */
enum call_first {
	CALL_NOTHING, /* nothing: something is managed, probed or timed; all of it here */
	CALL_FAILED,  /* its one attempt failed: errno holds the error */
	CALL_BOUNDED, /* nothing, over IP: the first attempt has a bound of its own */
};

/*
 * connect(@fd, @addr, @len) past the hook's gate: 0 with errno @saved on
 * success, else -1 with the errno of the last real attempt, or EINPROGRESS
 * for a non-blocking connect whose retry is scheduled.  A connection made or
 * under way over IP is watched for its first byte.  Thread-safe.
 * Async-signal-safe: a signal handler may call it while its thread is inside
 * another hook (nothing here waits for a lock); a blocking retry sleeps in
 * the handler, as the program asked.
 */
int call_connect(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		 int saved, enum call_first first);

/* One send call as the engine sees it; the hook keeps its buffers. */
struct call_send {
	const char *call; /* for the log */
	int fd, flags;
	const struct sockaddr *to; /* the destination the call names, or NULL */
	socklen_t tolen;
};

/*
 * The send @s failed with nothing sent, its error @err: made again with
 * @again(@ctx) if it is eligible (a blocking socket, a transient error, a
 * destination BACKOFF_TARGETS takes), within the budget and the socket's own
 * send timeout.  Returns 0 once an attempt succeeded, else the errno of the
 * last real attempt.  Blocks the calling thread between attempts.
 */
int call_send_failed(const struct config *cfg, const struct call_send *s, int err,
		     int (*again)(void *ctx, uint64_t deadline_ms), void *ctx);

/* One name lookup as the engine sees it; the hook keeps its results. */
struct call_lookup {
	const char *call;	      /* for the log */
	const char *name;	      /* the name looked up, NULL for none (a numeric host) */
	const char *shown;	      /* what the log names: the name, else the service */
	const char *(*err_name)(int); /* the name of the lookup's own error codes */
};

/*
 * The lookup @op failed with @first: made again with @again(@ctx) while
 * BACKOFF_DNS and BACKOFF_NAMES retry that failure, until it succeeds, fails
 * otherwise, or the policy or BACKOFF_TIMEOUT ends it.  errno is left as the
 * last real attempt left it, and as it was when nothing is retried.  Blocks
 * the calling thread between attempts.
 */
void call_lookup_failed(const struct config *cfg, const struct call_lookup *op,
			enum config_dns_result first, int (*again)(void *ctx, uint64_t deadline_ms),
			void *ctx);

/*
 * @fd is being closed while some destination of the state file may be full
 * (share_any_full): if it is a connection to one that is, a close frees one
 * of its places, and the first connect in its line is woken.  errno kept.
 */
void call_closing(const struct config *cfg, int fd);

#endif
