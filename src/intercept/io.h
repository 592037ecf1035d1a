/* What the I/O, send and sockopt hooks share: in-progress answers, a send timeout given back. */
#ifndef BACKOFF_INTERCEPT_IO_H
#define BACKOFF_INTERCEPT_IO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/fdtable.h"

/*
 * Whether @fd is a managed connect the program must not touch yet: then *err
 * is EAGAIN (retry pending) or the connect's final error.  Never waits for a
 * claim of the calling thread: safe in a signal handler.
 */
bool io_masked(int fd, int *err);

/*
 * A blocking connect on @fd was left by a siglongjmp with its bound still
 * the socket's send timeout: the program's own (none) is given back.  No
 * system call unless it was left so.  errno untouched; async-signal-safe.
 * (A call on the fd from another thread while the attempt runs gives it
 * back early too: the attempt then waits as it would without the library.)
 */
void io_sndtimeo_back(int fd);

/*
 * One attempt of a blocking connect of @fd to @addr, aborted at
 * @deadline_ms (CONFIG_INFINITE: none) if still unanswered; a connection
 * made is watched for its first byte.  0 or its errno.  errno may change.
 */
int connect_once(int fd, const struct sockaddr *addr, socklen_t len, uint64_t deadline_ms);

/* Before any call on @fd that the send timeout changes: one relaxed load, usually. */
#define GIVE_BACK_SNDTIMEO(fd)                                \
	do {                                                  \
		if (__builtin_expect(fdtable_any_bound(), 0)) \
			io_sndtimeo_back(fd);                 \
	} while (0)

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
#define ANSWER_IF_MASKED(fd)                                                             \
	do {                                                                             \
		int err_;                                                                \
		if (__builtin_expect(pending_any_masked(), 0) && io_masked(fd, &err_)) { \
			errno = err_;                                                    \
			return -1;                                                       \
		}                                                                        \
	} while (0)

#endif
