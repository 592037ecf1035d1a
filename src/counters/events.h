/* Counters and event lines: the bottom of core, which every module that counts or says calls. */
#ifndef BACKOFF_COUNTERS_EVENTS_H
#define BACKOFF_COUNTERS_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "config/target.h"
#include "sys/log.h"

/* What a line is about: a call and its destination. */
struct events_subject {
	const char *call; /* "connect", ... */
	const struct target_addr *target;
	const char *name; /* printed instead when target is NULL: a host name */
	/* The log's name for a failure code; NULL: the codes are errno values. */
	const char *(*err_name)(int err);
};

/* The counters of BACKOFF_STATS, as they are now. */
void events_stats_read(struct log_stats *out);

/*
 * A call's first failure (@first: counted once), and a retry of it planned
 * after attempt @attempt failed with @err: @delay_ms drawn, @wait_ms to wait.
 * Logged at info.  Thread-safe; async-signal-safe.
 */
void events_retry(const struct events_subject *s, bool first, int err, uint64_t attempt,
		  uint64_t delay_ms, uint64_t wait_ms);

/*
 * A call to s->target that failed with @err for @elapsed_ms (@attempt
 * attempts) waits on, for at most @left_ms more (CONFIG_INFINITE: no
 * budget): said once at warn level per destination and process.
 */
void events_waiting(const struct events_subject *s, int err, uint64_t attempt, uint64_t elapsed_ms,
		    uint64_t left_ms);

/* A planned wait ended @early_ms before its time (a success, a listener): not waited. */
void events_woke_early(uint64_t early_ms);

/*
 * A blocking call's planned wait for s->target ended @early_ms before its
 * time: a listener appeared or another process connected (@made false: the
 * call attempts now), or a look made an attempt that stands for its own
 * (@made).  Not waited (events_woke_early), and said at info.
 */
void events_cut_short(const struct events_subject *s, uint64_t early_ms, bool made);

/*
 * A call gave up after @attempt with @err, @elapsed_ms after its first
 * failure, for @reason; @first: at its first failure (the call is counted).
 */
void events_giveup(const struct events_subject *s, bool first, int err, uint64_t attempt,
		   uint64_t elapsed_ms, const char *reason);

/*
 * The program ended a call itself (closed its socket: its own timeout) after
 * @attempt, @elapsed_ms after the first failure, while a retry was planned:
 * counted as a give-up, said at info (the decision was the program's).
 */
void events_ended(const struct events_subject *s, int err, uint64_t attempt, uint64_t elapsed_ms);

/* Attempt @attempt (> 1) succeeded @elapsed_ms after the first failure. */
void events_success(const struct events_subject *s, uint64_t attempt, uint64_t elapsed_ms);

/*
 * Planned attempt @attempt was left to the prober @prober_tid (0: the
 * attempt of another that holds no lease); counted, and said at debug.
 */
void events_left(const struct events_subject *s, int err, uint64_t attempt, uint64_t elapsed_ms,
		 uint64_t prober_tid);

/* A first attempt left to the prober of its destination: counted. */
void events_waited(void);

/* A real attempt made while sharing a destination's fate: counted. */
void events_probed(void);

/* Count a connect that could not be managed.  Async-signal-safe. */
void events_unmanaged(void);

/*
 * The look for local listeners cannot be made (the kernel's socket tables
 * refused: no AF_NETLINK, as under systemd's RestrictAddressFamilies): said
 * once per process at info; local destinations wait for planned attempts.
 */
void events_no_look(void);

/*
 * A connection to s->target closed before its first byte (or its server
 * answered @answer, a "try later" answer as text; NULL: none), the
 * @streak-th in a row: new connects wait @delay_ms; @what: "reconnect"
 * (nothing was sent) or "replay" (what was sent is sent again) when it is
 * connected again, else why not ("sent", "nonblocking", "own-timeout",
 * "retries", "budget").  Counted; said at info.
 */
void events_early(const struct events_subject *s, const char *answer, uint64_t streak,
		  uint64_t delay_ms, const char *what);

/* Why the new connection of an early close is given up, when it did not fail. */
enum events_end {
	EVENTS_END_SILENT,     /* it sent nothing within its attempt's time */
	EVENTS_END_GONE,       /* nothing listens there any more */
	EVENTS_END_UNACCEPTED, /* its local listener did not accept it in time */
};

/*
 * The new connection of an early close to s->target is given up: it failed
 * with @err, or (@err 0) as @why says.  Said at info with why: "gone"
 * (refused, or nothing listens), "unaccepted" (both: the listener served
 * its one connection), "failed" or "silent".  The program gets the end the
 * first connection met.
 */
void events_early_end(const struct events_subject *s, int err, enum events_end why);

/*
 * A close before the first byte, the program having sent nothing, is
 * s->target's answer (the engine's ENGINE_EARLY): said at info, as an
 * "early-end" whose reason is "answer"; no failed attempt.
 */
void events_early_answer(const struct events_subject *s);

/*
 * A connect waits @wait_ms before its attempt: @streak early closes in a
 * row; @ahead >= 0: in a full server's line, behind @ahead others (reason
 * "full").  At info.
 */
void events_damped(const struct events_subject *s, uint64_t streak, uint64_t wait_ms, int ahead);

/* Log a failed call that is passed through unretried, at debug level. */
void events_pass(const char *call, const struct target_addr *target, int err, const char *reason);

/*
 * Say at info that @target is known down: its budget ran out @elapsed_ms
 * after its first failure, with no success.
 */
void events_down(const char *call, const struct target_addr *target, uint64_t elapsed_ms);

#endif
