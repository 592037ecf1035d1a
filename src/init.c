/* Load-time set-up: real symbols, configuration, logging, random seeding, fork and exit. */
#include "config/config_dests.h"
#include "init.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "drivers/before.h"
#include "drivers/pending.h"
#include "counters/events.h"
#include "tables/fdtable.h"
#include "facts/share.h"
#include "sys/log.h"
#include "sys/cookie.h"
#include "sys/hostconf.h"
#include "sys/real.h"
#include "sys/rng.h"
#include "sys/startup.h"
#include "sys/kcall.h"

STARTUP_DATA atomic_bool init_done;
struct config init_config;
/* BACKOFF_DESTINATIONS' entries, which init_config serves. */
static struct config_dest init_dests[CONFIG_DESTS_MAX];

STARTUP_DATA static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/*
 * The environment's BACKOFF* entries, found in one pass at load: 23 names
 * looked up one by one, each a walk over the whole environment, cost a
 * process that sets none of them more than the parse itself.  More than
 * ENV_SEEN_MAX of them: each name is looked up in the environment itself.
 * The list ends with NULL, as environ does, for the scan of unknown names.
 */
#define ENV_SEEN_MAX 64
STARTUP_DATA static char *env_seen[ENV_SEEN_MAX + 1];
STARTUP_DATA static size_t env_seen_count;
static bool env_seen_all = true;
STARTUP_DATA static bool env_secure;		/* AT_SECURE: setuid, setgid, capabilities */
STARTUP_DATA static const char *env_supervisor; /* SUPERVISOR_PATH_ENV's value */
STARTUP_DATA const char *init_supervisor;

/*
 * Whether @s begins with the @n bytes of @prefix: here rather than strncmp,
 * whose page of code a process that never connects would fault in at load.
 */
STARTUP_CODE static bool starts_with(const char *s, const char *prefix, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != prefix[i])
			return false;
	return true;
}

STARTUP_CODE static void env_scan(void)
{
	char **e;

	/* Under secure execution secure_getenv answers, with nothing. */
	env_secure = getauxval(AT_SECURE) != 0;
	if (env_secure) {
		env_seen_all = false;
		return;
	}
	for (e = environ; e && *e; e++) {
		/* The first byte before a call: most entries are not ours. */
		if ((*e)[0] == 'L' &&
		    starts_with(*e, SUPERVISOR_PATH_ENV "=", sizeof(SUPERVISOR_PATH_ENV)))
			env_supervisor = *e + sizeof(SUPERVISOR_PATH_ENV);
		if ((*e)[0] != 'B' || !starts_with(*e, "BACKOFF", 7))
			continue;
		if (env_seen_count == ENV_SEEN_MAX) {
			env_seen_all = false;
			return;
		}
		env_seen[env_seen_count++] = *e;
	}
}

/*
 * secure_getenv, over the entries of env_scan: under AT_SECURE (setuid,
 * setgid, capabilities) nothing is read; else the first entry of @name.
 */
static const char *lookup_env(const char *name, void *ctx)
{
	size_t i, n;

	(void)ctx;
	if (!env_seen_all)
		return secure_getenv(name);
	if (env_seen_count == 0) /* the common case: nothing to look through */
		return NULL;
	n = strlen(name);
	for (i = 0; i < env_seen_count; i++)
		if (strncmp(env_seen[i], name, n) == 0 && env_seen[i][n] == '=')
			return env_seen[i] + n + 1;
	return NULL;
}

/*
 * The host-wide settings file, when it is there and taken: its text, which
 * the values point into for the life of the process, and its lines.  In the
 * zero-filled section: a host without the file never touches their pages.
 */
static char hostconf_text[HOSTCONF_MAX + 1];
static struct config_file hostconf;
STARTUP_DATA static const char *hostconf_why; /* the file is there and not taken: why */

/* The environment's value of @name, else the file's (@ctx: &hostconf, or NULL without it). */
static const char *lookup_setting(const char *name, void *ctx)
{
	const char *v = lookup_env(name, NULL);

	return v || !ctx ? v : config_file_lookup(name, ctx);
}

