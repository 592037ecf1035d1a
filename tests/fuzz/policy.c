/* libFuzzer target: the backoff policy with any accepted parameters, checked against a model. */
#include "engine/policy.h"
#include "fuzz.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 wide;

static uint64_t take(const uint8_t **data, size_t *size)
{
	uint64_t v = 0;
	size_t n = *size < 8 ? *size : 8;

	memcpy(&v, *data, n);
	*data += n;
	*size -= n;
	return v;
}

/* The window as policy.h defines it, in 128-bit arithmetic: what 64 bits must equal. */
static wide model_window(const struct policy *p, uint64_t attempt)
{
	wide cap_us = (wide)p->cap_ms * 1000, w_us = (wide)p->base_ms * 1000;
	uint64_t i;

	if (p->multiplier_milli <= 1000)
		return p->base_ms < p->cap_ms ? p->base_ms : p->cap_ms;
	for (i = 1; i < attempt && w_us > 0 && w_us < cap_us; i++)
		w_us = w_us * p->multiplier_milli / 1000;
	w_us /= 1000;
	return w_us < p->cap_ms ? w_us : p->cap_ms;
}

static wide min_w(wide a, wide b)
{
	return a < b ? a : b;
}

/* Each strategy's documented range (DESIGN section 1), truncated at the cap. */
static void model_bounds(const struct policy *p, uint64_t attempt, uint64_t prev, wide *lo,
			 wide *hi)
{
	wide w = model_window(p, attempt), cap = p->cap_ms, spread, prev_c;

	switch (p->jitter) {
	case POLICY_JITTER_FULL: /* U(0, w) */
		*lo = 0;
		*hi = w;
		break;
	case POLICY_JITTER_EQUAL: /* w/2 + U(0, w/2) */
		*lo = w / 2;
		*hi = w / 2 + w / 2;
		break;
	case POLICY_JITTER_DECORRELATED: /* min(cap, U(base, 3 * prev)) */
		prev_c = min_w(prev < p->base_ms ? p->base_ms : prev, cap);
		*lo = p->base_ms;
		*hi = 3 * prev_c;
		break;
	case POLICY_JITTER_ADDITIVE: /* w + U(0, base) */
		*lo = w;
		*hi = w + p->base_ms;
		break;
	case POLICY_JITTER_PROPORTIONAL: /* w * (1 +- R) */
		spread = w * p->ratio_milli / 1000;
		*lo = w - spread;
		*hi = w + spread;
		break;
	default: /* none */
		*lo = w;
		*hi = w;
		break;
	}
	*lo = min_w(*lo, cap);
	*hi = min_w(*hi, cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy p;
	uint64_t attempt, prev, random, lo, hi, d, w;
	wide mlo, mhi;

	/* Any parameters the configuration accepts (config.h, policy.h). */
	p.base_ms = 1 + take(&data, &size) % POLICY_MAX_DELAY_MS;
	p.cap_ms = p.base_ms + take(&data, &size) % (POLICY_MAX_DELAY_MS - p.base_ms + 1);
	p.multiplier_milli = (uint32_t)(1000 + take(&data, &size) % 9001);
	p.jitter = (enum policy_jitter)(take(&data, &size) % 6);
	p.ratio_milli = (uint32_t)(take(&data, &size) % (POLICY_MAX_RATIO_MILLI + 1));
	/* Any attempt number and previous delay, small ones more often. */
	attempt = take(&data, &size);
	if (attempt & 1)
		attempt = (attempt >> 1) % 64;
	prev = take(&data, &size);
	random = take(&data, &size);

	w = policy_window_ms(&p, attempt);
	REQUIRE(w == model_window(&p, attempt));
	REQUIRE(w <= p.cap_ms);
	REQUIRE(w >= p.base_ms); /* growth starts at the base, which is below the cap */
	if (attempt >= 1 && attempt < UINT64_MAX)
		REQUIRE(policy_window_ms(&p, attempt + 1) >= w); /* never shrinks */

	policy_bounds(&p, attempt, prev, &lo, &hi);
	model_bounds(&p, attempt, prev, &mlo, &mhi);
	REQUIRE(lo == mlo && hi == mhi);
	REQUIRE(lo <= hi && hi <= p.cap_ms);

	d = policy_next_delay(&p, attempt, prev, random);
	REQUIRE(lo <= d && d <= hi);
	/* The draw is uniform over [lo, hi]: the ends are reachable. */
	REQUIRE(policy_next_delay(&p, attempt, prev, 0) == lo);
	REQUIRE(policy_next_delay(&p, attempt, prev, hi - lo) == hi);
	REQUIRE(policy_jitter_name(p.jitter)[0] != '?');
	return 0;
}
