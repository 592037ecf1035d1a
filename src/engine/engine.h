/*
 * The rules of one call's attempts: a pure state machine.  Events in (an
 * attempt failed, succeeded, its error is held; the planned time came; a
 * look came; a signal; the program closed the socket; an early close or a
 * "try later" answer, and that close counted), with the time, the facts the
 * engine asks for (engine_facts) and a random seed passed in; actions out
 * (attempt now, bounded by a deadline; wait until a time; collect the error
 * held; await an answer; abort an attempt; count a close; a new connection
 * over; the call is over), with what to say.  No system call, no clock
 * read, no log write: each engine (the blocking retry, the event loop)
 * translates its world into events and carries the actions out.
 */
#ifndef BACKOFF_ENGINE_ENGINE_H
#define BACKOFF_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "engine/progress.h"
#include "config/target.h"

enum engine_event_kind {
	ENGINE_FAILED,	  /* an attempt failed with ->err (ETIMEDOUT: our deadline cut it) */
	ENGINE_HELD,	  /* an attempt failed, its error still held by the kernel */
	ENGINE_CONNECTED, /* an attempt succeeded */
	ENGINE_DUE,	  /* the planned time came, or a wait ended early */
	ENGINE_SIGNAL,	  /* a signal that may not restart the call cut the wait */
	ENGINE_CLOSED,	  /* the program closed the socket: its own timeout ended the call */
	/*
	 * The time of a look came (ENGINE_ATTEMPT's or ENGINE_AWAIT's ->until_ms):
	 * at an attempt under way, or at a new connection of an early close
	 * awaiting its first byte (->answered, ->unanswered, ->unaccepted).
	 */
	ENGINE_LOOK,
	/*
	 * The connection before this call (engine_begin's @again) ended before
	 * its first byte, or its server said "try later" (->close): the call
	 * begins there.
	 */
	ENGINE_EARLY,
	/* ... that close counted in its destination's streak (->close's streak, since_ms ...). */
	ENGINE_COUNTED,
};

/* What happened, and what the engine knows of the destination then. */
struct engine_event {
	enum engine_event_kind kind;
	uint64_t now_ms; /* monotonic */
	int err;	 /* ENGINE_FAILED: the attempt's error */
	/*
	 * ENGINE_FAILED: another's result stands for this attempt, which was
	 * not made (a first attempt left to the prober).
	 */
	bool theirs;
	/*
	 * ENGINE_DUE (ENGINE_FACTS_FINDING): another found the destination down
	 * since our last attempt, ->found_age_ns ago; whether that stands for
	 * the attempt is the engine's (engine_finding_stands).
	 */
	bool found;
	uint64_t found_age_ns;
	bool waiting; /* ENGINE_CLOSED: the call was waiting for its planned attempt, not attempting
		       */
	bool known_down;	 /* its destination's budget ran out, with no success since */
	bool more_addresses;	 /* the program tries another address after this one */
	uint64_t budget_left_ms; /* the destination's budget left; CONFIG_INFINITE: none */
	/* The look before the next attempt found its accept queue full: the attempt is cut short.
	 */
	bool queue_full;
	uint64_t seed; /* a fresh random value (ENGINE_FACTS_SEED) */
	/* A new connection of an early close, at ENGINE_EARLY and ENGINE_DUE: */
	bool gone; /* its local listener went away (it served its one connection) */
	/* ENGINE_LOOK: */
	bool answered;			  /* a byte came: the connection is the program's */
	bool unanswered;		  /* its connect is still unanswered (SYN sent) */
	bool unaccepted;		  /* made, it waits in its local listener's accept queue */
	const struct engine_early *close; /* ENGINE_EARLY, ENGINE_COUNTED */
};

