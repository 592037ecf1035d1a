/* Not ready: PostgreSQL's start-up and its "cannot connect now", and greeting refusals. */
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

const char *const ready_protocol_names[] = {
	"postgresql", "mysql", "redis", "memcached", "nats", "smtp", "ftp", "mqtt", NULL,
};

/* A refusal that begins the server's first bytes, whole. */
struct refusal {
	unsigned protocols; /* recognized when one of these is */
	const char *text;
	const char *said; /* for the log */
};

static const struct refusal refusals[] = {
	{ READY_REDIS, "-ERR max number of clients reached\r\n", "Redis: max number of clients" },
	{ READY_MEMCACHED, "ERROR Too many open connections\r\n",
	  "memcached: too many open connections" },
	{ READY_SMTP | READY_FTP, "421 ", "a 421 greeting: service not available" },
	{ READY_SMTP | READY_FTP, "421-", "a 421 greeting: service not available" },
};

/* NATS: its INFO line, then this, before the client's CONNECT is read. */
#define NATS_MAX_CONN "\r\n-ERR 'maximum connections exceeded'\r\n"

/*
 * @p (@n bytes) against @text: READY_REFUSAL if @text begins it,
 * READY_UNDECIDED if it begins @text, else READY_GREETING.
 */
static enum ready_greeting prefix(const unsigned char *p, size_t n, const char *text)
{
	size_t k = strlen(text);

	if (n >= k)
		return memcmp(p, text, k) == 0 ? READY_REFUSAL : READY_GREETING;
	return memcmp(p, text, n) == 0 ? READY_UNDECIDED : READY_GREETING;
}

/*
 * MySQL and MariaDB: a packet (3 bytes of length, little-endian, then
 * sequence 0) whose payload is an ERR packet (0xFF, then the error code,
 * little-endian) in place of the greeting (protocol 10): too many
 * connections (1040), or shutting down (1053).
 */
static enum ready_greeting mysql(const unsigned char *p, size_t n)
{
	static const unsigned char head[5] = { 0, 0, 0, 0, 0xFF };
	size_t k = n < 7 ? n : 7, i;
	unsigned code;

	for (i = 3; i < k && i < 5; i++)
		if (p[i] != head[i])
			return READY_GREETING;
	if (n < 7)
		return READY_UNDECIDED;
	code = (unsigned)p[5] | (unsigned)p[6] << 8;
	return code == 1040 || code == 1053 ? READY_REFUSAL : READY_GREETING;
}

/* NATS: INFO {...}, then the refusal, in the first bytes. */
static enum ready_greeting nats(const unsigned char *p, size_t n)
{
	const unsigned char *eol;
	enum ready_greeting r = prefix(p, n, "INFO ");

	if (r != READY_REFUSAL)
		return r;
	eol = memchr(p, '\r', n);
	return eol ? prefix(eol, n - (size_t)(eol - p), NATS_MAX_CONN) : READY_UNDECIDED;
}

enum ready_greeting ready_greeting(const void *buf, size_t n, unsigned protocols, const char **name)
{
	const unsigned char *p = buf;
	enum ready_greeting best = READY_GREETING, r;
	size_t i;

	if (!p || n == 0)
		return READY_GREETING;
	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		if (!(refusals[i].protocols & protocols))
			continue;
		r = prefix(p, n, refusals[i].text);
		if (r == READY_REFUSAL) {
			*name = refusals[i].said;
			return r;
		}
		if (r == READY_UNDECIDED)
			best = r;
	}
	if (protocols & READY_MYSQL) {
		r = mysql(p, n);
		if (r == READY_REFUSAL) {
			*name = p[5] == 0x10 ? "MySQL: too many connections (1040)"
					     : "MySQL: shutting down (1053)";
			return r;
		}
		if (r == READY_UNDECIDED)
			best = r;
	}
	if (protocols & READY_NATS) {
		r = nats(p, n);
		if (r == READY_REFUSAL) {
			*name = "NATS: maximum connections exceeded";
			return r;
		}
		if (r == READY_UNDECIDED)
			best = r;
	}
	return best;
}

/* MQTT's fixed header: its type byte, then the remaining length, 1 to 4 bytes of 7 bits. */
static bool mqtt_header(const unsigned char *p, size_t n, size_t *len, size_t *at)
{
	size_t v = 0, k;

	for (k = 1; k <= 4 && k < n; k++) {
		v |= (size_t)(p[k] & 0x7F) << (7 * (k - 1));
		if (!(p[k] & 0x80)) {
			*len = v;
			*at = k + 1;
			return true;
		}
	}
	return false;
}

