/* Unit tests of config/config: every variable, presets, units, cross-checks, messages. */
#include "config/config.h"
#include "config/config_dests.h"
#include "engine/engine.h"
#include "engine/policy.h"
#include "engine/ready.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "unit.h"

/* BACKOFF_DESTINATIONS' entries of the last parse. */
static struct config_dest dests[CONFIG_DESTS_MAX];

static unsigned parse(struct config *cfg, const char *const *env)
{
	CONFIG_PROBLEMS_ROOM(problems);

	config_parse(unit_env, (void *)env, cfg, &problems);
	config_dests_build(cfg, dests, CONFIG_DESTS_MAX, &problems);
	engine_derive(cfg);
	return problems.count;
}

/* No lookup at all (nothing set, nothing to look up): the same as an empty environment. */
static void test_no_lookup(void)
{
	static struct config with, without;
	const char *env[] = { NULL };
	CONFIG_PROBLEMS_ROOM(problems);

	memset(&with, 0xa5, sizeof(with));
	memset(&without, 0xa5, sizeof(without));
	config_parse(unit_env, (void *)env, &with, &problems);
	config_parse(NULL, NULL, &without, &problems);
	CHECK_U64(problems.count, 0);
	CHECK(memcmp(&with, &without, sizeof(with)) == 0);
}

static void test_defaults(void)
{
	const char *env[] = { NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, env), 0);
	CHECK(cfg.enabled && cfg.nonblock && cfg.send && cfg.dns && cfg.shared);
	CHECK_STR(cfg.policy_name, "default");
	CHECK_U64(cfg.policy.base_ms, 100);
	CHECK_U64(cfg.policy.cap_ms, 10000);
	CHECK_U64(cfg.policy.multiplier_milli, 2000);
	CHECK(cfg.policy.jitter == POLICY_JITTER_FULL);
	CHECK_U64(cfg.retries, CONFIG_INFINITE);
	CHECK_U64(cfg.timeout_ms, 60000);
	CHECK(cfg.log_level == LOG_LEVEL_WARN && !cfg.log_json && config_log_file(&cfg)[0] == '\0');
	CHECK(!cfg.seeded && !cfg.stats && !cfg.strict);
	CHECK_U64(cfg.names.count, 0);
	CHECK(config_errset_has(&cfg.errors_inet, ECONNREFUSED));
	CHECK(config_errset_has(&cfg.errors_inet, ETIMEDOUT));
	CHECK(config_errset_has(&cfg.errors_inet, ENETUNREACH));
	CHECK(config_errset_has(&cfg.errors_inet, EHOSTUNREACH));
	CHECK(!config_errset_has(&cfg.errors_inet, ENOENT));
	CHECK(config_errset_has(&cfg.errors_unix, ENOENT));
	CHECK(config_errset_has(&cfg.errors_unix, EAGAIN));
	CHECK(config_errset_has(&cfg.errors_unix, ECONNREFUSED));
	CHECK(!config_errset_has(&cfg.errors_unix, ETIMEDOUT));
	CHECK(!config_errset_has(&cfg.errors_unix, 0));
	CHECK(!config_errset_has(&cfg.errors_unix, -1));
	CHECK(!config_errset_has(&cfg.errors_unix, 100000));
}

/* The large fields are not even terminated when unset: the flags say so. */
static void test_unset_paths_are_not_written(void)
{
	const char *env[] = { NULL };
	static struct config cfg;

	memset(&cfg, 'x', sizeof(cfg));
	CHECK_U64(parse(&cfg, env), 0);
	CHECK(cfg.shared_path[0] == 'x' && cfg.log_file[0] == 'x');
	CHECK(cfg.targets.count == 0 && cfg.targets.pattern[0].glob[0] == 'x');
	CHECK_STR(config_shared_path(&cfg), "");
	CHECK_STR(config_log_file(&cfg), "");
}

static void test_durations(void)
{
	struct {
		const char *value;
		uint64_t ms;
	} good[] = { { "250ms", 250 }, { "2s", 2000 },	 { "1m", 60000 },    { "1h", 3600000 },
		     { "750ms", 750 }, { "1.5s", 1500 }, { "0.25m", 15000 }, { "24h", 86400000 } };
	const char *bad[] = { "",
			      "750", /* a bare number: which unit? */
			      "1.5",
			      "10x",
			      "-5",
			      "s",
			      "1.5ms",
			      "1.",
			      ".5s",
			      "25h",
			      "0",
			      "1 s",
			      "99999999999999999999999",
			      "2S",
			      "1.0001s" };
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char var[64];
		const char *env[] = { var, "BACKOFF_CAP=24h", NULL };
		struct config cfg;

		snprintf(var, sizeof(var), "BACKOFF_BASE=%s", good[i].value);
		CHECK_U64(parse(&cfg, env), 0);
		CHECK_U64(cfg.policy.base_ms, good[i].ms);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char var[64];
		const char *env[] = { var, NULL };
		struct config cfg;

		snprintf(var, sizeof(var), "BACKOFF_BASE=%s", bad[i]);
		CHECK_U64(parse(&cfg, env), 1);
		CHECK_U64(cfg.policy.base_ms, 100);
	}
}

static void test_timeout_and_retries(void)
{
	const char *inf[] = { "BACKOFF_TIMEOUT=inf", "BACKOFF_RETRIES=INF", NULL };
	const char *zero[] = { "BACKOFF_TIMEOUT=0", "BACKOFF_RETRIES=0", NULL };
	const char *big[] = { "BACKOFF_RETRIES=1000001", NULL };
	const char *max[] = { "BACKOFF_RETRIES=1000000", NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, inf), 0);
	CHECK_U64(cfg.timeout_ms, CONFIG_INFINITE);
	CHECK_U64(cfg.retries, CONFIG_INFINITE);
	CHECK_U64(parse(&cfg, zero), 0);
	CHECK_U64(cfg.timeout_ms, 0);
	CHECK_U64(cfg.retries, 0);
	CHECK_U64(parse(&cfg, big), 1);
	CHECK_U64(cfg.retries, CONFIG_INFINITE);
	CHECK_U64(parse(&cfg, max), 0);
	CHECK_U64(cfg.retries, 1000000);
}

