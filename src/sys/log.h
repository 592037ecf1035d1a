/* Log lines, text or JSON, one write(2) each, to stderr or BACKOFF_LOG_FILE. */
#ifndef BACKOFF_SYS_LOG_H
#define BACKOFF_SYS_LOG_H

#include <stdbool.h>
#include <stdint.h>

#define LOG_NONE (-1)

enum log_level {
	LOG_LEVEL_OFF,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* One thing that happened; fields set to NULL or LOG_NONE are left out. */
struct log_event {
	const char *event;    /* retry, success, giveup, pass */
	const char *call;     /* connect, ... */
	const char *target;   /* the destination as text: an address, a path, a host name */
	int err;	      /* 0: none */
	const char *err_name; /* err's name when it is not an errno value (EAI_AGAIN) */
	uint64_t attempt;     /* 0: none */
	int64_t delay_ms;     /* the delay the policy drew */
	int64_t wait_ms;      /* the wait made, shorter at the end of the budget */
	int64_t elapsed_ms;
	const char *reason;
	const char *answer; /* a server's answer that means "try later", as text */
	const char *text;   /* the text format's sentence; NULL: the event and its reason */
};

/*
 * Set the level, the format and the file (NULL or "": stderr), which must
 * outlive every log call.  Before this: warn level, text, stderr.
 */
void log_configure(enum log_level level, bool json, const char *path);

/* The task a thread's lines speak for: the stderr they go to, and the pid and tid they name. */
struct log_task {
	/* NULL, or called once, at the thread's first line, to fill the rest. */
	void (*borrow)(struct log_task *lt);
	int fd;	      /* the stderr; -1: the process's own */
	int pid, tid; /* 0: the writer's own */
};

/*
 * Make @lt the task the calling thread's lines speak for (NULL: this
 * process's own again); the caller keeps it, and its fd open, while it is
 * set.  Nothing is asked of it until a line is written.
 */
void log_set_thread_task(struct log_task *lt);

/* Whether messages of @level are written. */
bool log_enabled(enum log_level level);

/* Whether lines are written as JSON, where an event's sentence (ev->text) is not said. */
bool log_is_json(void);

/* The name of ev->err: a resolver's own code, or an errno value ("E?" if unknown). */
const char *log_err_text(const struct log_event *ev);

/* Write @ev at @level.  Async-signal-safe; errno preserved. */
void log_event(enum log_level level, const struct log_event *ev);

/*
 * Write a configuration problem at warn level, in text as
 * backoff: VARIABLE="VALUE": MESSAGE.  errno preserved.
 */
void log_config_problem(const char *variable, const char *value, const char *message);

/*
 * Write a problem with a variable's name, not its value, at warn level, in
 * text as backoff: VARIABLE: MESSAGE.  errno preserved.
 */
void log_config_name(const char *variable, const char *message);

/* Write one line with @message (JSON: @event and "message") at @level.  errno preserved. */
void log_notice(enum log_level level, const char *event, const char *message);

/* The counts of BACKOFF_STATS. */
struct log_stats {
	uint64_t calls, retries, giveups, waited_ms;
	uint64_t probed, waited; /* shared fate: attempts made (by a prober), left to another */
	uint64_t unmanaged;	 /* connects passed through for want of memory */
	uint64_t early;		 /* connections closed by the peer before their first byte */
	uint64_t try_later;	 /* first answers that said "try later" (not ready, too busy) */
};

/*
 * Write the BACKOFF_STATS summary line of @s: unmanaged, early and
 * try_later only when not 0, and the shared-fate counts (probed, waited)
 * only when either is.  errno preserved.
 */
void log_stats(const struct log_stats *s);

#endif
