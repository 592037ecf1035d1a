/* Backoff policy: the delay before each retry, as a pure function of its inputs. */
#ifndef BACKOFF_ENGINE_POLICY_H
#define BACKOFF_ENGINE_POLICY_H

#include <stdint.h>

#include "config/config.h"

/*
 * The un-jittered window of retry @attempt (1 for the first retry):
 * min(cap, base * multiplier^(attempt - 1)).  Any attempt number is accepted.
 */
uint64_t policy_window_ms(const struct policy *p, uint64_t attempt);

/*
 * Bounds of the delay before retry @attempt, given the previous delay
 * @prev_ms (used by decorrelated jitter; pass base_ms before the first).
 * min <= max <= cap_ms always.
 */
void policy_bounds(const struct policy *p, uint64_t attempt, uint64_t prev_ms, uint64_t *min_ms,
		   uint64_t *max_ms);

/*
 * The delay before retry @attempt, drawn with the caller's random number
 * @random.  Pure: no clock, no global state.  Returns a value within
 * policy_bounds().
 */
uint64_t policy_next_delay(const struct policy *p, uint64_t attempt, uint64_t prev_ms,
			   uint64_t random);

/* Name of a jitter strategy as the configuration spells it. */
const char *policy_jitter_name(enum policy_jitter jitter);

#endif
