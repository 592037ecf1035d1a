/* Log lines: formatting without stdio and one write(2) per line. */
#include "sys/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/errname.h"
#include "sys/real.h"
#include "sys/text.h"
#include "sys/startup.h"
#include "sys/kcall.h"

static enum log_level log_level = LOG_LEVEL_WARN;
STARTUP_DATA static bool log_json;
STARTUP_DATA static const char *log_path;

static const char *errno_name(int err);

/*
 * The task the calling thread's lines speak for, NULL for its own process:
 * the supervisor engine writes to the program's own stderr, under the
 * program's pid and tid, borrowed at the first line.
 */
static __thread struct log_task *log_task_now __attribute__((tls_model("initial-exec")));

static const char level_names[][6] = { "off", "error", "warn", "info", "debug" };

STARTUP_CODE void log_configure(enum log_level level, bool json, const char *path)
{
	log_level = level;
	log_json = json;
	log_path = path && path[0] ? path : NULL;
}

void log_set_thread_task(struct log_task *lt)
{
	log_task_now = lt;
}

/* The calling thread's task, borrowed now if this is its first line; NULL: its own process. */
static const struct log_task *task(void)
{
	struct log_task *lt = log_task_now;

	if (lt && lt->borrow) {
		lt->borrow(lt);
		lt->borrow = NULL;
	}
	return lt;
}

/* Where the calling thread's lines go when no file takes them. */
static int log_stderr(void)
{
	const struct log_task *lt = task();

	return lt && lt->fd >= 0 ? lt->fd : STDERR_FILENO;
}

static uint64_t log_pid(void)
{
	const struct log_task *lt = task();

	return (uint64_t)(lt && lt->pid > 0 ? lt->pid : kcall_getpid());
}

static uint64_t log_tid(void)
{
	const struct log_task *lt = task();

	return (uint64_t)(lt && lt->tid > 0 ? lt->tid : kcall_gettid());
}

bool log_enabled(enum log_level level)
{
	return level != LOG_LEVEL_OFF && level <= log_level;
}

/*
 * A BACKOFF_LOG_FILE the process cannot open (a daemon's workers run as
 * another user) sends the lines to stderr: said once, with the reason.
 */
static void warn_unopenable(int err)
{
	static atomic_bool warned;
	char buf[PATH_MAX + 128];
	struct text t;
	ssize_t ignored;

	if (atomic_exchange_explicit(&warned, true, memory_order_relaxed))
		return;
	text_init(&t, buf, sizeof(buf));
	text_str(&t, "backoff: BACKOFF_LOG_FILE=\"");
	text_str(&t, log_path);
	text_str(&t, "\": cannot open it (");
	text_str(&t, errno_name(err));
	text_str(&t, "): logging to stderr\n");
	ignored = real_write(log_stderr(), buf, t.len);
	(void)ignored;
}

/*
 * The file is opened for each line: no private fd survives to be closed
 * under us (ssh runs close_range at start-up), and O_APPEND keeps lines of
 * concurrent processes whole.  If it cannot be opened the line goes to stderr.
 */
static void emit(struct text *t)
{
	int own = log_stderr(), fd = own;
	ssize_t ignored;

	if (t->len == t->size - 1)
		t->buf[t->len - 1] = '\n';
	else
		text_put(t, "\n", 1);
	if (log_path) {
		fd = kcall_open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
				0644);
		if (fd < 0) {
			warn_unopenable(errno);
			fd = own;
		}
	}
	/* The real call: a hook logging must not reach the write() hook again. */
	ignored = real_write(fd, t->buf, t->len);
	(void)ignored;
	if (fd != own)
		real_close(fd);
}

static bool json(void)
{
	return log_json;
}

bool log_is_json(void)
{
	return json();
}

/* 2026-11-21T23:59:59.123Z from milliseconds since the epoch (civil-from-days). */
static void put_time(struct text *t, uint64_t ms)
{
	uint64_t secs = ms / 1000, days = secs / 86400, rem = secs % 86400;
	int64_t z = (int64_t)days + 719468;
	int64_t era = z / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	int64_t y = yoe + era * 400 + (m <= 2);

	text_u64_pad(t, (uint64_t)y, 4);
	text_put(t, "-", 1);
	text_u64_pad(t, (uint64_t)m, 2);
	text_put(t, "-", 1);
	text_u64_pad(t, (uint64_t)d, 2);
	text_put(t, "T", 1);
	text_u64_pad(t, rem / 3600, 2);
	text_put(t, ":", 1);
	text_u64_pad(t, rem / 60 % 60, 2);
	text_put(t, ":", 1);
	text_u64_pad(t, rem % 60, 2);
	text_put(t, ".", 1);
	text_u64_pad(t, ms % 1000, 3);
	text_put(t, "Z", 1);
}

static void json_key(struct text *t, const char *key)
{
	text_put(t, ",\"", 2);
	text_str(t, key);
	text_put(t, "\":", 2);
}

static void json_str(struct text *t, const char *key, const char *value)
{
	json_key(t, key);
	text_json_string(t, value, strlen(value));
}

static void json_u64(struct text *t, const char *key, uint64_t value)
{
	json_key(t, key);
	text_u64(t, value);
}

static void json_head(struct text *t, enum log_level level, const char *event)
{
	text_str(t, "{\"time\":\"");
	put_time(t, clock_wall_ms());
	text_put(t, "\"", 1);
	json_u64(t, "mono_ms", clock_now_ms());
	json_u64(t, "pid", log_pid());
	json_u64(t, "tid", log_tid());
	json_str(t, "level", level_names[level]);
	json_str(t, "event", event);
}

