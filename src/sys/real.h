/* The next definitions of the intercepted calls, resolved once at load. */
#ifndef BACKOFF_SYS_REAL_H
#define BACKOFF_SYS_REAL_H

#include <netdb.h>
#include <sys/socket.h>

extern int (*real_connect)(int fd, const struct sockaddr *addr, socklen_t len);
extern int (*real_getaddrinfo)(const char *node, const char *service,
			       const struct addrinfo *hints, struct addrinfo **res);

/*
 * Resolve every real_* pointer with dlsym(RTLD_NEXT).  Aborts with a message
 * if a symbol is missing or resolves to libbackoff's own hook.  Called once,
 * under the init once-guard.
 */
void real_resolve(void);

#endif
