/* The way of one connect through core, the same for every driver. */
#include "drivers/way.h"

#include <errno.h>

#include "facts/record.h"
#include "facts/share.h"

int way_connect(const struct config *cfg, struct way *w)
{
	struct decide_connect *c = &w->c;
	const struct sockaddr *addr = w->b.addr;
	socklen_t len = w->b.len;

	if (!w->attempted && __builtin_expect(share_probing(addr, len), 0)) {
		/* Its destination's delay for early closes, or its prober's finding, first. */
		enum before_verdict v = before_settle(cfg, &w->b, w->later, c->ctx);

		if (v == BEFORE_LATER)
			return c->err = EINPROGRESS;
		if (v == BEFORE_INTR)
			return c->err = EINTR;
		c->err = w->b.err;
		c->waited = w->attempted = v == BEFORE_LEFT && (!w->left || w->left(c->ctx));
	}
	if (!w->attempted && (c->err = c->first(c)) == 0) {
		/* A destination whose clock runs is up again (rare: one load otherwise). */
		if ((dest_any_clock() || decide_any_down(addr, len)) && cfg->enabled &&
		    target_from_sockaddr(addr, len, w->b.target))
			decide_connected(cfg, c->target, decide_owner(c));
		return 0;
	}
	if (!cfg->enabled || !target_from_sockaddr(addr, len, w->b.target))
		return c->err;
	/* Connected, failed, or under way (handed to the event loop: EINPROGRESS). */
	return decide_failed(cfg, c);
}
