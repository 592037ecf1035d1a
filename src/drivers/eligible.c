/* Whether a connect is the library's at all, from what a driver has: its address, errno. */
#include "drivers/eligible.h"

#include "engine/engine.h"

bool eligible_takes(const struct config *cfg, const struct sockaddr *addr, socklen_t len,
		    struct target_addr *t)
{
	return target_from_sockaddr(addr, len, t) && engine_takes(cfg, t);
}

const char *eligible_why_not(const struct config *cfg, const struct target_addr *t, int type,
			     bool blocking)
{
	return engine_why_not(cfg, t, type, blocking);
}

bool eligible_retryable(const struct config *cfg, const struct target_addr *t, int err)
{
	return engine_retries(config_retryable(cfg, t->family), err);
}
