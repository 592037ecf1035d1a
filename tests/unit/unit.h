/* A minimal assertion kit for the unit-test drivers of the pure core. */
#ifndef BACKOFF_TESTS_UNIT_H
#define BACKOFF_TESTS_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static unsigned unit_passed, unit_failed;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (cond) {                                                                      \
			unit_passed++;                                                           \
		} else {                                                                         \
			unit_failed++;                                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		}                                                                                \
	} while (0)

#define CHECK_U64(got, want)                                                                     \
	do {                                                                                     \
		uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);                            \
		if (g_ == w_) {                                                                  \
			unit_passed++;                                                           \
		} else {                                                                         \
			unit_failed++;                                                           \
			fprintf(stderr, "%s:%d: %s = %" PRIu64 ", want %" PRIu64 "\n", __FILE__, \
				__LINE__, #got, g_, w_);                                         \
		}                                                                                \
	} while (0)

#define CHECK_STR(got, want)                                                                     \
	do {                                                                                     \
		const char *g_ = (got), *w_ = (want);                                            \
		if (strcmp(g_, w_) == 0) {                                                       \
			unit_passed++;                                                           \
		} else {                                                                         \
			unit_failed++;                                                           \
			fprintf(stderr, "%s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, __LINE__, \
				#got, g_, w_);                                                   \
		}                                                                                \
	} while (0)

/* config_parse's lookup in an environment given as NAME=VALUE strings, NULL-terminated. */
static inline const char *unit_env(const char *name, void *ctx)
{
	const char *const *env = ctx;
	size_t n = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static inline int unit_report(const char *name)
{
	printf("%s: %u passed, %u failed\n", name, unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#endif