static void test_attempt_timeout(void)
{
	const char *none[] = { NULL };
	const char *set[] = { "BACKOFF_ATTEMPT_TIMEOUT=1200ms", NULL };
	const char *short_budget[] = { "BACKOFF_TIMEOUT=3s", NULL };
	const char *no_budget[] = { "BACKOFF_TIMEOUT=0", NULL };
	const char *inf[] = { "BACKOFF_ATTEMPT_TIMEOUT=inf", "BACKOFF_TIMEOUT=inf", NULL };
	const char *grpc[] = { "BACKOFF_POLICY=grpc", NULL };
	/* gRPC's rule: no sooner than the next planned attempt, here 30 s away. */
	const char *grpc_slow[] = { "BACKOFF_POLICY=grpc", "BACKOFF_BASE=30s", NULL };
	const char *google[] = { "BACKOFF_POLICY=google", NULL };
	const char *off[] = { "BACKOFF=off", NULL };
	const char *bad[] = { "BACKOFF_ATTEMPT_TIMEOUT=0", NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, none), 0);
	CHECK_U64(cfg.attempt_timeout_ms, 5000);
	CHECK_U64(cfg.first_attempt_ms, 5000);
	CHECK_U64(parse(&cfg, set), 0);
	CHECK_U64(cfg.first_attempt_ms, 1200);
	/* The budget bounds the call, its first attempt included. */
	CHECK_U64(parse(&cfg, short_budget), 0);
	CHECK_U64(cfg.first_attempt_ms, 3000);
	CHECK_U64(parse(&cfg, no_budget), 0);
	CHECK_U64(cfg.first_attempt_ms, 5000);
	CHECK_U64(parse(&cfg, inf), 0);
	CHECK_U64(cfg.first_attempt_ms, CONFIG_INFINITE);
	CHECK_U64(parse(&cfg, grpc), 0);
	CHECK_U64(cfg.attempt_timeout_ms, 20000);
	CHECK(cfg.attempt_until_next);
	CHECK_U64(cfg.first_attempt_ms, 20000);
	CHECK_U64(parse(&cfg, grpc_slow), 0);
	CHECK_U64(cfg.first_attempt_ms, 30000);
	CHECK_U64(parse(&cfg, google), 0);
	CHECK_U64(cfg.attempt_timeout_ms, 10000);
	CHECK_U64(parse(&cfg, off), 0);
	CHECK_U64(cfg.first_attempt_ms, CONFIG_INFINITE);
	CHECK_U64(parse(&cfg, bad), 1);
	CHECK_U64(cfg.attempt_timeout_ms, 5000);
}

static void test_multiplier_and_jitter(void)
{
	const char *ok[] = { "BACKOFF_MULTIPLIER=1.6", "BACKOFF_JITTER=proportional:0.5", NULL };
	const char *plain[] = { "BACKOFF_JITTER=proportional", NULL };
	const char *bad_m[] = { "BACKOFF_MULTIPLIER=0.5", NULL };
	const char *bad_m2[] = { "BACKOFF_MULTIPLIER=11", NULL };
	const char *bad_m3[] = { "BACKOFF_MULTIPLIER=1.0005", NULL };
	const char *bad_j[] = { "BACKOFF_JITTER=proportional:1.5", NULL };
	const char *bad_j2[] = { "BACKOFF_JITTER=Full", NULL };
	const char *names[] = { "none", "full", "equal", "decorrelated", "additive" };
	struct config cfg;
	size_t i;

	CHECK_U64(parse(&cfg, ok), 0);
	CHECK_U64(cfg.policy.multiplier_milli, 1600);
	CHECK(cfg.policy.jitter == POLICY_JITTER_PROPORTIONAL);
	CHECK_U64(cfg.policy.ratio_milli, 500);
	CHECK_U64(parse(&cfg, plain), 0);
	CHECK_U64(cfg.policy.ratio_milli, 200);
	CHECK_U64(parse(&cfg, bad_m), 1);
	CHECK_U64(cfg.policy.multiplier_milli, 2000);
	CHECK_U64(parse(&cfg, bad_m2), 1);
	CHECK_U64(parse(&cfg, bad_m3), 1);
	CHECK_U64(parse(&cfg, bad_j), 1);
	CHECK(cfg.policy.jitter == POLICY_JITTER_FULL);
	CHECK_U64(parse(&cfg, bad_j2), 1);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char var[64];
		const char *env[] = { var, NULL };

		snprintf(var, sizeof(var), "BACKOFF_JITTER=%s", names[i]);
		CHECK_U64(parse(&cfg, env), 0);
		CHECK_STR(policy_jitter_name(cfg.policy.jitter), names[i]);
	}
}

static void test_presets(void)
{
	const char *google[] = { "BACKOFF_POLICY=google", NULL };
	const char *grpc[] = { "BACKOFF_POLICY=grpc", "BACKOFF_CAP=30s", NULL };
	const char *none[] = { "BACKOFF_POLICY=none", NULL };
	const char *bad[] = { "BACKOFF_POLICY=fast", NULL };
	const char *presets[] = { "default", "google", "clearblade", "aws", "grpc", "none" };
	struct config cfg;
	size_t i;

	CHECK_U64(parse(&cfg, google), 0);
	CHECK(cfg.policy.jitter == POLICY_JITTER_ADDITIVE);
	CHECK_U64(cfg.policy.base_ms, 1000);
	CHECK_U64(cfg.retries, 5);
	/* Explicit variables override the preset's fields, the rest stay. */
	CHECK_U64(parse(&cfg, grpc), 0);
	CHECK_U64(cfg.policy.cap_ms, 30000);
	CHECK_U64(cfg.policy.multiplier_milli, 1600);
	CHECK_U64(cfg.policy.ratio_milli, 200);
	CHECK_U64(parse(&cfg, none), 0);
	CHECK(cfg.policy.jitter == POLICY_JITTER_NONE && cfg.policy.multiplier_milli == 1000);
	CHECK_U64(parse(&cfg, bad), 1);
	CHECK_STR(cfg.policy_name, "default");
	for (i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		char var[64];
		const char *env[] = { var, NULL };

		snprintf(var, sizeof(var), "BACKOFF_POLICY=%s", presets[i]);
		CHECK_U64(parse(&cfg, env), 0);
		CHECK_STR(cfg.policy_name, presets[i]);
		CHECK(cfg.policy.base_ms <= cfg.policy.cap_ms);
	}
}

static void test_cap_below_base(void)
{
	const char *cap[] = { "BACKOFF_BASE=2s", "BACKOFF_CAP=1s", NULL };
	const char *base[] = { "BACKOFF_BASE=20s", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;

	config_parse(unit_env, (void *)cap, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].variable, "BACKOFF_CAP");
	CHECK_STR(problems.item[0].message, "must not be below BACKOFF_BASE (2000ms)");
	CHECK_U64(cfg.policy.base_ms, 2000);
	CHECK_U64(cfg.policy.cap_ms, 10000);
	config_parse(unit_env, (void *)base, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].variable, "BACKOFF_BASE");
	CHECK_U64(cfg.policy.base_ms, 100);
}

