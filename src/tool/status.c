/* backoff-status: destinations waited for or known down, from the user's state file (root: all). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_dests.h"
#include "engine/policy.h"
#include "facts/share.h"
#include "config/target.h"
#include "sys/clock.h"
#include "sys/errname.h"
#include "sys/text.h"
#include "tool/status_format.h"
#include "tool/status_procs.h"

#ifndef BACKOFF_VERSION
#define BACKOFF_VERSION "0.0.0"
#endif

/* Exit statuses: as documented in the man page. */
#define EXIT_UNUSABLE 1 /* the state file cannot be read or is not one */
#define EXIT_USAGE 2
#define EXIT_NO_RECORD 3 /* a destination named has no row */

static const char usage[] =
	"usage: backoff-status [--json | --openmetrics] [--all] [--age DUR] [--user NAME]\n"
	"                      [--file PATH] [DEST...]\n"
	"       backoff-status --processes [--json] [--user NAME]\n"
	"Shows the destinations the user's processes wait for or found down, from the\n"
	"state file of shared fate (BACKOFF_SHARED=/path names another).  Read-only.\n"
	"  --json          one JSON object per destination and line\n"
	"  --openmetrics   OpenMetrics text (gauges only), for node_exporter's textfile collector\n"
	"  --all           also destinations found up since, and past ones\n"
	"  --age DUR       a destination with no live prober and no attempt in DUR\n"
	"                  (default 5m; 250ms, 30s, 10m, 2h) is past: left by processes\n"
	"                  gone, shown only under --all\n"
	"  --user NAME     one user's file (root only: root's view is every user's)\n"
	"  --file PATH     this state file\n"
	"  DEST            only this destination's rows, up and past ones too: an address\n"
	"                  (127.0.0.1:6379, [::1]:80, unix:/run/app.sock) or a pattern of\n"
	"                  BACKOFF_TARGETS (*:6379); one without a row is said, \"DEST: no\n"
	"                  record\" (on stderr under --json, --openmetrics), exit status 3\n"
	"  --processes     instead, the processes libbackoff is in, by pid: PID, USER,\n"
	"                  ENGINE (preload; supervise: under the supervisor engine;\n"
	"                  supervisor: that engine's own) and COMMAND; the user's own\n"
	"                  (root: every user's); --json: one JSON object per process\n";

enum format { FORMAT_TABLE, FORMAT_JSON, FORMAT_OPENMETRICS };

static _Alignas(64) unsigned char image[SHARE_FILE_SIZE];
static struct status_row *rows;
static size_t rows_room;
/*
 * The configuration of this command's environment: with BACKOFF_DESTINATIONS,
 * the entry that serves each destination is shown.
 */
static struct config env_cfg;
static struct config_dest env_dests[CONFIG_DESTS_MAX];

/* A destination named on the command line: only the rows of those named are shown. */
struct named_dest {
	const char *text;      /* as given */
	struct target_set set; /* its one pattern, as BACKOFF_TARGETS reads it */
	bool found;	       /* a row of it was read */
};

static struct named_dest *named;
static unsigned named_count;

/* A row is another user's (root's view): the table says whose each is. */
static bool several_users;
/*
 * The rows come from more than one network namespace: the same address in
 * two of them is two destinations, and the table says which is which.
 */
static bool several_netns;

static void die(int status, const char *path, const char *why, int err)
{
	fprintf(stderr, "backoff status: %s%s%s%s%s\n", path ? path : "", path ? ": " : "", why,
		err ? ": " : "", err ? strerror(err) : "");
	exit(status);
}

/*
 * Read the state file at @path into image: a regular file of @owner, private
 * to it, of the right size and layout.  Read, not mapped: a file its owner
 * truncates meanwhile cannot fault the reader.  NULL, or why it cannot be
 * used (*err: its errno, 0 if none; "no such file" when it does not exist).
 */
