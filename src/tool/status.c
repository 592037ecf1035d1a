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

#include "core/config.h"
#include "core/policy.h"
#include "core/share.h"
#include "core/target.h"
#include "sys/clock.h"
#include "sys/errname.h"
#include "sys/text.h"

#ifndef BACKOFF_VERSION
#define BACKOFF_VERSION "0.0.0"
#endif

/* Exit statuses: as documented in the man page. */
#define EXIT_UNUSABLE 1 /* the state file cannot be read or is not one */
#define EXIT_USAGE 2

#define COMM_MAX 64 /* /proc/PID/comm is 16 bytes; escaped, at most 4 times that */

static const char usage[] =
	"usage: backoff-status [--json | --openmetrics] [--all] [--age DUR] [--user NAME]\n"
	"                      [--file PATH]\n"
	"Shows the destinations the user's processes wait for or found down, from the\n"
	"state file of shared fate (BACKOFF_SHARED=/path names another).  Read-only.\n"
	"  --json          one JSON object per destination and line\n"
	"  --openmetrics   OpenMetrics text (gauges only), for node_exporter's textfile collector\n"
	"  --all           also destinations found up since, and past ones\n"
	"  --age DUR       a destination with no live prober and no attempt in DUR\n"
	"                  (default 5m; 250ms, 30s, 10m, 2h) is past: left by processes\n"
	"                  gone, shown only under --all\n"
	"  --user NAME     one user's file (root only: root's view is every user's)\n"
	"  --file PATH     this state file\n";

enum format { FORMAT_TABLE, FORMAT_JSON, FORMAT_OPENMETRICS };

/* One destination to show: the slot's view and what is derived from it. */
struct row {
	struct share_view v;
	char dest[TARGET_TEXT_MAX];
	const char *state;		      /* full, waiting, down, early, up, unknown, past */
	bool prober_alive;		      /* the prober's thread is in its process, now */
	char comm[COMM_MAX];		      /* the prober's command name, escaped; "" unknown */
	const char *err_name;		      /* NULL: none */
	uint64_t since_ms_ago, probed_ms_ago; /* valid when since_ns / probed_ns are */
	unsigned uid;			      /* the user whose file holds it */
	char user[64];			      /* that user's name, else the uid */
	unsigned entry; /* the BACKOFF_DESTINATIONS entry that serves it, from 1; 0: none */
};

static _Alignas(64) unsigned char image[SHARE_FILE_SIZE];
static struct row *rows;
static size_t rows_room;
/*
 * The configuration of this command's environment: with BACKOFF_DESTINATIONS,
 * the entry that serves each destination is shown.
 */
static struct config env_cfg;
static struct config_dest env_dests[CONFIG_DESTS_MAX];

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
	char path[64], raw[32];
	struct stat st;
	struct text t;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d", pid, tid);
	/* A lease outlives a killed prober by a few looks; a pid may have been reused. */
	if (stat(path, &st) != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, raw, sizeof(raw) - 1);
	close(fd);
	if (n <= 0)
		return true;
	if (raw[n - 1] == '\n')
		n--;
	text_init(&t, buf, size);
	text_escaped(&t, raw, (size_t)n);
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

static bool is_waiting(const struct share_view *v)
{
	return v->probing || v->waiters > 0;
}