/* Each variable gets one line, however many things are wrong with it (found by fuzzing). */
static void test_cap_rejected_with_base_above_default_cap(void)
{
	const char *empty_cap[] = { "BACKOFF_BASE=21953ms", "BACKOFF_CAP=", NULL };
	const char *bad_cap[] = { "BACKOFF_BASE=20s", "BACKOFF_CAP=10x", NULL };
	const char *both_taken[] = { "BACKOFF_BASE=20s", "BACKOFF_CAP=15s", NULL };
	const char *google_low_cap[] = { "BACKOFF_POLICY=google", "BACKOFF_BASE=x",
					 "BACKOFF_CAP=500ms", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;

	config_parse(unit_env, (void *)empty_cap, &cfg, &problems);
	CHECK_U64(problems.count, 2);
	CHECK_STR(problems.item[0].variable, "BACKOFF_CAP");
	CHECK_STR(problems.item[1].variable, "BACKOFF_BASE");
	CHECK_STR(problems.item[1].message, "must not be above BACKOFF_CAP (10000ms)");
	CHECK_U64(cfg.policy.base_ms, 100);
	CHECK_U64(cfg.policy.cap_ms, 10000);
	config_parse(unit_env, (void *)bad_cap, &cfg, &problems);
	CHECK_U64(problems.count, 2);
	CHECK_STR(problems.item[0].variable, "BACKOFF_CAP");
	CHECK_STR(problems.item[1].variable, "BACKOFF_BASE");
	/* A cap that was taken is the one at fault; the base then cannot stay above the default. */
	config_parse(unit_env, (void *)both_taken, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].variable, "BACKOFF_CAP");
	CHECK_U64(cfg.policy.cap_ms, 10000);
	CHECK_U64(cfg.policy.base_ms, 100);
	/* A rejected base keeps the preset's 1 s, above the cap that was taken. */
	config_parse(unit_env, (void *)google_low_cap, &cfg, &problems);
	CHECK_U64(problems.count, 2);
	CHECK_STR(problems.item[0].variable, "BACKOFF_BASE");
	CHECK_STR(problems.item[1].variable, "BACKOFF_CAP");
	CHECK_U64(cfg.policy.base_ms, 1000);
	CHECK_U64(cfg.policy.cap_ms, 32000);
}

static void test_errors(void)
{
	const char *list[] = { "BACKOFF_ERRORS=ECONNREFUSED", NULL };
	const char *edits[] = { "BACKOFF_ERRORS=+EADDRNOTAVAIL, -ETIMEDOUT", NULL };
	const char *mixed[] = { "BACKOFF_ERRORS=ECONNREFUSED,+ENOENT", NULL };
	const char *unknown[] = { "BACKOFF_ERRORS=ECONNREFUSEDX", NULL };
	const char *never[] = { "BACKOFF_ERRORS=+EINTR", NULL };
	const char *remove_never[] = { "BACKOFF_ERRORS=-EINTR", NULL };
	const char *empty_item[] = { "BACKOFF_ERRORS=ECONNREFUSED,,ENOENT", NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, list), 0);
	CHECK(config_errset_has(&cfg.errors_inet, ECONNREFUSED));
	CHECK(!config_errset_has(&cfg.errors_inet, ETIMEDOUT));
	CHECK(config_errset_has(&cfg.errors_unix, ECONNREFUSED));
	CHECK(!config_errset_has(&cfg.errors_unix, ENOENT));
	CHECK_U64(parse(&cfg, edits), 0);
	CHECK(config_errset_has(&cfg.errors_inet, EADDRNOTAVAIL));
	CHECK(!config_errset_has(&cfg.errors_inet, ETIMEDOUT));
	CHECK(config_errset_has(&cfg.errors_inet, ECONNREFUSED));
	CHECK(config_errset_has(&cfg.errors_unix, ENOENT));
	CHECK_U64(parse(&cfg, mixed), 1);
	CHECK(config_errset_has(&cfg.errors_inet, ETIMEDOUT));
	CHECK_U64(parse(&cfg, unknown), 1);
	CHECK_U64(parse(&cfg, never), 1);
	CHECK(!config_errset_has(&cfg.errors_inet, EINTR));
	CHECK_U64(parse(&cfg, remove_never), 0);
	CHECK_U64(parse(&cfg, empty_item), 1);
}

/* BACKOFF_PROTOCOLS: a list, or edits of the default (every protocol), as BACKOFF_ERRORS. */
static void test_protocols(void)
{
	const char *none[] = { NULL };
	const char *list[] = { "BACKOFF_PROTOCOLS=redis, mysql", NULL };
	const char *edits[] = { "BACKOFF_PROTOCOLS=-smtp,-ftp", NULL };
	const char *back[] = { "BACKOFF_PROTOCOLS=-redis,+redis", NULL };
	const char *mixed[] = { "BACKOFF_PROTOCOLS=redis,-smtp", NULL };
	const char *unknown[] = { "BACKOFF_PROTOCOLS=+gopher", NULL };
	const char *http[] = { "BACKOFF_PROTOCOLS=+http", NULL };
	const char *google[] = { "BACKOFF_POLICY=google", NULL };
	const char *google_off[] = { "BACKOFF_POLICY=clearblade", "BACKOFF_PROTOCOLS=-http", NULL };
	const char *prefix[] = { "BACKOFF_PROTOCOLS=red", NULL };
	const char *off[] = { "BACKOFF_PROTOCOLS=none", NULL };
	const char *off_edit[] = { "BACKOFF_PROTOCOLS=-none", NULL };
	const char *four[] = { "BACKOFF_PROTOCOLS=nats", NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, none), 0);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL);
	CHECK_U64(parse(&cfg, list), 0);
	CHECK_U64(cfg.protocols, READY_REDIS | READY_MYSQL);
	CHECK_U64(parse(&cfg, edits), 0);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL & ~(unsigned)(READY_SMTP | READY_FTP));
	CHECK_U64(parse(&cfg, back), 0);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL);
	CHECK_U64(parse(&cfg, mixed), 1);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL);
	CHECK_U64(parse(&cfg, unknown), 1);
	CHECK_U64(parse(&cfg, prefix), 1);
	CHECK_U64(parse(&cfg, off), 0);
	CHECK_U64(cfg.protocols, 0);
	CHECK_U64(parse(&cfg, off_edit), 1);
	CHECK_U64(parse(&cfg, four), 0);
	CHECK_U64(cfg.protocols, READY_NATS);
	/* HTTP is off by default; on with +http, and in the presets whose documents ask for it. */
	CHECK_U64(parse(&cfg, http), 0);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL | READY_HTTP);
	CHECK_U64(parse(&cfg, google), 0);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL | READY_HTTP);
	CHECK_U64(parse(&cfg, google_off), 0);
	CHECK_U64(cfg.protocols, READY_PROTOCOLS_ALL);
}

static void test_booleans_levels_and_seed(void)
{
	const char *on[] = { "BACKOFF=No",
			     "BACKOFF_STATS=TRUE",
			     "BACKOFF_STRICT=1",
			     "BACKOFF_NONBLOCK=off",
			     "BACKOFF_REPLAY=on",
			     "BACKOFF_SEND=0",
			     "BACKOFF_DNS=false",
			     "BACKOFF_SHARED=no",
			     "BACKOFF_LOG=debug",
			     "BACKOFF_LOG_FORMAT=json",
			     "BACKOFF_LOG_FILE=/tmp/x.log",
			     "BACKOFF_SEED=18446744073709551",
			     NULL };
	const char *bad[] = { "BACKOFF=maybe",
			      "BACKOFF_LOG=loud",
			      "BACKOFF_LOG_FORMAT=xml",
			      "BACKOFF_LOG_FILE=",
			      "BACKOFF_SEED=-1",
			      "BACKOFF_STATS=",
			      NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, on), 0);
	CHECK(!cfg.enabled && cfg.stats && cfg.strict && !cfg.nonblock && !cfg.send && !cfg.dns &&
	      !cfg.shared && cfg.replay);
	CHECK(cfg.log_level == LOG_LEVEL_DEBUG && cfg.log_json);
	CHECK_STR(config_log_file(&cfg), "/tmp/x.log");
	CHECK(cfg.seeded);
	CHECK_U64(cfg.seed, 18446744073709551ULL);
	CHECK_U64(parse(&cfg, bad), 6);
	CHECK(cfg.enabled && cfg.log_level == LOG_LEVEL_WARN && !cfg.log_json && !cfg.seeded);
}

