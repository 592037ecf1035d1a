/*
 * A destination's record, as the drivers read and write it: this process's
 * part (its budget's clock and "known down", one entry per destination and
 * supervised process: struct dest) and the host's slot as one call holds it
 * (the look for a listener, the lease, the age of another's finding: struct
 * fate), read through one question (record_known_down) and written once per
 * event: a failure joins (record_join), an attempt is noted, a success
 * (record_connected), a give-up (record_gave_up), an end (record_leave).
 * Whether a finding stands, when a budget is spent, how long a run's
 * give-up keeps it down: the engine's thresholds, which the drivers ask
 * and pass in; the record calls no rule.  The file's layout and locking
 * are facts/share's.
 */
#ifndef BACKOFF_FACTS_RECORD_H
#define BACKOFF_FACTS_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "config/target.h"

struct dest;

/* Destinations whose clock runs (failed since their last success): the fast path reads this. */
extern atomic_uint dest_clocks;

/* Whether any destination's clock runs: one relaxed load, for every successful connect. */
static inline bool dest_any_clock(void)
{
	return atomic_load_explicit(&dest_clocks, memory_order_relaxed) != 0;
}

/* Destinations known down now. */
extern atomic_uint dest_downs;

static inline bool dest_any_down(void)
{
	return atomic_load_explicit(&dest_downs, memory_order_relaxed) != 0;
}

/*
 * The record of destination @t for process @owner (0: this one; the
 * supervisor keeps one per supervised process), made on first use; NULL when BACKOFF_SHARED
 * is off, or when the table is full (then one warning, and the call keeps a
 * budget of its own, as with BACKOFF_SHARED=off).  Lock-free,
 * async-signal-safe.
 */
struct dest *dest_of(const struct config *cfg, const struct target_addr *t, pid_t owner);

/* A connect to @d succeeded: its clock stops and it is no longer known down. */
void dest_succeeded(struct dest *d);

/*
 * Shared fate in an event loop: one hidden connect of @d per process wakes
 * between its attempts (to look for a local listener, or to learn that
 * another process connected); the others wait for their planned attempt or
 * its release.  Whether @fd has that turn (taken if free or not renewed by
 * @now_ms), renewed until @until_ms.
 */
bool dest_look_turn(struct dest *d, int fd, uint64_t now_ms, uint64_t until_ms);

struct share_slot;

/* Where one call stands with its destination's shared slot; plain data, owned by the call. */
struct fate {
	struct share_slot *slot; /* NULL: the call backs off alone */
	uint64_t look_ns;	 /* how often its prober looks for a listener; 0: never */
	uint64_t last_ns;	 /* our last real attempt */
	uint64_t stale_ns;	 /* another's finding older than this: no longer stands for ours */
	uint32_t seq;		 /* the slot's success count then */
	bool looking;		 /* look for a local listener between attempts */
	bool seen_listener;	 /* one was seen and its attempt failed: not again until it goes */
	bool full;		 /* the look before the attempt found the accept queue full */
	bool loop_waiter;	 /* an event loop's connect counted as a waiter of the slot */
};

/*
 * Join the fate of @t for a call on a socket of @type (stream sockets only:
 * a datagram receiver is no listener, and no other's probe).  f->slot stays
 * NULL when sharing is off or the state file cannot serve.
 */
void fate_join(struct fate *f, const struct config *cfg, const struct target_addr *t, int type,
	       uint64_t now_ns, uint64_t stale_ns);

/*
 * A real attempt of the call ended with @err (0: success) at @now_ns: news
 * to the others.  @f may be NULL (no fate), as for fate_leave and
 * fate_finding_age.
 */
void fate_attempted(struct fate *f, int err, uint64_t now_ns);

/* The call ended: another may probe at once; an event loop's waiter is counted no more. */
void fate_leave(struct fate *f);

/*
 * A connect to @t succeeded now, every store told at once: the call's
 * fate (@f, NULL or not joined: none) has the news and is left
 * (record_leave: the look turn of @fd, -1: none, returned); else the host's
 * record says up if it said otherwise; the budget of @d (NULL: @t's for
 * @owner, looked up only while some destination's clock runs) stops.  The
 * one writer of a success.
 */
bool record_connected(struct fate *f, const struct config *cfg, const struct target_addr *t,
		      struct dest *d, pid_t owner, int fd);

/*
 * An event loop's connect waits for its planned retry, its next wake at
 * @wake_ns: counted as a waiter of its destination (`backoff status`) until
 * fate_leave, on a lease renewed at each wake, so that a process that died
 * or exec'd is counted no more.
 */