enum engine_do {
	/*
	 * Attempt now, aborted at ->until_ms if unanswered (CONFIG_INFINITE:
	 * never).  From ENGINE_COUNTED: after ->delay_ms (the close's damping),
	 * and answered by ->until_ms.
	 */
	ENGINE_ATTEMPT,
	ENGINE_WAIT,	/* wait until ->until_ms, then tell ENGINE_DUE */
	ENGINE_COLLECT, /* consume the error the kernel holds, then tell ENGINE_FAILED */
	ENGINE_END,	/* the call is over with ->err (0: connected) */
	/*
	 * The connection is made (or its attempt under way): await its answer
	 * until ->until_ms (CONFIG_INFINITE: the program's own wait), then tell
	 * ENGINE_LOOK.
	 */
	ENGINE_AWAIT,
	/* Our deadline cut the attempt under way: abort it, then tell ENGINE_FAILED with ETIMEDOUT.
	 */
	ENGINE_ABORT,
	/*
	 * The new connection of an early close is over, as ->over says (->err:
	 * its error, 0: none): the program gets the end the first one met.
	 */
	ENGINE_OVER,
	/* Count the early close in its destination's streak, then tell ENGINE_COUNTED. */
	ENGINE_COUNT,
};

/* Why the new connection of an early close is over, or not made (ENGINE_OVER). */
enum engine_over {
	ENGINE_OVER_SILENT,	/* it failed, or sent nothing within its time */
	ENGINE_OVER_GONE,	/* nothing listens there any more */
	ENGINE_OVER_UNACCEPTED, /* its local listener did not accept it in time */
	/* The close was the server's answer: no failed attempt, nothing counted or damped. */
	ENGINE_OVER_ANSWER,
	/* The close is a failed attempt (counted, ->delay_ms damps), not made again: ->reason. */
	ENGINE_OVER_CLOSED,
};

/* What to say, each at most once per action, in this order. */
enum {
	ENGINE_SAY_PASS = 1U << 0,    /* passed through unretried, for ->reason (debug) */
	ENGINE_SAY_LEFT = 1U << 1,    /* the planned attempt was left to another */
	ENGINE_SAY_RETRY = 1U << 2,   /* a retry planned after ->delay_ms drawn (->first) */
	ENGINE_SAY_WAITING = 1U << 3, /* the call waits past a few seconds: said once */
	ENGINE_SAY_GIVE_UP = 1U << 4, /* the call gives up, for ->reason (->first) */
	ENGINE_SAY_SUCCESS = 1U << 5, /* a retry succeeded */
	ENGINE_SAY_ENDED = 1U << 6,   /* the program ended the call */
	ENGINE_SAY_EARLY = 1U << 7,   /* a planned wait was not waited: ->early_ms */
	/*
	 * An early close counted: ->delay_ms damps new connects to its
	 * destination; ->reason, why it is not connected again ("sent",
	 * "nonblocking", "own-timeout", "retries", "budget"), or how it is
	 * ("replay", "reconnect": ENGINE_ATTEMPT, answered by ->until_ms).
	 */
	ENGINE_SAY_CLOSE = 1U << 8,
};

struct engine_action {
	enum engine_do what;
	uint64_t until_ms;
	int err;	    /* ENGINE_END: the outcome; the error said */
	unsigned say;	    /* ENGINE_SAY_* */
	const char *reason; /* ENGINE_SAY_PASS, ENGINE_SAY_GIVE_UP, ENGINE_SAY_CLOSE */
	uint64_t delay_ms;  /* ENGINE_SAY_RETRY: the delay drawn; ENGINE_SAY_CLOSE: the damping */
	uint64_t early_ms;  /* ENGINE_SAY_EARLY */
	bool first;	    /* said at the call's first failure: the call is counted */
	/*
	 * ENGINE_ATTEMPT: the one real attempt a call makes before it gives up,
	 * when another's results stood for all of its own: its result is the
	 * call's, whatever it is.  ENGINE_END: a give-up, which the
	 * destination's budget books.
	 */
	bool final;
	enum engine_over over; /* ENGINE_OVER */
	/* What the log says of the call, with any ENGINE_SAY_*: */
	uint64_t attempt;    /* the attempts made so far */
	uint64_t elapsed_ms; /* since its first attempt */
	uint64_t left_ms;    /* of its budget; CONFIG_INFINITE: none */
};

/*
 * Whether an attempt that failed with @err is retried by a call whose
 * retried errors are @retryable (the call family's set: config_retryable,
 * config_send_errors, config_dns_errors): the one place that asks, for the
 * engine's own step and for every driver that asks before a call is retried.
 */
bool engine_retries(const struct config_errset *retryable, int err);