/* BACKOFF_EARLY_CLOSE: each value, the default, and a case that is no value. */
/* BACKOFF_RUN: a name, hashed to a run that is never 0; a space, a control byte or 129 bytes are
 * not. */
static void test_run(void)
{
	char long_name[160], long_env[180];
	const char *job1[] = { "BACKOFF_RUN=job-1", NULL }, *job2[] = { "BACKOFF_RUN=job-2", NULL },
		   *none[] = { NULL }, *empty[] = { "BACKOFF_RUN=", NULL },
		   *space[] = { "BACKOFF_RUN=a b", NULL }, *high[] = { "BACKOFF_RUN=\x80", NULL },
		   *longest[] = { long_env, NULL };
	struct config cfg;
	uint64_t one;

	CHECK_U64(parse(&cfg, job1), 0);
	one = cfg.run_id;
	CHECK(one != 0);
	CHECK_U64(parse(&cfg, job1), 0);
	CHECK_U64(cfg.run_id, one);
	CHECK_U64(parse(&cfg, job2), 0);
	CHECK(cfg.run_id != one && cfg.run_id != 0);
	CHECK_U64(parse(&cfg, none), 0);
	CHECK_U64(cfg.run_id, 0);
	CHECK_U64(parse(&cfg, empty), 1);
	CHECK_U64(parse(&cfg, space), 1);
	CHECK_U64(parse(&cfg, high), 1);
	CHECK_U64(cfg.run_id, 0);
	memset(long_name, 'r', 128);
	long_name[128] = '\0';
	snprintf(long_env, sizeof(long_env), "BACKOFF_RUN=%s", long_name);
	CHECK_U64(parse(&cfg, longest), 0);
	long_name[128] = 'r';
	long_name[129] = '\0';
	snprintf(long_env, sizeof(long_env), "BACKOFF_RUN=%s", long_name);
	CHECK_U64(parse(&cfg, longest), 1);
}

/* A bare number is a duration in no unit: refused with one line that says so, 0 aside. */
static void test_bare_durations(void)
{
	const char *thirty[] = { "BACKOFF_TIMEOUT=30", NULL },
		   *zero[] = { "BACKOFF_TIMEOUT=0", NULL }, *base[] = { "BACKOFF_BASE=250", NULL },
		   *word[] = { "BACKOFF_CAP=ten", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;

	config_parse(unit_env, (void *)thirty, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].message,
		  "a duration needs its unit, such as 30s, 250ms or 2m (0 alone needs none)");
	CHECK_U64(cfg.timeout_ms, 60000);
	config_parse(unit_env, (void *)zero, &cfg, &problems);
	CHECK_U64(problems.count, 0);
	CHECK_U64(cfg.timeout_ms, 0);
	config_parse(unit_env, (void *)base, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_U64(cfg.policy.base_ms, 100);
	config_parse(unit_env, (void *)word, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].message,
		  "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m");
}

static void test_early_close(void)
{
	const char *unset[] = { NULL }, *refusal[] = { "BACKOFF_EARLY_CLOSE=refusal", NULL },
		   *answer[] = { "BACKOFF_EARLY_CLOSE=answer", NULL },
		   *autos[] = { "BACKOFF_EARLY_CLOSE=auto", NULL },
		   *upper[] = { "BACKOFF_EARLY_CLOSE=Refusal", NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, unset), 0);
	CHECK(cfg.early_close == CONFIG_EARLY_AUTO);
	CHECK_U64(parse(&cfg, refusal), 0);
	CHECK(cfg.early_close == CONFIG_EARLY_REFUSAL);
	CHECK_U64(parse(&cfg, answer), 0);
	CHECK(cfg.early_close == CONFIG_EARLY_ANSWER);
	CHECK_U64(parse(&cfg, autos), 0);
	CHECK(cfg.early_close == CONFIG_EARLY_AUTO);
	CHECK_U64(parse(&cfg, upper), 1);
	CHECK(cfg.early_close == CONFIG_EARLY_AUTO);
}

static void test_problem_messages(void)
{
	char huge[10240 + 32], line[512];
	const char *env[] = { "BACKOFF_CAP=10x", huge, "BACKOFF_TARGETS=localhost:*", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;

	memcpy(huge, "BACKOFF_SEED=", 13);
	memset(huge + 13, '9', 10240);
	huge[13 + 10240] = '\0';
	config_parse(unit_env, (void *)env, &cfg, &problems);
	CHECK_U64(problems.count, 3);
	config_problem_format(&problems.item[0], line, sizeof(line));
	CHECK_STR(line, "backoff: BACKOFF_CAP=\"10x\": expected a duration from 1ms to 24h, such "
			"as 250ms, 2s, 1m");
	config_problem_format(&problems.item[2], line, sizeof(line));
	CHECK(strstr(line, "BACKOFF_SEED=\"999") && strstr(line, "...\"") && strlen(line) < 300);
	config_problem_format(&problems.item[1], line, sizeof(line));
	CHECK(strstr(line, "BACKOFF_TARGETS=\"localhost:*\": names are not resolved") != NULL);
}

static void test_binary_bytes_are_escaped(void)
{
	const char *env[] = { "BACKOFF_LOG=\x01\x1b[31m\"\xff", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;

	config_parse(unit_env, (void *)env, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].value, "\\x01\\x1b[31m\\x22\\xff");
}

/* Each variable's rejections, one per way a value can be wrong. */
static void test_every_rejection(void)
{
	static const char *const bad[] = {
		"BACKOFF_MULTIPLIER=2x",
		"BACKOFF_RETRIES=5x",
		"BACKOFF_TIMEOUT=10x",
		"BACKOFF_NONBLOCK=maybe",
		"BACKOFF_REPLAY=maybe",
		"BACKOFF_SEND=maybe",
		"BACKOFF_DNS=maybe",
		"BACKOFF_SHARED=maybe",
		"BACKOFF_SEED=42x",
		"BACKOFF_STRICT=maybe",
		"BACKOFF_ENGINE=ptrace",
		"BACKOFF_JITTER=proportional:0.5x",
		"BACKOFF_JITTER=proportional:1.5",
	};
	char long_path[PATH_MAX + 32];
	const char *too_long[] = { long_path, NULL };
	struct config cfg;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *env[] = { bad[i], NULL };

		CHECK_U64(parse(&cfg, env), 1);
	}
	CHECK(cfg.nonblock && cfg.send && cfg.dns && !cfg.strict && !cfg.seeded && !cfg.replay);
	memcpy(long_path, "BACKOFF_LOG_FILE=/", 18);
	memset(long_path + 18, 'a', PATH_MAX);
	long_path[18 + PATH_MAX] = '\0';
	CHECK_U64(parse(&cfg, too_long), 1);
	CHECK_STR(config_log_file(&cfg), "");
}