static void text_head(struct text *t)
{
	text_str(t, "backoff[");
	text_u64(t, log_pid());
	text_str(t, "]: ");
}

static const char *errno_name(int err)
{
	const char *name = errname(err);

	return name ? name : "E?";
}

const char *log_err_text(const struct log_event *ev)
{
	return ev->err_name ? ev->err_name : errno_name(ev->err);
}

static void format_json(struct text *t, enum log_level level, const struct log_event *ev)
{
	json_head(t, level, ev->event);
	if (ev->call)
		json_str(t, "call", ev->call);
	if (ev->target)
		json_str(t, "target", ev->target);
	if (ev->err)
		json_str(t, "errno", log_err_text(ev));
	if (ev->attempt)
		json_u64(t, "attempt", ev->attempt);
	if (ev->delay_ms != LOG_NONE)
		json_u64(t, "delay_ms", (uint64_t)ev->delay_ms);
	if (ev->wait_ms != LOG_NONE)
		json_u64(t, "wait_ms", (uint64_t)ev->wait_ms);
	if (ev->elapsed_ms != LOG_NONE)
		json_u64(t, "elapsed_ms", (uint64_t)ev->elapsed_ms);
	if (ev->reason)
		json_str(t, "reason", ev->reason);
	if (ev->answer)
		json_str(t, "answer", ev->answer);
	text_put(t, "}", 1);
}

static void format_text(struct text *t, const struct log_event *ev)
{
	text_head(t);
	text_str(t, ev->call ? ev->call : "?");
	if (ev->target && ev->target[0]) {
		text_put(t, " ", 1);
		text_str(t, ev->target);
	}
	text_str(t, ": ");
	if (ev->text) {
		text_str(t, ev->text);
		return;
	}
	if (ev->err) {
		text_str(t, log_err_text(ev));
		text_put(t, " ", 1);
	}
	text_str(t, ev->event);
	if (ev->reason) {
		text_str(t, " (");
		text_str(t, ev->reason);
		text_str(t, ")");
	}
}

void log_event(enum log_level level, const struct log_event *ev)
{
	char buf[2048];
	struct text t;
	int saved = errno;

	if (!log_enabled(level))
		return;
	text_init(&t, buf, sizeof(buf));
	if (json())
		format_json(&t, level, ev);
	else
		format_text(&t, ev);
	emit(&t);
	errno = saved;
}

/* One configuration line: VARIABLE="VALUE": MESSAGE, or without a value VARIABLE: MESSAGE. */
static void config_line(const char *variable, const char *value, const char *message)
{
	char buf[1024];
	struct text t;
	int saved = errno;

	if (!log_enabled(LOG_LEVEL_WARN))
		return;
	text_init(&t, buf, sizeof(buf));
	if (json()) {
		json_head(&t, LOG_LEVEL_WARN, "config");
		json_str(&t, "variable", variable);
		if (value)
			json_str(&t, "value", value);
		json_str(&t, "message", message);
		text_put(&t, "}", 1);
	} else {
		text_str(&t, "backoff: ");
		text_str(&t, variable);
		if (value) {
			text_str(&t, "=\"");
			text_str(&t, value);
			text_str(&t, "\"");
		}
		text_str(&t, ": ");
		text_str(&t, message);
	}
	emit(&t);
	errno = saved;
}

void log_config_problem(const char *variable, const char *value, const char *message)
{
	config_line(variable, value, message);
}

void log_config_name(const char *variable, const char *message)
{
	config_line(variable, NULL, message);
}

void log_notice(enum log_level level, const char *event, const char *message)
{
	char buf[512];
	struct text t;
	int saved = errno;

	if (!log_enabled(level))
		return;
	text_init(&t, buf, sizeof(buf));
	if (json()) {
		json_head(&t, level, event);
		json_str(&t, "message", message);
		text_put(&t, "}", 1);
	} else {
		text_head(&t);
		text_str(&t, message);
	}
	emit(&t);
	errno = saved;
}

void log_stats(const struct log_stats *s)
{
	char buf[512];
	struct text t;
	int saved = errno;

	text_init(&t, buf, sizeof(buf));
	if (json()) {
		json_head(&t, LOG_LEVEL_INFO, "stats");
		json_u64(&t, "calls", s->calls);
		json_u64(&t, "retries", s->retries);
		json_u64(&t, "giveups", s->giveups);
		json_u64(&t, "waited_ms", s->waited_ms);
		if (s->unmanaged)
			json_u64(&t, "unmanaged", s->unmanaged);
		if (s->early)
			json_u64(&t, "early", s->early);
		if (s->try_later)
			json_u64(&t, "try_later", s->try_later);
		if (s->probed || s->waited) {
			json_u64(&t, "probed", s->probed);
			json_u64(&t, "waited", s->waited);
		}
		text_put(&t, "}", 1);
	} else {
		text_head(&t);
		text_str(&t, "stats: calls=");
		text_u64(&t, s->calls);
		text_str(&t, " retries=");
		text_u64(&t, s->retries);
		text_str(&t, " giveups=");
		text_u64(&t, s->giveups);
		text_str(&t, " waited_ms=");
		text_u64(&t, s->waited_ms);
		if (s->probed || s->waited) {
			text_str(&t, " probed=");
			text_u64(&t, s->probed);
			text_str(&t, " waited=");
			text_u64(&t, s->waited);
		}
		if (s->early) {
			text_str(&t, " early=");
			text_u64(&t, s->early);
		}
		if (s->try_later) {
			text_str(&t, " try_later=");
			text_u64(&t, s->try_later);
		}
		if (s->unmanaged) {
			text_str(&t, " unmanaged=");
			text_u64(&t, s->unmanaged);
		}
	}
	emit(&t);
	errno = saved;
}
