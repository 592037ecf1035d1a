/* backoff wait: each target probed through core's retry engine until it says it is ready. */
#include "tool/wait.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "drivers/before.h"
#include "config/config.h"
#include "engine/engine.h"
#include "counters/events.h"
#include "facts/record.h"
#include "engine/ready.h"
#include "drivers/retry.h"
#include "facts/share.h"
#include "supervise/launch.h"
#include "sys/clock.h"
#include "sys/errname.h"
#include "sys/log.h"
#include "sys/rng.h"
#include "sys/sock.h"

const char wait_usage_line[] = "usage: backoff [options] wait TARGET... [-- command [args...]] "
			       "(backoff wait --help for more)\n";

static const char *const help[] = {
	"usage: backoff [options] wait TARGET... [--timeout DUR] [-- command [args...]]\n",
	"\n",
	"Wait until each TARGET is ready, in turn, then exit 0, or exec the command\n",
	"given after \"--\" (its exit status then).  Each attempt connects, and for a\n",
	"protocol asks the server whether it accepts work; a failed connect or a \"not\n",
	"ready\" answer is retried on the library's schedule (--base, --cap, --jitter,\n",
	"--retries, --policy), shared with this user's other processes (--shared).\n",
	"--timeout (BACKOFF_TIMEOUT, default 60s) bounds the whole wait; then exit 1\n",
	"with one line naming the target and what it last saw.  A bad target: exit 2.\n",
	"\n",
	"Targets, and what ready means:\n",
	"  tcp://HOST:PORT          a connection\n",
	"  unix:/PATH               a connection to a unix stream socket\n",
	"  http://HOST[:PORT]/PATH  a GET answered below 500 (port 80)\n",
	"  postgres://HOST[:PORT]   a start-up answered other than SQLSTATE 57P03 \"not\n",
	"                           accepting connections\" (port 5432)\n",
	"  redis://HOST[:PORT]      a PING answered other than -LOADING, -BUSY,\n",
	"                           -MASTERDOWN, \"max number of clients\" (port 6379)\n",
	"  mysql://HOST[:PORT]      a greeting, not an error 1040 or 1053 (port 3306)\n",
	"HOST: a name (resolved; a temporary failure is retried), an address, [IPv6].\n",
	"A local server (loopback, unix) that answered \"not ready\" is asked again\n",
	"every 50 ms between the planned attempts (--local-probe off: not).\n",
	"Options are the launcher's (backoff --help), before or after the targets;\n",
	"the wait is quiet but for its last line unless --log or -v says otherwise.\n",
	"\n",
	"Examples:\n",
	"  backoff wait postgres://127.0.0.1:5432 redis://127.0.0.1 -- make test\n",
	"  backoff wait --timeout 2m http://localhost:8080/healthz\n",
	"  backoff -v --cap 1s wait unix:/run/app.sock tcp://[::1]:9000\n",
};

void wait_print_help(FILE *out)
{
	size_t i;

	for (i = 0; i < sizeof(help) / sizeof(help[0]); i++)
		fputs(help[i], out);
}

/*
 * The code an attempt returns for a server that answered, but not "ready": a
 * failed attempt of its destination, news to the others as EAGAIN is ("try
 * again").
 */
#define WAIT_NOT_READY EAGAIN

/*
 * How often a local server that answered "not ready" is asked again between
 * planned attempts: each ask is a connection, and for PostgreSQL a process
 * forked, so five looks for a listener's one (BACKOFF_LOCAL_PROBE's 10 ms).
 */
#define WAIT_LOOK_MS 50

#define WAIT_ADDRS_MAX 8

enum scheme { SCHEME_TCP, SCHEME_UNIX, SCHEME_HTTP, SCHEME_POSTGRES, SCHEME_REDIS, SCHEME_MYSQL };

static const struct {
	const char *prefix;
	enum scheme scheme;
	const char *default_port; /* NULL: the port must be given */
} schemes[] = {
	{ "tcp://", SCHEME_TCP, NULL },
	{ "http://", SCHEME_HTTP, "80" },
	{ "postgres://", SCHEME_POSTGRES, "5432" },
	{ "postgresql://", SCHEME_POSTGRES, "5432" },
	{ "redis://", SCHEME_REDIS, "6379" },
	{ "mysql://", SCHEME_MYSQL, "3306" },
};

