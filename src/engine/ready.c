/* "Try later" answers, byte for byte: PostgreSQL, greeting refusals, MQTT, Redis and HTTP. */
#include "engine/ready.h"

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

/*
 * The SQLSTATE of the ErrorResponse @p (@n bytes, its type byte first) when
 * it refuses a start-up for now: 57P03 (cannot connect now: starting up, in
 * recovery, shutting down) or 53300 (too many connections: PostgreSQL's and
 * pgbouncer's limits, said before any authentication); else NULL.
 */
static const char *refused_for_now(const unsigned char *p, size_t n)
{
	size_t at = 5, end;

	if (n < 5 || p[0] != 'E' || be32(p + 1) < 4)
		return NULL;
	end = (size_t)be32(p + 1) + 1;
	if (end > n)
		end = n; /* what the read brought: the code field comes early */
	/* Fields: a type byte, then a NUL-terminated value; a 0 type ends them. */
	while (at < end && p[at] != 0) {
		const unsigned char *v = p + at + 1;
		const unsigned char *nul = memchr(v, 0, end - at - 1);

		if (!nul)
			return NULL;
		if (p[at] == 'C') {
			if (nul - v != 5)
				return NULL;
			return memcmp(v, "57P03", 5) == 0   ? "57P03"
			       : memcmp(v, "53300", 5) == 0 ? "53300"
							    : NULL;
		}
		at = (size_t)(nul - p) + 1;
	}
	return NULL;
}

const char *ready_startup_refusal(const void *buf, size_t n)
{
	return buf ? refused_for_now(buf, n) : NULL;
}

enum ready_answer ready_answer(const void *buf, size_t n, const void *fl, uint32_t fl_len)
{
	const unsigned char *p = buf;

	if (!p || n == 0)
		return READY_ANSWERED;
	/* The answer to an SSLRequest or GSSENCRequest alone is one byte. */
	if (fl_len == 8 && opens_negotiation(fl, fl_len))
		return n == 1 && p[0] == READY_GO_ON ? READY_GOES_ON : READY_ANSWERED;
	return refused_for_now(p, n) ? READY_NOT : READY_ANSWERED;
}

/* A refusal that begins the server's first bytes, whole. */
struct refusal {
	unsigned protocols; /* recognized when one of these is */
	char text[40];	    /* in place, as @said: a pointer would be a relocation at load */
	char said[40];	    /* for the log */
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
 * connections (1040), or shutting down (1053).  Such a payload is short
 * (its message at most 512 bytes): a length's second byte above 4, or a
 * third byte, is a text greeting's, told without more bytes.
 */
static enum ready_greeting mysql(const unsigned char *p, size_t n)
{
	static const unsigned char head[5] = { 0, 0, 0, 0, 0xFF };
	size_t k = n < 7 ? n : 7, i;
	unsigned code;

	if ((n >= 2 && p[1] > 4) || (n >= 3 && p[2] != 0))
		return READY_GREETING;
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

/*
 * One recognizer's verdict @r: true for a refusal (*name: @said); an
 * undecided one makes *best undecided.
 */
static bool refused(enum ready_greeting r, const char *said, const char **name,
		    enum ready_greeting *best)
{
	if (r == READY_REFUSAL) {
		*name = said;
		return true;
	}
	if (r == READY_UNDECIDED)
		*best = r;
	return false;
}

/* The one refusal in place of a greeting that is not for want of room. */
static const char mysql_down[] = "MySQL: shutting down (1053)";

bool ready_greeting_full(const char *name)
{
	return name != NULL && name != mysql_down;
}

enum ready_greeting ready_greeting(const void *buf, size_t n, unsigned protocols, const char **name)
{
	const unsigned char *p = buf;
	enum ready_greeting best = READY_GREETING;
	size_t i;

	if (!p || n == 0)
		return READY_GREETING;
	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		if (!(refusals[i].protocols & protocols))
			continue;
		if (refused(prefix(p, n, refusals[i].text), refusals[i].said, name, &best))
			return READY_REFUSAL;
	}
	if ((protocols & READY_MYSQL) &&
	    refused(mysql(p, n),
		    n > 5 && p[5] == 0x10 ? "MySQL: too many connections (1040)" : mysql_down, name,
		    &best))
		return READY_REFUSAL;
	if ((protocols & READY_NATS) &&
	    refused(nats(p, n), "NATS: maximum connections exceeded", name, &best))
		return READY_REFUSAL;
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
	long count;

