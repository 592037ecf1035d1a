/* backoff-schedule: validate BACKOFF_* and print the delays they plan, attempt by attempt. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_dests.h"
#include "engine/policy.h"
#include "sys/log.h"
#include "sys/rng.h"

#ifndef BACKOFF_VERSION
#define BACKOFF_VERSION "0.0.0"
#endif

#define DEFAULT_ROWS 20

static const char usage[] =
	"usage: backoff-schedule [--check] [--attempts N] [--for ADDRESS] [--version]\n"
	"Validates the BACKOFF_* variables of the environment with libbackoff's parser and,\n"
	"unless --check, prints the planned delay of each retry (BACKOFF_SEED honoured);\n"
	"--for: under the policy that BACKOFF_DESTINATIONS gives ADDRESS (127.0.0.1:5432,\n"
	"[::1]:443, unix:/run/app.sock).\n";

/* @text as a destination: IPv4:PORT, [IPv6]:PORT or unix:PATH.  Whether it is one. */
static bool parse_address(const char *text, struct target_addr *t)
{
	struct sockaddr_storage ss;
	const char *colon = strrchr(text, ':');
	char host[INET6_ADDRSTRLEN + 2];
	unsigned long port;
	char *end;
	size_t n;

	memset(&ss, 0, sizeof(ss));
	if (strncmp(text, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		n = strlen(text + 5);
		if (n == 0 || n >= sizeof(un->sun_path))
			return false;
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, text + 5, n + 1);
		return target_from_sockaddr((struct sockaddr *)un, (socklen_t)sizeof(*un), t);
	}
	if (!colon || colon == text || (size_t)(colon - text) >= sizeof(host))
		return false;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || port > 65535)
		return false;
	n = (size_t)(colon - text);
	memcpy(host, text, n);
	host[n] = '\0';
	if (host[0] == '[' && host[n - 1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		host[n - 1] = '\0';
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1 &&
		       target_from_sockaddr((struct sockaddr *)in6, (socklen_t)sizeof(*in6), t);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		return inet_pton(AF_INET, host, &in->sin_addr) == 1 &&
		       target_from_sockaddr((struct sockaddr *)in, (socklen_t)sizeof(*in), t);
	}
}

static void print_duration(const char *label, uint64_t ms)
{
	if (ms == CONFIG_INFINITE)
		printf(" %s=inf", label);
	else
		printf(" %s=%llums", label, (unsigned long long)ms);
}

static void print_header(const struct config *cfg)
{
	const struct policy *p = &cfg->policy;

	printf("# policy=%s jitter=%s", cfg->policy_name, policy_jitter_name(p->jitter));
	if (p->jitter == POLICY_JITTER_PROPORTIONAL)
		printf(":%u.%03u", p->ratio_milli / 1000, p->ratio_milli % 1000);
	print_duration("base", p->base_ms);
	printf(" multiplier=%u.%03u", p->multiplier_milli / 1000, p->multiplier_milli % 1000);
	print_duration("cap", p->cap_ms);
	if (cfg->retries == CONFIG_INFINITE)
		printf(" retries=inf");
	else
		printf(" retries=%llu", (unsigned long long)cfg->retries);
	print_duration("timeout", cfg->timeout_ms);
	if (cfg->seeded)
		printf(" seed=%llu", (unsigned long long)cfg->seed);
	else
		printf(" seed=random");
	printf("\n# retry delay_ms min_ms max_ms cumulative_ms worst_cumulative_ms\n");
}

static uint64_t add_within(uint64_t sum, uint64_t delay, uint64_t limit)
{
	return delay < limit - sum ? sum + delay : limit;
}

/* The same draws, in the same order, as every call retried by a process with the same seed. */
static void print_schedule(const struct config *cfg, uint64_t rows)
{
	uint64_t attempt, prev = cfg->policy.base_ms, sum = 0, worst = 0;
	uint64_t limit = cfg->timeout_ms;

	for (attempt = 1; attempt <= rows; attempt++) {
		uint64_t lo, hi, delay;

		if (cfg->retries != CONFIG_INFINITE && attempt > cfg->retries)
			return;
		if (sum >= limit) {
			return;
		}
		policy_bounds(&cfg->policy, attempt, prev, &lo, &hi);
		delay = policy_next_delay(&cfg->policy, attempt, prev, rng_next());
		prev = delay;
		sum = add_within(sum, delay, limit);
		worst = add_within(worst, hi, limit);
		printf("%llu %llu %llu %llu %llu %llu\n", (unsigned long long)attempt,
		       (unsigned long long)delay, (unsigned long long)lo, (unsigned long long)hi,
		       (unsigned long long)sum, (unsigned long long)worst);
	}
	if (cfg->retries == CONFIG_INFINITE || cfg->retries > rows)
		printf("# stopped after %llu rows (--attempts N for more)\n",
		       (unsigned long long)rows);
}

int main(int argc, char **argv)
{
	static struct config_dest dests[CONFIG_DESTS_MAX]; /* served by cfg */
	struct config cfg;
	const struct config *use = &cfg;
	CONFIG_PROBLEMS_ROOM(problems);
	const char *dest_for = NULL;
	struct target_addr target;
	uint64_t rows = DEFAULT_ROWS;
	int check = 0, i;
	unsigned p;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--check") == 0) {
			check = 1;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("libbackoff %s\n", BACKOFF_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--attempts") == 0 && i + 1 < argc) {
			char *end;

			rows = strtoull(argv[++i], &end, 10);
			if (*argv[i] == '\0' || *argv[i] == '-' || *end != '\0' || rows == 0 ||
			    rows > CONFIG_MAX_RETRIES) {
				fprintf(stderr,
					"backoff-schedule: --attempts \"%s\": expected a count "
					"from 1 to 1000000\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--for") == 0 && i + 1 < argc) {
			dest_for = argv[++i];
			if (!parse_address(dest_for, &target)) {
				fprintf(stderr,
					"backoff-schedule: --for \"%s\": expected an address such "
					"as "
					"127.0.0.1:5432, [::1]:443 or unix:/run/app.sock\n",
					dest_for);
				return 2;
			}
		} else {
			fprintf(stderr, "backoff-schedule: unknown argument \"%s\"\n%s", argv[i],
				usage);
			return 2;
		}
	}
	config_parse(config_getenv, NULL, &cfg, &problems);
	config_dests_build(&cfg, dests, CONFIG_DESTS_MAX, &problems);
	for (p = 0; p < problems.count; p++) {
		char line[512];

		config_problem_format(&problems.item[p], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
	if (problems.count > 0)
		return 2;
	/*
	 * Unknown names, said once for the launched tree: under --check (the
	 * launcher's) here, and the launcher marks the environment so that no
	 * preloaded process of the tree says them again.
	 */
	log_configure(cfg.log_level, cfg.log_json, config_log_file(&cfg));
	if (config_unknown_scan(environ, config_say_unknown, NULL) > 0 && cfg.strict)
		return 2;
	if (check)
		return 0;
	rng_configure(cfg.seeded, cfg.seed);
	if (dest_for) {
		unsigned k = config_entry_of(&cfg, &target);

		use = config_for(&cfg, &target);
		if (k == 0)
			printf("# for=%s: no entry of BACKOFF_DESTINATIONS, the global policy\n",
			       dest_for);
		else
			printf("# for=%s: entry %u of BACKOFF_DESTINATIONS\n", dest_for, k);
	}
	print_header(use);
	print_schedule(use, rows);
	return 0;
}