/* One target: what was given, where it is, and what its last attempt saw. */
struct wait_target {
	const char *text; /* as given */
	enum scheme scheme;
	char host[256];	  /* without the brackets of an IPv6 address */
	char port[8];	  /* digits */
	const char *path; /* http: the request's path; unix: the socket's */
	struct sockaddr_storage addr[WAIT_ADDRS_MAX];
	socklen_t len[WAIT_ADDRS_MAX];
	size_t naddr;
	struct target_addr target; /* the first address: the log's, and its shared fate */
	const struct config *cfg;
	uint64_t end_ms;	   /* the whole wait's end (monotonic); CONFIG_INFINITE: none */
	bool answered;		   /* the last attempt met a server that answered, not ready */
	char last[160];		   /* what the last attempt saw, for the give-up line */
	bool said;		   /* w->last is a server's answer */
	const char *dns_name;	   /* the failure of the last lookup (gai_strerror) */
	int dns_rc;		   /* the last getaddrinfo's result */
	struct addrinfo *resolved; /* its list, while it is copied */
};

/* "backoff: wait: \"TEXT\": expected ..."; exit 2. */
static _Noreturn void bad_target(const char *text)
{
	fprintf(stderr,
		"backoff: wait: \"%s\": expected tcp://HOST:PORT, unix:/PATH, "
		"http://HOST:PORT/PATH, postgres://HOST:PORT, redis://HOST:PORT or "
		"mysql://HOST:PORT\n",
		text);
	exit(2);
}

/* Whether @s (@n bytes) is a port: 1 to 65535, digits only. */
static bool is_port(const char *s, size_t n)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

/* Read HOST[:PORT][/PATH] at @s into @w; exit 2 if it is none. */
static void parse_authority(struct wait_target *w, const char *s, const char *default_port)
{
	const char *end = s + strcspn(s, "/"), *host = s, *host_end, *colon;

	if (*s == '[') {
		host = s + 1;
		host_end = memchr(host, ']', (size_t)(end - host));
		if (!host_end)
			bad_target(w->text);
		colon = host_end + 1 < end ? host_end + 1 : NULL;
		if (colon && *colon != ':')
			bad_target(w->text);
	} else {
		colon = memchr(s, ':', (size_t)(end - s));
		host_end = colon ? colon : end;
	}
	if (host_end == host || (size_t)(host_end - host) >= sizeof(w->host))
		bad_target(w->text);
	memcpy(w->host, host, (size_t)(host_end - host));
	w->host[host_end - host] = '\0';
	if (colon) {
		if (!is_port(colon + 1, (size_t)(end - colon - 1)))
			bad_target(w->text);
		memcpy(w->port, colon + 1, (size_t)(end - colon - 1));
		w->port[end - colon - 1] = '\0';
	} else if (default_port) {
		snprintf(w->port, sizeof(w->port), "%s", default_port);
	} else {
		bad_target(w->text);
	}
	/* A path for HTTP only: a database name or a query is not a wait's to read. */
	if (w->scheme == SCHEME_HTTP ? strpbrk(end, " \r\n") != NULL
				     : *end && strcmp(end, "/") != 0)
		bad_target(w->text);
	w->path = *end ? end : "/";
}

/* Read the target @text into @w; exit 2 if it is none. */
static void parse_target(struct wait_target *w, const char *text)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	w->text = text;
	if (strncmp(text, "unix:", 5) == 0) {
		struct sockaddr_un *sun = (struct sockaddr_un *)&w->addr[0];
		const char *path = text + 5;

		/* unix:///path, as some tools write it, is unix:/path. */
		if (strncmp(path, "//", 2) == 0)
			path += 2;
		if (path[0] != '/' || strlen(path) >= sizeof(sun->sun_path))
			bad_target(text);
		w->scheme = SCHEME_UNIX;
		w->path = path;
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, path, strlen(path) + 1);
		w->len[0] = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
		w->naddr = 1;
		return;
	}
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i].prefix);

		if (strncmp(text, schemes[i].prefix, n) == 0) {
			w->scheme = schemes[i].scheme;
			parse_authority(w, text + n, schemes[i].default_port);
			return;
		}
	}
	bad_target(text);
}

/* Whether @w's readiness is more than a connection: a protocol's answer. */
static bool asks(const struct wait_target *w)
{
	return w->scheme != SCHEME_TCP && w->scheme != SCHEME_UNIX;
}

