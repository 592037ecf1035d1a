/* Configuration: parsing and validating the BACKOFF_* variables, presets included. */
#include "core/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "sys/cookie.h"

#include "sys/errname.h"
#include "sys/startup.h"

const char *const config_variables[] = {
	"BACKOFF",
	"BACKOFF_POLICY",
	"BACKOFF_BASE",
	"BACKOFF_MULTIPLIER",
	"BACKOFF_CAP",
	"BACKOFF_JITTER",
	"BACKOFF_RETRIES",
	"BACKOFF_TIMEOUT",
	"BACKOFF_ATTEMPT_TIMEOUT",
	"BACKOFF_ERRORS",
	"BACKOFF_TARGETS",
	"BACKOFF_NONBLOCK",
	"BACKOFF_SEND",
	"BACKOFF_DNS",
	"BACKOFF_LOG",
	"BACKOFF_LOG_FILE",
	"BACKOFF_LOG_FORMAT",
	"BACKOFF_SEED",
	"BACKOFF_STATS",
	"BACKOFF_STRICT",
	"BACKOFF_SHARED",
	"BACKOFF_ENGINE",
	"BACKOFF_LOCAL_PROBE",
	"BACKOFF_REPLAY",
	NULL,
};

#define SEC 1000ULL
#define MIN (60 * SEC)

struct preset {
	const char *name;
	struct policy policy;
	uint64_t retries;
	uint64_t timeout_ms;
	uint64_t attempt_timeout_ms;
	bool attempt_until_next; /* gRPC's rule: no sooner than the next planned attempt */
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
	  false },
	/* Google Cloud: 2^n s + U(0, 1000 ms), 5 retries, about 32 s in all. */
	{ "google",
	  { 1 * SEC, 32 * SEC, 2000, POLICY_JITTER_ADDITIVE, 200 },
	  5,
	  60 * SEC,
	  10 * SEC,
	  false },
	/* ClearBlade IoT: the same growth up to 64 s, then retrying at the cap. */
	{ "clearblade",
	  { 1 * SEC, 64 * SEC, 2000, POLICY_JITTER_ADDITIVE, 200 },
	  CONFIG_INFINITE,
	  10 * MIN,
	  10 * SEC,
	  false },
	/* FreeRTOS backoffAlgorithm demos: full jitter, 500 ms base, 5 s cap, 5 attempts. */
	{ "aws", { 500, 5 * SEC, 2000, POLICY_JITTER_FULL, 200 }, 5, 60 * SEC, 5 * SEC, false },
	/* gRPC connection backoff: 1 s, x1.6, +-20 %, 120 s. */
	{ "grpc",
	  { 1 * SEC, 120 * SEC, 1600, POLICY_JITTER_PROPORTIONAL, 200 },
	  CONFIG_INFINITE,
	  60 * SEC,
	  20 * SEC,
	  true },
	{ "none",
	  { 100, 10 * SEC, 1000, POLICY_JITTER_NONE, 200 },
	  CONFIG_INFINITE,
	  60 * SEC,
	  5 * SEC,
	  false },
};

static const int default_inet_errors[] = { ECONNREFUSED, ETIMEDOUT, ENETUNREACH, EHOSTUNREACH };
static const int default_unix_errors[] = { ENOENT, ECONNREFUSED, EAGAIN };

/* Errors that say the call must not be repeated as it was (see DESIGN section 2). */
static const int never_retried[] = { EINTR,	   EINPROGRESS, EALREADY,   EISCONN,   EACCES,
				     EPERM,	   EINVAL,	EBADF,	    ENOTSOCK,  EFAULT,
				     EAFNOSUPPORT, EPROTOTYPE,	EADDRINUSE, EOPNOTSUPP };

#define N(a) (sizeof(a) / sizeof((a)[0]))

bool config_errset_has(const struct config_errset *set, int err)
{
	if (err <= 0 || err >= CONFIG_ERRNO_MAX)
		return false;
	return (set->bits[err / 64] >> (err % 64)) & 1;
}