/* Whether connects to @t are the library's at all: it is on, and BACKOFF_TARGETS takes @t. */
bool engine_takes(const struct config *cfg, const struct target_addr *t);

/*
 * Why a failed connect to @t on a socket of @type (@blocking: the caller
 * waits for it) is not the library's to retry, or NULL if it is: a stream
 * socket, or a unix datagram one (whose connect fails too while its receiver
 * is missing); a non-blocking one only under BACKOFF_NONBLOCK, and never a
 * datagram one (its connect ends at once: nothing under way for an event
 * loop); a destination the library takes (engine_takes).  For both engines.
 */
const char *engine_why_not(const struct config *cfg, const struct target_addr *t, int type,
			   bool blocking);

/*
 * A call that is the new connection of an early close: what the early close
 * set (the ENGINE_ATTEMPT its ENGINE_COUNTED gave), or CONFIG_INFINITE for a
 * call begun at the close, whose first event is ENGINE_EARLY.
 */
struct engine_again {
	uint64_t until_ms; /* by when it must have answered */
	bool local;	   /* its destination is local: its listener has ENGINE_ACCEPT_MS */
};

/*
 * Start a call at @now_ms; @budget_ms: its own bound from now, or
 * CONFIG_INFINITE.  Its first attempt (@first_ms) was made now (0), began
 * earlier (the log's elapsed times count from it), or is not made yet and
 * planned then (a damped connect: the first attempt is an ENGINE_DUE's).
 * @again (NULL: a connect of the program's own): the call is the new
 * connection of an early close, begun at the close (ENGINE_EARLY,
 * ENGINE_COUNT, ENGINE_COUNTED: whether it is made at all), which has one
 * attempt, is over if its local listener went away before it, and whose
 * first byte is awaited until its time (ENGINE_AWAIT, ENGINE_LOOK,
 * ENGINE_OVER).
 */
void engine_begin(const struct config *cfg, struct retry_progress *p, uint64_t budget_ms,
		  uint64_t now_ms, uint64_t first_ms, const struct engine_again *again);

/*
 * What a driver reads of its call @p (struct retry_progress is the
 * engine's to write and to read; a driver holds it and asks these): when
 * its planned attempt is due, when its first attempt was made, and whether
 * it made one (a damped connect's is planned, not made).
 */
static inline uint64_t engine_planned_ms(const struct retry_progress *p)
{
	return p->planned_ms;
}

static inline uint64_t engine_started_ms(const struct retry_progress *p)
{
	return p->start_ms;
}

static inline bool engine_attempted(const struct retry_progress *p)
{
	return p->attempt != 0;
}

/*
 * The planned attempt of @p moves to @planned_ms: a connect in a full
 * server's line waits on while the line moves, or takes a place freed now.
 */
static inline void engine_replan(struct retry_progress *p, uint64_t planned_ms)
{
	p->planned_ms = planned_ms;
}

/* The facts of a call's destination that an event reads (engine_facts), each asked only then. */
enum {
	ENGINE_FACTS_DEST = 1U << 0,	  /* ->known_down, ->budget_left_ms */
	ENGINE_FACTS_GONE = 1U << 1,	  /* ->gone */
	ENGINE_FACTS_ACCEPT = 1U << 2,	  /* ->unaccepted */
	ENGINE_FACTS_ADDRESSES = 1U << 3, /* ->more_addresses */
	ENGINE_FACTS_FINDING = 1U << 4,	  /* ->found, ->found_age_ns */
	/*
	 * ->seed, a fresh random value: an event that may plan a retry (a
	 * failure, a planned time come) of a call whose sequence is not drawn
	 * yet.  A call that never retries draws none (a getrandom per thread).
	 */
	ENGINE_FACTS_SEED = 1U << 5,
};

/*
 * The facts an event of @kind reads of the call @p's destination: a
 * failure of a connect of the program's own reads its record, and at its
 * first attempt whether the program tries another address after it; its
 * planned time come, whether another found the destination down meanwhile,
 * unless that attempt is its last (always made, so that its error is the
 * kernel's); the new connection of an early close reads none of it (its
 * streak is counted at the close: ENGINE_COUNT), but, its destination
 * local, whether its listener is gone at the close and when its attempt is
 * due, and whether it was accepted when looked at.
 */
