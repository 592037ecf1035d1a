/* Recent getaddrinfo answers, so that only the last address of a list is retried. */
#ifndef BACKOFF_FACTS_ADDRLIST_H
#define BACKOFF_FACTS_ADDRLIST_H

#include <netdb.h>
#include <stdint.h>

#include "config/target.h"

#define ADDRLIST_LISTS 32 /* lists remembered, the oldest replaced first */
#define ADDRLIST_ADDRS 16 /* distinct addresses kept per list */
#define ADDRLIST_MAX_AGE_MS (10ULL * 60 * 1000)

enum addrlist_place {
	ADDRLIST_UNKNOWN,  /* in no recent list */
	ADDRLIST_LAST,	   /* the last address of the most recent list holding it */
	ADDRLIST_NOT_LAST, /* another address follows it in that list */
};

/*
 * Remember the AF_INET/AF_INET6 addresses of @res, in order, duplicates (one
 * per socket type) folded.  Lists of one address are not kept: unknown and
 * last are treated alike.  Thread-safe, lock-free for readers; no allocation.
 */
void addrlist_remember(const struct addrinfo *res, uint64_t now_ms);

/* Where @t stands in the most recent list that holds it.  Async-signal-safe. */
enum addrlist_place addrlist_find(const struct target_addr *t, uint64_t now_ms);

#endif
