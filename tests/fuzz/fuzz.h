/* What every libFuzzer target of tests/fuzz/ shares: its entry point and its property check. */
#ifndef BACKOFF_TESTS_FUZZ_H
#define BACKOFF_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed property: abort, so that libFuzzer keeps the input as a crash. */
#define REQUIRE(cond)            \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

#endif