static void errset_put(struct config_errset *set, int err, bool on)
{
	uint64_t bit = 1ULL << (err % 64);

	if (on)
		set->bits[err / 64] |= bit;
	else
		set->bits[err / 64] &= ~bit;
}

static void errset_from(struct config_errset *set, const int *errs, size_t n)
{
	size_t i;

	memset(set, 0, sizeof(*set));
	for (i = 0; i < n; i++)
		errset_put(set, errs[i], true);
}

/*
 * Measured on Linux: a connected AF_UNIX datagram socket whose receiver went
 * away fails once with ECONNREFUSED and is disconnected by it, so that a
 * second send fails with ENOTCONN: only a send that names its destination can
 * be repeated.  A connected UDP socket stays connected: ECONNREFUSED reports
 * the ICMP error of an earlier datagram and this one was not sent.
 */
void config_send_errors(int family, int type, bool addressed, struct config_errset *out)
{
	bool any = family == AF_UNSPEC;

	memset(out, 0, sizeof(*out));
	errset_put(out, ENOBUFS, true);
	errset_put(out, ENOMEM, true);
	if (type != SOCK_DGRAM && !any)
		return;
	if (family == AF_INET || family == AF_INET6 || any) {
		errset_put(out, ECONNREFUSED, true);
		errset_put(out, ENETUNREACH, true);
		errset_put(out, EHOSTUNREACH, true);
		errset_put(out, ENETDOWN, true);
	}
	if ((family == AF_UNIX || any) && addressed) {
		errset_put(out, ENOENT, true);
		errset_put(out, ECONNREFUSED, true);
	}
}

void config_dns_errors(struct config_errset *out)
{
	memset(out, 0, sizeof(*out));
	errset_put(out, CONFIG_DNS_AGAIN, true);
}

