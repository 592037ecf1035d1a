/* backoff: the launcher; reads its options into BACKOFF_* variables, then runs the command. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "supervise/launch.h"
#include "supervise/run.h"
#include "tool/wait.h"

#ifndef BACKOFF_VERSION
#define BACKOFF_VERSION "0.0.0"
#endif

/*
 * Where make install put the library: set when the installed copy is built,
 * empty in a source tree's build.
 */
#ifndef LAUNCHER_LIBDIR
#define LAUNCHER_LIBDIR ""
#endif

static const char usage_line[] =
	"usage: backoff [options] [--] command [args...] (backoff --help for more)\n";

/* The usage line a command-line error ends with: backoff wait's once that is the command. */
static const char *usage = usage_line;

static const char *const help[] = {
#include "tool/launcher-help.inc"
};

/* Every variable the launcher can set, in the order --print-env writes them. */
static const char *const all_vars[] = { "BACKOFF",
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
					"BACKOFF_DESTINATIONS",
					"BACKOFF_NONBLOCK",
					"BACKOFF_SEND",
					"BACKOFF_DNS",
					"BACKOFF_NAMES",
					"BACKOFF_LOG",
					"BACKOFF_LOG_FILE",
					"BACKOFF_LOG_FORMAT",
					"BACKOFF_SEED",
					"BACKOFF_STATS",
					"BACKOFF_ENGINE",
					"BACKOFF_STRICT",
					"BACKOFF_SHARED",
					"BACKOFF_LOCAL_PROBE",
					"BACKOFF_REPLAY",
					"BACKOFF_EARLY_CLOSE",
					"BACKOFF_RUN",
					"BACKOFF_PROTOCOLS",
					"BACKOFF_PROGRAMS",
					NULL };

/* The options that take a value, and the variable each sets (NULL: --attempts, --for). */
static const struct option_var {
	const char *name;
	const char *var;
} valued[] = {
	{ "base", "BACKOFF_BASE" },
	{ "cap", "BACKOFF_CAP" },
	{ "multiplier", "BACKOFF_MULTIPLIER" },
	{ "jitter", "BACKOFF_JITTER" },
	{ "retries", "BACKOFF_RETRIES" },
	{ "timeout", "BACKOFF_TIMEOUT" },
	{ "attempt-timeout", "BACKOFF_ATTEMPT_TIMEOUT" },
	{ "policy", "BACKOFF_POLICY" },
	{ "errors", "BACKOFF_ERRORS" },
	{ "targets", "BACKOFF_TARGETS" },
	{ "destinations", "BACKOFF_DESTINATIONS" },
	{ "log", "BACKOFF_LOG" },
	{ "log-file", "BACKOFF_LOG_FILE" },
	{ "seed", "BACKOFF_SEED" },
	{ "nonblock", "BACKOFF_NONBLOCK" },
	{ "send", "BACKOFF_SEND" },
	{ "replay", "BACKOFF_REPLAY" },
	{ "early-close", "BACKOFF_EARLY_CLOSE" },
	{ "run", "BACKOFF_RUN" },
	{ "protocols", "BACKOFF_PROTOCOLS" },
	{ "programs", "BACKOFF_PROGRAMS" },
	{ "dns", "BACKOFF_DNS" },
	{ "names", "BACKOFF_NAMES" },
	{ "engine", "BACKOFF_ENGINE" },
	{ "shared", "BACKOFF_SHARED" },
	{ "local-probe", "BACKOFF_LOCAL_PROBE" },
	{ "attempts", NULL },
	{ "for", NULL },
};

/* The options that take none. */
static const char *const flags[] = { "json",	 "stats",     "strict", "off",
				     "schedule", "print-env", "help",	"version" };

enum mode { MODE_RUN, MODE_SCHEDULE, MODE_PRINT_ENV };

static const char *const mode_names[] = { "run", "schedule", "print-env" };

/* What the options asked for. */
struct options {
	enum mode mode;
	const char *attempts; /* --attempts, or NULL */
	const char *dest_for; /* --for, or NULL */
	bool verbose;	      /* -v seen once: a second means debug */
	bool off;	      /* --off: BACKOFF=off, or with --print-env the lines that undo it */
	bool wait;	      /* backoff wait: its --help */
	char set[1024];	      /* names of the variables set, each followed by a space */
	size_t set_len;
};

