/* Unit tests of engine/policy: windows, bounds of every strategy, no overflow. */
#include "engine/policy.h"

#include "unit.h"

static struct policy make(enum policy_jitter j, uint64_t base, uint64_t cap, uint32_t mult)
{
	struct policy p = { base, cap, mult, j, 200 };

	return p;
}

static void test_window_doubles_until_cap(void)
{
	struct policy p = make(POLICY_JITTER_NONE, 100, 1000, 2000);

	CHECK_U64(policy_window_ms(&p, 1), 100);
	CHECK_U64(policy_window_ms(&p, 2), 200);
	CHECK_U64(policy_window_ms(&p, 4), 800);
	CHECK_U64(policy_window_ms(&p, 5), 1000);
	CHECK_U64(policy_window_ms(&p, 1000000), 1000);
	CHECK_U64(policy_window_ms(&p, UINT64_MAX), 1000);
	CHECK_U64(policy_window_ms(&p, 0), 100);
}

static void test_window_fractional_multiplier(void)
{
	struct policy grpc = make(POLICY_JITTER_NONE, 1000, 120000, 1600);
	struct policy slow = make(POLICY_JITTER_NONE, 1, POLICY_MAX_DELAY_MS, 1001);
	struct policy flat = make(POLICY_JITTER_NONE, 250, 10000, 1000);

	CHECK_U64(policy_window_ms(&grpc, 2), 1600);
	CHECK_U64(policy_window_ms(&grpc, 3), 2560);
	CHECK_U64(policy_window_ms(&grpc, 30), 120000);
	/* x1.001 from 1 ms still grows (kept in microseconds) and ends at the 24 h cap. */
	CHECK(policy_window_ms(&slow, 2000) > 1);
	CHECK_U64(policy_window_ms(&slow, 1000000), POLICY_MAX_DELAY_MS);
	CHECK_U64(policy_window_ms(&flat, 1000000), 250);
}

static void test_extremes_do_not_overflow(void)
{
	struct policy p = make(POLICY_JITTER_FULL, POLICY_MAX_DELAY_MS, POLICY_MAX_DELAY_MS,
			       POLICY_MAX_MULTIPLIER_MILLI);
	enum policy_jitter j;

	for (j = POLICY_JITTER_NONE; j <= POLICY_JITTER_PROPORTIONAL; j++) {
		uint64_t lo, hi, d;

		p.jitter = j;
		p.ratio_milli = POLICY_MAX_RATIO_MILLI;
		policy_bounds(&p, 1000000, UINT64_MAX, &lo, &hi);
		d = policy_next_delay(&p, 1000000, UINT64_MAX, UINT64_MAX);
		CHECK(lo <= d && d <= hi && hi <= POLICY_MAX_DELAY_MS);
		d = policy_next_delay(&p, 1000000, UINT64_MAX, 0);
		CHECK(lo <= d && d <= hi);
	}
}

/* Each strategy's formula, checked at its ends with chosen random numbers. */
static void test_strategy_bounds(void)
{
	struct policy p = make(POLICY_JITTER_FULL, 100, 10000, 2000);
	uint64_t lo, hi;

	policy_bounds(&p, 3, 100, &lo, &hi);
	CHECK_U64(lo, 0);
	CHECK_U64(hi, 400);
	CHECK_U64(policy_next_delay(&p, 3, 100, 0), 0);
	CHECK_U64(policy_next_delay(&p, 3, 100, 400), 400);
	CHECK_U64(policy_next_delay(&p, 3, 100, 401), 0);

	p.jitter = POLICY_JITTER_EQUAL;
	policy_bounds(&p, 3, 100, &lo, &hi);
	CHECK_U64(lo, 200);
	CHECK_U64(hi, 400);

	p.jitter = POLICY_JITTER_NONE;
	CHECK_U64(policy_next_delay(&p, 3, 100, 12345), 400);

	p.jitter = POLICY_JITTER_DECORRELATED;
	policy_bounds(&p, 7, 300, &lo, &hi);
	CHECK_U64(lo, 100);
	CHECK_U64(hi, 900);
	policy_bounds(&p, 7, 9000, &lo, &hi);
	CHECK_U64(hi, 10000);
	policy_bounds(&p, 1, 0, &lo, &hi);
	CHECK_U64(lo, 100);
	CHECK_U64(hi, 300);

	p.jitter = POLICY_JITTER_ADDITIVE;
	policy_bounds(&p, 2, 100, &lo, &hi);
	CHECK_U64(lo, 200);
	CHECK_U64(hi, 300);
	policy_bounds(&p, 20, 100, &lo, &hi);
	CHECK_U64(lo, 10000);
	CHECK_U64(hi, 10000);

	p.jitter = POLICY_JITTER_PROPORTIONAL;
	p.ratio_milli = 200;
	policy_bounds(&p, 2, 100, &lo, &hi);
	CHECK_U64(lo, 160);
	CHECK_U64(hi, 240);
	p.ratio_milli = 1000;
	policy_bounds(&p, 2, 100, &lo, &hi);
	CHECK_U64(lo, 0);
	CHECK_U64(hi, 400);
}

static void test_random_draws_stay_in_bounds(void)
{
	uint64_t r = 88172645463325252ULL;
	enum policy_jitter j;
	unsigned i;

	for (j = POLICY_JITTER_NONE; j <= POLICY_JITTER_PROPORTIONAL; j++) {
		struct policy p = make(j, 7, 5000, 1700);
		uint64_t prev = p.base_ms, attempt;
		unsigned bad = 0;

		for (i = 0; i < 2000; i++) {
			for (attempt = 1; attempt < 40; attempt++) {
				uint64_t lo, hi, d;

				r ^= r << 13;
				r ^= r >> 7;
				r ^= r << 17;
				policy_bounds(&p, attempt, prev, &lo, &hi);
				d = policy_next_delay(&p, attempt, prev, r);
				if (d < lo || d > hi || hi > p.cap_ms)
					bad++;
				prev = d;
			}
		}
		CHECK_U64(bad, 0);
	}
}

/* A zero base is outside what the configuration accepts: the window stays 0, the loop ends. */
static void test_zero_base_ends_the_growth(void)
{
	struct policy p = make(POLICY_JITTER_NONE, 0, 1000, 2000);

	CHECK_U64(policy_window_ms(&p, 5), 0);
	CHECK_U64(policy_window_ms(&p, UINT64_MAX), 0);
}

static void test_names(void)
{
	CHECK_STR(policy_jitter_name(POLICY_JITTER_DECORRELATED), "decorrelated");
	CHECK_STR(policy_jitter_name((enum policy_jitter)99), "?");
}

int main(void)
{
	test_window_doubles_until_cap();
	test_window_fractional_multiplier();
	test_extremes_do_not_overflow();
	test_strategy_bounds();
	test_random_draws_stay_in_bounds();
	test_zero_base_ends_the_growth();
	test_names();
	return unit_report("policy");
}
