/*
 * A connect's destination: whether a failed connect is retried, and where
 * (blocking here, or in the event loop), its destination's facts (known down,
 * budget, shared fate, damping after early closes) for the engine of
 * engine/engine, for the preload and the supervisor alike.  The send family and
 * name lookups drive drivers/retry themselves.
 */
#ifndef BACKOFF_DRIVERS_DECIDE_H
#define BACKOFF_DRIVERS_DECIDE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "facts/record.h"
#include "engine/engine.h"
#include "engine/progress.h"
#include "facts/share.h"
#include "config/target.h"

struct fdconn;

/* A failed connect as its caller sees it; filled by the hook or the supervisor's job. */
struct decide_connect {
	int fd; /* the socket: the program's, or the supervisor's duplicate of it */
	const struct target_addr *target;
	int err;     /* the first attempt's error, or EINPROGRESS: under way */
	bool waited; /* the first attempt was left to a prober, not made */
	/* The engine waits in a thread of its own, whatever the socket's mode (the supervisor). */
	bool own_thread;
	/* NULL, or the process whose budget it is (asked when needed); NULL: the calling one. */
	pid_t (*owner)(void *ctx);
	uint64_t started_ms; /* when the first attempt began (monotonic); 0: not known, now */
	/* Make one more attempt, ended at @deadline_ms: 0 on success, else its errno. */
	int (*attempt)(void *ctx, uint64_t deadline_ms);
	/*
	 * The driver's first attempt of @c, made when the one left to a prober
	 * is not this call's to wait with (a non-blocking socket's is the event
	 * loop's to wait for): 0, or its errno; ->started_ms: when it began.
	 */
	int (*first)(struct decide_connect *c);
	/*
	 * NULL, or take the non-blocking connect, whose attempt ended with @err
	 * (EINPROGRESS: under way), to the program's event loop, to be retried
	 * there: whether it did.
	 */
	bool (*hand)(void *ctx, int err);
	/* NULL, or told that an attempt failed and the next one is planned. */
	void (*planned)(void *ctx);
	void *ctx;
};

/*
 * Decide the connect @c after its first attempt failed (or is under way):
 * passed through (not eligible, not the last address of its list, its
 * destination known down), handed to the event loop (@c->hand), or retried here until
 * it succeeds or gives up, blocking the calling thread, with the budget of
 * its destination, the program's SO_SNDTIMEO and the shared fate of its
 * destination; its destination's clock and "known down" are kept up to date.
 * A first attempt that was left to a prober (@c->waited) but is not this
 * call's to wait with is made here (@c->first), then decided as any.
 * Returns the call's outcome, also left in @c->err: 0, the errno to return,
 * or EINPROGRESS (under way, or taken by @c->hand).  errno may change.
 */
int decide_failed(const struct config *cfg, struct decide_connect *c);

/* The process whose budget @c's destination spends: 0 for the calling one. */
static inline pid_t decide_owner(const struct decide_connect *c)
{
	return c->owner ? c->owner(c->ctx) : 0;
}

/* A connect to @t by @owner succeeded at once: its destination is up, if it was down. */
void decide_connected(const struct config *cfg, const struct target_addr *t, pid_t owner);

/*
 * Early close: a connection to @t that its peer ended (FIN or RST) before
 * sending a byte, or whose server answered "try later" (@answer, as text;
 * NULL: none; @full: an answer that its connections are all taken;
 * @at_least_ms: the wait it asked for, 0: none), is a failed attempt of its
 * destination, host-wide through
 * the shared state: its streak grows, and new connects to it wait for the
 * policy's delay for the streak (damping); a full destination's wait in its
 * line (share_note_full).  Whether the caller is to connect
 * the same socket again: only if the program has @sent nothing on it, or
 * what it sent is to be sent again on the new connection (@replay: recorded
 * in full under BACKOFF_REPLAY=on), it is @blocking (or BACKOFF_NONBLOCK is
 * on), and the streak is within BACKOFF_RETRIES and BACKOFF_TIMEOUT (counted
 * from the streak's first early close), and the read has no timeout of its
 * own (@timed: SO_RCVTIMEO).  Said at info; counted.  When it is, *until_ms
 * is when the new connection must have answered (monotonic ms): one
 * BACKOFF_ATTEMPT_TIMEOUT after its planned start, within the budget.
 */
