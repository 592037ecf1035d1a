/* What the I/O, send and sockopt hooks share: in-progress answers, a send timeout given back. */
#ifndef BACKOFF_INTERCEPT_IO_H
#define BACKOFF_INTERCEPT_IO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "tables/fdtable.h"

/*
 * Whether @fd is a managed connect the program must not touch yet: then *err
 * is EAGAIN (retry pending) or the connect's final error.  On a socket made
 * blocking again, a retry pending is waited for first, at most the socket's
 * own timeout (@opt: SO_SNDTIMEO for a send, SO_RCVTIMEO for a read), as the
 * kernel's call waits for a connect in progress.  Never waits for a claim of
 * the calling thread: safe in a signal handler.
 */
bool io_masked(int fd, int opt, int *err);

/* GIVE_BACK_SNDTIMEO, then whether @fd is masked as io_masked says. */
bool io_masked_given_back(int fd, int *err);

/*
 * ANSWER_IF_MASKED and GIVE_BACK_SNDTIMEO in one test, for the calls that
 * send: one relaxed load, usually.
 */
#define ANSWER_IF_MASKED_GIVE_BACK(fd)                              \
	do {                                                        \
		int err_;                                           \
		if (__builtin_expect(fdtable_any_attention(), 0) && \
		    io_masked_given_back(fd, &err_)) {              \
			errno = err_;                               \
			return -1;                                  \
		}                                                   \
	} while (0)

/* Return the in-progress answer for a masked @fd; one relaxed load otherwise. */
#define ANSWER_IF_MASKED(fd)                                     \
	do {                                                     \
		int err_;                                        \
		if (__builtin_expect(pending_any_masked(), 0) && \
		    io_masked(fd, SO_RCVTIMEO, &err_)) {         \
			errno = err_;                            \
			return -1;                               \
		}                                                \
	} while (0)

#endif
