/* Monotonic time in milliseconds and the wait between attempts. */
#ifndef BACKOFF_SYS_CLOCK_H
#define BACKOFF_SYS_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC.  Async-signal-safe; errno preserved. */
uint64_t clock_now_ms(void);

/* Nanoseconds on CLOCK_MONOTONIC, for the program's own wait deadlines. */
uint64_t clock_now_ns(void);

/*
 * Nanoseconds on CLOCK_MONOTONIC_COARSE (a few ms of resolution, a fraction
 * of the cost): for ages measured in seconds.  errno preserved.
 */
uint64_t clock_coarse_ns(void);

/* Milliseconds since the epoch on CLOCK_REALTIME, for log timestamps. */
uint64_t clock_wall_ms(void);

/*
 * Sleep until CLOCK_MONOTONIC reaches @deadline_ns.  A signal whose handler
 * could have been one without SA_RESTART ends the wait early: returns 0 when
 * the deadline was reached, EINTR when cut short.  Holds nothing, so a
 * siglongjmp out of a handler is safe.  errno preserved.
 */
int clock_wait_until_ns(uint64_t deadline_ns);

/*
 * Whether every installed handler has SA_RESTART (fault signals aside): a
 * wait cut short by EINTR then goes on, as the blocking call would have.
 */
bool clock_every_handler_restarts(void);

#endif