bool decide_early_close(const struct config *cfg, const struct target_addr *t, const char *answer,
			bool full, uint64_t at_least_ms, bool sent, bool replay, bool blocking,
			bool timed, uint64_t *until_ms);

/*
 * Whether a success to @addr (@len bytes) may have news to tell (a
 * destination of its bucket is down): a few loads.
 */
static inline bool decide_any_down(const struct sockaddr *addr, socklen_t len)
{
	return share_down_in(share_bucket_of(addr, len));
}

/* decide_any_down for a destination @t. */
static inline bool decide_down_for(const struct target_addr *t)
{
	return share_down_for(t);
}

/*
 * A connect to @addr (@len bytes) succeeded at its first attempt: the
 * destination is up, host-wide, if it was said down (share_note_up).
 * errno untouched.
 */
void decide_up(const struct config *cfg, const struct sockaddr *addr, socklen_t len);

/*
 * A connection to @t received its first byte: the streak of early closes
 * ends; @greeting: the program had sent nothing, so its server speaks first
 * (kept host-wide for the engine's early close: ENGINE_EARLY).
 */
void decide_first_byte(const struct config *cfg, const struct target_addr *t, bool greeting);

/*
 * How often a local destination's listener is looked for in the kernel's
 * tables (BACKOFF_LOCAL_PROBE), in ms; 0: @t is not local, or looks are off.
 */
uint64_t decide_look_ms(const struct config *cfg, const struct target_addr *t);

/* How many connects wait in @t's line if it is full (share_full_line); -1: not full. */
int decide_full_line(const struct config *cfg, const struct target_addr *t);

/*
 * The planned attempt of @c, hidden, is due at @now_ms, or it looks for a
 * place freed in a full server's line: whether its turn came.  In a line
 * that moves it waits on within its budget, its attempt planned again
 * (engine_full_moving, share_full_scout); a place freed is taken now
 * (share_full_claim).
 */
bool decide_loop_line_turn(struct fdconn *c, uint64_t now_ms);

/*
 * Whether nothing listens at @t any more: a local destination, looked up
 * in the kernel's tables (decide_look_ms).  A remote one: false.
 */
bool decide_listener_gone(const struct config *cfg, const struct target_addr *t);

/*
 * The event loop's part: a connect retried in the program's event loop, its
 * state in its fd table entry @c, claimed by the caller.
 */

/*
 * @c is managed (its attempt under way or failed at once) under @cfg, the
 * configuration that serves its destination (BACKOFF_DESTINATIONS: the
 * connect's entry chose it, call_connect), at @now_ms, or,
 * with @later_ms (not 0), its first attempt is not made before then (its
 * destination is damped).  A destination known down gives its first failure
 * the kernel's answer (engine_passes): its attempt is only watched, so that
 * its success makes the destination up again.  @again_until_ms (not 0): @c
 * is the new connection of an early close, to answer by then
 * (CONFIG_INFINITE: no bound): one attempt, its first byte awaited.
 */
void decide_loop_begin(const struct config *cfg, struct fdconn *c, uint64_t now_ms,
		       uint64_t later_ms, uint64_t again_until_ms);

/*
 * A real attempt of @c (@fd) failed with @err at @now_ms: the engine's
 * action.  ENGINE_WAIT: a retry is planned at ->until_ms (news to the
 * others, its destination's clock charged); ENGINE_OVER: the new connection
 * of an early close is over; otherwise the call gave up (logged and booked).
 */
struct engine_action decide_loop_failed(struct fdconn *c, int fd, int err, uint64_t now_ms);

