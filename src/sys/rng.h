/* Per-thread random numbers for jitter: seeded from getrandom or BACKOFF_SEED. */
#ifndef BACKOFF_SYS_RNG_H
#define BACKOFF_SYS_RNG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Fix the seeding for the process: with @seeded, every thread's sequence is
 * derived from @seed (the first thread to draw gets exactly the sequence of
 * rng_seed_state(seed, 0)); otherwise from getrandom.  Call once at load.
 * (Each retried call draws from a sequence of its own: drivers/retry.)
 */
void rng_configure(bool seeded, uint64_t seed);

/* Make every thread reseed at its next draw (the pthread_atfork child handler). */
void rng_after_fork(void);

/* The calling thread's next number.  Async-signal-safe; errno preserved. */
uint64_t rng_next(void);

/* Pure: the state of the first seeded sequence, and a step of it. */
uint64_t rng_seed_state(uint64_t seed, uint64_t ordinal);
uint64_t rng_step(uint64_t *state);

#endif
