/* Early close: connections that await their first byte, and what a read or send on one tells. */
#ifndef BACKOFF_DRIVERS_EARLY_H
#define BACKOFF_DRIVERS_EARLY_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "config/config.h"
#include "counters/events.h"
#include "engine/engine.h"
#include "tables/fdtable.h"

/*
 * One attempt of a blocking connect of @fd to @addr (a new connection of an
 * early close), aborted at @deadline_ms (CONFIG_INFINITE: none) if still
 * unanswered; a connection made is watched for its first byte.  0 or its
 * errno.  errno may change.
 */
int early_connect_once(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		       uint64_t deadline_ms);

/*
 * @fd's connect to @addr (early_watched) returned 0 or EINPROGRESS: watch
 * for its first byte (whether the destination is one of the library's is
 * asked at its end); @s: @fd's slot if the caller found it (fdtable_peek),
 * else NULL.  A few loads and atomic operations; system calls only when
 * @fd is above 255 and has no slot yet (fdtable_get maps its page) and,
 * rarely, to clear the flight an earlier connection of @fd left (the
 * process's first claim of a slot asks for its pid).  Async-signal-safe;
 * errno untouched.
 */
void early_watch_inet(const struct config *cfg, int fd, struct fdslot *s,
		      const struct sockaddr *addr, socklen_t len);

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

/* What a read's early close asks of its caller. */
enum early_action {
	EARLY_NONE,	 /* nothing: the program sees what the read returned */
	EARLY_RECONNECT, /* connect again (*addr, *len), then read again */
	EARLY_REPLAY,	 /* connect again, send *flight again, then read again */
	EARLY_END,	 /* a connection made again ended too, and is not made again: the
			    program gets the end the first one met (*end: 0 end of file,
			    else its errno) */
};

/*
 * A read (or, with @sending, a send) on @fd returned @rc with errno @err, the
 * data first in @got (a read's first buffer).  On a watched connection: data
 * ends the watch (its destination's streak of early closes too), unless it
 * is the answer to a start-up without effect (engine/ready.h): "go on" keeps
 * the watch, "not ready" is as an early close; an end (0, ECONNRESET,
 * EPIPE) with no byte ever received is an early close (one TCP_INFO tells),
 * decided by decide_early_close.  When the socket is to be connected again, its
 * connection is aborted and *addr, *len hold the destination; for
 * EARLY_REPLAY *flight is what the program had sent, the caller's to give
 * back (early_flight_done).  A connection that the library made again,
 * ended too before its first byte and not made again, is EARLY_END: the
 * program's read is to give the end the first connection met (*end), never
 * one of the library's connections'.  errno may change.
 */
enum early_action early_seen(const struct config *cfg, int fd, ssize_t rc, int err, bool sending,
			     const struct iovec *got, struct sockaddr_storage *addr, socklen_t *len,
			     struct flight **flight, int *end);

/*
 * A send on @fd wrote the first @n bytes of @iov (@iovcnt entries): on a
 * watched connection they are recorded, under BACKOFF_REPLAY whatever they
 * are, else only a start-up without effect of a protocol of cfg->protocols
 * (PostgreSQL's, MQTT's CONNECT, one Redis command, a bodiless HTTP request),
 * at most FLIGHT_MAX bytes in all; beyond that, or when they cannot be, the
 * connection is never replayed.  Async-signal-safe; errno untouched.
 */
void early_record(const struct config *cfg, int fd, const struct iovec *iov, int iovcnt, size_t n);

/*
 * @flight was sent again on @fd's new connection (or the reconnect failed):
 * kept for the next early close of @fd, which may come too.
 */
void early_flight_done(int fd, struct flight *flight);

/*
 * The program ends its side of @fd (@how: shutdown's): a watched connection
 * is then never connected again, nor replayed.  errno untouched.
 */
void early_shutdown(int fd, int how);

/*
 * The new connection of @fd's early close failed with @err, or (@err 0)
 * is given up as @why says (events_early_end): the program gets the end
 * the first connection met.  The socket is aborted and left reading as
 * ended (0) from now on, its watch and its reconnect over.  Returns how the
 * first connection ended (0: end of file, else its errno: a reset).  errno
 * untouched.
 */
int early_end(int fd, int err, enum events_end why);

/*
 * early_end for a new connection the engine says is over (ENGINE_OVER, @why,
 * with its error @err), in either driver: the one place that says an
 * engine's reason as the log's.  A connection made again ends silent,
 * gone or unaccepted; ENGINE_OVER_ANSWER and ENGINE_OVER_CLOSED come at the
 * close itself (decide_early_close), before any is made, and never here.
 */
int early_over(int fd, int err, enum engine_over why);

/*
 * The new connection of @fd's early close, made and not answered by
 * ENGINE_ACCEPT_MS, waits in its local listener's accept queue: a listener
 * that keeps listening but accepts no more served its one connection.
 * False for a destination that is not local, or when the kernel cannot
 * tell.  errno untouched.
 */
bool early_unaccepted(const struct config *cfg, int fd);

/*
 * The program ends its side of @fd (shutdown) while the library connects it
 * again: that connection is given up, and the socket reads as ended, as the
 * connection the program believes it has would (its end came).  errno
 * untouched.
 */
void early_abandon(int fd);

/*
 * getpeername (@peer) or getsockname of @fd while the library connects it
 * again (its attempt under way or waiting): the first connection's address,
 * which the program believes it still has, into @addr and *@len as the
 * kernel writes a name.  False when @fd is not being connected again, or
 * the name is not known: the kernel answers.
 */
bool early_name(int fd, bool peer, struct sockaddr *addr, socklen_t *len);

/* Whether @s's connection is one being made again after an early close, not yet answered. */
static inline bool early_again(const struct fdslot *s)
{
	return atomic_load_explicit(&s->again_until_ms, memory_order_relaxed) != 0;
}

/*
 * The new connection of @fd's early close to @addr (@len bytes), made in
 * the calling thread and blocking
 * (a replay's on a non-blocking socket too: the request is the program's
 * only business on it until the answer comes), as the engine's rules of
 * such a connection say (engine_begin's @again): after its destination's
 * delay, one attempt, @fl (if any) sent again, and its answer awaited, all
 * by the time early_seen gave it.  Whether it answered (a byte or an end:
 * the read is made again).  If not, the socket is left ended as the first
 * connection was, and *end says how (early_end): a listener that refuses,
 * or that leaves the new connection in its queue, served its one
 * connection, and the program has its end at once.
 */
bool early_again_blocking(const struct config *cfg, int fd, const struct sockaddr_storage *addr,
			  socklen_t len, struct flight *fl, int *end);

/* A send on @fd failed with @err: on a watched connection, maybe an early close.  errno kept. */
void early_sent(const struct config *cfg, int fd, int err);

#endif