/* A printable excerpt of @value: control and non-ASCII bytes as \xNN, long values cut. */
static void excerpt(char *out, size_t size, const char *value)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(value), i, o = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		size_t need = (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') ? 1 : 4;

		if (o + need + 4 >= size) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (need == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

static void add_problem(struct config_problems *problems, const char *name, const char *value,
			const char *message)
{
	struct config_problem *p;

	/* Defensive: a variable has one problem at most, and there are fewer than the slots. */
	if (problems->count == CONFIG_PROBLEMS_MAX) /* LCOV_EXCL_BR_LINE: defensive */
		return;
	p = &problems->item[problems->count++];
	snprintf(p->variable, sizeof(p->variable), "%s", name);
	excerpt(p->value, sizeof(p->value), value);
	snprintf(p->message, sizeof(p->message), "%s", message);
}

size_t config_problem_format(const struct config_problem *p, char *buf, size_t size)
{
	int n = snprintf(buf, size, "backoff: %s=\"%s\": %s", p->variable, p->value, p->message);

	/* Defensive: snprintf fails only for output beyond INT_MAX bytes. */
	if (n < 0) /* LCOV_EXCL_BR_LINE: defensive */
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

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
		const char *suffix;
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

			if (milli * units[i].ms % 1000 != 0 || ms < min_ms || ms > max_ms)
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
	static const char *const yes[] = { "1", "on", "yes", "true" };
	static const char *const no[] = { "0", "off", "no", "false" };
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
	static const char *const names[] = { "none", "full", "equal", "decorrelated", "additive" };
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

static bool is_never_retried(int err)
{
	size_t i;

	for (i = 0; i < N(never_retried); i++)
		if (never_retried[i] == err)
			return true;
	return false;
}

/*
 * "E1,E2" replaces both default sets; "+E1,-E2" edits them.  On error @why
 * says what was wrong and the sets are left as they were.
 */
static int parse_errors(const char *s, struct config *cfg, char *why, size_t why_size)
{
	struct config_errset inet = cfg->errors_inet, unix_set = cfg->errors_unix;
	int mode = 0; /* 1 full list, 2 edits */

	for (;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		int sign = 0, err;

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
				snprintf(
					why, why_size,
					"give either a full list (ECONNREFUSED,ETIMEDOUT) or edits "
					"(+EADDRNOTAVAIL,-ETIMEDOUT), not both");
				return -1;
			}
			mode = sign ? 2 : 1;
			if (mode == 1) {
				memset(&inet, 0, sizeof(inet));
				memset(&unix_set, 0, sizeof(unix_set));
			}
		}
		err = errno_by_name(s, n);
		if (err == 0) {
			snprintf(why, why_size,
				 "expected errno names such as ECONNREFUSED, ETIMEDOUT, ENOENT, "
				 "as a list or as +NAME/-NAME edits");
			return -1;
		}
		if (sign >= 0 && is_never_retried(err)) {
			snprintf(why, why_size, "%s cannot be retried safely", errname(err));
			return -1;
		}
		errset_put(&inet, err, sign >= 0);
		errset_put(&unix_set, err, sign >= 0);
		if (!end)
			break;
		s = end + 1;
	}
	cfg->errors_inet = inet;
	cfg->errors_unix = unix_set;
	return 0;
}

static int parse_choice(const char *s, const char *const *names, size_t n, int *out)
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
 * Apply one explicit variable; returns 0, or -1 with the reason in @why.
 * @name is one of config_variables, so the last test of the chain always holds.
 */
STARTUP_CODE static int apply(struct config *cfg, const char *name, const char *v, char *why,
			      size_t why_size)
{
	static const char *const levels[] = { "off", "error", "warn", "info", "debug" };
	static const char *const formats[] = { "text", "json" };
	static const char *const engines[] = { "auto", "preload", "supervise" };
	const char *msg = NULL;
	uint64_t u;
	int choice;

	if (strcmp(name, "BACKOFF") == 0) {
		if (parse_bool(v, &cfg->enabled) != 0)
			msg = "expected on or off (also 1/0, yes/no, true/false)";
	} else if (strcmp(name, "BACKOFF_BASE") == 0) {
		if (config_parse_duration(v, 1, POLICY_MAX_DELAY_MS, &cfg->policy.base_ms) != 0)
			msg = "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m";
	} else if (strcmp(name, "BACKOFF_CAP") == 0) {
		if (config_parse_duration(v, 1, POLICY_MAX_DELAY_MS, &cfg->policy.cap_ms) != 0)
			msg = "expected a duration from 1ms to 24h, such as 250ms, 2s, 1m";
	} else if (strcmp(name, "BACKOFF_MULTIPLIER") == 0) {
		/* parse_fixed's limit is the largest multiplier: only the least needs a check. */
		const char *end = parse_fixed(v, 3, POLICY_MAX_MULTIPLIER_MILLI / 1000, &u);

		if (!end || *end != '\0' || u < 1000)
			msg = "expected a decimal from 1 to 10 such as 2 or 1.6";
		else
			cfg->policy.multiplier_milli = (uint32_t)u;
	} else if (strcmp(name, "BACKOFF_JITTER") == 0) {
		if (parse_jitter(v, &cfg->policy) != 0)
			msg = "expected none, full, equal, decorrelated, additive or "
			      "proportional[:R] with R from 0 to 1";
	} else if (strcmp(name, "BACKOFF_RETRIES") == 0) {
		const char *end = is_inf(v) ? NULL : parse_fixed(v, 0, CONFIG_MAX_RETRIES, &u);

		if (is_inf(v))
			cfg->retries = CONFIG_INFINITE;
		else if (!end || *end != '\0')
			msg = "expected a count from 0 to 1000000, or inf";
		else
			cfg->retries = u;
	} else if (strcmp(name, "BACKOFF_TIMEOUT") == 0) {
		if (is_inf(v))
			cfg->timeout_ms = CONFIG_INFINITE;
		else if (config_parse_duration(v, 0, POLICY_MAX_DELAY_MS, &cfg->timeout_ms) != 0)
			msg = "expected a duration up to 24h such as 30s, 2m, or inf";
	} else if (strcmp(name, "BACKOFF_ATTEMPT_TIMEOUT") == 0) {
		if (is_inf(v))
			cfg->attempt_timeout_ms = CONFIG_INFINITE;
		else if (config_parse_duration(v, 1, POLICY_MAX_DELAY_MS,
					       &cfg->attempt_timeout_ms) != 0)
			msg = "expected a duration from 1ms to 24h such as 5s, or inf";
		else
			cfg->attempt_until_next = false;
	} else if (strcmp(name, "BACKOFF_ERRORS") == 0) {
		if (parse_errors(v, cfg, why, why_size) != 0)
			return -1;
	} else if (strcmp(name, "BACKOFF_TARGETS") == 0) {
		struct target_set set;

		if (target_parse_list(v, &set, why, why_size) != 0)
			return -1;
		cfg->targets = set;
	} else if (strcmp(name, "BACKOFF_NONBLOCK") == 0) {
		if (parse_bool(v, &cfg->nonblock) != 0)
			msg = "expected on or off";
	} else if (strcmp(name, "BACKOFF_REPLAY") == 0) {
		if (parse_bool(v, &cfg->replay) != 0)
			msg = "expected on or off";
	} else if (strcmp(name, "BACKOFF_SEND") == 0) {
		if (parse_bool(v, &cfg->send) != 0)
			msg = "expected on or off";
	} else if (strcmp(name, "BACKOFF_DNS") == 0) {
		if (parse_bool(v, &cfg->dns) != 0)
			msg = "expected on or off";
	} else if (strcmp(name, "BACKOFF_SHARED") == 0) {
		size_t n = strlen(v);

		if (v[0] == '/' && n < sizeof(cfg->shared_path)) {
			/* A state file of its own: a group of processes sharing apart from the
			 * rest. */
			cfg->shared = cfg->has_shared_path = true;
			memcpy(cfg->shared_path, v, n + 1);
		} else if (parse_bool(v, &cfg->shared) != 0) {
			msg = "expected on, off or the absolute path of a state file";
		} else {
			cfg->has_shared_path = false;
		}
	} else if (strcmp(name, "BACKOFF_LOCAL_PROBE") == 0) {
		bool on;

		if (parse_bool(v, &on) == 0)
			cfg->local_probe_ms = on ? CONFIG_LOCAL_PROBE_MS : 0;
		else if (config_parse_duration(v, 1, SEC, &cfg->local_probe_ms) != 0)
			msg = "expected off or a duration from 1ms to 1s such as 10ms";
	} else if (strcmp(name, "BACKOFF_LOG") == 0) {
		if (parse_choice(v, levels, N(levels), &choice) != 0)
			msg = "expected off, error, warn, info or debug";
		else
			cfg->log_level = (enum log_level)choice;
	} else if (strcmp(name, "BACKOFF_LOG_FILE") == 0) {
		size_t n = strlen(v);

		if (n == 0 || n >= sizeof(cfg->log_file))
			msg = "expected a file path";
		else {
			cfg->has_log_file = true;
			memcpy(cfg->log_file, v, n + 1);
		}
	} else if (strcmp(name, "BACKOFF_LOG_FORMAT") == 0) {
		if (parse_choice(v, formats, N(formats), &choice) != 0)
			msg = "expected text or json";
		else
			cfg->log_json = choice == 1;
	} else if (strcmp(name, "BACKOFF_SEED") == 0) {
		const char *end = parse_fixed(v, 0, UINT64_MAX / 10 - 1, &u);

		if (!end || *end != '\0')
			msg = "expected an unsigned integer";
		else {
			cfg->seeded = true;
			cfg->seed = u;
		}
	} else if (strcmp(name, "BACKOFF_STATS") == 0) {
		if (parse_bool(v, &cfg->stats) != 0)
			msg = "expected on or off";
	} else if (strcmp(name, "BACKOFF_ENGINE") == 0) {
		if (parse_choice(v, engines, N(engines), &choice) != 0)
			msg = "expected auto, preload or supervise";
		else
			cfg->engine = (enum config_engine)choice;
	} else if (strcmp(name, "BACKOFF_STRICT") == 0) { /* LCOV_EXCL_BR_LINE: last of all */
		if (parse_bool(v, &cfg->strict) != 0)
			msg = "expected on or off";
	}
	if (msg) {
		snprintf(why, why_size, "%s", msg);
		return -1;
	}
	return 0;
}

STARTUP_CODE static void apply_preset(struct config *cfg, const struct preset *p)
{
	cfg->policy_name = p->name;
	cfg->policy = p->policy;
	cfg->retries = p->retries;
	cfg->timeout_ms = p->timeout_ms;
	cfg->attempt_timeout_ms = p->attempt_timeout_ms;
	cfg->attempt_until_next = p->attempt_until_next;
}

STARTUP_CODE void config_parse(config_lookup_fn *lookup, void *ctx, struct config *cfg,
			       struct config_problems *problems)
{
	const struct preset *preset = &presets[0];
	const char *base = NULL, *cap = NULL; /* the values taken, for the cross-check */
	char why[200];
	const char *v;
	size_t i;

	/*
	 * Zeroing the 13 kB of patterns and paths cost 13,000 instructions and
	 * four pages written at every process's start, for bytes never read;
	 * even their terminators, a page each, are not written when unset.
	 */
	memset(cfg, 0, offsetof(struct config, targets));
	cfg->targets.count = 0;
	cfg->targets.has_include = false;
	problems->count = 0; /* each item is written whole when it is added */
	cfg->enabled = true;
	cfg->nonblock = cfg->send = cfg->dns = cfg->shared = true;
	cfg->local_probe_ms = CONFIG_LOCAL_PROBE_MS;
	cfg->log_level = LOG_LEVEL_WARN;
	errset_from(&cfg->errors_inet, default_inet_errors, N(default_inet_errors));
	errset_from(&cfg->errors_unix, default_unix_errors, N(default_unix_errors));

	v = lookup("BACKOFF_POLICY", ctx);
	if (v) {
		for (i = 0; i < N(presets) && strcmp(v, presets[i].name) != 0; i++)
			;
		if (i < N(presets))
			preset = &presets[i];
		else
			add_problem(problems, "BACKOFF_POLICY", v,
				    "expected default, google, clearblade, aws, grpc or none");
	}
	apply_preset(cfg, preset);

	for (i = 0; config_variables[i]; i++) {
		const char *name = config_variables[i];

		/* Unset, the most common case: the preset stands, with no name compared. */
		v = lookup(name, ctx);
		if (!v || strcmp(name, "BACKOFF_POLICY") == 0)
			continue;
		if (apply(cfg, name, v, why, sizeof(why)) != 0) {
			add_problem(problems, name, v, why);
			v = NULL; /* rejected: the preset's value stands, and the line is written */
		}
		if (strcmp(name, "BACKOFF_BASE") == 0)
			base = v;
		else if (strcmp(name, "BACKOFF_CAP") == 0)
			cap = v;
	}

	/* Cross-check: the cap is the largest delay, so it cannot be below the base. */
	if (cfg->policy.cap_ms < cfg->policy.base_ms) {
		/*
		 * A preset agrees with itself, so a value that was taken disagrees:
		 * the cap if it was taken, else the base (then above the preset's cap).
		 */
		if (cap) {
			snprintf(why, sizeof(why), "must not be below BACKOFF_BASE (%llums)",
				 (unsigned long long)cfg->policy.base_ms);
			add_problem(problems, "BACKOFF_CAP", cap, why);
			cfg->policy.cap_ms = preset->policy.cap_ms;
		} else {
			snprintf(why, sizeof(why), "must not be above BACKOFF_CAP (%llums)",
				 (unsigned long long)cfg->policy.cap_ms);
			add_problem(problems, "BACKOFF_BASE", base, why);
		}
		if (cfg->policy.cap_ms < cfg->policy.base_ms)
			cfg->policy.base_ms = preset->policy.base_ms;
	}
	cfg->first_attempt_ms = cfg->attempt_timeout_ms;
	if (cfg->attempt_until_next && cfg->first_attempt_ms < policy_window_ms(&cfg->policy, 1))
		cfg->first_attempt_ms = policy_window_ms(&cfg->policy, 1);
	/* The budget bounds the call, its first attempt included; a budget of 0 retries nothing. */
	if (cfg->timeout_ms != 0 && cfg->timeout_ms < cfg->first_attempt_ms)
		cfg->first_attempt_ms = cfg->timeout_ms;
	if (!cfg->enabled)
		cfg->first_attempt_ms = CONFIG_INFINITE;
}

/* Names read by the launcher or passed between the engines, not by config_parse. */
static const char *const other_names[] = { "BACKOFF_LIBRARY", COOKIE_ENV };

#define PREFIX "BACKOFF_"
#define PREFIX_LEN (sizeof(PREFIX) - 1)
#define SUFFIX_CMP_MAX 40 /* a longer name gets no suggestion */

static const char *known_name(size_t i)
{
	size_t n = N(config_variables) - 1; /* without the NULL */

	return i < n ? config_variables[i] : i - n < N(other_names) ? other_names[i - n] : NULL;
}

static int fold(char c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/*
 * Edits (insertion, deletion, substitution, transposition of neighbours) from
 * @a to @b, ASCII case ignored; both at most SUFFIX_CMP_MAX bytes.
 */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t rows[3][SUFFIX_CMP_MAX + 1], i, j;
	size_t *before = rows[0], *prev = rows[1], *cur = rows[2], *spare;

	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t d = prev[j - 1] + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) && before[j - 2] + 1 < d)
				d = before[j - 2] + 1;
			cur[j] = d;
		}
		spare = before;
		before = prev;
		prev = cur;
		cur = spare;
	}
	return prev[lb];
}

