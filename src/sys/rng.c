/* Per-thread splitmix64 generators, reseeded after fork. */
#include "sys/rng.h"
#include "sys/startup.h"
#include "sys/kcall.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <time.h>

struct rng_thread {
	uint64_t state;
	unsigned generation; /* rng_generation when seeded; 0 = never */
};

STARTUP_DATA static bool rng_seeded;
STARTUP_DATA static uint64_t rng_seed;
static atomic_uint rng_generation = 1;
static atomic_uint_fast64_t rng_ordinal;

/* initial-exec: no lazy TLS allocation inside a hook. */
static __thread struct rng_thread rng_tls __attribute__((tls_model("initial-exec")));

STARTUP_CODE void rng_configure(bool seeded, uint64_t seed)
{
	rng_seeded = seeded;
	rng_seed = seed;
}

void rng_after_fork(void)
{
	/* The child's only thread draws the first sequence again, as a new process would. */
	atomic_store_explicit(&rng_ordinal, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&rng_generation, 1, memory_order_relaxed);
}

uint64_t rng_step(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rng_seed_state(uint64_t seed, uint64_t ordinal)
{
	uint64_t s = ordinal * 0xd1b54a32d192ed03ULL;

	return seed ^ (ordinal ? rng_step(&s) : 0);
}

static void reseed(struct rng_thread *t, unsigned generation)
{
	uint64_t ordinal = atomic_fetch_add_explicit(&rng_ordinal, 1, memory_order_relaxed);
	int saved = errno;

	if (rng_seeded) {
		t->state = rng_seed_state(rng_seed, ordinal);
	} else if (kcall_getrandom(&t->state, sizeof(t->state), GRND_NONBLOCK) !=
		   sizeof(t->state)) {
		struct timespec ts;

		/* No entropy yet (early boot): distinct enough per thread and time. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t->state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
			   (uint64_t)(uintptr_t)t ^ (ordinal << 48);
	}
	errno = saved;
	t->generation = generation;
}

uint64_t rng_next(void)
{
	unsigned generation = atomic_load_explicit(&rng_generation, memory_order_relaxed);

	if (rng_tls.generation != generation)
		reseed(&rng_tls, generation);
	return rng_step(&rng_tls.state);
}
