/* getaddrinfo(): remember the answer so that connect() knows the last address of a list. */
#include <netdb.h>

#include "core/addrlist.h"
#include "init.h"
#include "sys/clock.h"
#include "sys/real.h"

/* Returns what the real getaddrinfo returns; errno as it left it. */
EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res)
{
	const struct config *cfg = init_config_get();
	int rc = real_getaddrinfo(node, service, hints, res);

	if (rc == 0 && cfg->enabled && res && *res && (*res)->ai_next)
		addrlist_remember(*res, clock_now_ms());
	return rc;
}
