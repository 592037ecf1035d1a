/* Configuration: parsing and validating the BACKOFF_* variables (presets: config_presets.c). */
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "sys/cookie.h"

#include "sys/errname.h"
#include "sys/startup.h"

#define SEC 1000ULL
#define MIN (60 * SEC)

#define N(a) (sizeof(a) / sizeof((a)[0]))

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * A non-negative decimal with at most @frac_digits digits after the point,
 * scaled by 10^frac_digits into @out; at most @max.  Returns the first byte
 * after the number, or NULL if there is no number or it is out of range.
 */
static const char *parse_fixed(const char *s, unsigned frac_digits, uint64_t max, uint64_t *out)
{
	uint64_t v = 0, full = 1, scale;
	unsigned i;

	for (i = 0; i < frac_digits; i++)
		full *= 10;
	if (!is_digit(*s))
		return NULL;
	for (; is_digit(*s); s++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return NULL;
	}
	v *= full;
	scale = full;
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return NULL;
		for (; is_digit(*s); s++) {
			if (scale == 1)
				return NULL;
			scale /= 10;
			v += (uint64_t)(*s - '0') * scale;
		}
	}
	if (v > max * full)
		return NULL;
	*out = v;
	return s;
}

int config_parse_duration(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out)
{
	static const struct {
		char suffix[3];
		uint64_t ms;
	} units[] = { { "", 1 }, { "ms", 1 }, { "s", SEC }, { "m", MIN }, { "h", 60 * MIN } };
	uint64_t milli;
	const char *end = parse_fixed(s, 3, POLICY_MAX_DELAY_MS, &milli);
	size_t i;

	if (!end)
		return -1;
	for (i = 0; i < N(units); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			/* milli <= 8.64e10 and ms <= 3.6e6: the product stays below 2^59. */
			uint64_t ms = milli * units[i].ms / 1000;

			/* A bare number but 0 has no unit to say what it means: refused. */
			if (milli * units[i].ms % 1000 != 0 || ms < min_ms || ms > max_ms ||
			    (units[i].suffix[0] == '\0' && ms != 0))
				return -1;
			*out = ms;
			return 0;
		}
	}
	return -1;
}

