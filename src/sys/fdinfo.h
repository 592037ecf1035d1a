/* /proc/self/fdinfo of an epoll set: the registrations it lists, parsed without trusting it. */
#ifndef BACKOFF_SYS_FDINFO_H
#define BACKOFF_SYS_FDINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Find the line "tfd: FD events: HEX data: HEX ..." of @fd in the @len bytes
 * of @text (not NUL-terminated; any bytes).  Returns true and sets *events and
 * *data if found.  Pure.
 */
bool fdinfo_find(const char *text, size_t len, int fd, uint32_t *events, uint64_t *data);

/*
 * Read /proc/self/fdinfo/@epfd and look @fd up in it.  Returns 1 if found, 0
 * if the set does not hold it, -1 if it cannot be read (no /proc, a closed
 * set): then nothing is known.  No heap; errno untouched.
 */
int fdinfo_read(int epfd, int fd, uint32_t *events, uint64_t *data);

#endif
