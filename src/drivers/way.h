/*
 * The way of one connect through core, the same for every driver: the
 * preload's hook (drivers/call) and the supervisor's blocking and
 * non-blocking connects (supervise/job) give their attempts, and take the
 * answer.
 */
#ifndef BACKOFF_DRIVERS_WAY_H
#define BACKOFF_DRIVERS_WAY_H

#include <stdbool.h>

#include "config/config.h"
#include "drivers/before.h"
#include "drivers/decide.h"

/*
 * A connect as its driver makes it, for way_connect: the preload's real calls,
 * or the supervisor's duplicate of the program's socket.
 */
struct way {
	/* Its destination, its attempts and its driver's hand (drivers/decide). */
	struct decide_connect c;
	/* Its address, ->looks (drivers/before); ->target is c.target, filled here. */
	struct before_connect b;
	/*
	 * NULL, or its first attempt must wait until @b->until_ns: whether the
	 * driver's event loop took it (before_settle's @later).
	 */
	bool (*later)(void *ctx, const struct before_connect *b);
	/*
	 * NULL, or its first attempt is left to a prober: told before the
	 * prober's finding is decided as its failure; false: made now instead.
	 */
	bool (*left)(void *ctx);
	/* Its first attempt was made by the driver, and failed with c.err. */
	bool attempted;
};

/*
 * The way of the connect @w through core, the same for every driver: its
 * destination's delay and its prober's finding (before_settle), unless
 * its first attempt was made; then that attempt (@w->c.first), its success
 * written (decide_connected) or its failure decided (decide_failed).
 * Returns 0, the errno to give, EINPROGRESS (the driver's event loop has
 * it: @w->later or @w->c.hand), or EINTR (a signal that may not restart
 * the call cut the delay short).  errno may change.
 */
int way_connect(const struct config *cfg, struct way *w);

#endif
