/* The launcher's work after its options: the build for the command, the checks, the engine. */
#include "supervise/launch.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_dests.h"
#include "sys/elf.h"
#include "sys/cookie.h"
#include "sys/log.h"

/* scripts/backoff's own usage line, for a bad value given as one of its options. */
static const char launcher_usage[] =
	"usage: backoff [options] [--] command [args...] (backoff --help for more)\n";

/* The variables scripts/backoff set from its options, separated by spaces. */
#define OPTION_VARS_ENV "LIBBACKOFF_OPTION_VARS"

/* Whether the variable @name was set from an option of the command line (@set: the list). */
static bool from_option(const char *set, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = set; p && (p = strstr(p, name)) != NULL; p += n)
		if ((p == set || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

/* The build that the launcher runs from: the library, its directory, the supervisor. */
struct build {
	char dir[PATH_MAX];
	char lib[PATH_MAX];
	char tool[PATH_MAX];
	char supervisor[PATH_MAX];
};

/* "backoff: " and the parts that are not NULL, on one line; exit 2. */
static void die(const char *p1, const char *p2, const char *p3, const char *p4)
	__attribute__((noreturn));

static void die(const char *p1, const char *p2, const char *p3, const char *p4)
{
	fprintf(stderr, "backoff: %s%s%s%s\n", p1, p2 ? p2 : "", p3 ? p3 : "", p4 ? p4 : "");
	exit(2);
}

static void join(char *buf, const char *dir, const char *name)
{
	if ((size_t)snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
		die(dir, "/", name, ": path too long");
}

/* Point @b at the build in @dir (already absolute and physical) for library @name. */
static void build_at(struct build *b, const char *dir, const char *name)
{
	snprintf(b->dir, sizeof(b->dir), "%s", dir);
	join(b->lib, dir, name);
	join(b->tool, dir, "backoff-schedule");
	join(b->supervisor, dir, "backoff-supervise");
}

/*
 * The command's file as `command -v` finds it: @name itself if it has a
 * slash, else the first executable of that name on PATH; NULL otherwise.
 */
static const char *command_path(const char *name, char *buf)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(name, '/'))
		return name;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = end + 1) {
		struct stat st;
		size_t n;

		end = strchr(p, ':');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0)
			snprintf(buf, PATH_MAX, "%s", name);
		else if ((size_t)snprintf(buf, PATH_MAX, "%.*s/%s", (int)n, p, name) >= PATH_MAX)
			buf[0] = '\0';
		if (buf[0] && stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return buf;
		if (!end)
			return NULL;
	}
}

static bool is_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '/' || c == '.' || c == '_' || c == '-';
}

/* Whether @w (@n bytes) reads as a loader's path: /any/ld[-.]name.so.N */
static bool is_loader(const char *w, size_t n)
{
	const char *slash = NULL, *rest, *so = NULL;
	size_t i, len;

	for (i = 0; i < n; i++)
		if (w[i] == '/')
			slash = w + i;
	if (n == 0 || w[0] != '/' || !slash || slash == w)
		return false;
	rest = slash + 1;
	len = n - (size_t)(rest - w);
	if (len < 4 || rest[0] != 'l' || rest[1] != 'd' || (rest[2] != '-' && rest[2] != '.'))
		return false;
	for (i = 3; i + 4 <= len; i++)
		if (memcmp(rest + i, ".so.", 4) == 0)
			so = rest + i;
	if (!so || so + 4 == rest + len)
		return false;
	for (so += 4; so < rest + len; so++)
		if (*so < '0' || *so > '9')
			return false;
	return true;
}

/*
 * "musl" or "glibc", by the loader that @file (or, for a script, its #!
 * interpreter) names in its first page; NULL for a static or unreadable file.
 * The same reading as the launcher's shell, which it replaces.
 */
static const char *c_library(const char *file)
{
	char page[4097];
	ssize_t n;
	size_t i, start;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, page, 4096);
	close(fd);
	if (n >= 2 && page[0] == '#' && page[1] == '!') {
		char interp[PATH_MAX];

		page[n] = '\0';
		/* The first line's first word after "#!" and blanks, as [[:space:]] splits it. */
		for (i = 2; page[i] != '\n' && isspace((unsigned char)page[i]); i++)
			;
		for (start = i; page[i] && !isspace((unsigned char)page[i]); i++)
			;
		if (i == start || i - start >= sizeof(interp))
			return NULL;
		memcpy(interp, page + start, i - start);
		interp[i - start] = '\0';
		fd = open(interp, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return NULL;
		n = read(fd, page, 4096);
		close(fd);
	}
	for (i = 0; n > 0 && i < (size_t)n;) {
		for (start = i; i < (size_t)n && is_name_char((unsigned char)page[i]); i++)
			;
		if (i > start && is_loader(page + start, i - start)) {
			size_t k;

			for (k = start; k + 9 <= i; k++)
				if (memcmp(page + k, "/ld-musl-", 9) == 0)
					return "musl";
			return "glibc";
		}
		i += i == start;
	}
	return NULL;
}