	if (!p || n < 4 || p[0] != '*')
		return false;
	count = resp_number(p, n, &at, 1024);
	if (count < 1)
		return false;
	while (count-- > 0) {
		long len;

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
	return n >= 8 && head[0] == '*' && head[1] >= '0' && head[1] <= '9';
}

enum ready_answer ready_resp_answer(const void *buf, size_t n)
{
	static const char not_run[][13] = { "-LOADING ", "-BUSY ", "-MASTERDOWN " };
	size_t i;

	for (i = 0; buf && i < sizeof(not_run) / sizeof(not_run[0]); i++)
		if (n >= strlen(not_run[i]) && memcmp(buf, not_run[i], strlen(not_run[i])) == 0)
			return READY_NOT;
	return READY_ANSWERED;
}

/* The methods whose request may be sent again: safe ones, without a body. */
static const char http_methods[][9] = { "GET ", "HEAD ", "OPTIONS " };

/* Whether @p (@n bytes) begins with one of http_methods. */
static bool http_method(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(http_methods) / sizeof(http_methods[0]); i++)
		if (n >= strlen(http_methods[i]) &&
		    memcmp(p, http_methods[i], strlen(http_methods[i])) == 0)
			return true;
	return false;
}

/* Whether the @k bytes at @p are @lower's, letters in either case (ASCII). */
static bool same_caseless(const unsigned char *p, const char *lower, size_t k)
{
	size_t i;

	for (i = 0; i < k; i++)
		if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] + ('a' - 'A') : p[i]) !=
		    (unsigned char)lower[i])
			return false;
	return true;
}

/* Where the @k bytes of @what first occur in the @n at @p; NULL if nowhere. */
static const unsigned char *find(const unsigned char *p, size_t n, const char *what, size_t k)
{
	size_t i;

	for (i = 0; i + k <= n; i++)
		if (memcmp(p + i, what, k) == 0)
			return p + i;
	return NULL;
}

/* Where the header @name (lower case, with its colon) begins a line of the head @p (@n bytes). */
static const unsigned char *http_header(const unsigned char *p, size_t n, const char *name)
{
	size_t k = strlen(name), i;

	for (i = 0; i + 2 + k <= n; i++)
		if (p[i] == '\r' && p[i + 1] == '\n' && same_caseless(p + i + 2, name, k))
			return p + i + 2 + k;
	return NULL;
}

bool ready_http_request(const void *buf, size_t n)
{
	const unsigned char *p = buf, *end, *v;

	if (!p || n < 16 || n > 65536 || !http_method(p, n))
		return false;
	/* One head, ended at the last byte: no body, nothing pipelined after it. */
	end = find(p, n, "\r\n\r\n", 4);
	if (!end || (size_t)(end - p) + 4 != n || !find(p, (size_t)(end - p), " HTTP/1.", 8))
		return false;
	if (http_header(p, n, "expect:") || http_header(p, n, "transfer-encoding:"))
		return false;
	v = http_header(p, n, "content-length:");
	if (v) {
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != '0' || (v[1] >= '0' && v[1] <= '9'))
			return false;
	}
	return true;
}

bool ready_http_may_open(const unsigned char head[8], size_t n)
{
	return n >= 16 && http_method(head, 8);
}

/* Days from 1970-01-01 to the civil date @y-@m-@d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* @n digits at *s as a number, *s past them; -1 if not so many digits. */
static int digits(const char **s, int n)
{
	int v = 0;

	while (n-- > 0) {
		if (**s < '0' || **s > '9')
			return -1;
		v = v * 10 + (*(*s)++ - '0');
	}
	return v;
}

/* The month named by the 3 letters at *s (1-12), *s past them; 0 if none. */
static unsigned month(const char **s)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	unsigned m;

	for (m = 0; m < 12; m++)
		if (strncmp(*s, names + (size_t)3 * m, 3) == 0) {
			*s += 3;
			return m + 1;
		}
	return 0;
}

/*
 * An HTTP-date at @s, in any of its three forms: "Sun, 06 Nov 1994 08:49:37
 * GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994".  Its
 * seconds since the epoch, or -1.
 */