static bool is_inf(const char *s)
{
	return strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char yes[][5] = { "1", "on", "yes", "true" };
	static const char no[][6] = { "0", "off", "no", "false" };
	size_t i;

	for (i = 0; i < N(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static int parse_jitter(const char *s, struct policy *p)
{
	static const char names[][13] = { "none", "full", "equal", "decorrelated", "additive" };
	static const enum policy_jitter kinds[] = { POLICY_JITTER_NONE, POLICY_JITTER_FULL,
						    POLICY_JITTER_EQUAL, POLICY_JITTER_DECORRELATED,
						    POLICY_JITTER_ADDITIVE };
	uint64_t r;
	const char *end;
	size_t i;

	for (i = 0; i < N(names); i++) {
		if (strcmp(s, names[i]) == 0) {
			p->jitter = kinds[i];
			return 0;
		}
	}
	if (strcmp(s, "proportional") == 0) {
		p->jitter = POLICY_JITTER_PROPORTIONAL;
		p->ratio_milli = 200;
		return 0;
	}
	if (strncmp(s, "proportional:", 13) != 0)
		return -1;
	/* parse_fixed's limit is the largest ratio, so r needs no other check. */
	end = parse_fixed(s + 13, 3, POLICY_MAX_RATIO_MILLI / 1000, &r);
	if (!end || *end != '\0')
		return -1;
	p->jitter = POLICY_JITTER_PROPORTIONAL;
	p->ratio_milli = (uint32_t)r;
	return 0;
}

static int errno_by_name(const char *s, size_t n)
{
	int e;

	for (e = 1; e < CONFIG_ERRNO_MAX; e++) {
		const char *name = errname(e);

		if (name && strlen(name) == n && strncmp(name, s, n) == 0)
			return e;
	}
	return 0;
}

/*
 * "E1,E2" replaces both default sets; "+E1,-E2" edits them.  On error @why
 * says what was wrong and the sets are left as they were.
 */
/* One item of a list of names, or of +NAME/-NAME edits (@sign 1 or -1; 0 in a list). */
typedef int edit_fn(void *ctx, const char *name, size_t n, int sign, char *why, size_t why_size);

/*
 * The comma list @s: a full list of names (@clear(@ctx) first) or edits of
 * what stands (+NAME, -NAME), not both (@example names one of each); @item
 * applies each, or says why not.  Returns 0 or -1.
 */
static int parse_edits(const char *s, void *ctx, void (*clear)(void *ctx), edit_fn *item,
		       const char *example, char *why, size_t why_size)
{
	int mode = 0; /* 1 full list, 2 edits */

	for (;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		int sign = 0;

		while (n > 0 && *s == ' ') {
			s++;
			n--;
		}
		while (n > 0 && s[n - 1] == ' ')
			n--;
		if (n > 0 && (*s == '+' || *s == '-')) {
			sign = *s == '+' ? 1 : -1;
			s++;
			n--;
		}
		if ((sign ? 2 : 1) != mode) {
			if (mode != 0) {
				snprintf(why, why_size,
					 "give either a full list or edits (%s), not both",
					 example);
				return -1;
			}
			mode = sign ? 2 : 1;
			if (mode == 1)
				clear(ctx);
		}
		if (item(ctx, s, n, sign, why, why_size) != 0)
			return -1;
		if (!end)
			return 0;
		s = end + 1;
	}
}

/* BACKOFF_ERRORS, both sets edited alike. */
struct errsets {
	struct config_errset inet, unix_set;
};

static void errors_clear(void *ctx)
{
	struct errsets *e = ctx;

	memset(e, 0, sizeof(*e));
}

static int errors_item(void *ctx, const char *name, size_t n, int sign, char *why, size_t why_size)
{
	struct errsets *e = ctx;
	int err = errno_by_name(name, n);

	if (err == 0) {
		snprintf(why, why_size,
			 "expected errno names such as ECONNREFUSED, ETIMEDOUT, ENOENT, "
			 "as a list or as +NAME/-NAME edits");
		return -1;
	}
	if (sign >= 0 && config_errno_never_retried(err)) {
		snprintf(why, why_size, "%s cannot be retried safely", errname(err));
		return -1;
	}
	config_errset_put(&e->inet, err, sign >= 0);
	config_errset_put(&e->unix_set, err, sign >= 0);
	return 0;
}

static int parse_errors(const char *s, struct config *cfg, char *why, size_t why_size)
{
	struct errsets e = { cfg->errors_inet, cfg->errors_unix };

	if (parse_edits(s, &e, errors_clear, errors_item,
			"ECONNREFUSED,ETIMEDOUT or +EADDRNOTAVAIL,-ETIMEDOUT", why, why_size) != 0)
		return -1;
	cfg->errors_inet = e.inet;
	cfg->errors_unix = e.unix_set;
	return 0;
}

const char config_protocol_names[][CONFIG_PROTOCOL_NAME_SIZE] = {
	"postgresql", "mysql", "redis", "memcached", "nats", "smtp", "ftp", "mqtt", "http", "",
};

static void protocols_clear(void *ctx)
{
	*(unsigned *)ctx = 0;
}

static int protocols_item(void *ctx, const char *name, size_t n, int sign, char *why,
			  size_t why_size)
{
	unsigned *set = ctx, bit;

	/* A list that names nothing: every protocol off. */
	if (sign == 0 && n == 4 && strncmp(name, "none", 4) == 0)
		return 0;
	for (bit = 0; config_protocol_names[bit][0]; bit++) {
		if (strlen(config_protocol_names[bit]) == n &&
		    strncmp(config_protocol_names[bit], name, n) == 0) {
			*set = sign >= 0 ? *set | 1U << bit : *set & ~(1U << bit);
			return 0;
		}
	}
	snprintf(why, why_size,
		 "expected protocol names (postgresql, mysql, redis, memcached, nats, smtp, "
		 "ftp, mqtt, http), as a list or as +NAME/-NAME edits, or none");
	return -1;
}

/* The longest choice of a variable and its NUL: choices are held in place, not as pointers. */
#define CHOICE_SIZE 10

static int parse_choice(const char *s, const char (*names)[CHOICE_SIZE], size_t n, int *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -1;
}

/*
 * An explicit value, as the parser of its variable's row takes it into @cfg:
 * @field is the member of @cfg that the row names, for a parser that several
 * rows share; @why receives the reason for a rejected value when the row has
 * no message of its own.
 */
struct setting {
	struct config *cfg;
	void *field;
	const char *value;
	char *why;
	size_t why_size;
};

/* The parsers of the rows: 0, or -1 when the value is rejected and its fields left as they were. */

STARTUP_CODE static int set_bool(const struct setting *s)
{
	return parse_bool(s->value, s->field);
}

STARTUP_CODE static int set_delay(const struct setting *s)
{
	return config_parse_duration(s->value, 1, POLICY_MAX_DELAY_MS, s->field);
}

STARTUP_CODE static int set_multiplier(const struct setting *s)
{
	uint64_t u;
	/* parse_fixed's limit is the largest multiplier: only the least needs a check. */
	const char *end = parse_fixed(s->value, 3, POLICY_MAX_MULTIPLIER_MILLI / 1000, &u);

	if (!end || *end != '\0' || u < 1000)
		return -1;
	s->cfg->policy.multiplier_milli = (uint32_t)u;
	return 0;
}

STARTUP_CODE static int set_jitter(const struct setting *s)
{
	return parse_jitter(s->value, &s->cfg->policy);
}

STARTUP_CODE static int set_retries(const struct setting *s)
{
	uint64_t u;
	const char *end;

	if (is_inf(s->value)) {
		s->cfg->retries = CONFIG_INFINITE;
		return 0;
	}
	end = parse_fixed(s->value, 0, CONFIG_MAX_RETRIES, &u);
	if (!end || *end != '\0')
		return -1;
	s->cfg->retries = u;
	return 0;
}

STARTUP_CODE static int set_timeout(const struct setting *s)
{
	if (is_inf(s->value)) {
		s->cfg->timeout_ms = CONFIG_INFINITE;
		return 0;
	}
	return config_parse_duration(s->value, 0, POLICY_MAX_DELAY_MS, &s->cfg->timeout_ms);
}

STARTUP_CODE static int set_attempt_timeout(const struct setting *s)
{
	struct config *cfg = s->cfg;

	if (is_inf(s->value)) {
		cfg->attempt_timeout_ms = CONFIG_INFINITE;
		return 0;
	}
	if (config_parse_duration(s->value, 1, POLICY_MAX_DELAY_MS, &cfg->attempt_timeout_ms) != 0)
		return -1;
	cfg->attempt_until_next = false;
	return 0;
}

STARTUP_CODE static int set_errors(const struct setting *s)
{
	return parse_errors(s->value, s->cfg, s->why, s->why_size);
}

STARTUP_CODE static int set_protocols(const struct setting *s)
{
	unsigned set = s->cfg->protocols;

	if (parse_edits(s->value, &set, protocols_clear, protocols_item, "redis,smtp or -smtp",
			s->why, s->why_size) != 0)
		return -1;
	s->cfg->protocols = set;
	return 0;
}

STARTUP_CODE static int set_targets(const struct setting *s)
{
	struct target_set set;

	if (target_parse_list(s->value, &set, s->why, s->why_size) != 0)
		return -1;
	s->cfg->targets = set;
	return 0;
}

STARTUP_CODE static int set_names(const struct setting *s)
{
	return target_parse_names(s->value, &s->cfg->names, s->why, s->why_size);
}

STARTUP_CODE static int set_log(const struct setting *s)
{
	static const char levels[][CHOICE_SIZE] = { "off", "error", "warn", "info", "debug" };
	int choice;

	if (parse_choice(s->value, levels, N(levels), &choice) != 0)
		return -1;
	s->cfg->log_level = (enum log_level)choice;
	return 0;
}

STARTUP_CODE static int set_log_file(const struct setting *s)
{
	struct config *cfg = s->cfg;
	size_t n = strlen(s->value);

	if (n == 0 || n >= sizeof(cfg->log_file))
		return -1;
	cfg->has_log_file = true;
	memcpy(cfg->log_file, s->value, n + 1);
	return 0;
}

STARTUP_CODE static int set_log_format(const struct setting *s)
{
	static const char formats[][CHOICE_SIZE] = { "text", "json" };
	int choice;

	if (parse_choice(s->value, formats, N(formats), &choice) != 0)
		return -1;
	s->cfg->log_json = choice == 1;
	return 0;
}

STARTUP_CODE static int set_seed(const struct setting *s)
{
	uint64_t u;
	const char *end = parse_fixed(s->value, 0, UINT64_MAX / 10 - 1, &u);

	if (!end || *end != '\0')
		return -1;
	s->cfg->seeded = true;
	s->cfg->seed = u;
	return 0;
}

STARTUP_CODE static int set_shared(const struct setting *s)
{
	struct config *cfg = s->cfg;
	size_t n = strlen(s->value);

	if (s->value[0] == '/' && n < sizeof(cfg->shared_path)) {
		/* A state file of its own: a group of processes sharing apart from the rest. */
		cfg->shared = cfg->has_shared_path = true;
		memcpy(cfg->shared_path, s->value, n + 1);
		return 0;
	}
	if (parse_bool(s->value, &cfg->shared) != 0)
		return -1;
	cfg->has_shared_path = false;
	return 0;
}

STARTUP_CODE static int set_engine(const struct setting *s)
{
	static const char engines[][CHOICE_SIZE] = { "auto", "preload", "supervise" };
	int choice;

	if (parse_choice(s->value, engines, N(engines), &choice) != 0)
		return -1;
	s->cfg->engine = (enum config_engine)choice;
	return 0;
}

STARTUP_CODE static int set_early_close(const struct setting *s)
{
	static const char kinds[][CHOICE_SIZE] = { "auto", "refusal", "answer" };
	int choice;

	if (parse_choice(s->value, kinds, N(kinds), &choice) != 0)
		return -1;
	s->cfg->early_close = (enum config_early)choice;
	return 0;
}

/* The longest BACKOFF_RUN: a name, not a document. */
#define RUN_NAME_MAX 128

/* FNV-1a: its multiplications wrap by design (the fuzzers' integer checks are told so). */
#if defined(__clang__)
#define WRAPS __attribute__((no_sanitize("unsigned-integer-overflow")))
#else
#define WRAPS
#endif

WRAPS static uint64_t fnv_step(uint64_t h, unsigned char c)
{
	return (h ^ c) * 0x100000001b3ULL;
}

STARTUP_CODE static int set_run(const struct setting *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	const unsigned char *p;

	for (p = (const unsigned char *)s->value; *p; p++) {
		if (*p <= ' ' || *p > '~' || p - (const unsigned char *)s->value >= RUN_NAME_MAX)
			return -1;
		h = fnv_step(h, *p);
	}
	if (p == (const unsigned char *)s->value)
		return -1;
	s->cfg->run_id = h | 1;
	return 0;
}

STARTUP_CODE static int set_local_probe(const struct setting *s)
{
	bool on;

	if (parse_bool(s->value, &on) == 0) {
		s->cfg->local_probe_ms = on ? CONFIG_LOCAL_PROBE_MS : 0;
		return 0;
	}
	return config_parse_duration(s->value, 1, SEC, &s->cfg->local_probe_ms);
}

STARTUP_CODE static int set_programs(const struct setting *s)
{
	/* Empty, as unset: every program. */
	if (s->value[0] == '\0') {
		s->cfg->programs = NULL;
		return 0;
	}
	if (!config_programs_valid(s->value))
		return -1;
	s->cfg->programs = s->value;
	return 0;
}

/* BACKOFF_DESTINATIONS: kept as given; config_dests_build takes its entries apart. */
STARTUP_CODE static int set_dests(const struct setting *s)
{
	s->cfg->dests_text = s->value[0] ? s->value : NULL;
	return 0;
}

/* What a duration variable given a bare number is told. */
#define BARE_DURATION "a duration needs its unit, such as 30s, 250ms or 2m (0 alone needs none)"

/* Whether @value is a bare number other than 0 given to a variable whose @message wants a duration.
 */
STARTUP_CODE static bool is_bare_duration(const char *value, const char *message)
{
	bool nonzero = false;
	const char *p;

	if (!strstr(message, "duration"))
		return false;
	for (p = value; is_digit(*p) || *p == '.'; p++)
		nonzero |= *p != '0' && *p != '.';
	return *p == '\0' && nonzero;
}

#define FIELD(member) offsetof(struct config, member)

/*
 * Every variable, named here only, in the documented order, which is the
 * order their values are taken in: X(NAME, parser, field, message on a bad
 * value).  BACKOFF_POLICY has no parser: config_parse reads it first, as the
 * preset that the others amend.  An empty message: the parser says why.
 */
#define VARIABLES(X)                                                                              \
	X(BACKOFF, set_bool, FIELD(enabled), "expected on or off (also 1/0, yes/no, true/false)") \
	X(BACKOFF_POLICY, NULL, 0, "expected default, google, clearblade, aws, grpc or none")     \
	X(BACKOFF_BASE, set_delay, FIELD(policy.base_ms),                                         \
	  "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m")                           \
	X(BACKOFF_MULTIPLIER, set_multiplier, 0,                                                  \
	  "expected a decimal from 1 to 10 such as 2 or 1.6")                                     \
	X(BACKOFF_CAP, set_delay, FIELD(policy.cap_ms),                                           \
	  "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m")                           \
	X(BACKOFF_JITTER, set_jitter, 0,                                                          \
	  "expected none, full, equal, decorrelated, additive or "                                \
	  "proportional[:R] with R from 0 to 1")                                                  \
	X(BACKOFF_RETRIES, set_retries, 0, "expected a count from 0 to 1000000, or inf")          \
	X(BACKOFF_TIMEOUT, set_timeout, 0,                                                        \
	  "expected a duration up to 24h such as 30s, 2m, or inf")                                \
	X(BACKOFF_ATTEMPT_TIMEOUT, set_attempt_timeout, 0,                                        \
	  "expected a duration from 1ms to 24h such as 5s, or inf")                               \
	X(BACKOFF_ERRORS, set_errors, 0, "")                                                      \
	X(BACKOFF_TARGETS, set_targets, 0, "")                                                    \
	X(BACKOFF_DESTINATIONS, set_dests, 0, "")                                                 \
	X(BACKOFF_NONBLOCK, set_bool, FIELD(nonblock), "expected on or off")                      \
	X(BACKOFF_SEND, set_bool, FIELD(send), "expected on or off")                              \
	X(BACKOFF_DNS, set_bool, FIELD(dns), "expected on or off")                                \
	X(BACKOFF_NAMES, set_names, 0, "")                                                        \
	X(BACKOFF_LOG, set_log, 0, "expected off, error, warn, info or debug")                    \
	X(BACKOFF_LOG_FILE, set_log_file, 0, "expected a file path")                              \
	X(BACKOFF_LOG_FORMAT, set_log_format, 0, "expected text or json")                         \
	X(BACKOFF_SEED, set_seed, 0, "expected an unsigned integer")                              \
	X(BACKOFF_STATS, set_bool, FIELD(stats), "expected on or off")                            \
	X(BACKOFF_STRICT, set_bool, FIELD(strict), "expected on or off")                          \
	X(BACKOFF_SHARED, set_shared, 0, "expected on, off or the absolute path of a state file") \
	X(BACKOFF_ENGINE, set_engine, 0, "expected auto, preload or supervise")                   \
	X(BACKOFF_LOCAL_PROBE, set_local_probe, 0,                                                \
	  "expected off or a duration from 1ms to 1s such as 10ms")                               \
	X(BACKOFF_REPLAY, set_bool, FIELD(replay), "expected on or off")                          \
	X(BACKOFF_EARLY_CLOSE, set_early_close, 0, "expected auto, refusal or answer")            \
	X(BACKOFF_RUN, set_run, 0, "expected a name of 1 to 128 printable characters, no spaces") \
	X(BACKOFF_PROTOCOLS, set_protocols, 0, "")                                                \
	X(BACKOFF_PROGRAMS, set_programs, 0,                                                      \
	  "expected program names such as python3,curl, ! excluding one: !pip")

/*
 * The table's columns, each read by a switch: a table of pointers (names,
 * parsers, messages) was 84 relocations at every process's load.
 */
#define AS_NAME(name, set, field, message) #name,
#define AS_INDEX(name, set, field, message) VAR_##name,
#define AS_PARSER(name, set, field, message) \
	case VAR_##name:                     \
		return set;
#define AS_FIELD(name, set, field, message) field,
#define AS_MESSAGE(name, set, field, message) message,

const char config_variables[CONFIG_VARIABLES + 1][CONFIG_VARIABLE_SIZE] = { VARIABLES(AS_NAME) "" };

enum { VARIABLES(AS_INDEX) VARIABLES_COUNT };

_Static_assert(VARIABLES_COUNT == CONFIG_VARIABLES, "CONFIG_VARIABLES counts the table's rows");

typedef int parser_fn(const struct setting *s);

/* Variable @i's parser; NULL for BACKOFF_POLICY, taken first. */
STARTUP_CODE static parser_fn *parser(size_t i)
{
	switch (i) { /* LCOV_EXCL_BR_LINE: every row has its case; no other index is asked */
		VARIABLES(AS_PARSER)
	}
	return NULL;
}

/* The offset in struct config of the member variable @i's shared parser writes. */
static const size_t fields[] = { VARIABLES(AS_FIELD) };

/* What a rejected value of each variable is told; "": its parser writes why. */
static const char messages[][96] = { VARIABLES(AS_MESSAGE) };

/* What a rejected value of variable @i is told; NULL: its parser writes why. */
STARTUP_CODE static const char *message(size_t i)
{
	return messages[i][0] ? messages[i] : NULL;
}

/* What a value @value that variable @i refused is told (@why: what its parser wrote). */
STARTUP_CODE static const char *rejection(size_t i, const char *value, const char *why)
{
	const char *m = message(i);

	if (!m)
		return why;
	return is_bare_duration(value, m) ? BARE_DURATION : m;
}

STARTUP_CODE int config_set_variable(struct config *cfg, const char *name, const char *value,
				     char *why, size_t why_size)
{
	struct setting s = { .cfg = cfg, .why = why, .why_size = why_size, .value = value };
	size_t i;

	for (i = 0; i < CONFIG_VARIABLES; i++) {
		parser_fn *set = parser(i);

		if (!set || strcmp(config_variables[i], name) != 0)
			continue;
		s.field = (char *)cfg + fields[i];
		if (set(&s) == 0)
			return 0;
		if (message(i)) /* else its parser wrote why */
			snprintf(why, why_size, "%s", rejection(i, value, why));
		return -1;
	}
	snprintf(why, why_size, "no such setting");
	return -1;
}

STARTUP_CODE void config_parse(config_lookup_fn *lookup, void *ctx, struct config *cfg,
			       struct config_problems *problems)
{
	const struct policy *preset;
	/* The values not rejected, for the cross-check of the base and the cap. */
	const char *taken[CONFIG_VARIABLES] = { NULL };
	char why[200];
	struct setting s = { .cfg = cfg, .why = why, .why_size = sizeof(why) };
	const char *v;
	size_t i;

	/*
	 * Zeroing the 13 kB of patterns and paths cost 13,000 instructions and
	 * four pages written at every process's start, for bytes never read;
	 * even their terminators, a page each, are not written when unset.
	 */
	memset(cfg, 0, offsetof(struct config, names));
	cfg->targets.count = 0;
	cfg->targets.has_include = false;
	cfg->names.count = 0;
	problems->count = 0; /* each item is written whole when it is added */
	cfg->enabled = true;
	cfg->nonblock = cfg->send = cfg->dns = cfg->shared = true;
	cfg->local_probe_ms = CONFIG_LOCAL_PROBE_MS;
	cfg->log_level = LOG_LEVEL_WARN;
	config_errors_default(&cfg->errors_inet, &cfg->errors_unix);

	v = lookup ? lookup(config_variables[VAR_BACKOFF_POLICY], ctx) : NULL;
	preset = v ? config_preset_apply(cfg, v) : NULL;
	if (v && !preset)
		config_add_problem(problems, config_variables[VAR_BACKOFF_POLICY], v,
				   message(VAR_BACKOFF_POLICY));
	if (!preset)
		preset = config_preset_apply(cfg, NULL); /* "default" */

	for (i = 0; lookup && i < CONFIG_VARIABLES; i++) {
		parser_fn *set;

		if (i == VAR_BACKOFF_POLICY)
			continue; /* the preset taken above */
		/* Unset, the most common case: the preset stands. */
		s.value = lookup(config_variables[i], ctx);
		if (!s.value)
			continue;
		set = parser(i);
		s.field = (char *)cfg + fields[i];
		if (set(&s) == 0)
			taken[i] = s.value;
		else /* rejected: the preset's value stands, and the line is written */
			config_add_problem(problems, config_variables[i], s.value,
					   rejection(i, s.value, why));
	}

	/*
	 * Cross-check: the cap is the largest delay, so it cannot be below the
	 * base.  Nothing looked up, the preset stands, and agrees with itself.
	 */
	if (lookup && cfg->policy.cap_ms < cfg->policy.base_ms) {
		/*
		 * A preset agrees with itself, so a value that was taken disagrees:
		 * the cap if it was taken, else the base (then above the preset's cap).
		 */
		if (taken[VAR_BACKOFF_CAP]) {
			snprintf(why, sizeof(why), "must not be below BACKOFF_BASE (%llums)",
				 (unsigned long long)cfg->policy.base_ms);
			config_add_problem(problems, config_variables[VAR_BACKOFF_CAP],
					   taken[VAR_BACKOFF_CAP], why);
			cfg->policy.cap_ms = preset->cap_ms;
		} else {
			snprintf(why, sizeof(why), "must not be above BACKOFF_CAP (%llums)",
				 (unsigned long long)cfg->policy.cap_ms);
			config_add_problem(problems, config_variables[VAR_BACKOFF_BASE],
					   taken[VAR_BACKOFF_BASE], why);
		}
		if (cfg->policy.cap_ms < cfg->policy.base_ms)
			cfg->policy.base_ms = preset->base_ms;
	}
}