/* The monotonic ms @ms from now, no later than the wait's end. */
static uint64_t within_end(const struct wait_target *w, uint64_t ms)
{
	uint64_t now = clock_now_ms();
	uint64_t at = ms == CONFIG_INFINITE || ms > UINT64_MAX - now ? CONFIG_INFINITE : now + ms;

	return at < w->end_ms ? at : w->end_ms;
}

/* ---- the answers ---- */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * A PostgreSQL StartupMessage (protocol 3.0) for user "backoff-wait",
 * database "postgres", without an SSLRequest: its first answer says whether
 * the server accepts sessions.  Returns its length.
 */
static size_t pg_startup(unsigned char *buf)
{
	static const char params[] = "user\0backoff-wait\0database\0postgres\0";
	uint32_t n = (uint32_t)(8 + sizeof(params)), v = 0x00030000U;
	size_t i;

	for (i = 0; i < 4; i++) {
		buf[i] = (unsigned char)(n >> (24 - 8 * i));
		buf[4 + i] = (unsigned char)(v >> (24 - 8 * i));
	}
	memcpy(buf + 8, params, sizeof(params));
	return n;
}

/* Whether the @n bytes at @p hold a whole answer of @w's protocol, or one that tells. */
static bool answer_whole(const struct wait_target *w, const unsigned char *p, size_t n)
{
	const char *name;

	switch (w->scheme) {
	case SCHEME_POSTGRES:
		return n >= 5 && n >= (size_t)be32(p + 1) + 1;
	case SCHEME_MYSQL:
		return n > 0 && ready_greeting(p, n, READY_MYSQL, &name) != READY_UNDECIDED;
	default:
		return memmem(p, n, "\r\n", 2) != NULL;
	}
}

/* The first line of @p (@n bytes), printable, into @out. */
static void first_line(char *out, size_t size, const char *lead, const unsigned char *p, size_t n)
{
	size_t i, k = strlen(lead);

	snprintf(out, size, "%s", lead);
	for (i = 0; i < n && p[i] != '\r' && p[i] != '\n' && k + 1 < size; i++)
		out[k++] = (char)(p[i] >= 0x20 && p[i] < 0x7F ? p[i] : '?');
	out[k < size ? k : size - 1] = '\0';
}

/* PostgreSQL's ErrorResponse @p (@n bytes): "SQLSTATE C: M" into @out. */
static void pg_error(char *out, size_t size, const unsigned char *p, size_t n)
{
	const char *code = "?", *message = "";
	size_t at = 5, end = n < (size_t)be32(p + 1) + 1 ? n : (size_t)be32(p + 1) + 1;

	while (at < end && p[at] != 0) {
		const unsigned char *nul = memchr(p + at + 1, 0, end - at - 1);

		if (!nul)
			break;
		if (p[at] == 'C')
			code = (const char *)p + at + 1;
		else if (p[at] == 'M')
			message = (const char *)p + at + 1;
		at = (size_t)(nul - p) + 1;
	}
	snprintf(out, size, "SQLSTATE %s: %s", code, message);
}

/*
 * What the answer @p (@n bytes; 0: the server closed first) of @w's server
 * says: 0 ready, else WAIT_NOT_READY with what it said in w->last.  The
 * rules of engine/ready where they are written; HTTP's is backoff wait's own
 * (any status below 500).
 */
static int judge(struct wait_target *w, const unsigned char *p, size_t n, const void *sent,
		 uint32_t sent_len)
{
	const char *name = NULL;
	unsigned status = 0;

	if (n == 0) {
		w->said = false;
		snprintf(w->last, sizeof(w->last), "closed before an answer");
		return WAIT_NOT_READY;
	}
	switch (w->scheme) {
	case SCHEME_POSTGRES:
		if (ready_answer(p, n, sent, sent_len) != READY_NOT)
			return 0;
		pg_error(w->last, sizeof(w->last), p, n);
		return WAIT_NOT_READY;
	case SCHEME_REDIS:
		if (ready_resp_answer(p, n) != READY_NOT &&
		    ready_greeting(p, n, READY_REDIS, &name) != READY_REFUSAL)
			return 0;
		first_line(w->last, sizeof(w->last), "", p, n);
		return WAIT_NOT_READY;
	case SCHEME_MYSQL:
		if (ready_greeting(p, n, READY_MYSQL, &name) != READY_REFUSAL)
			return 0;
		snprintf(w->last, sizeof(w->last), "%s", name);
		return WAIT_NOT_READY;
	default:
		if (n >= 12 && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ' && p[9] >= '1' &&
		    p[9] <= '9' && p[10] >= '0' && p[10] <= '9' && p[11] >= '0' && p[11] <= '9')
			status = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 +
				 (unsigned)(p[11] - '0');
		if (status != 0 && status < 500)
			return 0;
		first_line(w->last, sizeof(w->last),
			   status ? "HTTP " : "not HTTP: ", status ? p + 9 : p, status ? n - 9 : n);
		return WAIT_NOT_READY;
	}
}