static int64_t http_date(const char *s)
{
	const char *comma = strchr(s, ',');
	int y, d, hh, mm, ss;
	unsigned m;

	if (comma && comma - s <= 9) {
		s = comma + 1;
		while (*s == ' ')
			s++;
		d = digits(&s, 2);
		if (d < 0 || (*s != ' ' && *s != '-'))
			return -1;
		s++;
		m = month(&s);
		if (!m || (*s != ' ' && *s != '-'))
			return -1;
		s++;
		if (s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' &&
		    s[2] <= '9') {
			y = digits(&s, 4);
		} else {
			/* RFC 850: two digits, read as in RFC 9110 5.6.7 (not 50 years ahead). */
			y = digits(&s, 2);
			y = y < 0 ? -1 : y + (y < 70 ? 2000 : 1900);
		}
		if (y < 0)
			return -1;
	} else {
		while (*s && *s != ' ')
			s++;
		while (*s == ' ')
			s++;
		m = month(&s);
		while (*s == ' ')
			s++;
		d = *s >= '0' && *s <= '9' && (s[1] < '0' || s[1] > '9') ? digits(&s, 1)
									 : digits(&s, 2);
		if (!m || d < 0)
			return -1;
		y = -1;
	}
	while (*s == ' ')
		s++;
	hh = digits(&s, 2);
	if (*s++ != ':')
		return -1;
	mm = digits(&s, 2);
	if (*s++ != ':')
		return -1;
	ss = digits(&s, 2);
	if (y < 0) {
		while (*s == ' ')
			s++;
		y = digits(&s, 4);
	}
	if (y < 0 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60 || d < 1 || d > 31)
		return -1;
	return days_from_civil(y, m, (unsigned)d) * 86400 + (int64_t)hh * 3600 + (int64_t)mm * 60 +
	       ss;
}

enum ready_answer ready_http_answer(const void *buf, size_t n, uint64_t now_s, uint64_t *wait_ms)
{
	const unsigned char *p = buf, *v, *eol;
	unsigned code;
	size_t k;

	*wait_ms = 0;
	if (!p || n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
		return READY_ANSWERED;
	for (k = 9, code = 0; k < 12; k++) {
		if (p[k] < '0' || p[k] > '9')
			return READY_ANSWERED;
		code = code * 10 + (unsigned)(p[k] - '0');
	}
	if (code != 429 && code != 502 && code != 503 && code != 504)
		return READY_ANSWERED;
	v = http_header(p, n, "retry-after:");
	eol = v ? memchr(v, '\r', n - (size_t)(v - p)) : NULL;
	if (eol) {
		char value[64];

		while (*v == ' ' || *v == '\t')
			v++;
		k = (size_t)(eol - v) < sizeof(value) - 1 ? (size_t)(eol - v) : sizeof(value) - 1;
		memcpy(value, v, k);
		value[k] = 0;
		if (value[0] >= '0' && value[0] <= '9') {
			uint64_t secs = 0;

			for (k = 0; value[k] >= '0' && value[k] <= '9' && secs < 86400; k++)
				secs = secs * 10 + (uint64_t)(value[k] - '0');
			*wait_ms = (secs < 86400 ? secs : 86400) * 1000;
		} else {
			int64_t at = http_date(value);

			/* At most a day, as delay-seconds: a longer wait ends any budget. */
			if (at > 0 && (uint64_t)at > now_s)
				*wait_ms = ((uint64_t)at - now_s < 86400 ? (uint64_t)at - now_s
									 : 86400) *
					   1000;
		}
	}
	return READY_NOT;
}

bool ready_may_open_any(unsigned protocols, const unsigned char head[8], size_t n)
{
	return ((protocols & READY_POSTGRESQL) && ready_may_open(head, n)) ||
	       ((protocols & READY_MQTT) && ready_mqtt_may_open(head, n)) ||
	       ((protocols & READY_REDIS) && ready_resp_may_open(head, n)) ||
	       ((protocols & READY_HTTP) && ready_http_may_open(head, n));
}

enum ready_request ready_request(unsigned protocols, const void *buf, size_t n)
{
	if ((protocols & READY_POSTGRESQL) && ready_startup(buf, n))
		return READY_REQUEST_POSTGRESQL;
	if ((protocols & READY_MQTT) && ready_mqtt_connect(buf, n))
		return READY_REQUEST_MQTT;
	if ((protocols & READY_REDIS) && ready_resp_command(buf, n))
		return READY_REQUEST_REDIS;
	if ((protocols & READY_HTTP) && ready_http_request(buf, n))
		return READY_REQUEST_HTTP;
	return READY_REQUEST_NONE;
}

bool ready_request_without_effect(enum ready_request r)
{
	return r == READY_REQUEST_POSTGRESQL || r == READY_REQUEST_MQTT;
}

bool ready_says_full(enum ready_request r, const void *buf, size_t n, uint64_t wait_ms)
{
	const char *state;
	const unsigned char *p = buf;

	switch (r) {
	case READY_REQUEST_POSTGRESQL:
		state = ready_startup_refusal(buf, n);
		return state && strcmp(state, "53300") == 0;
	case READY_REQUEST_HTTP:
		return wait_ms == 0 && n >= 12 &&
		       (memcmp(p + 9, "503", 3) == 0 || memcmp(p + 9, "429", 3) == 0);
	default:
		return false;
	}
}