/*
 * Read the host-wide file, where /etc/ld.so.preload's programs, which carry
 * no BACKOFF_* variable, get theirs.  Root's alone: it is read under secure
 * execution too, as the loader reads /etc/ld.so.preload there.  Returns the
 * lookup's context: &hostconf, or NULL when there is nothing to take.
 */
STARTUP_CODE static struct config_file *hostconf_load(void)
{
	size_t len;

	switch (hostconf_read(BACKOFF_HOSTCONF, hostconf_text, &len, &hostconf_why)) {
	case HOSTCONF_READ:
		config_file_parse(hostconf_text, len, &hostconf);
		return &hostconf;
	case HOSTCONF_IGNORED:
		return NULL;
	default:
		hostconf_why = NULL;
		return NULL;
	}
}

/* Say what was wrong with the file, if anything: returns how many lines that took. */
STARTUP_CODE static unsigned hostconf_say(const struct config_file *file)
{
	char line[256];
	unsigned i, n;

	if (hostconf_why) {
		snprintf(line, sizeof(line), "%s %s", BACKOFF_HOSTCONF, hostconf_why);
		log_notice(LOG_LEVEL_WARN, "config", line);
		return 1;
	}
	if (!file)
		return 0;
	n = file->bad_count < CONFIG_FILE_BAD_MAX ? file->bad_count : CONFIG_FILE_BAD_MAX;
	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "%s:%u: %s", BACKOFF_HOSTCONF, file->bad[i].line,
			 file->bad[i].message);
		log_notice(LOG_LEVEL_WARN, "config", line);
	}
	if (file->bad_count > n) {
		snprintf(line, sizeof(line), "%s: %u more bad lines", BACKOFF_HOSTCONF,
			 file->bad_count - n);
		log_notice(LOG_LEVEL_WARN, "config", line);
	}
	return file->bad_count;
}

/* Under the supervisor engine: its PID, from the environment; 0 otherwise. */
static unsigned long supervisor_pid;

/* The digits at the head of @s (strtoul's would be one more import bound in every process). */
STARTUP_CODE static unsigned long leading_number(const char *s)
{
	unsigned long v = 0;

	for (; *s >= '0' && *s <= '9' && v < 0xFFFFFFFFUL; s++)
		v = v * 10 + (unsigned long)(*s - '0');
	return v;
}

/*
 * Under Yama ptrace_scope 1 only an ancestor, or a tracer the process named,
 * may read a process's memory: name the supervisor in every child, so that a
 * Go or static program a preloaded shell or Python starts is covered too
 * (the name survives exec).  Without Yama, EINVAL; nothing to do.
 */
static void name_supervisor_as_tracer(void)
{
	if (supervisor_pid)
		(void)kcall_prctl(PR_SET_PTRACER, (unsigned long)supervisor_pid);
}

/* Every fd open at the fork is shared with the child now, its mode the child's to change too. */
static void at_fork_parent(void)
{
	fdtable_mode_after_fork();
}

static void at_fork_child(void)
{
	fdtable_mode_after_fork();
	name_supervisor_as_tracer();
	rng_after_fork();
	pending_after_fork();
	share_after_fork();
}

/*
 * Say each BACKOFF_* name of the environment that nothing reads (a typo):
 * one pass over the entries env_scan found, at load.  Returns how many
 * there were.
 */
static unsigned warn_unknown_names(void)
{
	/*
	 * Under secure execution no variable is read, so none is unknown; with
	 * no BACKOFF* entry, none is either; under the launcher it has said them
	 * once for the whole tree.
	 */
	if (env_secure || (env_seen_all && env_seen_count == 0) ||
	    secure_getenv(CONFIG_NAMES_SAID_ENV))
		return 0;
	return config_unknown_scan(env_seen_all ? env_seen : environ, config_say_unknown, NULL);
}

/*
 * The name the program was started by, as the kernel knows it: the base name
 * of the file execve ran (AT_EXECFN), which is also what it writes into
 * /proc/self/comm, untruncated and read from the auxiliary vector with no
 * system call.  "" if the kernel gave none.
 */