/* Whether @p (@n bytes, at least 8) opens a CONNECT: MQTT (3.1.1, 5) or MQIsdp (3.1). */
static bool mqtt_opens(const unsigned char *p, size_t n, size_t *total, unsigned *level)
{
	size_t len, at;

	if (n < 8 || p[0] != 0x10 || !mqtt_header(p, n, &len, &at) || n - at < 4)
		return false;
	*total = at + len;
	if (n - at > 6 && memcmp(p + at, "\0\4MQTT", 6) == 0) {
		*level = p[at + 6];
		return *level == 4 || *level == 5;
	}
	if (memcmp(p + at, "\0\6MQ", 4) == 0) {
		*level = 3;
		return true;
	}
	return false;
}

bool ready_mqtt_connect(const void *buf, size_t n)
{
	size_t total;
	unsigned level;

	return buf && mqtt_opens(buf, n, &total, &level) && total == n;
}

bool ready_mqtt_may_open(const unsigned char head[8], size_t n)
{
	size_t len, at;

	/* The protocol's name begins within the first 8 bytes; its level may not. */
	return n >= 8 && head[0] == 0x10 && mqtt_header(head, 8, &len, &at) && at <= 4 &&
	       at + len == n &&
	       (memcmp(head + at, "\0\4MQ", 4) == 0 || memcmp(head + at, "\0\6MQ", 4) == 0);
}

enum ready_answer ready_connack(const void *buf, size_t n, const void *fl, uint32_t fl_len)
{
	const unsigned char *p = buf;
	size_t total, len, at;
	unsigned level;

	if (!p || !mqtt_opens(fl, fl_len, &total, &level) || n < 4 || p[0] != 0x20 ||
	    !mqtt_header(p, n, &len, &at) || len < 2 || n < at + 2)
		return READY_ANSWERED;
	/* The acknowledge flags, then the code: a refusal has no session. */
	if (level < 5)
		return p[at + 1] == 3 ? READY_NOT : READY_ANSWERED;
	return p[at + 1] == 0x88 || p[at + 1] == 0x89 || p[at + 1] == 0x9F ? READY_NOT
									   : READY_ANSWERED;
}

/* A decimal of @p at *at ended by CRLF, at most @max: its value, *at past it; -1 if none. */
static long resp_number(const unsigned char *p, size_t n, size_t *at, long max)
{
	long v = 0;
	size_t k = *at;

	if (k >= n || p[k] < '0' || p[k] > '9')
		return -1;
	while (k < n && p[k] >= '0' && p[k] <= '9') {
		v = v * 10 + (p[k] - '0');
		if (v > max)
			return -1;
		k++;
	}
	if (n - k < 2 || p[k] != '\r' || p[k + 1] != '\n')
		return -1;
	*at = k + 2;
	return v;
}

bool ready_resp_command(const void *buf, size_t n)
{
	const unsigned char *p = buf;
	size_t at = 1;
	long count, len;

	if (!p || n < 4 || p[0] != '*')
		return false;
	count = resp_number(p, n, &at, 1024);
	if (count < 1)
		return false;
	while (count-- > 0) {
		if (at >= n || p[at] != '$')
			return false;
		at++;
		len = resp_number(p, n, &at, (long)n);
		if (len < 0 || n - at < (size_t)len + 2 || p[at + (size_t)len] != '\r' ||
		    p[at + (size_t)len + 1] != '\n')
			return false;
		at += (size_t)len + 2;
	}
	return at == n;
}

bool ready_resp_may_open(const unsigned char head[8], size_t n)
{
	return n >= 8 && head[0] == '*' && head[1] >= '1' && head[1] <= '9';
}

enum ready_answer ready_resp_answer(const void *buf, size_t n)
{
	static const char *const not_run[] = { "-LOADING ", "-BUSY ", "-MASTERDOWN " };
	size_t i;

	for (i = 0; buf && i < sizeof(not_run) / sizeof(not_run[0]); i++)
		if (n >= strlen(not_run[i]) && memcmp(buf, not_run[i], strlen(not_run[i])) == 0)
			return READY_NOT;
	return READY_ANSWERED;
}
