/* The in-progress answers shared by the I/O hooks and the send hooks. */
#ifndef BACKOFF_INTERCEPT_IO_H
#define BACKOFF_INTERCEPT_IO_H

#include <stdbool.h>

/*
 * Whether @fd is a managed connect the program must not touch yet: then *err
 * is EAGAIN (retry pending) or the connect's final error.  Never waits for a
 * claim of the calling thread: safe in a signal handler.
 */
bool io_masked(int fd, int *err);

/* Return the in-progress answer for a masked @fd; one relaxed load otherwise. */
#define ANSWER_IF_MASKED(fd)                                                             \
	do {                                                                             \
		int err_;                                                                \
		if (__builtin_expect(pending_any_masked(), 0) && io_masked(fd, &err_)) { \
			errno = err_;                                                    \
			return -1;                                                       \
		}                                                                        \
	} while (0)

#endif
