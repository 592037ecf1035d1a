/* libFuzzer target: the fdinfo parser against any bytes, and against lines it must find. */
#include "sys/fdinfo.h"
#include "fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t events = 0, e2 = 0;
	uint64_t value = 0, v2 = 0;
	char line[128], *copy;
	int fd = size > 0 ? data[0] : 0, n;

	/* Any bytes: no read past the end (ASan), and a found entry is a real line. */
	if (fdinfo_find((const char *)data, size, fd, &events, &value))
		REQUIRE(size >= 20);
	/* A well-formed line after the input, on a line of its own, is always found. */
	n = snprintf(line, sizeof(line),
		     "\ntfd: %8d events: %8x data: %16llx  pos:0 ino:1 sdev:2\n", fd, 0x1cU,
		     (unsigned long long)0x5eed00000000000fULL);
	copy = malloc(size + (size_t)n);
	REQUIRE(copy != NULL);
	memcpy(copy, data, size);
	memcpy(copy + size, line, (size_t)n);
	REQUIRE(fdinfo_find(copy, size + (size_t)n, fd, &e2, &v2));
	/* The input may hold an earlier line for the same fd: then that one is the answer. */
	if (!fdinfo_find((const char *)data, size, fd, &events, &value))
		REQUIRE(e2 == 0x1cU && v2 == 0x5eed00000000000fULL);
	free(copy);
	return 0;
}