/*
 * Move @b to the build for the C library of @command (a static one: that of
 * /bin/sh); exit 2 if there is none.  musl's loader cannot load a glibc
 * build, nor glibc's a musl build: the program would not start.
 */
static void pick_c_library(struct build *b, const char *command)
{
	char buf[PATH_MAX], other[PATH_MAX];
	const char *path = command_path(command, buf), *want = path ? c_library(path) : NULL;
	const char *log = getenv("BACKOFF_LOG");
	size_t len = strlen(b->dir);
	const char *have = len >= 5 && strcmp(b->dir + len - 5, "/musl") == 0 ? "musl" : "glibc";
	char *slash;

	if (!want)
		want = c_library("/bin/sh");
	if (!want || strcmp(want, have) == 0)
		return;
	/* The musl build lives in musl/ next to the glibc build, in the tree and installed. */
	if (strcmp(want, "musl") == 0) {
		join(other, b->dir, "musl");
	} else {
		snprintf(other, sizeof(other), "%s", b->dir);
		slash = strrchr(other, '/');
		if (slash && slash != other)
			*slash = '\0';
		else if (slash)
			slash[1] = '\0';
	}
	join(buf, other, "libbackoff.so");
	if (access(buf, F_OK) != 0)
		goto out_none;
	join(buf, other, "backoff-schedule");
	if (!c_library(buf) || strcmp(c_library(buf), want) != 0)
		goto out_none;
	build_at(b, other, "libbackoff.so");
	if (log && strcmp(log, "debug") == 0)
		fprintf(stderr, "backoff: %s is linked against %s: preloading %s\n", command, want,
			b->lib);
	return;
out_none:
	fprintf(stderr,
		"backoff: %s is linked against %s, %s against %s: no %s build next to it "
		"(make musl)\n",
		command, want, b->lib, have, want);
	exit(2);
}

/*
 * Check the environment with the library's own parser, as backoff-schedule
 * --check does: each problem on a line, then exit 2, with the usage line
 * only when a bad value came from an option (an environment's is no
 * command-line error).
 * The unknown BACKOFF_* names are said here, once for the launched tree.
 */