static _Noreturn void die(const char *message, const char *detail)
{
	fprintf(stderr, "backoff: %s%s\n", message, detail ? detail : "");
	exit(2);
}

/* "backoff: " and the message, then the usage line; exit 2. */
static _Noreturn void usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void usage_error(const char *format, ...)
{
	va_list ap;

	fputs("backoff: ", stderr);
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	fputc('\n', stderr);
	fputs(usage, stderr);
	exit(2);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* "unknown option A", with the option it most likely misspells; exit 2. */
static _Noreturn void unknown_option(const char *a)
{
	const char *names[N(valued) + N(flags) + 1], *eq = strchr(a, '='), *near;
	size_t i, n = 0, len = eq ? (size_t)(eq - a) : strlen(a);

	for (i = 0; i < N(valued); i++)
		names[n++] = valued[i].name;
	for (i = 0; i < N(flags); i++)
		names[n++] = flags[i];
	names[n] = NULL;
	near = a[0] == '-' && a[1] == '-' ? config_nearest(a + 2, len - 2, names) : NULL;
	if (near)
		usage_error("unknown option %s (did you mean --%s?)", a, near);
	usage_error("unknown option %s", a);
}

/* Set and export @var, and remember it for --print-env and the check of values. */
static void mark_set(struct options *o, const char *var, const char *value)
{
	size_t n = strlen(var);
	char key[64];

	if (setenv(var, value, 1) != 0)
		die("cannot set ", var);
	snprintf(key, sizeof(key), " %s ", var);
	if (strstr(o->set, key))
		return;
	if (o->set_len == 0)
		o->set[o->set_len++] = ' ';
	if (o->set_len + n + 2 > sizeof(o->set))
		die("too many options", NULL);
	memcpy(o->set + o->set_len, var, n);
	o->set_len += n;
	o->set[o->set_len++] = ' ';
	o->set[o->set_len] = '\0';
}

/* @path made absolute, so that it keeps working after the program's chdir. */
static void set_absolute(struct options *o, const char *var, const char *path)
{
	char cwd[PATH_MAX], joined[PATH_MAX * 2];
	const char *pwd = getenv("PWD");
	struct stat a, b;

	if (path[0] == '/') {
		mark_set(o, var, path);
		return;
	}
	/* $PWD when it names the current directory, as the shell's ${PWD} did. */
	if (!pwd || pwd[0] != '/' || stat(pwd, &a) != 0 || stat(".", &b) != 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		if (!getcwd(cwd, sizeof(cwd)))
			die("cannot read the current directory: ", strerror(errno));
		pwd = cwd;
	}
	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", pwd, path) >= sizeof(joined))
		die("path too long: ", path);
	mark_set(o, var, joined);
}

/* Apply the option --@name (an entry of valued[]) with @value. */
static void set_option(struct options *o, const struct option_var *opt, const char *value)
{
	if (!*value)
		usage_error("option --%s needs a value", opt->name);
	if (!opt->var && strcmp(opt->name, "for") == 0)
		o->dest_for = value;
	else if (!opt->var)
		o->attempts = value;
	/* A --shared file is named with a slash (./state); anything else is a switch. */
	else if (strcmp(opt->name, "log-file") == 0 ||
		 (strcmp(opt->name, "shared") == 0 && strchr(value, '/')))
		set_absolute(o, opt->var, value);
	else
		mark_set(o, opt->var, value);
}

/* Choose --schedule or --print-env, once. */
static void set_mode(struct options *o, enum mode mode)
{
	if (o->mode != MODE_RUN && o->mode != mode)
		usage_error("--%s and --%s cannot be combined", mode_names[o->mode],
			    mode_names[mode]);
	o->mode = mode;
}

static const struct option_var *find_valued(const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (strlen(valued[i].name) == n && strncmp(valued[i].name, name, n) == 0)
			return &valued[i];
	return NULL;
}

static bool is_flag(const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strlen(flags[i]) == n && strncmp(flags[i], name, n) == 0)
			return true;
	return false;
}

