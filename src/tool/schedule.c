/* backoff-schedule: validate BACKOFF_* and print the delays they plan, attempt by attempt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/policy.h"
#include "sys/log.h"
#include "sys/rng.h"

#ifndef BACKOFF_VERSION
#define BACKOFF_VERSION "0.0.0"
#endif

#define DEFAULT_ROWS 20

static const char usage[] =
	"usage: backoff-schedule [--check] [--attempts N] [--version]\n"
	"Validates the BACKOFF_* variables of the environment with libbackoff's parser and,\n"
	"unless --check, prints the planned delay of each retry (BACKOFF_SEED honoured).\n";

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
	struct config_problems problems;
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
	print_header(&cfg);
	print_schedule(&cfg, rows);
	return 0;
}
