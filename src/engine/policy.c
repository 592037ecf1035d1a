/* Truncated exponential backoff with the jitter strategies of the field, pure. */
#include "engine/policy.h"

#include <stddef.h>

/*
 * The window grows in microseconds so that small multipliers (1.001) still
 * make progress from a 1 ms base; the loop ends at the cap, which bounds it
 * to about 18 400 steps for the slowest accepted growth.
 */
uint64_t policy_window_ms(const struct policy *p, uint64_t attempt)
{
	uint64_t cap_us = p->cap_ms * 1000;
	uint64_t w_us = p->base_ms * 1000;
	uint64_t i;

	if (p->multiplier_milli <= 1000)
		return p->base_ms < p->cap_ms ? p->base_ms : p->cap_ms;
	for (i = 1; i < attempt && w_us > 0 && w_us < cap_us; i++)
		w_us = w_us * p->multiplier_milli / 1000;
	w_us /= 1000;
	return w_us < p->cap_ms ? w_us : p->cap_ms;
}

static uint64_t clamp(uint64_t v, uint64_t hi)
{
	return v < hi ? v : hi;
}

/* The drawn range before the cap is applied: the strategy's own formula. */
static void draw_range(const struct policy *p, uint64_t attempt, uint64_t prev_ms, uint64_t *lo,
		       uint64_t *hi)
{
	uint64_t w = policy_window_ms(p, attempt);
	uint64_t spread;

	switch (p->jitter) {
	case POLICY_JITTER_FULL:
		*lo = 0;
		*hi = w;
		return;
	case POLICY_JITTER_EQUAL:
		*lo = w / 2;
		*hi = w / 2 + w / 2;
		return;
	case POLICY_JITTER_DECORRELATED:
		/* AWS: min(cap, U(base, 3 * prev)); prev is clamped so any input is safe. */
		prev_ms = clamp(prev_ms < p->base_ms ? p->base_ms : prev_ms, p->cap_ms);
		*lo = p->base_ms;
		*hi = 3 * prev_ms;
		return;
	case POLICY_JITTER_ADDITIVE:
		*lo = w;
		*hi = w + p->base_ms;
		return;
	case POLICY_JITTER_PROPORTIONAL:
		spread = w * clamp(p->ratio_milli, POLICY_MAX_RATIO_MILLI) / 1000;
		*lo = w - spread;
		*hi = w + spread;
		return;
	case POLICY_JITTER_NONE:
	default:
		*lo = w;
		*hi = w;
		return;
	}
}

void policy_bounds(const struct policy *p, uint64_t attempt, uint64_t prev_ms, uint64_t *min_ms,
		   uint64_t *max_ms)
{
	uint64_t lo, hi;

	draw_range(p, attempt, prev_ms, &lo, &hi);
	*min_ms = clamp(lo, p->cap_ms);
	*max_ms = clamp(hi, p->cap_ms);
}

uint64_t policy_next_delay(const struct policy *p, uint64_t attempt, uint64_t prev_ms,
			   uint64_t random)
{
	uint64_t lo, hi;

	draw_range(p, attempt, prev_ms, &lo, &hi);
	/* hi - lo is at most 3 * 24 h in ms, so the +1 cannot wrap. */
	return clamp(lo + random % (hi - lo + 1), p->cap_ms);
}

const char *policy_jitter_name(enum policy_jitter jitter)
{
	static const char names[][13] = {
		[POLICY_JITTER_NONE] = "none",
		[POLICY_JITTER_FULL] = "full",
		[POLICY_JITTER_EQUAL] = "equal",
		[POLICY_JITTER_DECORRELATED] = "decorrelated",
		[POLICY_JITTER_ADDITIVE] = "additive",
		[POLICY_JITTER_PROPORTIONAL] = "proportional",
	};

	if ((unsigned)jitter >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[jitter];
}