static void test_shared_and_local_probe(void)
{
	const char *path[] = { "BACKOFF_SHARED=/run/group/state", "BACKOFF_LOCAL_PROBE=25ms",
			       NULL };
	const char *off[] = { "BACKOFF_SHARED=off", "BACKOFF_LOCAL_PROBE=off", NULL };
	const char *on[] = { "BACKOFF_SHARED=on", "BACKOFF_LOCAL_PROBE=on", NULL };
	const char *bad[] = { "BACKOFF_SHARED=state", "BACKOFF_LOCAL_PROBE=2s", NULL };
	const char *zero[] = { "BACKOFF_LOCAL_PROBE=0ms", NULL };
	char long_path[PATH_MAX + 32];
	const char *too_long[] = { long_path, NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, path), 0);
	CHECK(cfg.shared);
	CHECK_STR(config_shared_path(&cfg), "/run/group/state");
	CHECK_U64(cfg.local_probe_ms, 25);
	CHECK_U64(parse(&cfg, off), 0);
	CHECK(!cfg.shared);
	CHECK_STR(config_shared_path(&cfg), "");
	CHECK_U64(cfg.local_probe_ms, 0);
	CHECK_U64(parse(&cfg, on), 0);
	CHECK(cfg.shared);
	CHECK_U64(cfg.local_probe_ms, CONFIG_LOCAL_PROBE_MS);
	CHECK_U64(parse(&cfg, bad), 2);
	CHECK(cfg.shared);
	CHECK_STR(config_shared_path(&cfg), "");
	CHECK_U64(cfg.local_probe_ms, CONFIG_LOCAL_PROBE_MS);
	CHECK_U64(parse(&cfg, zero), 1);
	memcpy(long_path, "BACKOFF_SHARED=/", 16);
	memset(long_path + 16, 'a', PATH_MAX);
	long_path[16 + PATH_MAX] = '\0';
	CHECK_U64(parse(&cfg, too_long), 1);
	CHECK_STR(config_shared_path(&cfg), "");
}

/*
 * Each variable, set alone to a value it rejects, gives one line with the
 * message that says what it takes; every variable has a row here.
 */
static void test_each_variable_says_what_it_takes(void)
{
	static const struct {
		const char *name, *value, *message;
	} rows[] = {
		{ "BACKOFF", "maybe", "expected on or off (also 1/0, yes/no, true/false)" },
		{ "BACKOFF_POLICY", "fast",
		  "expected default, google, clearblade, aws, grpc or none" },
		{ "BACKOFF_BASE", "1x",
		  "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m" },
		{ "BACKOFF_MULTIPLIER", "0.5", "expected a decimal from 1 to 10 such as 2 or 1.6" },
		{ "BACKOFF_CAP", "0",
		  "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m" },
		{ "BACKOFF_JITTER", "half",
		  "expected none, full, equal, decorrelated, additive or proportional[:R] with R "
		  "from "
		  "0 to 1" },
		{ "BACKOFF_RETRIES", "-1", "expected a count from 0 to 1000000, or inf" },
		{ "BACKOFF_TIMEOUT", "25h",
		  "expected a duration up to 24h such as 30s, 2m, or inf" },
		{ "BACKOFF_ATTEMPT_TIMEOUT", "0",
		  "expected a duration from 1ms to 24h such as 5s, or inf" },
		{ "BACKOFF_ERRORS", "ENOPE",
		  "expected errno names such as ECONNREFUSED, ETIMEDOUT, ENOENT, as a list or as "
		  "+NAME/-NAME edits" },
		{ "BACKOFF_TARGETS", "localhost:80",
		  "names are not resolved: give addresses such as 127.0.0.1:5432 or [::1]:*" },
		{ "BACKOFF_DESTINATIONS", "*:443 timeout=2",
		  "entry 1: timeout=2: a duration needs its unit, such as 30s, 250ms or 2m (0 "
		  "alone "
		  "needs none)" },
		{ "BACKOFF_NONBLOCK", "maybe", "expected on or off" },
		{ "BACKOFF_SEND", "maybe", "expected on or off" },
		{ "BACKOFF_DNS", "maybe", "expected on or off" },
		{ "BACKOFF_NAMES", "db:5432",
		  "\"db:5432\" is not a name pattern: expected host names with * wildcards, such "
		  "as "
		  "db, *.svc.cluster.local, postgres-*" },
		{ "BACKOFF_LOG", "trace", "expected off, error, warn, info or debug" },
		{ "BACKOFF_LOG_FILE", "", "expected a file path" },
		{ "BACKOFF_LOG_FORMAT", "xml", "expected text or json" },
		{ "BACKOFF_SEED", "-1", "expected an unsigned integer" },
		{ "BACKOFF_STATS", "maybe", "expected on or off" },
		{ "BACKOFF_STRICT", "maybe", "expected on or off" },
		{ "BACKOFF_SHARED", "maybe",
		  "expected on, off or the absolute path of a state file" },
		{ "BACKOFF_ENGINE", "ptrace", "expected auto, preload or supervise" },
		{ "BACKOFF_LOCAL_PROBE", "2s",
		  "expected off or a duration from 1ms to 1s such as 10ms" },
		{ "BACKOFF_REPLAY", "maybe", "expected on or off" },
		{ "BACKOFF_EARLY_CLOSE", "sometimes", "expected auto, refusal or answer" },
		{ "BACKOFF_RUN", "a b",
		  "expected a name of 1 to 128 printable characters, no spaces" },
		{ "BACKOFF_PROTOCOLS", "gopher",
		  "expected protocol names (postgresql, mysql, redis, memcached, nats, smtp, ftp, "
		  "mqtt, http), as a list or as +NAME/-NAME edits, or none" },
		{ "BACKOFF_PROGRAMS", "bin/curl",
		  "expected program names such as python3,curl, ! excluding one: !pip" },
	};
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;
	size_t i, j;

	for (i = 0; config_variables[i][0]; i++) {
		for (j = 0; j < sizeof(rows) / sizeof(rows[0]); j++)
			if (strcmp(rows[j].name, config_variables[i]) == 0)
				break;
		CHECK(j < sizeof(rows) / sizeof(rows[0]));
	}
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char entry[128];
		const char *env[] = { entry, NULL };

		snprintf(entry, sizeof(entry), "%s=%s", rows[i].name, rows[i].value);
		config_parse(unit_env, (void *)env, &cfg, &problems);
		config_dests_build(&cfg, dests, CONFIG_DESTS_MAX, &problems);
		CHECK_U64(problems.count, 1);
		CHECK_STR(problems.item[0].variable, rows[i].name);
		CHECK_STR(problems.item[0].value, rows[i].value);
		CHECK_STR(problems.item[0].message, rows[i].message);
	}
}