unsigned engine_facts(const struct config *cfg, const struct retry_progress *p,
		      enum engine_event_kind kind);

/*
 * When attempt p->attempt, made at @now_ms, is to be aborted if still
 * unanswered: BACKOFF_ATTEMPT_TIMEOUT after it (the grpc preset: no sooner
 * than the next planned attempt would be), never past the call's deadline;
 * a destination @known_down gets one attempt of that length.  An attempt
 * into a listener whose accept queue was found full (@queue_full) is
 * silence: CONFIG_LOCAL_ATTEMPT_MS at most.  The program's own first
 * attempt to @first (NULL: none) at most engine_first_bound_ms.
 * CONFIG_INFINITE: the kernel's own end.
 */
uint64_t engine_attempt_deadline(const struct config *cfg, const struct retry_progress *p,
				 const struct target_addr *first, bool queue_full, bool known_down,
				 uint64_t now_ms);

/*
 * What the engine derives once from a parsed @cfg (config_parse), for the
 * connect's fast path: cfg->first_attempt_ms, and its BACKOFF_DESTINATIONS
 * entries' too.  Every program whose engine decides calls it once after
 * config_parse and config_dests_build.  Pure.
 */
void engine_derive(struct config *cfg);

/*
 * The longest a call's first attempt to @t may take, in ms, whichever
 * driver makes it (CONFIG_INFINITE: the kernel's own end): to an internet
 * destination that is retried, its time (cfg->first_attempt_ms), and for a
 * loopback one, when a retry can follow, CONFIG_LOCAL_ATTEMPT_MS: a
 * loopback destination answers inside connect() or drops the SYN (a full
 * accept queue), and later attempts are cut so only while the look finds
 * the queue full (a shaped loopback is answered late, not never).
 */
uint64_t engine_first_bound_ms(const struct config *cfg, const struct target_addr *t);

/*
 * Whether @ev, at the call's first failure, ends the call at once, as
 * without libbackoff: the program moves on to its next address, or the
 * destination is known down (its kernel's answer).  The destination's budget
 * (->budget_left_ms) is not read then: a driver need not start its clock.
 */
bool engine_passes(const struct retry_progress *p, const struct engine_event *ev);

/*
 * An early close: a connection its peer ended before its first byte (or
 * whose server answered "not ready"), what the hook knows of it; once
 * counted (ENGINE_COUNTED), the @streak-th of its destination in a row, the
 * first at @since_ms.
 */
struct engine_early {
	uint64_t since_ms;	/* ENGINE_COUNTED */
	uint64_t streak;	/* ENGINE_COUNTED */
	uint64_t prev_delay_ms; /* ENGINE_COUNTED: the streak's previous delay (decorrelated jitter)
				 */
	uint64_t draw;		/* ENGINE_COUNTED: a random draw for this delay */
	uint64_t at_least_ms;	/* the server asked for this wait at least (Retry-After) */
	bool sent;		/* the program sent something on it (or ended its side) */
	bool replay;		/* what it sent is recorded in full, to be sent again */
	bool said;		/* the server said "try later" (engine/ready.h), not a close */
	bool full;		/* ... that it is full: the new connect waits in its line */
	bool greeted;		/* the destination's server spoke first before, host-wide */
	uint16_t port;		/* the destination's TCP port (0: none) */
	bool blocking;		/* the program's read waits (else an event loop's) */
	bool timed;		/* the read has a timeout of its own (SO_RCVTIMEO) */
};

/*
 * Whether a server on TCP @port speaks first in its well-known protocol
 * (FTP 21, SSH 22, SMTP 25 and 587, POP3 110, IMAP 143, MySQL 3306, NATS
 * 4222): a close before its greeting is no answer of its own.
 */
bool engine_port_speaks_first(uint16_t port);

/*
 * A local listener accepts a new connection within this or has served its
 * one (it keeps listening, accepts no more): the new connection of an early
 * close still in its accept queue then is no answer to wait for.
 */
#define ENGINE_ACCEPT_MS 100

