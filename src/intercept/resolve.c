/*
 * Name lookups: temporary failures retried within the budget, and names that BACKOFF_NAMES
 * expects not yet known; getaddrinfo's lists remembered.
 */
#include <errno.h>
#include <netdb.h>

#include "facts/addrlist.h"
#include "drivers/call.h"
#include "init.h"
#include "sys/clock.h"
#include "sys/compat.h"
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
	switch (err) {
	case CONFIG_DNS_AGAIN:
		return "EAI_AGAIN";
	case CONFIG_DNS_NONAME:
		return "EAI_NONAME";
	case CONFIG_DNS_NODATA:
		return "EAI_NODATA";
	default:
		return "EAI_FAIL";
	}
}

static const char *herr_name(int err)
{
	switch (err) {
	case CONFIG_DNS_AGAIN:
		return "TRY_AGAIN";
	case CONFIG_DNS_NONAME:
		return "HOST_NOT_FOUND";
	case CONFIG_DNS_NODATA:
		return "NO_DATA";
	default:
		return "NO_RECOVERY";
	}
}

static enum config_dns_result gai_result(int rc)
{
	switch (rc) {
	case 0:
		return CONFIG_DNS_OK;
	case EAI_AGAIN:
		return CONFIG_DNS_AGAIN;
	case EAI_NONAME:
		return CONFIG_DNS_NONAME;
	default:
		return rc == COMPAT_EAI_NODATA ? CONFIG_DNS_NODATA : CONFIG_DNS_FAILED;
	}
}

/* What h_errno, or the _r forms' *herr, says of a failed lookup. */
static enum config_dns_result herr_result(int herr)
{
	switch (herr) {
	case TRY_AGAIN:
		return CONFIG_DNS_AGAIN;
	case HOST_NOT_FOUND:
		return CONFIG_DNS_NONAME;
	case NO_DATA:
		return CONFIG_DNS_NODATA;
	default:
		return CONFIG_DNS_FAILED;
	}
}

static enum config_dns_result host_result(const struct hostent *found, int herr)
{
	return found ? CONFIG_DNS_OK : herr_result(herr);
}

/* The _r forms: ERANGE asks the caller for a larger buffer, never for a retry. */
static enum config_dns_result host_r_result(int rc, const struct lookup *l)
{
	if (*l->res)
		return CONFIG_DNS_OK;
	return rc == ERANGE ? CONFIG_DNS_FAILED : herr_result(*l->herr);
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
 * A lookup of @name (NULL: none) by @call failed with @first: retried with
 * @again until it succeeds, fails otherwise, or the policy or BACKOFF_TIMEOUT
 * ends it, when BACKOFF_DNS and BACKOFF_NAMES let that failure be retried;
 * the result is left in @l.  Called only after a failure, so a lookup that
 * succeeds pays nothing.  errno and h_errno are those of the last real
 * attempt.
 */
static void lookup_failed(const char *name, enum config_dns_result first, const char *call,
			  struct lookup *l, int (*again)(void *, uint64_t),
			  const char *(*err_name)(int))
{
	struct call_lookup op = {
		.call = call,
		.name = name,
		.shown = l->name      ? l->name
			 : l->service ? l->service
				      : "?",
		.err_name = err_name,
	};

	call_lookup_failed(init_config_get(), &op, first, again, l);
}

/* Returns what the last real getaddrinfo returned; errno as it left it. */
EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res)
{
	struct lookup l = { .name = node, .service = service, .hints = hints, .ai = res };
	/* A numeric host is never added to the resolver later: no name to match. */
	const char *name = hints && (hints->ai_flags & AI_NUMERICHOST) ? NULL : node;

	l.rc = real_getaddrinfo(node, service, hints, res);
	if (__builtin_expect(l.rc != 0, 0))
		lookup_failed(name, gai_result(l.rc), "getaddrinfo", &l, gai_again, gai_err_name);
	if (l.rc == 0 && res && *res && (*res)->ai_next && init_config_get()->enabled)
		addrlist_remember(*res, clock_now_ms());
	return l.rc;
}

/* Returns what the last real call returned; h_errno and errno as it left them. */
EXPORT struct hostent *gethostbyname(const char *name)
{
	struct lookup l = { .name = name };

	l.found = real_gethostbyname(name);
	if (__builtin_expect(!l.found, 0))
		lookup_failed(name, herr_result(h_errno), "gethostbyname", &l, byname_again,
			      herr_name);
	return l.found;
}

/* As gethostbyname. */
EXPORT struct hostent *gethostbyname2(const char *name, int af)
{
	struct lookup l = { .name = name, .af = af };

	l.found = real_gethostbyname2(name, af);
	if (__builtin_expect(!l.found, 0))
		lookup_failed(name, herr_result(h_errno), "gethostbyname2", &l, byname2_again,
			      herr_name);
	return l.found;
}

/* Returns what the last real call returned, with its *res and *herr; errno as it left it. */
EXPORT int gethostbyname_r(const char *name, struct hostent *h, char *buf, size_t len,
			   struct hostent **res, int *herr)
{
	struct lookup l = {
		.name = name, .h = h, .buf = buf, .len = len, .res = res, .herr = herr
	};

	l.rc = real_gethostbyname_r(name, h, buf, len, res, herr);
	if (__builtin_expect(!*res, 0))
		lookup_failed(name, host_r_result(l.rc, &l), "gethostbyname_r", &l, byname_r_again,
			      herr_name);
	return l.rc;
}

/* As gethostbyname_r. */
EXPORT int gethostbyname2_r(const char *name, int af, struct hostent *h, char *buf, size_t len,
			    struct hostent **res, int *herr)
{
	struct lookup l = {
		.name = name, .af = af, .h = h, .buf = buf, .len = len, .res = res, .herr = herr
	};

	l.rc = real_gethostbyname2_r(name, af, h, buf, len, res, herr);
	if (__builtin_expect(!*res, 0))
		lookup_failed(name, host_r_result(l.rc, &l), "gethostbyname2_r", &l,
			      byname2_r_again, herr_name);
	return l.rc;
}
