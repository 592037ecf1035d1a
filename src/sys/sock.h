/* What the hooks ask about a socket after a call failed: blocking mode, type, send timeout. */
#ifndef BACKOFF_SYS_SOCK_H
#define BACKOFF_SYS_SOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Whether @fd is in blocking mode (false if fcntl fails).  errno may change. */
bool sock_is_blocking(int fd);

/* SOCK_STREAM, SOCK_DGRAM, ... of @fd, or -1 if unknown.  errno may change. */
int sock_type(int fd);

/*
 * Fill *family and *type of socket @fd (SO_DOMAIN, SO_TYPE).  Returns false
 * if either is unknown.  errno may change.
 */
bool sock_kind(int fd, int *family, int *type);

/*
 * The program's SO_SNDTIMEO on @fd in milliseconds, or UINT64_MAX (infinite) when
 * unset: it bounds the retry budget as it bounds the call itself.  errno may
 * change.
 */
uint64_t sock_sndtimeo_ms(int fd);

#endif