/*
 * The known name that @suffix (after BACKOFF_) most likely misspells: the
 * nearest within a third of its length (at most 3 edits), else the longest
 * known name it extends by a word (BACKOFF_LOG_LEVEL: BACKOFF_LOG); or NULL.
 */
static const char *closest_name(const char *suffix, size_t len)
{
	const char *best = NULL, *k;
	size_t best_d = SIZE_MAX, best_len = 0, i;

	if (len > SUFFIX_CMP_MAX)
		return NULL;
	for (i = 0; (k = known_name(i)) != NULL; i++) {
		size_t lk, longer, d;

		if (strncmp(k, PREFIX, PREFIX_LEN) != 0)
			continue; /* BACKOFF itself: no suffix to compare */
		k += PREFIX_LEN;
		lk = strlen(k);
		longer = lk > len ? lk : len;
		d = edit_distance(suffix, len, k, lk);
		if (d <= (longer + 2) / 3 && d <= 3 && d < best_d) {
			best = k - PREFIX_LEN;
			best_d = d;
		}
	}
	if (best)
		return best;
	for (i = 0; (k = known_name(i)) != NULL; i++) {
		size_t lk = strlen(k);

		if (lk > best_len && lk > PREFIX_LEN && lk - PREFIX_LEN < len &&
		    suffix[lk - PREFIX_LEN] == '_' &&
		    strncasecmp(suffix, k + PREFIX_LEN, lk - PREFIX_LEN) == 0) {
			best = k;
			best_len = lk;
		}
	}
	return best;
}