static const char *load_state(const char *path, unsigned owner, int *err)
{
	struct stat st;
	size_t got = 0;
	const char *why = NULL;
	char extra;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	*err = 0;
	if (fd < 0) {
		*err = errno == ENOENT ? 0 : errno;
		return errno == ENOENT ? "no such file" : "cannot open";
	}
	if (fstat(fd, &st) != 0) {
		*err = errno;
		why = "cannot stat";
		goto out_close;
	}
	why = share_check_file(&st, owner, false);
	while (!why && got < sizeof(image)) {
		ssize_t n = read(fd, image + got, sizeof(image) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = errno;
			why = "cannot read";
		} else if (n == 0) {
			break;
		} else {
			got += (size_t)n;
		}
	}
	/* Its size changed since fstat: what was read is no state file. */
	if (!why && (got != sizeof(image) || read(fd, &extra, 1) != 0))
		why = "wrong size";
	if (!why)
		why = share_check(image, got);
out_close:
	close(fd);
	return why;
}

/* load_state, or die: false if the file does not exist. */
static bool read_state(const char *path, unsigned owner)
{
	int err;
	const char *why = load_state(path, owner, &err);

	if (why && strcmp(why, "no such file") == 0)
		return false;
	if (why)
		die(EXIT_UNUSABLE, path, why, err);
	return true;
}

/* @pid's command name, escaped, into @buf, if thread @tid is one of its threads. */
static bool read_comm(int pid, int tid, char *buf, size_t size)
{
	char path[64];
	struct stat st;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d", pid, tid);
	/* A lease outlives a killed prober by a few looks; a pid may have been reused. */
	if (stat(path, &st) != 0)
		return false;
	/* Its name unread (gone since): alive a moment ago all the same. */
	(void)status_procs_comm(pid, buf, size);
	return true;
}

/*
 * The connects of event loops that wait for @v, counted by their processes
 * whose lease runs, if the process is there now (it may have died).
 */
static uint32_t loop_waiters(const struct share_view *v)
{
	uint32_t n = 0;
	unsigned i;

	for (i = 0; i < SHARE_LOOPS; i++)
		if (v->loop_count[i] > 0 && (kill(v->loop_pid[i], 0) == 0 || errno == EPERM))
			n += v->loop_count[i];
	return n;
}

static const char *state_name(const struct share_view *v)
{
	if (v->full) /* it said it has no room: its WAITERS include its line */
		return "full";
	if (status_is_waiting(v))
		return "waiting";
	if (v->state == SHARE_DOWN)
		return "down";
	/* Up to TCP, but its connections end before their first byte. */
	if (v->early > 0)
		return "early";
	return v->state == SHARE_UP ? "up" : "unknown";
}