/*
 * What is left at @now_ms of a destination's budget (BACKOFF_TIMEOUT) whose
 * clock started at @since_ms, its first failed attempt since its last
 * success: 0 once spent (its calls give up, and it is known down),
 * CONFIG_INFINITE when there is no budget.
 */
uint64_t engine_budget_left_ms(const struct config *cfg, uint64_t since_ms, uint64_t now_ms);

/* The longest a run's give-up keeps its later calls to the kernel's answer: 5 min. */
#define ENGINE_RUN_OPEN_MAX_MS 300000ULL

/*
 * How long, after the @giveups-th give-up in a row of one run at a
 * destination, that run's later calls there get the kernel's answer at once
 * (known down) before one of them has a budget again: the budget just spent
 * (BACKOFF_TIMEOUT; the cap when there is none), doubled with each give-up in
 * a row, at most ENGINE_RUN_OPEN_MAX_MS, then 0.8 to 1.2 times that by
 * @draw, so that runs that gave up together do not come back together.
 */
uint64_t engine_run_open_ms(const struct config *cfg, uint32_t giveups, uint64_t draw);

/*
 * How long another's finding that a destination is down (its last attempt,
 * or its prober's last look) stands for an attempt of this call, in ns: for a
 * @first attempt, left to a prober that is looking, three of its looks
 * (BACKOFF_LOCAL_PROBE); for a planned retry, the longest delay and the
 * longest attempt, since another attempting on this policy finds it down at
 * least that often (a refusal's attempts are short, the kernel's is theirs).
 */
uint64_t engine_finding_fresh_ns(const struct config *cfg, bool first);

/*
 * Whether another's finding, @age_ns old, stands for an attempt of this
 * call (a @first attempt, or a planned retry): younger than
 * engine_finding_fresh_ns.  A finding older than that is of one that gave
 * up or went away.
 */
static inline bool engine_finding_stands(const struct config *cfg, bool first, uint64_t age_ns)
{
	return age_ns < engine_finding_fresh_ns(cfg, first);
}

/*
 * A streak of early closes whose last is further back than this is over,
 * and a full server (a "try later" answer that means its connections are
 * all taken) that said so last this long ago is no longer taken for full:
 * two of the longest delays.
 */
uint64_t engine_streak_stale_ms(const struct config *cfg);

/* The longest engine_streak_stale_ms of any configuration (the longest cap): a mark further
 * ahead is a hostile one. */
#define ENGINE_STREAK_STALE_MAX_MS (2 * (POLICY_MAX_DELAY_MS + 1000))

/*
 * When a connect waiting at @now_ms in a full server's line, for a
 * connection held to it to close, next looks at the line: its planned
 * delay's end @damped_until_ms if still to come (the policy's schedule),
 * else half the delay cap to the cap from now by @draw.  Then, while the
 * line moves (engine_full_moving) it waits on; while it stalls (the places
 * are held by programs without the library, or on other hosts) one connect
 * per delay attempts (share_full_scout), as without the line.
 */
uint64_t engine_full_until_ms(const struct config *cfg, uint64_t now_ms, uint64_t damped_until_ms,
			      uint64_t draw);

/*
 * Whether a full server's line still moves at @now_ms: a place freed at
 * @freed_ms (0: never) less than half the delay cap ago.  A connect whose
 * time in the line came waits on (engine_full_until_ms again) while it
 * moves: its turn is coming, and an attempt would meet "full".
 */
bool engine_full_moving(const struct config *cfg, uint64_t now_ms, uint64_t freed_ms);

/*
 * A connect woken in a full server's line by a close attempts this much
 * later: the server frees the place when it reads the close, a moment after
 * it was made (a connect before that meets "full" again).
 */
#define ENGINE_FULL_SETTLE_MS 2ULL

/*
 * An event loop's connect in a full server's line looks this often whether
 * a place freed (a close wakes no poll); a place freed is taken within
 * ENGINE_FULL_FRESH_MS, or by nobody.
 */
#define ENGINE_FULL_LOOK_MS 10ULL
#define ENGINE_FULL_FRESH_MS 100ULL

/* The call @p, retrying the errors in @retryable, meets @ev: what to do. */
struct engine_action engine_step(const struct config *cfg, const struct config_errset *retryable,
				 struct retry_progress *p, const struct engine_event *ev);

#endif
