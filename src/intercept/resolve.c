/* Name lookups: temporary failures retried within the budget; getaddrinfo's lists remembered. */
#include <errno.h>
#include <netdb.h>

#include "core/addrlist.h"
#include "core/retry.h"
#include "init.h"
#include "sys/clock.h"
#include "sys/real.h"

/* One lookup, to be made again as it was; the fields its call takes. */
struct lookup {
	const char *name, *service;
	const struct addrinfo *hints;
	struct addrinfo **ai;
	int af;
	struct hostent *h, **res;
	char *buf;
	size_t len;
	int *herr;
	int rc;		       /* getaddrinfo, gethostbyname*_r: the last result */
	struct hostent *found; /* gethostbyname, gethostbyname2 */
};

static const char *gai_err_name(int err)
{
	return err == CONFIG_DNS_AGAIN ? "EAI_AGAIN" : "EAI_FAIL";
}

static const char *herr_name(int err)
{
	return err == CONFIG_DNS_AGAIN ? "TRY_AGAIN" : "NO_RECOVERY";
}

static enum config_dns_result gai_result(int rc)
{
	if (rc == 0)
		return CONFIG_DNS_OK;
	return rc == EAI_AGAIN ? CONFIG_DNS_AGAIN : CONFIG_DNS_FAILED;
}

static enum config_dns_result host_result(const struct hostent *found, int herr)
{
	if (found)
		return CONFIG_DNS_OK;
	return herr == TRY_AGAIN ? CONFIG_DNS_AGAIN : CONFIG_DNS_FAILED;
}

/* The _r forms: ERANGE asks the caller for a larger buffer, never for a retry. */
static enum config_dns_result host_r_result(int rc, const struct lookup *l)
{
	if (*l->res)
		return CONFIG_DNS_OK;
	return rc != ERANGE && *l->herr == TRY_AGAIN ? CONFIG_DNS_AGAIN : CONFIG_DNS_FAILED;
}

static int gai_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct lookup *l = ctx;

	l->rc = real_getaddrinfo(l->name, l->service, l->hints, l->ai);
	return (int)gai_result(l->rc);
}

static int byname_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct lookup *l = ctx;

	l->found = real_gethostbyname(l->name);
	return (int)host_result(l->found, h_errno);
}

static int byname2_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct lookup *l = ctx;

	l->found = real_gethostbyname2(l->name, l->af);
	return (int)host_result(l->found, h_errno);
}

static int byname_r_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct lookup *l = ctx;

	l->rc = real_gethostbyname_r(l->name, l->h, l->buf, l->len, l->res, l->herr);
	return (int)host_r_result(l->rc, l);
}

static int byname2_r_again(void *ctx, uint64_t deadline_ms)
{
	(void)deadline_ms; /* a lookup or a send has no attempt deadline */
	struct lookup *l = ctx;

	l->rc = real_gethostbyname2_r(l->name, l->af, l->h, l->buf, l->len, l->res, l->herr);
	return (int)host_r_result(l->rc, l);
}

/*
 * Whether a lookup whose first attempt failed temporarily is retried:
 * asked only after that failure, so a lookup that succeeds pays nothing.
 */
static bool lookup_retried(const struct config **cfg)
{
	*cfg = init_config_get();
	return (*cfg)->enabled && (*cfg)->dns;
}

/*
 * Retry @l with @again until it succeeds, fails otherwise, or the policy or
 * BACKOFF_TIMEOUT ends it; the result is left in @l.  errno and h_errno are
 * those of the last real attempt.
 */
static void lookup_retry(const struct config *cfg, const char *call, struct lookup *l,
			 int (*again)(void *, uint64_t), const char *(*err_name)(int))
{
	struct config_errset retryable;
	struct retry_call c = {
		.what = {
			.call = call,
			.name = l->name	     ? l->name
				: l->service ? l->service
					     : "?",
			.err_name = err_name,
		},
		.retryable = &retryable,
		.budget_ms = CONFIG_INFINITE,
		.attempt = again,
		.ctx = l,
	};

	config_dns_errors(&retryable);
	retry_blocking(cfg, &c, CONFIG_DNS_AGAIN);
}

/* Returns what the last real getaddrinfo returned; errno as it left it. */
EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res)
{
	struct lookup l = { .name = node, .service = service, .hints = hints, .ai = res };
	const struct config *cfg;

	l.rc = real_getaddrinfo(node, service, hints, res);
	if (__builtin_expect(l.rc == EAI_AGAIN, 0) && lookup_retried(&cfg))
		lookup_retry(cfg, "getaddrinfo", &l, gai_again, gai_err_name);
	if (l.rc == 0 && res && *res && (*res)->ai_next) {
		cfg = init_config_get();
		if (cfg->enabled)
			addrlist_remember(*res, clock_now_ms());
	}
	return l.rc;
}

/* Returns what the last real call returned; h_errno and errno as it left them. */
EXPORT struct hostent *gethostbyname(const char *name)
{
	struct lookup l = { .name = name };
	const struct config *cfg;

	l.found = real_gethostbyname(name);
	if (__builtin_expect(!l.found && h_errno == TRY_AGAIN, 0) && lookup_retried(&cfg))
		lookup_retry(cfg, "gethostbyname", &l, byname_again, herr_name);
	return l.found;
}

/* As gethostbyname. */
EXPORT struct hostent *gethostbyname2(const char *name, int af)
{
	struct lookup l = { .name = name, .af = af };
	const struct config *cfg;

	l.found = real_gethostbyname2(name, af);
	if (__builtin_expect(!l.found && h_errno == TRY_AGAIN, 0) && lookup_retried(&cfg))
		lookup_retry(cfg, "gethostbyname2", &l, byname2_again, herr_name);
	return l.found;
}

/* Returns what the last real call returned, with its *res and *herr; errno as it left it. */
EXPORT int gethostbyname_r(const char *name, struct hostent *h, char *buf, size_t len,
			   struct hostent **res, int *herr)
{
	struct lookup l = {
		.name = name, .h = h, .buf = buf, .len = len, .res = res, .herr = herr
	};
	const struct config *cfg;

	l.rc = real_gethostbyname_r(name, h, buf, len, res, herr);
	if (__builtin_expect(host_r_result(l.rc, &l) == CONFIG_DNS_AGAIN, 0) &&
	    lookup_retried(&cfg))
		lookup_retry(cfg, "gethostbyname_r", &l, byname_r_again, herr_name);
	return l.rc;
}

/* As gethostbyname_r. */
EXPORT int gethostbyname2_r(const char *name, int af, struct hostent *h, char *buf, size_t len,
			    struct hostent **res, int *herr)
{
	struct lookup l = {
		.name = name, .af = af, .h = h, .buf = buf, .len = len, .res = res, .herr = herr
	};
	const struct config *cfg;

	l.rc = real_gethostbyname2_r(name, af, h, buf, len, res, herr);
	if (__builtin_expect(host_r_result(l.rc, &l) == CONFIG_DNS_AGAIN, 0) &&
	    lookup_retried(&cfg))
		lookup_retry(cfg, "gethostbyname2_r", &l, byname2_r_again, herr_name);
	return l.rc;
}
