/* Not ready: PostgreSQL's start-up messages, and its "cannot connect now" answer. */
#include "core/ready.h"

#include <string.h>

/* The request codes of the protocol's first messages (int32, network order). */
#define PG_SSL_REQUEST 80877103U
#define PG_GSSENC_REQUEST 80877104U
#define PG_PROTOCOL_3 0x00030000U
/* A start-up packet is at most 10000 bytes (the server's MAX_STARTUP_PACKET_LENGTH). */
#define PG_STARTUP_MAX 10000U

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Whether the start-up @p (@n bytes) begins with an SSLRequest or a GSSENCRequest. */
static bool opens_negotiation(const unsigned char *p, size_t n)
{
	return n >= 8 && be32(p) == 8 &&
	       (be32(p + 4) == PG_SSL_REQUEST || be32(p + 4) == PG_GSSENC_REQUEST);
}

bool ready_startup(const void *buf, size_t n)
{
	const unsigned char *p = buf;

	if (!p)
		return false;
	if (opens_negotiation(p, n)) {
		if (n == 8)
			return true;
		p += 8;
		n -= 8;
	}
	return n >= 8 && be32(p) == n && n <= PG_STARTUP_MAX && be32(p + 4) == PG_PROTOCOL_3;
}

bool ready_may_open(const unsigned char head[8], size_t n)
{
	return n >= 8 && (opens_negotiation(head, 8) ? n == 8 : be32(head) == n);
}

uint32_t ready_pause(const void *fl, uint32_t fl_len)
{
	return opens_negotiation(fl, fl_len) ? 8 : 0;
}

/* Whether the ErrorResponse @p (@n bytes, its type byte first) has SQLSTATE 57P03. */
static bool cannot_connect_now(const unsigned char *p, size_t n)
{
	size_t at = 5, end;

	if (n < 5 || be32(p + 1) < 4)
		return false;
	end = (size_t)be32(p + 1) + 1;
	if (end > n)
		end = n; /* what the read brought: the code field comes early */
	/* Fields: a type byte, then a NUL-terminated value; a 0 type ends them. */
	while (at < end && p[at] != 0) {
		const unsigned char *v = p + at + 1;
		const unsigned char *nul = memchr(v, 0, end - at - 1);

		if (!nul)
			return false;
		if (p[at] == 'C')
			return nul - v == 5 && memcmp(v, "57P03", 5) == 0;
		at = (size_t)(nul - p) + 1;
	}
	return false;
}

enum ready_answer ready_answer(const void *buf, size_t n, const void *fl, uint32_t fl_len)
{
	const unsigned char *p = buf;

	if (!p || n == 0)
		return READY_ANSWERED;
	/* The answer to an SSLRequest or GSSENCRequest alone is one byte. */
	if (fl_len == 8 && opens_negotiation(fl, fl_len))
		return n == 1 && p[0] == READY_GO_ON ? READY_GOES_ON : READY_ANSWERED;
	return p[0] == 'E' && cannot_connect_now(p, n) ? READY_NOT : READY_ANSWERED;
}
