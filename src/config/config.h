/* Configuration: the BACKOFF_* variables parsed once into an immutable struct. */
#ifndef BACKOFF_CONFIG_CONFIG_H
#define BACKOFF_CONFIG_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "config/protocols.h"
#include "config/target.h"
#include "sys/log.h"

/* The policy of a configuration: data here, its delays computed by engine/policy. */
enum policy_jitter {
	POLICY_JITTER_NONE,
	POLICY_JITTER_FULL,
	POLICY_JITTER_EQUAL,
	POLICY_JITTER_DECORRELATED,
	POLICY_JITTER_ADDITIVE,
	POLICY_JITTER_PROPORTIONAL,
};

/* Largest accepted values; the arithmetic below cannot overflow within them. */
#define POLICY_MAX_DELAY_MS (24ULL * 60 * 60 * 1000)
#define POLICY_MAX_MULTIPLIER_MILLI 10000U
#define POLICY_MAX_RATIO_MILLI 1000U

struct policy {
	uint64_t base_ms;	   /* first window, 1 .. POLICY_MAX_DELAY_MS */
	uint64_t cap_ms;	   /* largest delay, base_ms .. POLICY_MAX_DELAY_MS */
	uint32_t multiplier_milli; /* window growth per retry, 1000 (x1) .. 10000 (x10) */
	enum policy_jitter jitter;
	uint32_t ratio_milli; /* proportional jitter R, 0 .. 1000 */
};

#define CONFIG_INFINITE UINT64_MAX /* timeout_ms, retries */
#define CONFIG_LOCAL_PROBE_MS 10   /* BACKOFF_LOCAL_PROBE's default */
/*
 * The longest attempt to a loopback TCP destination: its SYN is answered
 * inside connect() or dropped (a full accept queue), never late.
 */
#define CONFIG_LOCAL_ATTEMPT_MS 20
/*
 * A call that will have waited this long says so once at warn level (per
 * destination and process), so that a long wait is not silent by default.
 */
#define CONFIG_TELL_WAIT_MS 5000
#define CONFIG_MAX_RETRIES 1000000ULL
#define CONFIG_PROBLEMS_MAX 32
#define CONFIG_ERRNO_MAX 192 /* errno values a set can hold */

struct config_errset {
	uint64_t bits[CONFIG_ERRNO_MAX / 64];
};

/* BACKOFF_ENGINE: which engine the launcher runs a command under. */
enum config_engine {
	CONFIG_ENGINE_AUTO,
	CONFIG_ENGINE_PRELOAD,
	CONFIG_ENGINE_SUPERVISE,
};

/*
 * BACKOFF_EARLY_CLOSE: what a close before the first byte is, when the
 * program has sent nothing (engine/engine.h, ENGINE_EARLY).
 */
enum config_early {
	CONFIG_EARLY_AUTO,    /* a refusal where the server speaks first, else its answer */
	CONFIG_EARLY_REFUSAL, /* always a refusal: connected again (behind a front) */
	CONFIG_EARLY_ANSWER,  /* always the server's answer: the program gets its end */
};

struct config_dest;