static int by_destination(const void *a, const void *b)
{
	const struct status_row *x = a, *y = b;
	int c = strcmp(x->dest, y->dest);

	if (c != 0)
		return c;
	if (x->v.netns != y->v.netns)
		return x->v.netns < y->v.netns ? -1 : 1;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* Whether the @n rows name destinations of more than one network namespace. */
static bool rows_span_netns(unsigned n)
{
	unsigned i;

	for (i = 1; i < n; i++)
		if (rows[i].v.netns != rows[0].v.netns)
			return true;
	return false;
}

/*
 * Whether what @r says is past: no prober of it is alive, and no real attempt
 * or early close of it is younger than @age_ms (its processes are gone, or
 * have not tried for that long).
 */
static bool is_past(const struct status_row *r, uint64_t now_ns, uint64_t age_ms)
{
	if (r->prober_alive || r->v.early > 0 || r->v.full)
		return false;
	return r->v.probed_ns == 0 || now_ns < r->v.probed_ns ||
	       (now_ns - r->v.probed_ns) / 1000000 > age_ms;
}

/*
 * Whether @v's destination is one named on the command line, each it
 * matches marked found; with none named, every destination is.
 */
static bool named_matches(const struct share_view *v)
{
	bool any = false;
	unsigned k;

	if (named_count == 0)
		return true;
	/* Hashes to no destination: it is none of them. */
	if (!v->named)
		return false;
	for (k = 0; k < named_count; k++)
		if (target_matches(&named[k].set, &v->target)) {
			named[k].found = true;
			any = true;
		}
	return any;
}

/* Room for @n more rows after the first @used. */
static void rows_reserve(size_t used, size_t n)
{
	struct status_row *more;

	if (used + n <= rows_room)
		return;
	more = realloc(rows, (used + n) * sizeof(*rows));
	if (!more)
		die(EXIT_UNUSABLE, NULL, "out of memory", 0);
	rows = more;
	rows_room = used + n;
}

/*
 * The slots of image (user @uid's file) worth showing, after the first @n
 * rows: the new count.
 */
static unsigned collect(unsigned n, unsigned uid, uint64_t now_ns, bool all, uint64_t age_ms)
{
	const struct share_head *h = (const struct share_head *)(const void *)image;
	char name[64];
	unsigned i;

	rows_reserve(n, SHARE_SLOTS);
	status_format_user(uid, name, sizeof(name));
	for (i = 0; i < SHARE_SLOTS; i++) {
		struct status_row *r = &rows[n];

		if (!share_view_slot(h, i, now_ns, &r->v) || !named_matches(&r->v))
			continue;
		r->v.waiters += loop_waiters(&r->v) + r->v.queued;
		if (!all && !status_is_waiting(&r->v) && r->v.state != SHARE_DOWN &&
		    r->v.early == 0 && !r->v.full)
			continue;
		if (r->v.named)
			target_format(&r->v.target, r->dest, sizeof(r->dest));
		else
			/* Hashes to no destination: a claim being written, or a hostile file. */
			snprintf(r->dest, sizeof(r->dest), "unnamed slot %u", i);
		r->state = state_name(&r->v);
		r->prober_alive =
			r->v.prober_pid > 0 && r->v.prober_tid > 0 &&
			read_comm(r->v.prober_pid, r->v.prober_tid, r->comm, sizeof(r->comm));
		/* A wait or an outage nobody is there to see any more is the past's. */
		if (strcmp(r->state, "up") != 0 && is_past(r, now_ns, age_ms)) {
			if (!all)
				continue;
			r->state = "past";
		}
		/* The last error only while it is current: not once the destination is up. */
		r->err_name = r->v.err && strcmp(r->state, "up") != 0 ? errname(r->v.err) : NULL;
		r->since_ms_ago = (now_ns - r->v.since_ns) / 1000000;
		r->probed_ms_ago = (now_ns - r->v.probed_ns) / 1000000;
		r->uid = uid;
		snprintf(r->user, sizeof(r->user), "%s", name);
		r->entry = r->v.named ? config_entry_of(&env_cfg, &r->v.target) : 0;
		n++;
	}
	return n;
}

/* The @n rows collected, sorted by destination; what the table shows of them. */
static void rows_done(unsigned n, unsigned viewer)
{
	unsigned i;

	if (n)
		qsort(rows, n, sizeof(rows[0]), by_destination);
	several_netns = rows_span_netns(n);
	several_users = false;
	for (i = 0; i < n; i++)
		several_users |= rows[i].uid != viewer;
}

/*
 * Root's view is every user's: after the first @n rows, those of each other
 * user whose default state file is in /dev/shm, else /tmp (the library's
 * fallback), each file checked as the library checks its own (a regular
 * file of that user, private to it).  A file that cannot be used is said on
 * stderr and left out.  The new count.
 */
static unsigned collect_other_users(unsigned n, unsigned owner, uint64_t now_ns, bool all,
				    uint64_t age_ms)
{
	static const char *const dirs[] = { "/dev/shm", "/tmp" };
	static const char prefix[] = "libbackoff-";
	const size_t plen = sizeof(prefix) - 1;
	unsigned k;

	for (k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++) {
		struct dirent *e;
		DIR *d = opendir(dirs[k]);

		while (d && (e = readdir(d)) != NULL) {
			char expect[PATH_MAX], path[PATH_MAX], first[PATH_MAX];
			const char *why;
			unsigned long uid;
			struct stat st;
			char *end;
			int err;

			if (strncmp(e->d_name, prefix, plen) != 0)
				continue;
			errno = 0;
			uid = strtoul(e->d_name + plen, &end, 10);
			if (errno != 0 || end == e->d_name + plen || uid >= UINT_MAX ||
			    uid == owner)
				continue;
			/* Exactly the name the library gives that user's file. */
			share_default_path((unsigned)uid, dirs[k], expect, sizeof(expect));
			snprintf(path, sizeof(path), "%s/%s", dirs[k], e->d_name);
			if (strcmp(expect, path) != 0)
				continue;
			/* In /tmp only when that user has none in /dev/shm, as the library. */
			share_default_path((unsigned)uid, dirs[0], first, sizeof(first));
			if (k > 0 && lstat(first, &st) == 0)
				continue;
			why = load_state(path, (unsigned)uid, &err);
			if (why) {
				fprintf(stderr, "backoff status: %s: %s%s%s (not shown)\n", path,
					why, err ? ": " : "", err ? strerror(err) : "");
				continue;
			}
			n = collect(n, (unsigned)uid, now_ns, all, age_ms);
		}
		if (d)
			closedir(d);
	}
	return n;
}

/*
 * DEST @text named on the command line, as one BACKOFF_TARGETS pattern
 * (an address is one that matches it alone), or exits with a usage error.
 */
static void name_destination(const char *text)
{
	struct named_dest *d = &named[named_count];
	const char *reason = "expected an address such as 127.0.0.1:6379, [::1]:80 or "
			     "unix:/run/app.sock, or one pattern of BACKOFF_TARGETS without '!'";
	char why[256];

	if (target_parse_list(text, &d->set, why, sizeof(why)) != 0) {
		/* Its own reason when it has one (a name, an IPv6 address without brackets). */
		if (strncmp(why, "expected", 8) != 0)
			reason = why;
	} else if (d->set.count == 1 && !d->set.pattern[0].exclude) {
		d->text = text;
		d->found = false;
		named_count++;
		return;
	}
	fprintf(stderr, "backoff status: \"%s\": %s\n%s", text, reason, usage);
	exit(EXIT_USAGE);
}

/*
 * The destinations named that have no row, each said: on stdout in the
 * table's place, else on stderr.  Whether there is one.
 */
static bool say_no_record(enum format format)
{
	bool missing = false;
	unsigned k;

	for (k = 0; k < named_count; k++) {
		char text[TARGET_TEXT_MAX];
		struct text t;

		if (named[k].found)
			continue;
		missing = true;
		text_init(&t, text, sizeof(text));
		text_escaped(&t, named[k].text, strlen(named[k].text));
		if (format == FORMAT_TABLE)
			printf("%s: no record\n", text);
		else
			fprintf(stderr, "backoff status: %s: no record\n", text);
	}
	return missing;
}

/* The uid of user @name (a name or a number), or dies. */
static unsigned uid_of(const char *name)
{
	struct passwd pwd, *pw = NULL;
	char buf[4096], *end;
	unsigned long n;

	if (getpwnam_r(name, &pwd, buf, sizeof(buf), &pw) == 0 && pw)
		return (unsigned)pw->pw_uid;
	errno = 0;
	n = strtoul(name, &end, 10);
	if (*name < '0' || *name > '9' || *end != '\0' || errno != 0 || n >= UINT_MAX)
		die(EXIT_USAGE, NULL, "--user: no such user", 0);
	return (unsigned)n;
}

int main(int argc, char **argv)
{
	enum format format = FORMAT_TABLE;
	const char *file = NULL, *user = NULL;
	char path[PATH_MAX];
	unsigned owner = (unsigned)geteuid(), n = 0;
	bool all = false, found, missing, processes = false, age_given = false;
	uint64_t age_ms = 5ULL * 60 * 1000;
	struct status_view view;
	struct timespec wall;
	uint64_t now_ns;
	int i;

	named = calloc((size_t)argc, sizeof(*named));
	if (!named)
		die(EXIT_UNUSABLE, NULL, "out of memory", 0);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && format == FORMAT_TABLE) {
			format = FORMAT_JSON;
		} else if (strcmp(argv[i], "--openmetrics") == 0 && format == FORMAT_TABLE) {
			format = FORMAT_OPENMETRICS;
		} else if (strcmp(argv[i], "--all") == 0) {
			all = true;
		} else if (strcmp(argv[i], "--age") == 0 && i + 1 < argc) {
			age_given = true;
			if (config_parse_duration(argv[++i], 0, POLICY_MAX_DELAY_MS, &age_ms) !=
			    0) {
				fprintf(stderr,
					"backoff status: --age \"%s\": expected a duration "
					"such as 250ms, 30s, 10m, 2h\n%s",
					argv[i], usage);
				return EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--user") == 0 && i + 1 < argc) {
			user = argv[++i];
		} else if (strcmp(argv[i], "--processes") == 0) {
			processes = true;
		} else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
			file = argv[++i];
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("libbackoff %s\n", BACKOFF_VERSION);
			return 0;
		} else if (argv[i][0] != '-') {
			name_destination(argv[i]);
		} else {
			fprintf(stderr, "backoff status: unexpected argument \"%s\"\n%s", argv[i],
				usage);
			return EXIT_USAGE;
		}
	}
	/* The processes' view shows no destination: the options that choose them are errors. */
	if (processes &&
	    (format == FORMAT_OPENMETRICS || all || age_given || file || named_count > 0)) {
		fprintf(stderr, "backoff status: --processes takes only --json and --user\n%s",
			usage);
		return EXIT_USAGE;
	}
	if (user) {
		owner = uid_of(user);
		if (owner != (unsigned)geteuid() && geteuid() != 0)
			die(EXIT_USAGE, NULL,
			    processes ? "--user: only root may see another user's processes"
				      : "--user: only root may read another user's state file",
			    0);
	}
	if (processes) {
		if (status_procs_show(format == FORMAT_JSON, !user && geteuid() == 0, owner) != 0)
			die(EXIT_UNUSABLE, "/proc", "cannot list", errno);
		return fflush(stdout) == 0 ? 0 : EXIT_UNUSABLE;
	}
	{
		CONFIG_PROBLEMS_ROOM(problems);

		/* BACKOFF_SHARED=/path, as the library reads it; other values mean the default. */
		config_parse(config_getenv, NULL, &env_cfg, &problems);
		config_dests_build(&env_cfg, env_dests, CONFIG_DESTS_MAX, &problems);
		if (!file && env_cfg.has_shared_path)
			file = config_shared_path(&env_cfg);
	}
	if (file) {
		snprintf(path, sizeof(path), "%s", file);
		found = read_state(path, owner);
		if (!found)
			die(EXIT_UNUSABLE, path, "no such file", 0);
	} else {
		share_default_path(owner, "/dev/shm", path, sizeof(path));
		found = read_state(path, owner);
		if (!found) {
			/* The library's fallback when there is no /dev/shm. */
			char alt[PATH_MAX];

			share_default_path(owner, "/tmp", alt, sizeof(alt));
			if (read_state(alt, owner)) {
				snprintf(path, sizeof(path), "%s", alt);
				found = true;
			}
		}
	}
	/* A destination named is asked for: its row is shown up or past too. */
	if (named_count > 0)
		all = true;
	/* No file: no process of the user has waited for anything since boot. */
	now_ns = clock_now_ns();
	clock_gettime(CLOCK_REALTIME, &wall);
	if (found)
		n = collect(0, owner, now_ns, all, age_ms);
	if (!file && !user && geteuid() == 0)
		n = collect_other_users(n, owner, now_ns, all, age_ms);
	rows_done(n, owner);
	view.rows = rows;
	view.n = n;
	view.several_users = several_users;
	view.several_netns = several_netns;
	view.policy = env_cfg.dest_count > 0;
	view.wall_ms = (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000;
	switch (format) {
	case FORMAT_TABLE:
		/* With destinations named, those without a row are said instead. */
		if (n > 0 || named_count == 0)
			status_format_table(&view, path);
		break;
	case FORMAT_JSON:
		status_format_json(&view);
		break;
	case FORMAT_OPENMETRICS:
		status_format_openmetrics(&view);
		break;
	}
	missing = say_no_record(format);
	if (fflush(stdout) != 0)
		return EXIT_UNUSABLE;
	return missing ? EXIT_NO_RECORD : 0;
}
