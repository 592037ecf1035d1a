/* backoff status's output: the rows as a table, JSON lines or OpenMetrics text. */
#include "tool/status_format.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sys/text.h"

/* @netns as readlink(2) shows /proc/PID/ns/net, "-" if unknown. */
static void format_netns(uint64_t netns, char *buf, size_t size)
{
	if (netns)
		snprintf(buf, size, "net:[%llu]", (unsigned long long)netns);
	else
		snprintf(buf, size, "-");
}

void status_format_user(unsigned uid, char *buf, size_t size)
{
	struct passwd pwd, *pw = NULL;
	char tmp[4096];

	if (getpwuid_r((uid_t)uid, &pwd, tmp, sizeof(tmp), &pw) == 0 && pw)
		snprintf(buf, size, "%s", pw->pw_name);
	else
		snprintf(buf, size, "%u", uid);
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

void status_format_table(const struct status_view *w, const char *path)
{
	const struct status_row *rows = w->rows;
	unsigned n = w->n;
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
	if (w->several_users)
		printf("%-12s  ", "USER");
	if (w->several_netns)
		printf("%-18s  ", "NETNS");
	printf("%-7s  %-8s  %-12s  %-22s  %7s  %8s  %5s%s\n", "STATE", "SINCE", "LAST-ERROR",
	       "PROBER", "WAITERS", "ATTEMPTS", "SAVED", w->policy ? "  POLICY" : "");
	for (i = 0; i < n; i++) {
		const struct status_row *r = &rows[i];
		char since[32] = "-", prober[STATUS_COMM_MAX + 16] = "-";

		if (r->v.since_ns)
			format_age(r->since_ms_ago, since, sizeof(since));
		if (r->prober_alive)
			snprintf(prober, sizeof(prober), "%d/%s", r->v.prober_pid,
				 r->comm[0] ? r->comm : "?");
		else if (r->v.probing)
			snprintf(prober, sizeof(prober), "gone");
		printf("%-*s  ", (int)width, r->dest);
		if (w->several_users)
			printf("%-12s  ", r->user);
		if (w->several_netns) {
			char netns[32];

			format_netns(r->v.netns, netns, sizeof(netns));
			printf("%-18s  ", netns);
		}
		printf("%-7s  %-8s  %-12s  %-22s  %7u  %8llu  %5llu", r->state, since,
		       r->err_name ? r->err_name : "-", prober, r->v.waiters,
		       (unsigned long long)r->v.attempts, (unsigned long long)r->v.saved);
		/* With BACKOFF_DESTINATIONS: entry N of it, or the global policy. */
		if (w->policy && r->entry)
			printf("  entry %u", r->entry);
		else if (w->policy)
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

void status_format_json(const struct status_view *w)
{
	unsigned i;

	for (i = 0; i < w->n; i++) {
		const struct status_row *r = &w->rows[i];
		char line[TARGET_TEXT_MAX * 2 + 1024], since[40];
		struct text t;

		text_init(&t, line, sizeof(line));
		text_str(&t, "{\"destination\":");
		if (r->v.named)
			text_json_string(&t, r->dest, strlen(r->dest));
		else
			text_str(&t, "null");
		json_string(&t, "state", r->state);
		format_utc(w->wall_ms, r->since_ms_ago, since, sizeof(since));
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
		if (w->policy)
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

typedef bool value_fn(const struct status_row *r, uint64_t wall_ms, char *value, size_t size);

/*
 * One gauge family: each destination's value (@get: false to leave one out),
 * labelled by its destination, and by what the info family carries if @info.
 */
static void gauge(const struct status_view *w, const char *name, const char *help, value_fn *get,
		  bool info)
{
	const struct status_row *rows = w->rows;
	unsigned i;

	printf("# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	for (i = 0; i < w->n; i++) {
		char value[40];

		if (!get(&rows[i], w->wall_ms, value, sizeof(value)))
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

static bool get_info(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)r;
	(void)wall_ms;
	snprintf(value, size, "1");
	return true;
}

static bool get_waiting(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%d", status_is_waiting(&r->v) ? 1 : 0);
	return true;
}

static bool get_waiters(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%u", r->v.waiters);
	return true;
}

static bool get_since(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	uint64_t at = wall_ms > r->since_ms_ago ? wall_ms - r->since_ms_ago : 0;

	snprintf(value, size, "%llu.%03llu", (unsigned long long)(at / 1000),
		 (unsigned long long)(at % 1000));
	return r->v.since_ns != 0;
}

static bool get_prober_pid(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%d", r->v.prober_pid);
	return r->prober_alive;
}

static bool get_attempts(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%llu", (unsigned long long)r->v.attempts);
	return true;
}

static bool get_early(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%u", r->v.early);
	return true;
}

static bool get_saved(const struct status_row *r, uint64_t wall_ms, char *value, size_t size)
{
	(void)wall_ms;
	snprintf(value, size, "%llu", (unsigned long long)r->v.saved);
	return true;
}

/*
 * Gauges only, so that the same text is valid for Prometheus's text format
 * (node_exporter's textfile collector) and OpenMetrics.
 */
void status_format_openmetrics(const struct status_view *w)
{
	gauge(w, "backoff_destination_info",
	      "A destination waited for or found down: its state, last error and prober (1).",
	      get_info, true);
	gauge(w, "backoff_destination_waiting", "1 while a client waits for the destination.",
	      get_waiting, false);
	gauge(w, "backoff_destination_waiters",
	      "Threads asleep and event loops' connects waiting until the destination is up.",
	      get_waiters, false);
	gauge(w, "backoff_destination_down_since_seconds",
	      "When the destination was found down (Unix time).", get_since, false);
	gauge(w, "backoff_destination_prober_pid", "The process probing the destination.",
	      get_prober_pid, false);
	gauge(w, "backoff_destination_attempts",
	      "Real connect attempts to the destination since its slot was taken.", get_attempts,
	      false);
	gauge(w, "backoff_destination_attempts_saved",
	      "Planned attempts left to another client's result.", get_saved, false);
	gauge(w, "backoff_destination_early_closes",
	      "Connections in a row the destination ended before their first byte.", get_early,
	      false);
	printf("# EOF\n");
}