void fate_loop_waits(struct fate *f, uint64_t wake_ns);

/*
 * A real attempt of an event loop's call failed with @err at @now_ns: news
 * to the others (fate_attempted); with @wake_ns (0: the call gave up) it
 * waits for its retry until then (fate_loop_waits).
 */
void fate_loop_failed(struct fate *f, int err, uint64_t now_ns, uint64_t wake_ns);

/* What a call between attempts is to do now. */
enum fate_step {
	FATE_DUE,     /* the planned time came: attempt, unless another's finding stands */
	FATE_NOW,     /* a success or a listener: attempt at once */
	FATE_ATTEMPT, /* make an attempt now, as the look (a stale unix socket): then, if its
		       * error is retried, fate_attempt_failed() and wait until *next_ns */
	FATE_SLEEP, /* nothing yet: wait until *next_ns, or until the slot's success count moves */
};

/*
 * Between attempts of a call to @t planned for @planned_ns: as the prober
 * of a local destination (one thread per destination on the host), look for
 * a listener every f->look_ns and renew the lease; as a waiter, sleep until a
 * success or the planned time; with @deputy, one waiter is back when the
 * prober's lease ends, to take over if it is gone.  A unix socket file that no
 * socket here holds is looked at by an attempt, refused at no cost, which the
 * caller makes (FATE_ATTEMPT): whether its error ends the wait is the
 * caller's rule, not a fact.
 */
enum fate_step fate_wake(struct fate *f, const struct target_addr *t, uint64_t now_ns,
			 uint64_t planned_ns, bool deputy, uint64_t *next_ns);

/* The look that was an attempt failed with @err, which is retried: news for the others. */
void fate_attempt_failed(struct fate *f, int err, uint64_t now_ns);

/*
 * How long ago, at @now_ns, another found the destination down since our
 * last real attempt (UINT64_MAX: none did): whether its finding stands for
 * our attempt is the engine's rule (engine_finding_stands).
 */
uint64_t fate_finding_age(const struct fate *f, uint64_t now_ns);

/* Our attempt was left to another's finding: one saved, as backoff status counts them. */
void fate_left(struct fate *f);

/*
 * Sleep until @until_ns or a success at the destination.  Returns 0, or
 * EINTR when a signal that may not restart the call cut it short.
 */
int fate_sleep(struct fate *f, uint64_t until_ns);

/* The thread id of the prober of f's destination, for the log (0: none). */
int fate_prober(const struct fate *f);

/*
 * Whether @t is known down to a call: its budget spent in this process (@d),
 * or by the call's run (BACKOFF_RUN), host-wide, and its open time still
 * running.  The one question a call asks of its destination before a retry.
 */
bool record_known_down(const struct config *cfg, const struct dest *d, const struct target_addr *t);
/*
 * A call to @t on a socket of @type failed, and is retried: its process's
 * record (*@d, looked up for @owner if NULL) and the host's slot (@f, joined
 * if it is not, another's finding standing for @stale_ns (the engine's
 * engine_finding_fresh_ns); f->last_ns: the call's last real attempt, 0:
 * now) are the call's from now on.  Returns when the destination's budget
 * clock started (its first failed attempt since its last success: @began_ms
 * if it had none), for the engine's engine_budget_left_ms.
 */
uint64_t record_join(const struct config *cfg, struct dest **d, struct fate *f,
		     const struct target_addr *t, int type, uint64_t began_ms, uint64_t stale_ns,
		     pid_t owner);
/*
 * A call ended (closed, handed over, connected): it leaves the slot (@f
 * NULL or not joined: nothing), and the look turn of @d, if @fd had it,
 * which is returned.
 */
bool record_leave(struct fate *f, struct dest *d, int fd);
/*
 * When @d's budget clock started: its first failed attempt since its last
 * success (0: none since; @d NULL: none kept).
 */
uint64_t record_clock(const struct dest *d);
/*
 * A call to @t gave up at @now_ms: it leaves (record_leave), and if the
 * budget of @d is @spent (the engine's engine_budget_left_ms on
 * record_clock), @t is known down in this process, and the give-up is the
 * call's run's (BACKOFF_RUN): the run's give-ups there in a row are
 * returned (0: none counted), for its open time (record_run_open).
 */
uint32_t record_gave_up(const struct config *cfg, struct fate *f, struct dest *d,
			const struct target_addr *t, int fd, bool spent, uint64_t now_ms);
/*
 * The run's calls to @t get the kernel's answer at once until @until_ns
 * (the engine's engine_run_open_ms after its give-ups in a row).
 */
void record_run_open(const struct target_addr *t, uint64_t until_ns);
#endif