static void print_help(const struct options *o)
{
	size_t i;

	if (o->wait) {
		wait_print_help(stdout);
		return;
	}
	for (i = 0; i < sizeof(help) / sizeof(help[0]); i++)
		fputs(help[i], stdout);
}

/*
 * Apply the options of @argv from @i on; returns the index of the first word
 * after them (after "--", then *dashdash is set, or the first word that is
 * not an option).
 */
static int parse_options(struct options *o, int i, int argc, char **argv, bool *dashdash)
{
	for (; i < argc; i++) {
		const char *a = argv[i], *eq;
		const struct option_var *opt;

		if (strcmp(a, "--") == 0) {
			*dashdash = true;
			return i + 1;
		}
		if (a[0] != '-')
			return i;
		if (a[1] == '-' && (eq = strchr(a, '=')) != NULL) {
			opt = find_valued(a + 2, (size_t)(eq - a - 2));
			if (opt) {
				set_option(o, opt, eq + 1);
				continue;
			}
			if (is_flag(a + 2, (size_t)(eq - a - 2)))
				usage_error("option %.*s takes no value", (int)(eq - a), a);
			unknown_option(a);
		}
		if (a[1] == '-' && (opt = find_valued(a + 2, strlen(a + 2))) != NULL) {
			if (i + 1 >= argc)
				usage_error("option %s needs a value", a);
			set_option(o, opt, argv[++i]);
		} else if (strcmp(a, "--json") == 0) {
			mark_set(o, "BACKOFF_LOG_FORMAT", "json");
		} else if (strcmp(a, "--stats") == 0) {
			mark_set(o, "BACKOFF_STATS", "1");
		} else if (strcmp(a, "--strict") == 0) {
			mark_set(o, "BACKOFF_STRICT", "1");
		} else if (strcmp(a, "--off") == 0) {
			mark_set(o, "BACKOFF", "off");
			o->off = true;
		} else if (strcmp(a, "-v") == 0) {
			/* -v -v means -vv. */
			mark_set(o, "BACKOFF_LOG", o->verbose ? "debug" : "info");
			o->verbose = true;
		} else if (strcmp(a, "-vv") == 0) {
			mark_set(o, "BACKOFF_LOG", "debug");
		} else if (strcmp(a, "-q") == 0) {
			mark_set(o, "BACKOFF_LOG", "error");
		} else if (strcmp(a, "--schedule") == 0) {
			set_mode(o, MODE_SCHEDULE);
		} else if (strcmp(a, "--print-env") == 0) {
			set_mode(o, MODE_PRINT_ENV);
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			print_help(o);
			exit(0);
		} else if (strcmp(a, "--version") == 0) {
			printf("backoff (libbackoff) %s\n", BACKOFF_VERSION);
			exit(0);
		} else {
			unknown_option(a);
		}
	}
	return i;
}

/* Whether @path is a regular file (test -f). */
static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Whether @dir followed by @tail, written into @buf (PATH_MAX bytes), is a regular file. */
static bool join_is_file(char *buf, const char *dir, const char *tail)
{
	size_t n = strlen(dir), t = strlen(tail);

	if (n + t >= PATH_MAX)
		return false;
	memcpy(buf, dir, n);
	memcpy(buf + n, tail, t + 1);
	return is_file(buf);
}

/*
 * The library: BACKOFF_LIBRARY, else an installed copy next to this program
 * (bin/../lib/libbackoff), else the build this program belongs to (a source
 * tree's build/), else where make install put it; exit 2 if none.  Written
 * into @buf.
 */
static const char *find_library(char *buf)
{
	const char *env = getenv("BACKOFF_LIBRARY"), *libdir = LAUNCHER_LIBDIR;
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if (!is_file(env)) {
			fprintf(stderr, "backoff: BACKOFF_LIBRARY=%s: no such file\n", env);
			exit(2);
		}
		return env;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		die("cannot read /proc/self/exe: ", strerror(errno));
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	if (join_is_file(buf, exe, "/../lib/libbackoff/libbackoff.so") ||
	    join_is_file(buf, exe, "/libbackoff.so"))
		return buf;
	if (*libdir) {
		if (join_is_file(buf, libdir, "/libbackoff.so"))
			return buf;
		fprintf(stderr,
			"backoff: cannot find libbackoff.so in %s/../lib/libbackoff or %s (set "
			"BACKOFF_LIBRARY)\n",
			exe, libdir);
		exit(2);
	}
	die("cannot find libbackoff.so in ../build (run make, or set BACKOFF_LIBRARY)", NULL);
}