STARTUP_CODE static const char *program_name(void)
{
	const char *path = (const char *)getauxval(AT_EXECFN), *slash;

	if (!path)
		return "";
	slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/*
 * A program BACKOFF_PROGRAMS leaves out runs as without the library, as under
 * BACKOFF=off, and hears nothing of it either: no line, no exit on a bad
 * value, no supervisor at its exec.
 */
STARTUP_CODE static bool program_served(struct config *cfg)
{
	if (!cfg->programs || config_program_served(cfg->programs, program_name()))
		return true;
	cfg->enabled = false;
	cfg->log_level = LOG_LEVEL_OFF;
	cfg->stats = cfg->strict = false;
	init_supervisor = NULL;
	return false;
}

#ifdef __GLIBC__
/* What glibc's pthread_atfork calls, with the object's handle (sys/dso.c). */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso);
extern void *__dso_handle;
#endif

/*
 * at_fork_parent and at_fork_child around every fork.  glibc's pthread_atfork
 * is a stub linked into the library's code, the only start-up code in its
 * last pages: the call it makes, made here, spares every process that fault.
 */
STARTUP_CODE static void register_fork_handlers(void)
{
#ifdef __GLIBC__
	(void)__register_atfork(NULL, at_fork_parent, at_fork_child, __dso_handle);
#else
	pthread_atfork(NULL, at_fork_parent, at_fork_child);
#endif
}

/*
 * The room for the problems of the configuration read at load: in the
 * zero-filled pages no healthy process touches, where on the stack it made
 * the constructor's frame 10 kB deep, two pages below those the loader had
 * touched (a fault each at every start).
 */
static struct config_problem init_problem_room[CONFIG_PROBLEMS_MAX] PAGE_BSS;

STARTUP_CODE static void init_run(void)
{
	struct config_problems problems = { .count = 0, .item = init_problem_room };
	struct config_file *file;
	const char *cookie;
	unsigned i, unknown = 0, file_bad = 0;
	bool served;

	real_resolve_signal_safe();
	env_scan();
	/* Under the supervisor engine (a seccomp filter is in place): one engine per connect. */
	cookie = lookup_env(COOKIE_ENV, NULL);
	if (cookie && kcall_prctl(PR_GET_SECCOMP, 0) == 2) {
		real_mark_connects();
		supervisor_pid = leading_number(cookie);
		name_supervisor_as_tracer();
	} else {
		/* Not under a filter yet: a program only the supervisor reaches is exec'd through
		 * it. */
		if (!env_seen_all)
			env_supervisor = secure_getenv(SUPERVISOR_PATH_ENV);
		if (env_supervisor && env_supervisor[0] == '/')
			init_supervisor = env_supervisor;
	}
	file = hostconf_load();
	/* Most processes: no BACKOFF_* variable and no file, nothing to look up 30 times. */
	config_parse(file || !env_seen_all || env_seen_count > 0 ? lookup_setting : NULL, file,
		     &init_config, &problems);
	config_dests_build(&init_config, init_dests, CONFIG_DESTS_MAX, &problems);
	served = program_served(&init_config);
	before_configure(&init_config);
	log_configure(init_config.log_level, init_config.log_json, config_log_file(&init_config));
	if (served)
		file_bad = hostconf_say(file);
	for (i = 0; i < problems.count; i++)
		log_config_problem(problems.item[i].variable, problems.item[i].value,
				   problems.item[i].message);
	if (served)
		unknown = warn_unknown_names();
	if ((problems.count > 0 || unknown > 0 || file_bad > 0) && init_config.strict)
		kcall_exit(2);
	rng_configure(init_config.seeded, init_config.seed);
	share_init(&init_config);
	register_fork_handlers();
	atomic_store_explicit(&init_done, true, memory_order_release);
}

void init_run_once(void)
{
	pthread_once(&init_once, init_run);
}

STARTUP_CODE __attribute__((constructor)) static void init_constructor(void)
{
	init_run_once();
}

__attribute__((destructor)) static void init_destructor(void)
{
	struct log_stats s;

	if (!atomic_load_explicit(&init_done, memory_order_acquire) || !init_config.stats ||
	    !init_config.enabled)
		return;
	events_stats_read(&s);
	/* Processes of a tree that retried nothing stay quiet. */
	if (s.calls == 0 && s.unmanaged == 0 && s.early == 0 && s.try_later == 0)
		return;
	log_stats(&s);
}
