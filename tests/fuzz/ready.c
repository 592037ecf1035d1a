/* libFuzzer target: PostgreSQL's start-up, its "not ready" answer and greeting refusals. */
#include "engine/ready.h"
#include "fuzz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An SSLRequest: length 8, code 80877103. */
static const uint8_t ssl_request[8] = { 0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t half = size / 2;
	uint32_t pause;
	uint8_t *copy;

	/* Any bytes, as a flight and as an answer: no read past either (ASan). */
	copy = malloc(size ? size : 1);
	REQUIRE(copy);
	memcpy(copy, data, size);
	if (ready_startup(copy, size)) {
		REQUIRE(size >= 8);
		pause = ready_pause(copy, (uint32_t)size);
		REQUIRE(pause == 0 || pause == 8);
	}
	if (size >= 8)
		(void)ready_may_open(copy, size);
	(void)ready_answer(copy + half, size - half, copy, (uint32_t)half);
	/* After an SSLRequest alone, only a lone 'N' lets the start-up go on. */
	REQUIRE((ready_answer(copy, size, ssl_request, 8) == READY_GOES_ON) ==
		(size == 1 && copy[0] == 'N'));
	/*
	 * A greeting read whole or in part: no read past it, and a refusal
	 * stays one with more bytes after it (a refusal is a prefix).
	 */
	{
		const char *name = NULL;
		enum ready_greeting g = ready_greeting(copy, size, READY_PROTOCOLS_ALL, &name);

		REQUIRE((g == READY_REFUSAL) == (name != NULL));
		if (g == READY_REFUSAL && size > 1) {
			const char *again = NULL;

			REQUIRE(ready_greeting(copy, size - 1, READY_PROTOCOLS_ALL, &again) !=
					READY_GREETING ||
				size - 1 < 7);
		}
		REQUIRE(ready_greeting(copy, size, 0, &name) == READY_GREETING);
	}
	/* MQTT: a CONNECT whole is one that may open; a CONNACK read against any bytes. */
	if (ready_mqtt_connect(copy, size) && size >= 8)
		REQUIRE(ready_mqtt_may_open(copy, size));
	if (size >= 8)
		(void)ready_mqtt_may_open(copy, size);
	(void)ready_connack(copy + half, size - half, copy, (uint32_t)half);
	/* Redis: one command whole, and an answer, against any bytes. */
	if (ready_resp_command(copy, size) && size >= 8)
		REQUIRE(ready_resp_may_open(copy, size));
	(void)ready_resp_answer(copy, size);
	/* HTTP: a request whole, and a response head with any Retry-After. */
	{
		uint64_t wait;

		if (ready_http_request(copy, size))
			REQUIRE(ready_http_may_open(copy, size));
		if (ready_http_answer(copy, size, 784111770, &wait) == READY_ANSWERED)
			REQUIRE(wait == 0);
		REQUIRE(wait <= 86400000ULL);
	}
	free(copy);
	return 0;
}