/* Send the @n bytes at @buf on @fd (blocking, a few bytes): 0, or the errno. */
static int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Ask the server on @fd, connected, whether it is ready: its request, then
 * its answer read until it tells, it closes, or @deadline_ms.  Returns 0
 * ready, else WAIT_NOT_READY (w->last says why).
 */
static int ask(struct wait_target *w, int fd, uint64_t deadline_ms)
{
	unsigned char req[512], buf[1024];
	size_t req_len = 0, n = 0;
	int err = 0;

	if (w->scheme == SCHEME_POSTGRES)
		req_len = pg_startup(req);
	else if (w->scheme == SCHEME_REDIS)
		req_len = (size_t)snprintf((char *)req, sizeof(req), "PING\r\n");
	else if (w->scheme == SCHEME_HTTP)
		req_len = (size_t)snprintf((char *)req, sizeof(req),
					   "GET %.300s HTTP/1.0\r\nHost: %s%s%s:%s\r\n"
					   "User-Agent: backoff-wait\r\n\r\n",
					   w->path, strchr(w->host, ':') ? "[" : "", w->host,
					   strchr(w->host, ':') ? "]" : "", w->port);
	if (req_len > sizeof(req))
		req_len = sizeof(req);
	if (req_len)
		err = send_all(fd, req, req_len);
	while (err == 0 && n < sizeof(buf) && !answer_whole(w, buf, n)) {
		uint64_t now = clock_now_ms();
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t k;
		int rc;

		if (now >= deadline_ms) {
			err = ETIMEDOUT;
			break;
		}
		rc = poll(&p, 1, deadline_ms == CONFIG_INFINITE ? -1 : (int)(deadline_ms - now));
		if (rc < 0 && errno != EINTR)
			err = errno;
		if (rc <= 0)
			continue;
		k = recv(fd, buf + n, sizeof(buf) - n, MSG_DONTWAIT);
		if (k == 0)
			break;
		if (k < 0 && errno != EINTR && errno != EAGAIN)
			err = errno;
		if (k > 0)
			n += (size_t)k;
	}
	/* A reset or a silence before anything came: no answer; after some, what came tells. */
	if (err != 0 && n == 0) {
		/*
		 * The wait's end cut it (the last attempt, made at the budget's
		 * end): no answer, so the last one the server gave stands.
		 */
		if (err == ETIMEDOUT && w->said && deadline_ms >= w->end_ms)
			return WAIT_NOT_READY;
		w->said = false;
		if (err == ETIMEDOUT)
			snprintf(w->last, sizeof(w->last), "no answer in time");
		else
			snprintf(w->last, sizeof(w->last), "%s before an answer",
				 errname(err) ? errname(err) : "an error");
		return WAIT_NOT_READY;
	}
	w->said = true;
	return judge(w, buf, n, req, (uint32_t)req_len);
}

/*
 * One attempt at @w: connect to each of its addresses in turn until one
 * connects, ended at @deadline_ms if still unanswered; then, for a
 * protocol, ask (one attempt's time for the answer, BACKOFF_ATTEMPT_TIMEOUT).
 * Returns 0 ready, WAIT_NOT_READY, or the last connect's errno.
 */