static void test_spellings_accepted(void)
{
	const char *env[] = { "BACKOFF_RETRIES=Infinity",
			      "BACKOFF_ERRORS= ECONNREFUSED , ENOENT ",
			      "BACKOFF_TARGETS=127.0.0.1:5432, !unix:/run/*.sock",
			      "BACKOFF_STRICT=off",
			      "BACKOFF_ENGINE=supervise",
			      "BACKOFF_NAMES= DB , *.svc.cluster.local.",
			      NULL };
	struct config cfg;

	CHECK_U64(parse(&cfg, env), 0);
	CHECK_U64(cfg.names.count, 2);
	CHECK(memcmp(cfg.names.text, "db\0*.svc.cluster.local\0", 24) == 0);
	CHECK_U64(cfg.engine, CONFIG_ENGINE_SUPERVISE);
	CHECK_U64(cfg.retries, CONFIG_INFINITE);
	CHECK(config_errset_has(&cfg.errors_inet, ENOENT));
	CHECK(!config_errset_has(&cfg.errors_inet, ETIMEDOUT));
	CHECK_U64(cfg.targets.count, 2);
	CHECK(cfg.targets.has_include && cfg.targets.pattern[1].exclude);
}

/* Quotes and backslashes are escaped too, so the excerpt reads back as one quoted string. */
static void test_excerpt_escapes_quotes_and_backslashes(void)
{
	const char *env[] = { "BACKOFF_LOG=a\\b\"c", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;

	config_parse(unit_env, (void *)env, &cfg, &problems);
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].value, "a\\x5cb\\x22c");
}

/* A line cut to the buffer is still terminated; its length is what was written. */
static void test_problem_format_truncates(void)
{
	const char *env[] = { "BACKOFF_CAP=10x", NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg;
	char small[16];

	config_parse(unit_env, (void *)env, &cfg, &problems);
	CHECK_U64(config_problem_format(&problems.item[0], small, sizeof(small)), 15);
	CHECK_STR(small, "backoff: BACKOF");
}

/* secure_getenv under AT_SECURE (setuid, setgid, capabilities): nothing is set. */
static const char *secure_lookup(const char *name, void *ctx)
{
	(void)name;
	(void)ctx;
	return NULL;
}

/*
 * In secure execution src/init.c looks variables up with secure_getenv,
 * which answers NULL for every name: the configuration is then the
 * defaults, with no log file, whatever the environment holds.  That rests
 * on config_parse reading nothing but its lookup, checked here with every
 * variable set in the real environment.
 */
static void test_secure_execution_honours_no_variable(void)
{
	const char *empty[] = { NULL };
	CONFIG_PROBLEMS_ROOM(problems);
	struct config cfg, defaults;
	size_t i;

	for (i = 0; config_variables[i][0]; i++)
		setenv(config_variables[i], "bogus", 1);
	setenv("BACKOFF", "off", 1);
	setenv("BACKOFF_LOG_FILE", "/tmp/backoff-secure.log", 1);
	setenv("BACKOFF_RETRIES", "0", 1);
	/* config_parse leaves the bytes past a string's end or the patterns' count as they were. */
	memset(&cfg, 0xa5, sizeof(cfg));
	memset(&defaults, 0xa5, sizeof(defaults));
	config_parse(secure_lookup, NULL, &cfg, &problems);
	CHECK_U64(problems.count, 0);
	config_parse(unit_env, (void *)empty, &defaults, &problems);
	CHECK(memcmp(&cfg, &defaults, sizeof(cfg)) == 0);
	CHECK(cfg.enabled);
	CHECK_STR(config_log_file(&cfg), "");
	CHECK_U64(cfg.retries, CONFIG_INFINITE);
	for (i = 0; config_variables[i][0]; i++)
		unsetenv(config_variables[i]);
}

/* The message for @entry, or "known" when the name is one libbackoff reads or not BACKOFF_. */
static const char *unknown_message(const char *entry)
{
	static struct config_unknown u;

	return config_unknown_entry(entry, &u) ? u.message : "known";
}

static void count_unknown(const struct config_unknown *u, void *ctx)
{
	(void)u;
	(*(unsigned *)ctx)++;
}

static void test_unknown_names(void)
{
	static const char *const known[] = { "BACKOFF=off",	   "BACKOFF_TIMEOUT=3s",
					     "BACKOFF_LIBRARY=/x", "BACKOFF_SUPERVISED=1",
					     "BACKOFFICE=1",	   "PATH=/bin",
					     "backoff_timeout=1" };
	char *env[] = { "PATH=/bin", "BACKOFF_TIMOUT=3s", "BACKOFF_CAP=1s", "BACKOFF_X", NULL };
	struct config_unknown u;
	char long_name[300];
	unsigned calls = 0;
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		CHECK_STR(unknown_message(known[i]), "known");
	for (i = 0; config_variables[i][0]; i++)
		CHECK_STR(unknown_message(config_variables[i]), "known");
	CHECK_STR(unknown_message("BACKOFF_TIMOUT=3s"),
		  "unknown variable (did you mean BACKOFF_TIMEOUT?)");
	CHECK_STR(unknown_message("BACKOFF_timeout=3s"),
		  "unknown variable (did you mean BACKOFF_TIMEOUT?)");
	CHECK_STR(unknown_message("BACKOFF_TIME~OUT=3s"),
		  "unknown variable (did you mean BACKOFF_TIMEOUT?)");
	CHECK_STR(unknown_message("BACKOFF_TIEMOUT=3s"),
		  "unknown variable (did you mean BACKOFF_TIMEOUT?)");
	CHECK_STR(unknown_message("BACKOFF_RETRY=3"),
		  "unknown variable (did you mean BACKOFF_RETRIES?)");
	CHECK_STR(unknown_message("BACKOFF_SND=on"),
		  "unknown variable (did you mean BACKOFF_SEND?)");
	CHECK_STR(unknown_message("BACKOFF_LOG_LEVEL=info"),
		  "unknown variable (did you mean BACKOFF_LOG?)");
	CHECK_STR(unknown_message("BACKOFF_LOG_FILE_PATH=/x"),
		  "unknown variable (did you mean BACKOFF_LOG_FILE?)");
	CHECK_STR(unknown_message("BACKOFF_LIBRAY=/x"),
		  "unknown variable (did you mean BACKOFF_LIBRARY?)");
	CHECK_STR(unknown_message("BACKOFF_FOO=1"), "unknown variable");
	CHECK_STR(unknown_message("BACKOFF_=1"), "unknown variable");
	CHECK_STR(unknown_message("BACKOFF_X"), "unknown variable");
	/* The name alone is shown, escaped and cut; the value never. */
	CHECK(config_unknown_entry("BACKOFF_\x01\"=secret", &u));
	CHECK_STR(u.name, "BACKOFF_\\x01\\x22");
	memset(long_name, 'A', sizeof(long_name) - 1);
	memcpy(long_name, "BACKOFF_", 8);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK(config_unknown_entry(long_name, &u));
	CHECK(strlen(u.name) < sizeof(u.name));
	CHECK(strstr(u.name, "...") != NULL);
	CHECK_STR(u.message, "unknown variable");
	CHECK_U64(config_unknown_scan(env, count_unknown, &calls), 2);
	CHECK_U64(calls, 2);
	CHECK_U64(config_unknown_scan(NULL, count_unknown, &calls), 0);
}

/* BACKOFF_PROGRAMS: names, ! exclusions, first match wins, and what is no name. */
static void test_programs(void)
{
	static const struct {
		const char *list, *name;
		bool served;
	} rows[] = {
		{ "python3", "python3", true },	    /* named */
		{ "python3", "curl", false },	    /* not named, the list names some */
		{ "python3", "python", false },	    /* a prefix of a name is not the name */
		{ "python", "python3", false },	    /* nor a longer one */
		{ "python3, curl ", "curl", true }, /* spaces around a name */
		{ "!curl", "curl", false },	    /* excluded */
		{ "!curl", "python3", true },	    /* exclusions alone: the rest served */
		{ "!curl,!wget", "wget", false },   /* the second exclusion */
		{ "!curl,python3", "curl", false }, /* first match wins */
		{ "curl,!curl", "curl", true },	    /* first match wins, the other way */
		{ "!curl,python3", "node", false }, /* a name in the list: not exclusions alone */
		{ "a b", "a b", true },		    /* a name may hold a space */
	};
	static const char *const bad[] = { ",",	     "python3,",      ",python3", "!",
					   "curl,!", "/usr/bin/curl", "bin/curl", "a\tb",
					   "a\x7f",  "  ,curl" };
	char too_long[NAME_MAX + 2], longest[NAME_MAX + 1];
	const char *env[] = { NULL, NULL };
	char entry[NAME_MAX + 64];
	struct config cfg;
	size_t i;

	env[0] = NULL;
	CHECK_U64(parse(&cfg, env), 0);
	CHECK(cfg.programs == NULL);
	env[0] = "BACKOFF_PROGRAMS=";
	CHECK_U64(parse(&cfg, env), 0);
	CHECK(cfg.programs == NULL);
	env[0] = "BACKOFF_PROGRAMS=python3,!curl";
	CHECK_U64(parse(&cfg, env), 0);
	CHECK_STR(cfg.programs, "python3,!curl");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(entry, sizeof(entry), "BACKOFF_PROGRAMS=%s", rows[i].list);
		env[0] = entry;
		CHECK_U64(parse(&cfg, env), 0);
		CHECK(config_program_served(cfg.programs, rows[i].name) == rows[i].served);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(entry, sizeof(entry), "BACKOFF_PROGRAMS=%s", bad[i]);
		env[0] = entry;
		CHECK_U64(parse(&cfg, env), 1);
		CHECK(cfg.programs == NULL);
	}
	/* A base name holds NAME_MAX bytes at most. */
	memset(longest, 'p', NAME_MAX);
	longest[NAME_MAX] = '\0';
	memset(too_long, 'p', NAME_MAX + 1);
	too_long[NAME_MAX + 1] = '\0';
	snprintf(entry, sizeof(entry), "BACKOFF_PROGRAMS=!%s", longest);
	env[0] = entry;
	CHECK_U64(parse(&cfg, env), 0);
	CHECK(!config_program_served(cfg.programs, longest));
	snprintf(entry, sizeof(entry), "BACKOFF_PROGRAMS=%s", too_long);
	CHECK_U64(parse(&cfg, env), 1);
}