bool config_unknown_entry(const char *entry, struct config_unknown *out)
{
	const char *eq, *closest, *known;
	char name[128];
	size_t len, i;

	if (strncmp(entry, PREFIX, PREFIX_LEN) != 0)
		return false;
	eq = strchr(entry, '=');
	len = eq ? (size_t)(eq - entry) : strlen(entry);
	for (i = 0; (known = known_name(i)) != NULL; i++)
		if (strlen(known) == len && strncmp(known, entry, len) == 0)
			return false;
	/* Cut to the buffer: excerpt() marks a name longer than its output. */
	snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1),
		 entry);
	excerpt(out->name, sizeof(out->name), name);
	closest = closest_name(entry + PREFIX_LEN, len - PREFIX_LEN);
	if (closest)
		snprintf(out->message, sizeof(out->message), "unknown variable (did you mean %s?)",
			 closest);
	else
		snprintf(out->message, sizeof(out->message), "unknown variable");
	return true;
}

STARTUP_CODE unsigned config_unknown_scan(char *const *env, config_unknown_fn *report, void *ctx)
{
	struct config_unknown u;
	unsigned n = 0;

	for (; env && *env; env++) {
		if (config_unknown_entry(*env, &u)) {
			report(&u, ctx);
			n++;
		}
	}
	return n;
}
