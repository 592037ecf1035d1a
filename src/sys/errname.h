/* errno names, without the C library's help. */
#ifndef BACKOFF_SYS_ERRNAME_H
#define BACKOFF_SYS_ERRNAME_H

/*
 * The name of errno value @err ("ECONNREFUSED"), as glibc's strerrorname_np
 * gives it, or NULL for a number without one.  Async-signal-safe.
 */
const char *errname(int err);

#endif