static int attempt(void *ctx, uint64_t deadline_ms)
{
	struct wait_target *w = ctx;
	int err = ECONNREFUSED;
	size_t i;

	w->answered = false;
	for (i = 0; i < w->naddr; i++) {
		int fd = socket(w->addr[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return errno;
		err = sock_connect_until(fd, (const struct sockaddr *)&w->addr[i], w->len[i],
					 deadline_ms, SOCK_TIMEO_NONE, NULL);
		if (err == 0 && asks(w)) {
			err = ask(w, fd, within_end(w, w->cfg->attempt_timeout_ms));
			w->answered = err != 0;
		}
		close(fd);
		if (err == 0 || err == WAIT_NOT_READY)
			break;
	}
	if (err != 0 && err != WAIT_NOT_READY) {
		w->said = false;
		snprintf(w->last, sizeof(w->last), "connect: %s",
			 errname(err) ? errname(err) : strerror(err));
	}
	if (err == WAIT_NOT_READY && log_enabled(LOG_LEVEL_INFO)) {
		char line[256];

		snprintf(line, sizeof(line), "wait %s: not ready (%s)", w->text, w->last);
		log_notice(LOG_LEVEL_INFO, "not-ready", line);
	}
	return err;
}

/* Between planned attempts, a local server that answered "not ready" is asked again. */
static bool look(void *ctx, uint64_t deadline_ms, int *err)
{
	struct wait_target *w = ctx;

	if (!w->answered)
		return false; /* refused or missing: the shared fate's look for a listener serves */
	*err = attempt(w, deadline_ms);
	return *err == 0;
}

/* ---- the lookup ---- */

static const char *gai_name(int err)
{
	return err == CONFIG_DNS_AGAIN ? "EAI_AGAIN" : "EAI_FAIL";
}

static int lookup(void *ctx, uint64_t deadline_ms)
{
	struct wait_target *w = ctx;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };

	(void)deadline_ms; /* getaddrinfo has no deadline of its own */
	/* An address needs no name service (which a static program loads from libc's build). */
	hints.ai_flags = AI_NUMERICHOST;
	w->dns_rc = getaddrinfo(w->host, w->port, &hints, &w->resolved);
	hints.ai_flags = 0;
	if (w->dns_rc == EAI_NONAME)
		w->dns_rc = getaddrinfo(w->host, w->port, &hints, &w->resolved);
	if (w->dns_rc == 0)
		return CONFIG_DNS_OK;
	return w->dns_rc == EAI_AGAIN ? CONFIG_DNS_AGAIN : CONFIG_DNS_FAILED;
}

/*
 * Resolve w->host, a temporary failure retried as the library retries a
 * program's lookup, within the wait's budget.  Returns whether it has
 * addresses (else w->last says why).
 */
static bool resolve(const struct config *cfg, struct wait_target *w)
{
	struct config_errset retryable;
	struct retry_call c = {
		.what = { .call = "getaddrinfo", .name = w->host, .err_name = gai_name },
		.retryable = &retryable,
		.budget_ms =
			w->end_ms == CONFIG_INFINITE ? CONFIG_INFINITE : w->end_ms - clock_now_ms(),
		.attempt = lookup,
		.ctx = w,
	};
	struct addrinfo *ai;
	int err = lookup(w, CONFIG_INFINITE);

	if (err == CONFIG_DNS_AGAIN && cfg->enabled && cfg->dns) {
		/* No name: a name missing from the resolver fails the wait at once. */
		config_dns_errors(cfg, NULL, &retryable);
		err = retry_blocking(cfg, &c, err);
	}
	if (err != CONFIG_DNS_OK) {
		snprintf(w->last, sizeof(w->last), "cannot resolve %.100s: %s", w->host,
			 gai_strerror(w->dns_rc));
		return false;
	}
	for (ai = w->resolved; ai && w->naddr < WAIT_ADDRS_MAX; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(w->addr[0]))
			continue;
		memcpy(&w->addr[w->naddr], ai->ai_addr, ai->ai_addrlen);
		w->len[w->naddr++] = ai->ai_addrlen;
	}
	freeaddrinfo(w->resolved);
	w->resolved = NULL;
	return w->naddr > 0;
}

/* ---- the wait ---- */

/*
 * Wait for @w, as core's blocking engine retries a connect: the first
 * attempt bounded as a program's, then the policy's delays, the budget left
 * of the whole wait, the destination's shared fate (a waiter of its slot; a
 * local one's prober looks for its listener) and, for a local server that
 * answers "not ready", a look every WAIT_LOOK_MS.  Returns 0 ready, else
 * the errno of the last attempt.
 */
