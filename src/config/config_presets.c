/* The presets of BACKOFF_POLICY: documented algorithms, reproducible by name. */
#include "config/config.h"

#include <string.h>

#include "config/protocols.h"
#include "sys/startup.h"

#define SEC 1000ULL
#define MIN (60 * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

struct preset {
	char name[11]; /* in place: a pointer would be a relocation at load */
	struct policy policy;
	uint64_t retries;
	uint64_t timeout_ms;
	uint64_t attempt_timeout_ms;
	bool attempt_until_next; /* gRPC's rule: no sooner than the next planned attempt */
	bool http;		 /* its document asks to back off on HTTP 429 and 5xx answers too */
};

/*
 * Each row is a documented algorithm, reproducible by name.  The attempt
 * timeouts come from the field: 5 s is Envoy's default connect timeout and
 * HAProxy's advice (a SYN lost at 0, 1, 2 or 3 s is still answered in time);
 * 10 s is Istio's mesh-wide default, for cloud endpoints across a WAN; gRPC
 * waits at least 20 s (MIN_CONNECT_TIMEOUT), or until its next planned attempt.
 */
static const struct preset presets[] = {
	{ "default",
	  { 100, 10 * SEC, 2000, POLICY_JITTER_FULL, 200 },
	  CONFIG_INFINITE,
	  60 * SEC,
	  5 * SEC,
	  false,
	  false },
	/* Google Cloud: 2^n s + U(0, 1000 ms), 5 retries, about 32 s in all. */
	{ "google",
	  { 1 * SEC, 32 * SEC, 2000, POLICY_JITTER_ADDITIVE, 200 },
	  5,
	  60 * SEC,
	  10 * SEC,
	  false,
	  true },
	/* ClearBlade IoT: the same growth up to 64 s, then retrying at the cap. */
	{ "clearblade",
	  { 1 * SEC, 64 * SEC, 2000, POLICY_JITTER_ADDITIVE, 200 },
	  CONFIG_INFINITE,
	  10 * MIN,
	  10 * SEC,
	  false,
	  true },
	/* FreeRTOS backoffAlgorithm demos: full jitter, 500 ms base, 5 s cap, 5 attempts. */
	{ "aws",
	  { 500, 5 * SEC, 2000, POLICY_JITTER_FULL, 200 },
	  5,
	  60 * SEC,
	  5 * SEC,
	  false,
	  false },
	/* gRPC connection backoff: 1 s, x1.6, +-20 %, 120 s. */
	{ "grpc",
	  { 1 * SEC, 120 * SEC, 1600, POLICY_JITTER_PROPORTIONAL, 200 },
	  CONFIG_INFINITE,
	  60 * SEC,
	  20 * SEC,
	  true,
	  false },
	{ "none",
	  { 100, 10 * SEC, 1000, POLICY_JITTER_NONE, 200 },
	  CONFIG_INFINITE,
	  60 * SEC,
	  5 * SEC,
	  false,
	  false },
};

STARTUP_CODE const struct policy *config_preset_apply(struct config *cfg, const char *name)
{
	const struct preset *p;
	size_t i;

	/* NULL: the first, the default, without a comparison (no string code at load). */
	for (i = 0; name && i < N(presets) && strcmp(name, presets[i].name) != 0; i++)
		;
	if (i == N(presets))
		return NULL;
	p = &presets[i];
	cfg->policy_name = p->name;
	cfg->policy = p->policy;
	cfg->retries = p->retries;
	cfg->timeout_ms = p->timeout_ms;
	cfg->attempt_timeout_ms = p->attempt_timeout_ms;
	cfg->attempt_until_next = p->attempt_until_next;
	cfg->protocols = READY_PROTOCOLS_ALL | (p->http ? READY_HTTP : 0);
	return &p->policy;
}