/*
 * The attempt of @c (@fd) that the kernel reports failed, its error still
 * held for the program: whether the program is to see the kernel's own
 * outcome (another address follows, or it was the last attempt allowed at
 * @now_ms: then the give-up is booked), else the error is collected
 * (decide_loop_failed follows).
 */
bool decide_loop_final(struct fdconn *c, int fd, uint64_t now_ms);

/*
 * When the attempt of @c, under way from @now_ms, is to be looked at
 * (decide_loop_look; CONFIG_INFINITE: never): BACKOFF_ATTEMPT_TIMEOUT, never
 * past the call's budget; a destination known down gets one attempt of that
 * length; an early close's new connection, its look.
 */
uint64_t decide_loop_attempt_deadline(const struct fdconn *c, uint64_t now_ms);

/*
 * The connect of @c (@fd) succeeded at @now_ms: the engine's action
 * (ENGINE_END: the connection is the program's; ENGINE_AWAIT: an early
 * close's new connection, its first byte awaited until ->until_ms).
 * *turn: whether its fd held the look turn.
 */
struct engine_action decide_loop_succeeded(struct fdconn *c, int fd, uint64_t now_ms, bool *turn);

/* What the driver found at a look (decide_loop_look). */
struct decide_look {
	bool answered;	 /* a byte came on the connection */
	bool unanswered; /* its connect is still unanswered (SYN sent) */
	bool unaccepted; /* asked only when engine_facts says so (ENGINE_FACTS_ACCEPT) */
};

/*
 * The time of a look at @c came at @now_ms (decide_loop_attempt_deadline's,
 * or ENGINE_AWAIT's), and the driver found @f: the engine's action
 * (ENGINE_AWAIT again, ENGINE_ABORT: our deadline cuts the attempt,
 * decide_loop_failed with ETIMEDOUT follows; ENGINE_OVER; ENGINE_END: the
 * connection is the program's).
 */
struct engine_action decide_loop_look(struct fdconn *c, const struct decide_look *f,
				      uint64_t now_ms);

/* The connect of @c (@fd) gave up at @now_ms, after decide_loop_failed said so or not. */
void decide_loop_gave_up(struct fdconn *c, int fd, uint64_t now_ms);

/*
 * The program closes @fd, whose connect @c is retried (@hidden: waiting for
 * its next attempt, else under way) at @now_ms: it ended the call itself, by
 * its own timeout.  The wait it did not make leaves the stats, the call is
 * counted as given up, and the destination's fate is left.
 */
void decide_loop_closed(struct fdconn *c, int fd, bool hidden, uint64_t now_ms);

/* What a hidden connect of the event loop is to do at its wake. */
enum decide_wake {
	DECIDE_WAKE_ATTEMPT, /* make the attempt now */
	DECIDE_WAKE_MADE,    /* a look was an attempt: its result is in *err */
	DECIDE_WAKE_SLEEP,   /* stay hidden until *due_ms */
	DECIDE_WAKE_LINE,    /* in a full server's line, its turn not come: stay hidden */
	DECIDE_WAKE_OVER,    /* an early close's new connection is over: its listener went away */
};

/*
 * The wake of @c (hidden) at @now_ms: an early close's new connection whose
 * local listener went away is over; one @lined (waiting in a full server's
 * line, decide_loop_line_turn) stays while its turn has not come; then
 * shared fate: between planned attempts its prober looks for a local
 * listener, and a planned attempt is left to another that found the
 * destination down since our last one (its result is ours, and the next is
 * planned).  The last attempt allowed is always made.  @attempt(@ctx)
 * makes one real attempt (the look at a stale unix socket).
 */
enum decide_wake decide_loop_wake(struct fdconn *c, uint64_t now_ms, bool lined,
				  int (*attempt)(void *ctx, uint64_t deadline_ms), void *ctx,
				  int *err, uint64_t *due_ms);

#endif