/* The host-wide file: which lines set what, which are said, and the environment over it. */
static void test_file(void)
{
	static const char good[] = "# comment\n\n \t# indented\n   \nBACKOFF_CAP=5s\n"
				   "BACKOFF_RETRIES=3\nBACKOFF_RETRIES=4\nBACKOFF_LOG_FILE= a b \n"
				   "BACKOFF_PROGRAMS=python3";
	static const char bad[] = "junk\nBACKOFF_TIMOUT=3s\nFOO=1\nBACKOFF_LIBRARY=/x\n"
				  "BACKOFF_CAP 5s\nBACKOFF_\0CAP=1s\nBACKOFF_BASE=1s\n";
	char text[sizeof(good) + sizeof(bad)];
	struct config_file file;
	struct config cfg;
	CONFIG_PROBLEMS_ROOM(problems);

	memcpy(text, good, sizeof(good));
	config_file_parse(text, sizeof(good) - 1, &file);
	CHECK_U64(file.bad_count, 0);
	CHECK_STR(config_file_lookup("BACKOFF_CAP", &file), "5s");
	CHECK_STR(config_file_lookup("BACKOFF_RETRIES", &file), "4");	     /* a later line wins */
	CHECK_STR(config_file_lookup("BACKOFF_LOG_FILE", &file), " a b ");   /* as is */
	CHECK_STR(config_file_lookup("BACKOFF_PROGRAMS", &file), "python3"); /* no newline */
	CHECK(config_file_lookup("BACKOFF_BASE", &file) == NULL);
	CHECK(config_file_lookup("BACKOFF_NOSUCH", &file) == NULL);
	config_parse(config_file_lookup, &file, &cfg, &problems);
	CHECK_U64(problems.count, 0);
	CHECK_U64(cfg.policy.cap_ms, 5000);
	CHECK_U64(cfg.retries, 4);

	memcpy(text, bad, sizeof(bad));
	config_file_parse(text, sizeof(bad) - 1, &file);
	CHECK_U64(file.bad_count, 6);
	CHECK_U64(file.bad[0].line, 1);
	CHECK_STR(file.bad[0].message,
		  "junk: expected NAME=value, NAME one of the BACKOFF_* variables");
	CHECK_U64(file.bad[1].line, 2);
	CHECK_STR(file.bad[1].message,
		  "BACKOFF_TIMOUT: unknown variable (did you mean BACKOFF_TIMEOUT?)");
	CHECK_STR(file.bad[2].message,
		  "FOO=1: expected NAME=value, NAME one of the BACKOFF_* variables");
	/* The launcher's variable is no setting of the file's. */
	CHECK_STR(file.bad[3].message,
		  "BACKOFF_LIBRARY=/x: expected NAME=value, NAME one of the BACKOFF_* variables");
	/* Past CONFIG_FILE_BAD_MAX, counted only; the good line after them is taken. */
	CHECK_STR(config_file_lookup("BACKOFF_BASE", &file), "1s");
	CHECK(config_file_lookup("BACKOFF_CAP", &file) == NULL);

	/* A NUL byte in a line: bad, said as such. */
	memcpy(text, "BACKOFF_CAP=1\0s\n", 16);
	config_file_parse(text, 16, &file);
	CHECK_U64(file.bad_count, 1);
	CHECK_STR(file.bad[0].message, "BACKOFF_CAP=1: a NUL byte in the line");
	CHECK(config_file_lookup("BACKOFF_CAP", &file) == NULL);
	config_file_parse(text, 0, &file);
	CHECK_U64(file.bad_count, 0);
}

/* The target of @ip (IPv4) and @port. */
static struct target_addr inet4(const char *ip, unsigned port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct target_addr t;

	inet_pton(AF_INET, ip, &sin.sin_addr);
	CHECK(target_from_sockaddr((struct sockaddr *)&sin, sizeof(sin), &t));
	return t;
}