struct config {
	bool enabled;		 /* BACKOFF */
	const char *policy_name; /* BACKOFF_POLICY, a static string */
	struct policy policy;	 /* BASE, CAP, MULTIPLIER, JITTER */
	uint64_t retries;	 /* most retries per call, or CONFIG_INFINITE */
	uint64_t timeout_ms;	 /* budget per call, or CONFIG_INFINITE */
	/* BACKOFF_ATTEMPT_TIMEOUT: longest unanswered attempt; CONFIG_INFINITE: the kernel's */
	uint64_t attempt_timeout_ms;
	bool attempt_until_next; /* the grpc preset: an attempt lasts until the next planned one */
	/* Derived, for the connect hook's fast path: the bound of a call's first attempt */
	uint64_t first_attempt_ms;
	struct config_errset errors_inet; /* retryable connect errors, AF_INET/AF_INET6 */
	struct config_errset errors_unix; /* retryable connect errors, AF_UNIX */
	bool nonblock, send, dns;
	bool replay; /* BACKOFF_REPLAY: send again what was sent before an early close */
	enum config_early early_close; /* BACKOFF_EARLY_CLOSE */
	/*
	 * BACKOFF_RUN, hashed (never 0): the processes of one run share a
	 * destination's spent budget; 0: unset, each process is its own run.
	 */
	uint64_t run_id;
	/* BACKOFF_PROTOCOLS: whose "try later" answers are recognized (enum ready_protocol bits) */
	unsigned protocols;
	bool shared; /* BACKOFF_SHARED: a budget per destination, "known down", one prober */
	uint64_t local_probe_ms; /* BACKOFF_LOCAL_PROBE; 0: off */
	enum log_level log_level;
	bool log_json;
	bool seeded;
	uint64_t seed;
	bool stats;
	enum config_engine engine;
	bool strict;
	bool has_shared_path, has_log_file; /* whether the paths below were set */
	/*
	 * BACKOFF_PROGRAMS as given, checked: the programs served, by name; NULL:
	 * every program.  It points into what the lookup returned, which lives as
	 * long as the process (the environment, the host-wide file's buffer).
	 */
	const char *programs;
	/*
	 * BACKOFF_DESTINATIONS as given (NULL: unset), and the policies it gives
	 * destinations once config_dests_build made them: @dest_count entries of
	 * @dests, the first whose pattern matches serving (config_for).
	 */
	const char *dests_text;
	struct config_dest *dests;
	unsigned dest_count;
	/*
	 * Last, the large fields, read up to their count, or not at all when not
	 * set: config_parse leaves the rest of them as it finds them.  Read the
	 * paths through config_shared_path and config_log_file.  The names (2 kB)
	 * before the patterns (4.5 kB): both counts, which config_parse writes,
	 * then lie in the page of the fields above.
	 */
	struct target_names names; /* BACKOFF_NAMES */
	struct target_set targets;
	char shared_path[PATH_MAX]; /* BACKOFF_SHARED=PATH */
	char log_file[PATH_MAX];
};

/* BACKOFF_SHARED's state file of its own; "": the user's default. */
static inline const char *config_shared_path(const struct config *cfg)
{
	return cfg->has_shared_path ? cfg->shared_path : "";
}

/* BACKOFF_LOG_FILE; "": standard error. */
static inline const char *config_log_file(const struct config *cfg)
{
	return cfg->has_log_file ? cfg->log_file : "";
}

/*
 * Whether the program named @name (the base name it was started by) is
 * served under the BACKOFF_PROGRAMS list @programs (checked by config_parse):
 * the first name of the list equal to @name decides, served unless it is
 * marked with !; a name in no entry is served only when the list holds
 * exclusions alone.  Pure.
 */
/*
 * Whether @programs (a BACKOFF_PROGRAMS value, not empty) is a list of base
 * names, each but the separators' spaces printable and without a slash, at
 * most NAME_MAX bytes, `!` before an exclusion.  Pure.
 */
bool config_programs_valid(const char *programs);

bool config_program_served(const char *programs, const char *name);

/* One invalid variable: what was wrong, for a single line of output. */
struct config_problem {
	char variable[24];
	char value[100]; /* printable excerpt of the value */
	char message[200];
};

/*
 * The problems of one reading: a count, and room for CONFIG_PROBLEMS_MAX
 * items kept apart from it (10 kB, written only when a value is wrong), so
 * that the reading at load touches no page for them (CONFIG_PROBLEMS_ROOM).
 */
struct config_problems {
	unsigned count;
	struct config_problem *item;
};