static int wait_one(const struct config *cfg, struct wait_target *w)
{
	struct config_errset retryable;
	struct fate fate;
	uint64_t started = clock_now_ms(), bound;
	struct retry_call c = {
		.what = { .call = "wait", .target = &w->target },
		.retryable = &retryable,
		.attempt = attempt,
		.ctx = w,
	};
	int err;

	if (w->scheme != SCHEME_UNIX && !resolve(cfg, w))
		return EHOSTUNREACH;
	if (!target_from_sockaddr((const struct sockaddr *)&w->addr[0], w->len[0], &w->target))
		return EAFNOSUPPORT;
	bound = before_bound_ms(cfg, &w->target);
	err = attempt(w, within_end(w, bound));
	if (err == 0 || !cfg->enabled)
		return err;
	retryable = *config_retryable(cfg, w->target.family);
	retryable.bits[WAIT_NOT_READY / 64] |= 1ULL << (WAIT_NOT_READY % 64);
	if (asks(w) && cfg->local_probe_ms && target_is_local(&w->target)) {
		c.look = look;
		c.look_ms = WAIT_LOOK_MS;
	}
	c.started_ms = started;
	c.budget_ms = w->end_ms == CONFIG_INFINITE ? CONFIG_INFINITE
		      : w->end_ms > clock_now_ms() ? w->end_ms - clock_now_ms()
						   : 0;
	fate_join(&fate, cfg, &w->target, SOCK_STREAM, clock_now_ns(),
		  engine_finding_fresh_ns(cfg, false));
	if (fate.slot)
		c.fate = &fate;
	return retry_blocking(cfg, &c, err);
}

/* @ms as a duration: 250ms, 2s, 1.5s. */
static void format_ms(char *out, size_t size, uint64_t ms)
{
	uint64_t tenths = (ms + 50) / 100;

	if (ms < 1000)
		snprintf(out, size, "%llums", (unsigned long long)ms);
	else if (tenths % 10 == 0)
		snprintf(out, size, "%llus", (unsigned long long)(tenths / 10));
	else
		snprintf(out, size, "%llu.%llus", (unsigned long long)(tenths / 10),
			 (unsigned long long)(tenths % 10));
}

int wait_run(char *const *targets, size_t n, char **command)
{
	struct wait_target *w = calloc(n ? n : 1, sizeof(*w));
	struct config cfg;
	bool failed = false;
	uint64_t start;
	size_t i;

	if (!w) {
		fprintf(stderr, "backoff: wait: %s\n", strerror(errno));
		return 2;
	}
	for (i = 0; i < n; i++)
		parse_target(&w[i], targets[i]);
	launch_validate(&cfg);
	/* Quiet but for its own last line, unless the log level was asked for. */
	if (!getenv("BACKOFF_LOG"))
		log_configure(LOG_LEVEL_ERROR, cfg.log_json, config_log_file(&cfg));
	rng_configure(cfg.seeded, cfg.seed);
	share_init(&cfg);
	start = clock_now_ms();
	for (i = 0; i < n && !failed; i++) {
		w[i].cfg = &cfg;
		/* BACKOFF_TIMEOUT=0: no retry, but the one attempt keeps its own bounds. */
		w[i].end_ms = cfg.timeout_ms == CONFIG_INFINITE || cfg.timeout_ms == 0
				      ? CONFIG_INFINITE
				      : start + cfg.timeout_ms;
		failed = wait_one(&cfg, &w[i]) != 0;
	}
	if (failed) {
		char took[32];

		uint64_t spent = clock_now_ms() - start;

		/* At its timeout, the timeout as given; else (BACKOFF_RETRIES) the time it took. */
		format_ms(took, sizeof(took),
			  cfg.timeout_ms != 0 && spent >= cfg.timeout_ms ? cfg.timeout_ms : spent);
		fprintf(stderr, "backoff: wait: %s: not ready after %s (%s)\n", w[i - 1].text, took,
			w[i - 1].last);
	}
	if (cfg.stats) {
		struct log_stats s;

		events_stats_read(&s);
		if (s.calls > 0)
			log_stats(&s);
	}
	free(w);
	if (failed)
		return 1;
	if (!command || !command[0])
		return 0;
	execvp(command[0], command);
	fprintf(stderr, "backoff: %s: %s\n", command[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