void launch_validate(struct config *cfg)
{
	static struct config_dest dests[CONFIG_DESTS_MAX]; /* served by *cfg */
	const char *options = getenv(OPTION_VARS_ENV);
	CONFIG_PROBLEMS_ROOM(problems);
	bool usage = false;
	unsigned p;

	config_parse(config_getenv, NULL, cfg, &problems);
	config_dests_build(cfg, dests, CONFIG_DESTS_MAX, &problems);
	for (p = 0; p < problems.count; p++) {
		char line[512];

		config_problem_format(&problems.item[p], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
		usage = usage || from_option(options, problems.item[p].variable);
	}
	/* The command does not inherit it. */
	if (options)
		unsetenv(OPTION_VARS_ENV);
	if (problems.count == 0) {
		log_configure(cfg->log_level, cfg->log_json, config_log_file(cfg));
		if (!(config_unknown_scan(environ, config_say_unknown, NULL) > 0 && cfg->strict)) {
			setenv(CONFIG_NAMES_SAID_ENV, "1", 1);
			return;
		}
	}
	if (usage)
		fputs(launcher_usage, stderr);
	exit(2);
}

static void validate(void)
{
	struct config cfg;

	launch_validate(&cfg);
}

/* LD_PRELOAD with @lib in front, or unchanged if it already holds @lib. */
static const char *preload_value(const char *lib, char *buf, size_t size)
{
	const char *current = getenv("LD_PRELOAD"), *p = current;
	size_t n = strlen(lib);

	/* ld.so separates LD_PRELOAD entries with colons or spaces. */
	while (p && *p) {
		size_t w = strcspn(p, ": ");

		if (w == n && memcmp(p, lib, n) == 0)
			return current;
		p += w + (p[w] != '\0');
	}
	if (!current || !*current)
		return lib;
	if ((size_t)snprintf(buf, size, "%s:%s", lib, current) >= size)
		die("LD_PRELOAD too long", NULL, NULL, NULL);
	return buf;
}

static int exec_command(char **command)
{
	execvp(command[0], command);
	fprintf(stderr, "backoff: %s: %s\n", command[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

/* The preload engine alone, as the launcher has always run it. */
static int run_preload(const char *preload, char **command)
{
	setenv("LD_PRELOAD", preload, 1);
	return exec_command(command);
}

/* What exec(@command) would run (elf_exec_kind), with @command looked up on PATH. */
static enum elf_kind command_kind(const char *command, bool *privileged)
{
	char buf[PATH_MAX];
	const char *path = command_path(command, buf);

	return elf_exec_kind(path ? path : command, privileged);
}

/*
 * The supervisor engine: this process's own, or, when the command needs
 * another build (musl's, not in @here), that build's supervisor in its place.
 */
static int run_supervisor(const struct build *b, const char *here, const char *preload,
			  char **command, launch_supervise_fn *supervise)
{
	size_t n = 0, i = 0;
	char **argv;

	if (strcmp(b->dir, here) == 0)
		return supervise(preload, command);
	while (command[n])
		n++;
	argv = calloc(n + 5, sizeof(*argv));
	if (!argv)
		die(strerror(errno), NULL, NULL, NULL);
	argv[i++] = (char *)b->supervisor;
	if (preload) {
		argv[i++] = "--preload";
		argv[i++] = (char *)preload;
	}
	argv[i++] = "--";
	memcpy(argv + i, command, (n + 1) * sizeof(*argv));
	execv(b->supervisor, argv);
	die(b->supervisor, ": ", strerror(errno), NULL);
}

/*
 * Set @real to the directory of the library @candidate (as the launcher
 * found it, not yet made absolute), absolute and physical, so that it keeps
 * working after a chdir ("" for /); exit 2 if it cannot be entered.
 * Returns the library's file name.
 */
static const char *candidate_dir(const char *candidate, char *real)
{
	char dir[PATH_MAX];
	const char *name = strrchr(candidate, '/');

	if (!name)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", name == candidate ? 1 : (int)(name - candidate),
			 candidate);
	if (!realpath(dir, real))
		die("cannot enter the directory of ", candidate, NULL, NULL);
	if (strcmp(real, "/") == 0)
		real[0] = '\0';
	return name ? name + 1 : candidate;
}

/* Point @b at the build of the library @candidate, @real its directory; exit 2 if unusable. */
static void find_build(const char *candidate, struct build *b, char *real)
{
	const char *name = candidate_dir(candidate, real);

	memset(b, 0, sizeof(*b));
	build_at(b, real, name);
	if (strpbrk(b->lib, " :"))
		die(b->lib, ": LD_PRELOAD cannot hold a path with a space or a colon", NULL, NULL);
	if (access(b->tool, X_OK) != 0)
		die("cannot find backoff-schedule next to ", b->lib, NULL, NULL);
}

_Noreturn void launch_status(const char *candidate, char **args)
{
	char real[PATH_MAX], status[PATH_MAX], lib[PATH_MAX];
	const char *name = candidate_dir(candidate, real);
	size_t n = 0;
	char **argv;

	join(status, real, "backoff-status");
	join(lib, real, name);
	if (access(status, X_OK) != 0)
		die("cannot find backoff-status next to ", lib, NULL, NULL);
	unsetenv("LD_PRELOAD");
	while (args[n])
		n++;
	argv = calloc(n + 2, sizeof(*argv));
	if (!argv)
		die(strerror(errno), NULL, NULL, NULL);
	argv[0] = status;
	memcpy(argv + 1, args, (n + 1) * sizeof(*argv));
	execv(status, argv);
	die(status, ": ", strerror(errno), NULL);
}

_Noreturn void launch_schedule(const char *candidate, const char *attempts, const char *dest_for)
{
	char real[PATH_MAX];
	char *args[6];
	struct build b;
	int n = 0;

	find_build(candidate, &b, real);
	pick_c_library(&b, "/bin/sh");
	unsetenv("LD_PRELOAD");
	args[n++] = (char *)b.tool;
	if (attempts) {
		args[n++] = "--attempts";
		args[n++] = (char *)attempts;
	}
	if (dest_for) {
		args[n++] = "--for";
		args[n++] = (char *)dest_for;
	}
	args[n] = NULL;
	execv(b.tool, args);
	die(b.tool, ": ", strerror(errno), NULL);
}

/* @value in single quotes for a shell, each single quote within written '\\''. */
static void print_quoted(const char *value)
{
	putchar('\'');
	for (; *value; value++)
		if (*value == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*value);
	putchar('\'');
}

int launch_print_env(const char *candidate, const char *const *names)
{
	char real[PATH_MAX], buf[PATH_MAX * 2], options[1024];
	const char *set = getenv(OPTION_VARS_ENV), *engine = getenv("BACKOFF_ENGINE");
	struct build b;

	/* validate() takes the list from the environment: read first. */
	snprintf(options, sizeof(options), "%s", set ? set : "");
	find_build(candidate, &b, real);
	pick_c_library(&b, "/bin/sh");
	validate();
	fputs("export LD_PRELOAD=", stdout);
	print_quoted(preload_value(b.lib, buf, sizeof(buf)));
	putchar('\n');
	/*
	 * The default engine: the preload of each process runs a program it
	 * cannot reach (Go, static) through the supervisor at its exec, as under
	 * the launcher.
	 */
	if ((!engine || strcmp(engine, "auto") == 0) && access(b.supervisor, X_OK) == 0) {
		fputs("export " SUPERVISOR_PATH_ENV "=", stdout);
		print_quoted(b.supervisor);
		putchar('\n');
	} else {
		/* A shell that evaluated the default's lines before keeps no supervisor. */
		puts("unset " SUPERVISOR_PATH_ENV);
	}
	for (; *names; names++) {
		const char *value = getenv(*names);

		if (!from_option(options, *names) || !value)
			continue;
		printf("export %s=", *names);
		print_quoted(value);
		putchar('\n');
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Whether the LD_PRELOAD entry @p (@n bytes) is a libbackoff library, a build's or an install's. */
static bool is_ours(const char *p, size_t n)
{
	static const char name[] = "libbackoff.so";
	size_t k = sizeof(name) - 1;

	return n >= k && memcmp(p + n - k, name, k) == 0 && (n == k || p[n - k - 1] == '/');
}

int launch_print_off(const char *const *names)
{
	const char *current = getenv("LD_PRELOAD"), *p = current;
	char kept[PATH_MAX * 4];
	size_t len = 0;

	/* LD_PRELOAD without libbackoff's entries, the program's others kept in order. */
	while (p && *p) {
		size_t w = strcspn(p, ": ");

		if (w > 0 && !is_ours(p, w)) {
			if (len + w + 2 > sizeof(kept))
				die("LD_PRELOAD too long", NULL, NULL, NULL);
			if (len > 0)
				kept[len++] = ':';
			memcpy(kept + len, p, w);
			len += w;
		}
		p += w + (p[w] != '\0');
	}
	kept[len] = '\0';
	if (len > 0) {
		fputs("export LD_PRELOAD=", stdout);
		print_quoted(kept);
		putchar('\n');
	} else {
		puts("unset LD_PRELOAD");
	}
	fputs("unset " SUPERVISOR_PATH_ENV, stdout);
	for (; *names; names++)
		printf(" %s", *names);
	putchar('\n');
	return fflush(stdout) == 0 ? 0 : 1;
}

int launch(const char *candidate, char **command, launch_supervise_fn *supervise)
{
	char real[PATH_MAX], buf[PATH_MAX * 2];
	const char *engine = getenv("BACKOFF_ENGINE");
	const char *preload;
	enum elf_kind kind;
	bool privileged;
	struct build b;

	find_build(candidate, &b, real);
	pick_c_library(&b, command[0]);
	validate();
	preload = preload_value(b.lib, buf, sizeof(buf));
	/* BACKOFF_ENGINE has been validated above, by the library's own parser. */
	/* A launcher within a tree of the default engine: the preload alone, as asked. */
	if (engine && strcmp(engine, "preload") == 0) {
		unsetenv(SUPERVISOR_PATH_ENV);
		return run_preload(preload, command);
	}
	if (access(b.supervisor, X_OK) != 0) {
		if (engine && strcmp(engine, "supervise") == 0)
			die("cannot find backoff-supervise next to ", b.lib, NULL, NULL);
		fprintf(stderr,
			"backoff: cannot find backoff-supervise next to %s: the preload alone "
			"retries\n",
			b.lib);
		unsetenv(SUPERVISOR_PATH_ENV);
		return run_preload(preload, command);
	}
	/* The whole tree under this supervisor: no exec of it goes through another. */
	if (engine && strcmp(engine, "supervise") == 0) {
		unsetenv(SUPERVISOR_PATH_ENV);
		return run_supervisor(&b, real, NULL, command, supervise);
	}
	/*
	 * The default engine: the supervisor only for a program the preload does
	 * not reach; the preload in every other process of the tree runs such a
	 * program through it, at its exec.
	 */
	kind = command_kind(command[0], &privileged);
	/* A program of the other C library: that library's build is preloaded (pick_c_library). */
	if (kind == ELF_KIND_FOREIGN)
		kind = ELF_KIND_DYNAMIC;
	/* no_new_privs would stop a set-user-ID command from gaining its privileges. */
	if (privileged && geteuid() != 0)
		fprintf(stderr,
			"backoff: %s is set-user-ID or has file capabilities: the preload alone "
			"retries\n",
			command[0]);
	if (!privileged && elf_kind_needs_supervisor(kind))
		return run_supervisor(&b, real, preload, command, supervise);
	setenv(SUPERVISOR_PATH_ENV, b.supervisor, 1);
	return run_preload(preload, command);
}