/* Declares @name, a struct config_problems, with its room beside it (on the stack). */
#define CONFIG_PROBLEMS_ROOM(name)                              \
	struct config_problem name##_room[CONFIG_PROBLEMS_MAX]; \
	struct config_problems name = { .count = 0, .item = name##_room }

/* Looks a variable up; returns NULL when it is unset. */
typedef const char *config_lookup_fn(const char *name, void *ctx);

/*
 * Fill @cfg from the variables @lookup returns: defaults, then the preset of
 * BACKOFF_POLICY, then each explicit variable.  An invalid value is recorded in
 * @problems and leaves that field at its preset value.  Pure: reads nothing
 * but @lookup; never fails.  A NULL @lookup: nothing is set (the defaults).
 */
void config_parse(config_lookup_fn *lookup, void *ctx, struct config *cfg,
		  struct config_problems *problems);

/* The most entries of BACKOFF_DESTINATIONS. */
#define CONFIG_DESTS_MAX 8

/* One entry of BACKOFF_DESTINATIONS: its destinations, and the configuration they get. */
struct config_dest {
	struct target_set match;
	struct config cfg; /* the global one with the entry's settings; its own dests: none */
};

/*
 * Set the variable @name (BACKOFF_TIMEOUT, ...) of @cfg to @value, as
 * config_parse does: 0, or -1 with why it was refused in @why.  Pure.
 */
int config_set_variable(struct config *cfg, const char *name, const char *value, char *why,
			size_t why_size);

/* The lookup of a program that reads its own environment as it is (getenv). */
static inline const char *config_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

/*
 * A printable excerpt of @value into @out (@size bytes): control and
 * non-ASCII bytes as \xNN, a long value cut and marked.  Pure.
 */
void config_excerpt(char *out, size_t size, const char *value);

/*
 * The name of the NULL-ended @names that @word (@len bytes) most likely
 * misspells: the nearest within a third of the longer's length and 3 edits
 * (insertion, deletion, substitution, neighbours swapped; case ignored), or
 * NULL.  Pure.
 */
const char *config_nearest(const char *word, size_t len, const char *const *names);

/*
 * A duration as the BACKOFF_* variables take it ("250ms", "2s", "1.5m",
 * "1h"; a bare number only if 0) into *out, within [@min_ms, @max_ms]: 0,
 * else -1.  Pure.
 */
int config_parse_duration(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out);

/* Add the problem of @name's @value (said as an excerpt): @message. */
void config_add_problem(struct config_problems *problems, const char *name, const char *value,
			const char *message);

/* Format @p as one line without a newline: backoff: NAME="value": message */
size_t config_problem_format(const struct config_problem *p, char *buf, size_t size);

/* Whether @err is in @set. */
bool config_errset_has(const struct config_errset *set, int err);

/* Put @err into @set (@on) or take it out; @err within (0, CONFIG_ERRNO_MAX). */
void config_errset_put(struct config_errset *set, int err, bool on);

/* The default retryable connect errors: @inet's (TCP) and @unix_set's (AF_UNIX). */
void config_errors_default(struct config_errset *inet, struct config_errset *unix_set);

/* Whether @err says a call must not be repeated as it was (EINTR, EINVAL, ...): never retried. */
bool config_errno_never_retried(int err);

/* The errors worth another attempt of a connect to an address of @family. */
static inline const struct config_errset *config_retryable(const struct config *cfg, int family)
{
	return family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet;
}

/*
 * Fill @out with the errors worth another attempt of a send that sent nothing
 * (it returned -1) on a blocking socket of @family and @type; @addressed: the
 * call names its destination (sendto, msg_name).  With AF_UNSPEC and type 0:
 * every error retried on some socket, a check that needs no system call.
 * Pure.
 */
void config_send_errors(int family, int type, bool addressed, struct config_errset *out);

/*
 * What a name lookup's result is to the retry loop: the resolve hooks
 * translate EAI_AGAIN and TRY_AGAIN into CONFIG_DNS_AGAIN; the resolver's
 * "no such name" (EAI_NONAME, HOST_NOT_FOUND) into CONFIG_DNS_NONAME and
 * "no address for it" (EAI_NODATA, NO_DATA) into CONFIG_DNS_NODATA; every
 * other failure into CONFIG_DNS_FAILED, which ends the retries at once.
 */
enum config_dns_result {
	CONFIG_DNS_OK = 0,
	CONFIG_DNS_AGAIN = 1,
	CONFIG_DNS_FAILED = 2,
	CONFIG_DNS_NONAME = 3,
	CONFIG_DNS_NODATA = 4,
};

/*
 * Fill @out with the results worth another attempt of a lookup of @name
 * (NULL: none, as a numeric host or a service alone): temporary failures
 * always; "no such name" and "no address" only when @name matches a pattern
 * of BACKOFF_NAMES, so that a typo is not waited for.  Pure.
 */
void config_dns_errors(const struct config *cfg, const char *name, struct config_errset *out);

/*
 * Set by the launcher once it has said the unknown BACKOFF_* names of its
 * environment: the processes of the tree it starts do not say them again.
 */
#define CONFIG_NAMES_SAID_ENV "LIBBACKOFF_NAMES_SAID"

/*
 * Every variable name in the documented order, an empty name last; in place
 * rather than pointers, which would be a relocation each at every load.
 */
#define CONFIG_VARIABLES 30	/* config_variables, without its empty name */
#define CONFIG_VARIABLE_SIZE 24 /* the longest name, BACKOFF_ATTEMPT_TIMEOUT, and its NUL */
extern const char config_variables[CONFIG_VARIABLES + 1][CONFIG_VARIABLE_SIZE];

/* The first bad lines of the host-wide file that are said; the rest are counted. */
#define CONFIG_FILE_BAD_MAX 4

/* A line of the host-wide file that sets nothing. */
struct config_file_bad {
	unsigned line; /* from 1 */
	char message[160];
};

/* The host-wide settings file, parsed: the values its lines give. */
struct config_file {
	const char *value[CONFIG_VARIABLES]; /* by index in config_variables; NULL: not set */
	unsigned bad_count;		     /* bad lines, all of them */
	struct config_file_bad bad[CONFIG_FILE_BAD_MAX];
};

/*
 * Parse the file's @len bytes at @text, which has room for one byte more,
 * into @out: a line NAME=value sets the variable NAME (a later line wins);
 * blank lines and lines starting with # (after spaces and tabs) say nothing;
 * any other line, one naming no variable or holding a NUL byte, is bad.  The
 * value is the rest of the line, as is: each line's end in @text is
 * overwritten with a NUL, and @out points into @text.  Pure.
 */
void config_file_parse(char *text, size_t len, struct config_file *out);

/* A config_lookup_fn over @ctx, a struct config_file: the value its lines give @name. */
const char *config_file_lookup(const char *name, void *ctx);

/* A BACKOFF_* name in the environment that nothing reads: a typo, most often. */
struct config_unknown {
	char name[72];	  /* printable excerpt of the name */
	char message[80]; /* unknown variable (did you mean BACKOFF_TIMEOUT?) */
};

/*
 * Whether the environment entry @entry (NAME=value) names a BACKOFF_* variable
 * that no part of libbackoff reads; if so, fill @out, naming the known variable
 * it most likely misspells.  Other entries are never unknown.  Pure.
 */
bool config_unknown_entry(const char *entry, struct config_unknown *out);

typedef void config_unknown_fn(const struct config_unknown *u, void *ctx);

/*
 * Call @report for each entry of @env (NULL-terminated, as environ) that
 * config_unknown_entry finds, in order; returns how many there were.
 */
unsigned config_unknown_scan(char *const *env, config_unknown_fn *report, void *ctx);

/* The report of config_unknown_scan that every program makes: one log line a name. */
static inline void config_say_unknown(const struct config_unknown *u, void *ctx)
{
	(void)ctx;
	log_config_name(u->name, u->message);
}

/*
 * Apply the preset @name of BACKOFF_POLICY to @cfg (its policy, retries,
 * timeouts and protocols): its policy, or NULL and @cfg untouched if there is
 * no such preset.  A NULL @name: the default preset.
 */
const struct policy *config_preset_apply(struct config *cfg, const char *name);

#endif
