/* libFuzzer target: config_parse over any environment, with the invariants of struct config. */
#include "config/config.h"
#include "config/config_dests.h"
#include "engine/policy.h"
#include "fuzz.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NVARS 30 /* config_variables, without its empty name: checked at each input */
#define MAX_VALUE 70000

/*
 * The environment the input describes: records separated by '\n', each a
 * selector byte (variable = (byte - '<') % 30, so that '<' is BACKOFF; 29 is
 * a name the parser never asks for) and the value; a later record of a
 * variable wins.  As in a real environment a value ends at its first NUL byte.
 */
struct env {
	char *value[NVARS + 1];
	unsigned lookups;
};

static const char *lookup(const char *name, void *ctx)
{
	struct env *env = ctx;
	unsigned i;

	env->lookups++;
	for (i = 0; i < NVARS; i++)
		if (strcmp(name, config_variables[i]) == 0)
			return env->value[i];
	abort(); /* the parser asked for a name it does not document */
}

static void env_from(struct env *env, const uint8_t *data, size_t size)
{
	size_t start = 0, i;

	memset(env, 0, sizeof(*env));
	for (i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		if (i > start) {
			unsigned which = (unsigned)(uint8_t)(data[start] - '<') % (NVARS + 1);
			size_t n = i - start - 1;

			if (n > MAX_VALUE)
				n = MAX_VALUE;
			free(env->value[which]);
			env->value[which] = malloc(n + 1);
			REQUIRE(env->value[which] != NULL);
			memcpy(env->value[which], data + start + 1, n);
			env->value[which][n] = '\0';
		}
		start = i + 1;
	}
}

static void env_free(struct env *env)
{
	unsigned i;

	for (i = 0; i <= NVARS; i++)
		free(env->value[i]);
}

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static void check_problem(const struct config_problem *p, const struct env *env)
{
	char line[512], tiny[8];
	size_t n, i, which;

	REQUIRE(terminated(p->variable, sizeof(p->variable)));
	REQUIRE(terminated(p->value, sizeof(p->value)));
	REQUIRE(terminated(p->message, sizeof(p->message)));
	REQUIRE(p->message[0] != '\0');
	/* It names a variable that is set. */
	for (which = 0; which < NVARS && strcmp(config_variables[which], p->variable) != 0; which++)
		;
	REQUIRE(which < NVARS && env->value[which] != NULL);
	/* The excerpt is printable: no control byte or quote reaches a terminal or a log. */
	for (i = 0; p->value[i]; i++)
		REQUIRE(p->value[i] >= 0x20 && p->value[i] < 0x7f && p->value[i] != '"');
	n = config_problem_format(p, line, sizeof(line));
	REQUIRE(n < sizeof(line) && strlen(line) == n);
	n = config_problem_format(p, tiny, sizeof(tiny));
	REQUIRE(n < sizeof(tiny) && strlen(tiny) == n);
}

