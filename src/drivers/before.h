/* Before a connect's first attempt: made now, after its delay, or left to its prober. */
#ifndef BACKOFF_DRIVERS_BEFORE_H
#define BACKOFF_DRIVERS_BEFORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/config.h"
#include "config/target.h"

struct share_slot;

/* What a connect is to do before its first attempt. */
enum before_verdict {
	BEFORE_ATTEMPT, /* make it now, within before_bound_ms */
	/*
	 * Its destination closed connections early (damped): a blocking socket
	 * waits until ->until_ns (before_settle), then asks again.
	 */
	BEFORE_WAIT,
	/* The same for a non-blocking socket: its attempt is the event loop's, at ->until_ns. */
	BEFORE_LATER,
	/*
	 * Not made: a local destination whose prober found it down a moment
	 * ago; its errno ->err is this attempt's, decided as a failure that was
	 * left to the prober (decide_connect's waited).
	 */
	BEFORE_LEFT,
	/* before_settle only: a signal that may not restart the call cut its wait short. */
	BEFORE_INTR,
};

/*
 * What before_decide reads: the socket's facts and its destination's shared
 * state, read once by before_connect (or given by a test).  Pure data.
 */
struct before_facts {
	int type;		  /* SO_TYPE */
	bool blocking;		  /* connect() waits for the kernel's answer */
	uint64_t sndtimeo_ms;	  /* the program's own send timeout; CONFIG_INFINITE: none */
	uint64_t now_ns;	  /* CLOCK_MONOTONIC */
	uint64_t damped_until_ns; /* new connects to the destination wait until then; 0: none */
	int down_err; /* the errno its prober found a moment ago (another thread's); 0: none */
	/* It said it is full (share_full_line): connects waiting in its line; -1: not full. */
	int full_line;
	uint64_t draw; /* a random draw, for a wait in the line */
	bool looks;    /* a non-blocking connect's driver looks for a place freed in a line */
};

/*
 * The rule before a first attempt to @t, from what was read of it (@f):
 * a stream socket whose destination is damped waits (a blocking one, within
 * its own send timeout), or is the event loop's under BACKOFF_NONBLOCK;
 * otherwise a stream connect to a local destination that another thread
 * probes and found down a moment ago is left to it.  A connect to a full
 * destination with connects in line (or a delay), joins the line
 * (engine_full_until_ms).  *until_ns is set for
 * BEFORE_WAIT and BEFORE_LATER.  Pure.
 */
enum before_verdict before_decide(const struct config *cfg, const struct target_addr *t,
				  const struct before_facts *f, uint64_t *until_ns);

/*
 * The longest the first attempt to @t may take, in ms (CONFIG_INFINITE: the
 * kernel's own end), engine_first_bound_ms: for the drivers that make a
 * first attempt themselves (the preload's blocking connect, the
 * supervisor's, backoff wait).  Pure.
 */
uint64_t before_bound_ms(const struct config *cfg, const struct target_addr *t);

/*
 * Make @cfg ready for the drivers once parsed and its entries built
 * (config_parse, config_dests_build): the bounds the engine derives from it
 * (engine_derive).  The preload at load and the supervisor at start call it.
 */
void before_configure(struct config *cfg);

/* A connect before its first attempt, as an engine sees it. */
struct before_connect {
	/* Filled by the engine. */
	int fd; /* the socket: the program's, or the supervisor's duplicate of it */
	const struct sockaddr *addr;
	socklen_t len;
	struct target_addr *target; /* filled from @addr when the destination is looked at */
	/*
	 * Set by the engine once it waited (BEFORE_WAIT) or could not hand the
	 * attempt to its event loop (BEFORE_LATER): the delay is not asked again.
	 */
	bool past_delay;
	bool looks; /* its driver's event loop looks for a place freed in a full server's line */
	/* Set by before_connect. */
	uint64_t until_ns; /* BEFORE_WAIT, BEFORE_LATER: when the attempt may be made */
	int err;	   /* BEFORE_LEFT: the prober's errno */
	struct share_slot *slot;
};

/*
 * The decision before the first attempt of @b, for both engines: the gate
 * first (no prober or delay in the destination's bucket: BEFORE_ATTEMPT at
 * the cost of a few loads), then its destination's shared state, and the
 * socket's facts only when that state says something (system calls on
 * @b->fd).  A delay is said at info; a first attempt left is counted for
 * `backoff status`.  errno untouched.  Thread-safe, async-signal-safe.
 */
enum before_verdict before_connect(const struct config *cfg, struct before_connect *b);

/*
 * before_connect asked until it says what to do, for every driver:
 * BEFORE_WAIT's waits are made here, until @b->until_ns, ended early by a
 * success to the destination (BEFORE_INTR: a signal that may not restart
 * the call cut one short); BEFORE_LATER is returned when @later is NULL or
 * takes the connect to its event loop (@later(@ctx, @b) true), else it is
 * asked again past its delay.  Then BEFORE_ATTEMPT or BEFORE_LEFT.
 */
enum before_verdict before_settle(const struct config *cfg, struct before_connect *b,
				  bool (*later)(void *ctx, const struct before_connect *b),
				  void *ctx);

/*
 * Before a first attempt to @t on @fd, a new connection of an early close
 * (no gate, no prober: the delay alone): if its destination is damped, a
 * blocking socket waits here (within its own SO_SNDTIMEO) and 0 is
 * returned, or EINTR if a signal that may not restart the call cut the
 * wait; a non-blocking one gets EINPROGRESS with *until_ms, when its attempt
 * may go (the event loop's to make).  0 when not damped.  @watch: a blocking
 * wait looks every BACKOFF_LOCAL_PROBE whether a local destination's
 * listener is gone, and returns ECONNREFUSED at once if it is.
 */
int before_damp(const struct config *cfg, int fd, const struct target_addr *t, uint64_t *until_ms,
		bool watch);

#endif
