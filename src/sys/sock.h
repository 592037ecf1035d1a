/* What the hooks ask about a socket after a call failed: blocking mode, type, send timeout. */
#ifndef BACKOFF_SYS_SOCK_H
#define BACKOFF_SYS_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Whether @fd is in blocking mode (false if fcntl fails).  errno may change. */
bool sock_is_blocking(int fd);

/* SOCK_STREAM, SOCK_DGRAM, ... of @fd, or -1 if unknown.  errno may change. */
int sock_type(int fd);

/*
 * Fill *family and *type of socket @fd (SO_DOMAIN, SO_TYPE).  Returns false
 * if either is unknown.  errno may change.
 */
bool sock_kind(int fd, int *family, int *type);

/* Whether @fd is connected: it has a peer (getpeername).  errno may change. */
bool sock_is_connected(int fd);

/*
 * The error pending on @fd (SO_ERROR, which clears it): 0 if none, or the
 * errno of getsockopt itself if that fails.  errno may change.
 */
int sock_error(int fd);

/*
 * Whether @fd is writable, failed or hung up now, without waiting: what a
 * wait for a connect under way on it wakes on (poll, POLLOUT).  errno may
 * change.
 */
bool sock_is_writable(int fd);

/*
 * The program's SO_SNDTIMEO on @fd in milliseconds, or UINT64_MAX (infinite) when
 * unset: it bounds the retry budget as it bounds the call itself.  errno may
 * change.
 */
uint64_t sock_sndtimeo_ms(int fd);

/* The program's SO_RCVTIMEO on @fd, as sock_sndtimeo_ms. */
uint64_t sock_rcvtimeo_ms(int fd);

/* The program's @opt (SO_SNDTIMEO or SO_RCVTIMEO) on @fd, as sock_sndtimeo_ms. */
uint64_t sock_timeo_ms(int fd, int opt);

/* What the caller knows of the program's own send timeout on a socket. */
enum sock_own_timeo {
	SOCK_TIMEO_ASK,	 /* nothing: the kernel is asked (one getsockopt) */
	SOCK_TIMEO_NONE, /* the program set none */
	SOCK_TIMEO_OWN,	 /* the program set one */
};

/*
 * Told that socket @fd carries a connect's bound as its send timeout (@on),
 * or that its own value is back: what the program would see there is
 * sock_sndtimeo_none's to give back, if it is left (a siglongjmp out of the
 * attempt).  Async-signal-safe.
 */
struct sock_bound {
	void (*told)(struct sock_bound *self, int fd, bool on);
};

/* connect() @fd to @addr once, through real_connect: 0, or its errno.  errno may change. */
int sock_connect(int fd, const struct sockaddr *addr, socklen_t len);

/*
 * connect() @fd (blocking) to @addr, ended at @deadline_ms (monotonic;
 * UINT64_MAX: the kernel's own end) if still unanswered: the attempt is
 * bounded with SO_SNDTIMEO, set to the time left and then restored to the
 * program's own value, exactly (@bound, if not NULL, told of both), and at
 * the deadline aborted with
 * sock_abort_connect, never abandoned (the kernel would complete it later by
 * itself).  A send timeout the program set is its own bound: then the
 * kernel answers as without libbackoff (EINPROGRESS at its end); @known
 * says whether the program set one, if the caller knows.  A signal that
 * would have restarted the call (every handler SA_RESTART) goes on waiting.
 * A socket found non-blocking after an EINPROGRESS has its answer as is.
 * Returns 0, the errno of the attempt, or ETIMEDOUT.  errno may change.
 */
int sock_connect_until(int fd, const struct sockaddr *addr, socklen_t len, uint64_t deadline_ms,
		       enum sock_own_timeo known, struct sock_bound *bound);

/* sock_connect_until with the time (monotonic ms) already read: @now_ms, at the call. */
int sock_connect_from(int fd, const struct sockaddr *addr, socklen_t len, uint64_t now_ms,
		      uint64_t deadline_ms, enum sock_own_timeo known, struct sock_bound *bound);

/*
 * Give @fd the send timeout the program had when a bound was set on it:
 * none (a bound is set only on a socket without one of the program's own).
 * For a bound left by a siglongjmp out of the attempt.  errno untouched.
 */
void sock_sndtimeo_none(int fd);

/*
 * Abort the attempt under way on @fd (connect with AF_UNSPEC: the descriptor,
 * its options, flags and epoll registrations are kept, and it can connect
 * again), and consume the reset it leaves pending.  errno may change.
 */
void sock_abort_connect(int fd);

/*
 * The TCP state of @fd (TCP_SYN_SENT, TCP_CLOSE...), or -1 (not TCP).  One
 * TCP_INFO read: a failed attempt shows as TCP_CLOSE without consuming its
 * pending error (measured), so the last failure can be left to the kernel.
 * errno may change.
 */
int sock_tcp_state(int fd);

/* What TCP_INFO tells of a connection that may have ended before its first byte. */
struct sock_first {
	int state;	    /* TCP_ESTABLISHED, TCP_CLOSE_WAIT, TCP_CLOSE... */
	uint32_t segs_in;   /* segments with data received from the peer */
	uint32_t segs_out;  /* segments with data sent */
	uint64_t bytes_out; /* bytes sent, each once (UINT64_MAX: the kernel does not say) */
};

/*
 * Fill *f for TCP socket @fd from one TCP_INFO (which consumes no pending
 * error, as SO_ERROR would).  Returns false if it is not TCP or the kernel
 * is too old to count data segments.  errno may change.
 */
bool sock_first(int fd, struct sock_first *f);

#endif