static const char *state_name(const struct share_view *v)
{
	if (v->full) /* it said it has no room: its WAITERS include its line */
		return "full";
	if (is_waiting(v))
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
	const struct row *x = a, *y = b;
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

/* @netns as readlink(2) shows /proc/PID/ns/net, "-" if unknown. */
static void format_netns(uint64_t netns, char *buf, size_t size)
{
	if (netns)
		snprintf(buf, size, "net:[%llu]", (unsigned long long)netns);
	else
		snprintf(buf, size, "-");
}

/*
 * Whether what @r says is past: no prober of it is alive, and no real attempt
 * or early close of it is younger than @age_ms (its processes are gone, or
 * have not tried for that long).
 */
static bool is_past(const struct row *r, uint64_t now_ns, uint64_t age_ms)
{
	if (r->prober_alive || r->v.early > 0 || r->v.full)
		return false;
	return r->v.probed_ns == 0 || now_ns < r->v.probed_ns ||
	       (now_ns - r->v.probed_ns) / 1000000 > age_ms;
}

/* @uid's name into @buf, else the number. */
static void user_name(unsigned uid, char *buf, size_t size)
{
	struct passwd pwd, *pw = NULL;
	char tmp[4096];

	if (getpwuid_r((uid_t)uid, &pwd, tmp, sizeof(tmp), &pw) == 0 && pw)
		snprintf(buf, size, "%s", pw->pw_name);
	else
		snprintf(buf, size, "%u", uid);
}

/* Room for @n more rows after the first @used. */
static void rows_reserve(size_t used, size_t n)
{
	struct row *more;

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
	user_name(uid, name, sizeof(name));
	for (i = 0; i < SHARE_SLOTS; i++) {
		struct row *r = &rows[n];

		if (!share_view_slot(h, i, now_ns, &r->v))
			continue;
		r->v.waiters += loop_waiters(&r->v) + r->v.queued;
		if (!all && !is_waiting(&r->v) && r->v.state != SHARE_DOWN && r->v.early == 0 &&
		    !r->v.full)
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

/* @ms as 850ms, 42s, 3m05s, 2h07m or 3d04h. */
static void format_age(uint64_t ms, char *buf, size_t size)
{
	uint64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, size, "%llums", (unsigned long long)ms);
	else if (s < 60)
		snprintf(buf, size, "%llus", (unsigned long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%llum%02llus", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, size, "%lluh%02llum", (unsigned long long)(s / 3600),
			 (unsigned long long)(s / 60 % 60));
	else
		snprintf(buf, size, "%llud%02lluh", (unsigned long long)(s / 86400),
			 (unsigned long long)(s / 3600 % 24));
}

/* The wall-clock time @ms_ago before @wall_ms, as UTC RFC 3339 with milliseconds. */
static void format_utc(uint64_t wall_ms, uint64_t ms_ago, char *buf, size_t size)
{
	uint64_t at = wall_ms > ms_ago ? wall_ms - ms_ago : 0;
	time_t secs = (time_t)(at / 1000);
	struct tm tm;
	char day[32];

	if (!gmtime_r(&secs, &tm) || strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(day, sizeof(day), "1970-01-01T00:00:00");
	snprintf(buf, size, "%s.%03lluZ", day, (unsigned long long)(at % 1000));
}

static void print_table(const char *path, unsigned n)
{
	size_t width = strlen("DESTINATION");
	unsigned i;

	if (n == 0) {
		printf("no destination waited for or known down (%s)\n", path);
		return;
	}
	for (i = 0; i < n; i++)
		if (strlen(rows[i].dest) > width)
			width = strlen(rows[i].dest);
	printf("%-*s  ", (int)width, "DESTINATION");
	if (several_users)
		printf("%-12s  ", "USER");
	if (several_netns)
		printf("%-18s  ", "NETNS");
	printf("%-7s  %-8s  %-12s  %-22s  %7s  %8s  %5s%s\n", "STATE", "SINCE", "LAST-ERROR",
	       "PROBER", "WAITERS", "ATTEMPTS", "SAVED", env_cfg.dest_count ? "  POLICY" : "");
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char since[32] = "-", prober[COMM_MAX + 16] = "-";

		if (r->v.since_ns)
			format_age(r->since_ms_ago, since, sizeof(since));
		if (r->prober_alive)
			snprintf(prober, sizeof(prober), "%d/%s", r->v.prober_pid,
				 r->comm[0] ? r->comm : "?");
		else if (r->v.probing)
			snprintf(prober, sizeof(prober), "gone");
		printf("%-*s  ", (int)width, r->dest);
		if (several_users)
			printf("%-12s  ", r->user);
		if (several_netns) {
			char netns[32];

			format_netns(r->v.netns, netns, sizeof(netns));
			printf("%-18s  ", netns);
		}
		printf("%-7s  %-8s  %-12s  %-22s  %7u  %8llu  %5llu", r->state, since,
		       r->err_name ? r->err_name : "-", prober, r->v.waiters,
		       (unsigned long long)r->v.attempts, (unsigned long long)r->v.saved);
		/* With BACKOFF_DESTINATIONS: entry N of it, or the global policy. */
		if (env_cfg.dest_count && r->entry)
			printf("  entry %u", r->entry);
		else if (env_cfg.dest_count)
			printf("  global");
		putchar('\n');
	}
}

/* Append "name":"value" (a JSON string) to @t. */
static void json_string(struct text *t, const char *name, const char *value)
{
	text_str(t, ",\"");
	text_str(t, name);
	text_str(t, "\":");
	if (value)
		text_json_string(t, value, strlen(value));
	else
		text_str(t, "null");
}

static void json_u64(struct text *t, const char *name, uint64_t value, bool known)
{
	text_str(t, ",\"");
	text_str(t, name);
	text_str(t, "\":");
	if (known)
		text_u64(t, value);
	else
		text_str(t, "null");
}

static void print_json(unsigned n, uint64_t wall_ms)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char line[TARGET_TEXT_MAX * 2 + 1024], since[40];
		struct text t;

		text_init(&t, line, sizeof(line));
		text_str(&t, "{\"destination\":");
		if (r->v.named)
			text_json_string(&t, r->dest, strlen(r->dest));
		else
			text_str(&t, "null");
		json_string(&t, "state", r->state);
		format_utc(wall_ms, r->since_ms_ago, since, sizeof(since));
		json_string(&t, "since", r->v.since_ns ? since : NULL);
		json_u64(&t, "since_ms_ago", r->since_ms_ago, r->v.since_ns != 0);
		json_u64(&t, "last_attempt_ms_ago", r->probed_ms_ago, r->v.probed_ns != 0);
		json_string(&t, "last_error", r->err_name);
		json_u64(&t, "prober_pid", (uint64_t)r->v.prober_pid, r->prober_alive);
		json_string(&t, "prober_command", r->prober_alive && r->comm[0] ? r->comm : NULL);
		json_u64(&t, "waiters", r->v.waiters, true);
		json_u64(&t, "attempts", r->v.attempts, true);
		json_u64(&t, "attempts_saved", r->v.saved, true);
		json_u64(&t, "early_closes", r->v.early, true);
		json_u64(&t, "in_line", r->v.queued, r->v.full);
		json_u64(&t, "netns", r->v.netns, r->v.netns != 0);
		json_string(&t, "user", r->user);
		if (env_cfg.dest_count)
			json_u64(&t, "destinations_entry", r->entry, r->entry != 0);
		text_str(&t, "}");
		puts(line);
	}
}

/* @s as an OpenMetrics label value, quotes included. */
static void label_value(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

typedef bool value_fn(const struct row *r, uint64_t wall_ms, char *value, size_t size);

/*
 * One gauge family: each destination's value (@get: false to leave one out),
 * labelled by its destination, and by what the info family carries if @info.
 */
static void gauge(unsigned n, const char *name, const char *help, value_fn *get, bool info,
		  uint64_t wall_ms)
{
	unsigned i;

	printf("# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	for (i = 0; i < n; i++) {
		char value[40];

		if (!get(&rows[i], wall_ms, value, sizeof(value)))
			continue;
		printf("%s{destination=", name);
		label_value(rows[i].dest);
		/* Always, so that a series keeps its labels when a second namespace appears. */
		printf(",netns=\"%llu\",user=", (unsigned long long)rows[i].v.netns);
		label_value(rows[i].user);
		if (info) {
			printf(",state=");
			label_value(rows[i].state);
			printf(",last_error=");
			label_value(rows[i].err_name ? rows[i].err_name : "");
			printf(",prober_command=");
			label_value(rows[i].prober_alive ? rows[i].comm : "");
		}
		printf("} %s\n", value);
	}
}

static bool get_info(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)r;
	(void)wall_ms;
	snprintf(value, size, "1");
	return true;
}

static bool get_waiting(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%d", is_waiting(&r->v) ? 1 : 0);
	return true;
}

static bool get_waiters(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%u", r->v.waiters);
	return true;
}

static bool get_since(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	uint64_t at = wall_ms > r->since_ms_ago ? wall_ms - r->since_ms_ago : 0;

	snprintf(value, size, "%llu.%03llu", (unsigned long long)(at / 1000),
		 (unsigned long long)(at % 1000));
	return r->v.since_ns != 0;
}

static bool get_prober_pid(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%d", r->v.prober_pid);
	return r->prober_alive;
}

static bool get_attempts(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%llu", (unsigned long long)r->v.attempts);
	return true;
}

static bool get_early(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%u", r->v.early);
	return true;
}

static bool get_saved(const struct row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%llu", (unsigned long long)r->v.saved);
	return true;
}

/*
 * Gauges only, so that the same text is valid for Prometheus's text format
 * (node_exporter's textfile collector) and OpenMetrics.
 */
static void print_openmetrics(unsigned n, uint64_t wall_ms)
{
	gauge(n, "backoff_destination_info",
	      "A destination waited for or found down: its state, last error and prober (1).",
	      get_info, true, wall_ms);
	gauge(n, "backoff_destination_waiting", "1 while a client waits for the destination.",
	      get_waiting, false, wall_ms);
	gauge(n, "backoff_destination_waiters",
	      "Threads asleep and event loops' connects waiting until the destination is up.",
	      get_waiters, false, wall_ms);
	gauge(n, "backoff_destination_down_since_seconds",
	      "When the destination was found down (Unix time).", get_since, false, wall_ms);
	gauge(n, "backoff_destination_prober_pid", "The process probing the destination.",
	      get_prober_pid, false, wall_ms);
	gauge(n, "backoff_destination_attempts",
	      "Real connect attempts to the destination since its slot was taken.", get_attempts,
	      false, wall_ms);
	gauge(n, "backoff_destination_attempts_saved",
	      "Planned attempts left to another client's result.", get_saved, false, wall_ms);
	gauge(n, "backoff_destination_early_closes",
	      "Connections in a row the destination ended before their first byte.", get_early,
	      false, wall_ms);
	printf("# EOF\n");
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
	bool all = false, found;
	uint64_t age_ms = 5ULL * 60 * 1000;
	struct timespec wall;
	uint64_t now_ns;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && format == FORMAT_TABLE) {
			format = FORMAT_JSON;
		} else if (strcmp(argv[i], "--openmetrics") == 0 && format == FORMAT_TABLE) {
			format = FORMAT_OPENMETRICS;
		} else if (strcmp(argv[i], "--all") == 0) {
			all = true;
		} else if (strcmp(argv[i], "--age") == 0 && i + 1 < argc) {
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
		} else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
			file = argv[++i];
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("libbackoff %s\n", BACKOFF_VERSION);
			return 0;
		} else {
			fprintf(stderr, "backoff status: unexpected argument \"%s\"\n%s", argv[i],
				usage);
			return EXIT_USAGE;
		}
	}
	if (user) {
		owner = uid_of(user);
		if (owner != (unsigned)geteuid() && geteuid() != 0)
			die(EXIT_USAGE, NULL,
			    "--user: only root may read another user's state file", 0);
	}
	{
		struct config_problems problems;

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
	/* No file: no process of the user has waited for anything since boot. */
	now_ns = clock_now_ns();
	clock_gettime(CLOCK_REALTIME, &wall);
	if (found)
		n = collect(0, owner, now_ns, all, age_ms);
	if (!file && !user && geteuid() == 0)
		n = collect_other_users(n, owner, now_ns, all, age_ms);
	rows_done(n, owner);
	switch (format) {
	case FORMAT_TABLE:
		print_table(path, n);
		break;
	case FORMAT_JSON:
		print_json(n, (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000);
		break;
	case FORMAT_OPENMETRICS:
		print_openmetrics(n,
				  (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000);
		break;
	}
	return fflush(stdout) == 0 ? 0 : EXIT_UNUSABLE;
}