/* Run @command under the supervisor engine (LD_PRELOAD=@preload too, if not NULL). */
static int supervise(const char *preload, char **command)
{
	return supervise_run(preload, NULL, command);
}

/*
 * backoff [options] wait TARGET... [-- command]: the words after "wait" at
 * @i, options and targets mixed, up to "--" and the command.
 */
static int wait_command(struct options *o, int i, int argc, char **argv)
{
	char **targets = calloc((size_t)argc, sizeof(*targets));
	bool dashdash = false;
	size_t n = 0;

	if (!targets)
		die("out of memory", NULL);
	usage = wait_usage_line;
	o->wait = true;
	while (i < argc && !dashdash) {
		i = parse_options(o, i, argc, argv, &dashdash);
		if (!dashdash && i < argc)
			targets[n++] = argv[i++];
	}
	if (o->mode != MODE_RUN)
		usage_error("--%s and wait cannot be combined", mode_names[o->mode]);
	if (o->attempts || o->dest_for)
		usage_error("option --%s needs --schedule", o->attempts ? "attempts" : "for");
	if (n == 0)
		usage_error("wait: no target given");
	/* The variables set from options: a bad value of one is a command-line error. */
	if (o->set_len > 0 && setenv("LIBBACKOFF_OPTION_VARS", o->set, 1) != 0)
		die("cannot set LIBBACKOFF_OPTION_VARS", NULL);
	return wait_run(targets, n, dashdash && i < argc ? argv + i : NULL);
}

int main(int argc, char **argv)
{
	struct options o = { .mode = MODE_RUN };
	bool dashdash = false;
	char buf[PATH_MAX];
	const char *lib;
	int first;

	/* backoff status ...: the state file's reader, with its own options. */
	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		launch_status(find_library(buf), argv + 2);
	first = parse_options(&o, 1, argc, argv, &dashdash);
	/*
	 * A run of its own for the command and everything it starts (or the
	 * shell that evaluates --print-env's lines), unless one is named: its
	 * processes share each destination's spent budget.
	 */
	if (!getenv("BACKOFF_RUN")) {
		struct timespec ts;
		char run[64];

		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(run, sizeof(run), "run-%ld-%lld%09ld", (long)getpid(),
			 (long long)ts.tv_sec, ts.tv_nsec);
		mark_set(&o, "BACKOFF_RUN", run);
	}
	/* backoff wait ...: in this process, with the options before it and after it. */
	if (!dashdash && first < argc && strcmp(argv[first], "wait") == 0)
		return wait_command(&o, first + 1, argc, argv);
	if (o.mode == MODE_RUN) {
		if (first >= argc)
			usage_error("no command given");
		if (o.attempts || o.dest_for)
			usage_error("option --%s needs --schedule",
				    o.attempts ? "attempts" : "for");
	} else {
		if (first < argc)
			usage_error("--%s runs nothing, but a command was given: %s",
				    mode_names[o.mode], argv[first]);
		if ((o.attempts || o.dest_for) && o.mode != MODE_SCHEDULE)
			usage_error("option --%s needs --schedule",
				    o.attempts ? "attempts" : "for");
	}
	lib = find_library(buf);
	/* The variables set from options: a bad value of one is a command-line error. */
	if (o.set_len > 0 && setenv("LIBBACKOFF_OPTION_VARS", o.set, 1) != 0)
		die("cannot set LIBBACKOFF_OPTION_VARS", NULL);
	if (o.mode == MODE_SCHEDULE)
		launch_schedule(lib, o.attempts, o.dest_for);
	if (o.mode == MODE_PRINT_ENV)
		return o.off ? launch_print_off(all_vars) : launch_print_env(lib, all_vars);
	return launch(lib, argv + first, supervise);
}