static void check_config(const struct config *cfg)
{
	static const char *const presets[] = { "default", "google", "clearblade",
					       "aws",	  "grpc",   "none" };
	const struct policy *p = &cfg->policy;
	uint64_t lo, hi, attempt;
	size_t i, off;

	for (i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (cfg->policy_name && strcmp(cfg->policy_name, presets[i]) == 0)
			break;
	REQUIRE(i < sizeof(presets) / sizeof(presets[0]));
	REQUIRE(p->base_ms >= 1 && p->base_ms <= p->cap_ms && p->cap_ms <= POLICY_MAX_DELAY_MS);
	REQUIRE(p->multiplier_milli >= 1000 && p->multiplier_milli <= POLICY_MAX_MULTIPLIER_MILLI);
	REQUIRE((unsigned)p->jitter <= POLICY_JITTER_PROPORTIONAL);
	REQUIRE(p->ratio_milli <= POLICY_MAX_RATIO_MILLI);
	REQUIRE(cfg->retries == CONFIG_INFINITE || cfg->retries <= CONFIG_MAX_RETRIES);
	REQUIRE(cfg->timeout_ms == CONFIG_INFINITE || cfg->timeout_ms <= POLICY_MAX_DELAY_MS);
	REQUIRE((unsigned)cfg->log_level <= LOG_LEVEL_DEBUG);
	REQUIRE((unsigned)cfg->early_close <= CONFIG_EARLY_ANSWER);
	REQUIRE(!cfg->has_log_file || terminated(cfg->log_file, sizeof(cfg->log_file)));
	REQUIRE(!cfg->has_shared_path || terminated(cfg->shared_path, sizeof(cfg->shared_path)));
	/* A list of base names, none empty: no name but one in the list is ever excluded. */
	REQUIRE(!cfg->programs || (cfg->programs[0] != '\0' && !strchr(cfg->programs, '/')));
	REQUIRE(!cfg->programs || config_program_served(cfg->programs, "/") ==
					  config_program_served(cfg->programs, "a/b"));
	REQUIRE(cfg->targets.count <= TARGET_PATTERNS_MAX);
	for (i = 0; i < cfg->targets.count; i++)
		REQUIRE(terminated(cfg->targets.pattern[i].glob,
				   sizeof(cfg->targets.pattern[i].glob)));
	/* Each name pattern is a name's worth of bytes, every one of them within the text. */
	for (i = 0, off = 0; i < cfg->names.count; i++) {
		size_t n = strnlen(cfg->names.text + off, sizeof(cfg->names.text) - off);

		REQUIRE(n >= 1 && n <= TARGET_NAME_MAX && off + n < sizeof(cfg->names.text));
		off += n + 1;
	}
	/* Whatever was accepted, the policy it makes stays within its bounds. */
	for (attempt = 1; attempt < 70; attempt += 23) {
		uint64_t d = policy_next_delay(p, attempt, p->base_ms, attempt << 40 ^ attempt);

		policy_bounds(p, attempt, p->base_ms, &lo, &hi);
		REQUIRE(lo <= d && d <= hi && hi <= p->cap_ms);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg, again;
	static struct config_problem room[CONFIG_PROBLEMS_MAX], room_again[CONFIG_PROBLEMS_MAX];
	static struct config_problems problems = { .item = room },
				      problems_again = { .item = room_again };
	static struct config_dest dests[CONFIG_DESTS_MAX];
	struct env env;
	unsigned i, j, set = 0;

	/* A variable added to the table and not here would never be fuzzed. */
	REQUIRE(config_variables[NVARS - 1][0] != '\0' && config_variables[NVARS][0] == '\0');
	env_from(&env, data, size);
	/* The entries' line below is written into problems alone: both start alike. */
	memset(room, 0, sizeof(room));
	memset(room_again, 0, sizeof(room_again));
	for (i = 0; i < NVARS; i++)
		set += env.value[i] != NULL;
	config_parse(lookup, &env, &cfg, &problems);
	/* Pure: the same environment gives the same configuration and messages. */
	config_parse(lookup, &env, &again, &problems_again);
	REQUIRE(memcmp(&cfg, &again, sizeof(cfg)) == 0);
	REQUIRE(problems.count == problems_again.count &&
		memcmp(room, room_again, sizeof(room)) == 0);
	/* BACKOFF_DESTINATIONS' entries: each a configuration within the same bounds. */
	config_dests_build(&cfg, dests, CONFIG_DESTS_MAX, &problems);
	REQUIRE(cfg.dest_count <= CONFIG_DESTS_MAX);
	REQUIRE(cfg.dest_count == 0 || cfg.dests_text != NULL);
	for (i = 0; i < cfg.dest_count; i++) {
		REQUIRE(cfg.dests[i].cfg.dest_count == 0);
		check_config(&cfg.dests[i].cfg);
	}
	REQUIRE(problems.count <= set);
	for (i = 0; i < problems.count; i++) {
		check_problem(&problems.item[i], &env);
		/* One line per variable, however many things are wrong with it. */
		for (j = 0; j < i; j++)
			REQUIRE(strcmp(problems.item[i].variable, problems.item[j].variable) != 0);
	}
	check_config(&cfg);
	env_free(&env);
	return 0;
}