/* The one problem of BACKOFF_DESTINATIONS=@value, or "" if it is taken. */
static const char *dests_problem(const char *value, struct config *cfg)
{
	static struct config_problem room[CONFIG_PROBLEMS_MAX];
	static struct config_problems problems = { .item = room };
	static char entry[2048];
	const char *env[] = { entry, "BACKOFF_TIMEOUT=30s", NULL };

	snprintf(entry, sizeof(entry), "BACKOFF_DESTINATIONS=%s", value);
	config_parse(unit_env, (void *)env, cfg, &problems);
	config_dests_build(cfg, dests, CONFIG_DESTS_MAX, &problems);
	engine_derive(cfg);
	if (problems.count == 0)
		return "";
	CHECK_U64(problems.count, 1);
	CHECK_STR(problems.item[0].variable, "BACKOFF_DESTINATIONS");
	return problems.item[0].message;
}

/* BACKOFF_DESTINATIONS: entries amend the global policy, the first match serves. */
static void test_destinations(void)
{
	struct target_addr db = inet4("127.0.0.1", 5432), api = inet4("192.0.2.7", 443),
			   other = inet4("192.0.2.7", 80);
	const struct config *c;
	struct config cfg;
	char many[1024] = "";
	int i;

	CHECK_STR(dests_problem("127.0.0.1:5432 timeout=2m cap=5s; *:443,*:8443 timeout=2s "
				"retries=2 policy=aws;;",
				&cfg),
		  "");
	CHECK_U64(cfg.dest_count, 2);
	c = config_for(&cfg, &db);
	CHECK(c != &cfg);
	CHECK_U64(c->timeout_ms, 120000);
	CHECK_U64(c->policy.cap_ms, 5000);
	CHECK_U64(c->policy.base_ms, 100); /* the global policy's, amended */
	CHECK_U64(c->dest_count, 0);
	CHECK(config_for(c, &db) == c);
	/* The preset first, whatever the order; the other settings amend it. */
	c = config_for(&cfg, &api);
	CHECK_STR(c->policy_name, "aws");
	CHECK_U64(c->timeout_ms, 2000);
	CHECK_U64(c->retries, 2);
	CHECK_U64(c->first_attempt_ms, 2000); /* derived per entry: the budget bounds it */
	CHECK(config_for(&cfg, &other) == &cfg);
	CHECK_U64(cfg.timeout_ms, 30000);
	/* First match wins. */
	CHECK_STR(dests_problem("*:443 timeout=1s; 192.0.2.7:443 timeout=9s", &cfg), "");
	CHECK_U64(config_for(&cfg, &api)->timeout_ms, 1000);
	/* Unset or empty: every destination has the global policy, at one load. */
	CHECK_STR(dests_problem("", &cfg), "");
	CHECK_U64(cfg.dest_count, 0);
	CHECK(config_for(&cfg, &api) == &cfg);

	CHECK_STR(dests_problem("*:443 timout=2s", &cfg),
		  "entry 1: no setting \"timout\" (did you mean timeout?)");
	CHECK_U64(cfg.dest_count, 0); /* a bad entry: none taken */
	CHECK_STR(dests_problem("*:443 timeout=2s; *:80", &cfg),
		  "entry 2: expected PATTERNS then settings such as timeout=2s");
	CHECK_STR(dests_problem("*:443 2s", &cfg),
		  "entry 1: \"2s\" is not a setting: expected KEY=VALUE such as timeout=2s");
	CHECK_STR(dests_problem("*:443 log=debug", &cfg),
		  "entry 1: no setting \"log\": expected policy, base, multiplier, cap, jitter, "
		  "retries, timeout, attempt-timeout or errors");
	CHECK_STR(dests_problem("*:443 policy=fast", &cfg),
		  "entry 1: policy=fast: expected default, google, clearblade, aws, grpc or none");
	CHECK_STR(dests_problem("*:443 base=5s cap=1s", &cfg),
		  "entry 1: its cap (1000ms) is below its base (5000ms)");
	CHECK_STR(dests_problem("localhost:5432 timeout=2s", &cfg),
		  "entry 1: names are not resolved: give addresses such as 127.0.0.1:5432 or "
		  "[::1]:*");
	CHECK_STR(dests_problem("*:443 errors=ENOPE", &cfg),
		  "entry 1: errors=ENOPE: expected errno names such as ECONNREFUSED, ETIMEDOUT, "
		  "ENOENT, as a list or as +NAME/-NAME edits");
	CHECK_STR(dests_problem("*:443 =2s", &cfg),
		  "entry 1: \"=2s\" is not a setting: expected KEY=VALUE such as timeout=2s");
	memset(many, 0, sizeof(many));
	memcpy(many, "*:443", 5);
	memset(many + 5, ' ', 600);
	memcpy(many + 605, "retries=1", 9);
	CHECK_STR(dests_problem(many, &cfg), "entry 1: longer than 511 bytes");
	memset(many, 0, sizeof(many));
	memcpy(many, "*:443", 5);
	for (i = 0; i < 64; i++)
		memcpy(many + 5 + 6 * i, " cap=1", 6);
	CHECK_STR(dests_problem(many, &cfg), "entry 1: more than 64 words");
	memset(many, 0, sizeof(many));
	CHECK_STR(dests_problem("*:443 cap=1s base=2s", &cfg),
		  "entry 1: its cap (1000ms) is below its base (2000ms)");
	for (i = 0; i <= CONFIG_DESTS_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "*:%d retries=1;",
			 i + 1);
	CHECK_STR(dests_problem(many, &cfg), "at most 8 entries");
	/* config_set_variable: a name that no row sets, or the preset, read first, is none. */
	{
		char why[100];

		CHECK(config_set_variable(&cfg, "BACKOFF_NOPE", "1", why, sizeof(why)) == -1);
		CHECK_STR(why, "no such setting");
		CHECK(config_set_variable(&cfg, "BACKOFF_POLICY", "aws", why, sizeof(why)) == -1);
		CHECK(config_set_variable(&cfg, "BACKOFF_CAP", "3s", why, sizeof(why)) == 0);
		CHECK_U64(cfg.policy.cap_ms, 3000);
	}
}

int main(void)
{
	test_defaults();
	test_no_lookup();
	test_unset_paths_are_not_written();
	test_durations();
	test_timeout_and_retries();
	test_attempt_timeout();
	test_multiplier_and_jitter();
	test_presets();
	test_cap_below_base();
	test_cap_rejected_with_base_above_default_cap();
	test_errors();
	test_protocols();
	test_booleans_levels_and_seed();
	test_early_close();
	test_bare_durations();
	test_run();
	test_problem_messages();
	test_binary_bytes_are_escaped();
	test_every_rejection();
	test_each_variable_says_what_it_takes();
	test_spellings_accepted();
	test_shared_and_local_probe();
	test_excerpt_escapes_quotes_and_backslashes();
	test_problem_format_truncates();
	test_secure_execution_honours_no_variable();
	test_unknown_names();
	test_programs();
	test_destinations();
	test_file();
	return unit_report("config");
}
