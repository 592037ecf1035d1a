/* Log lines, text or JSON, one write(2) each, to stderr or BACKOFF_LOG_FILE. */
#ifndef BACKOFF_SYS_LOG_H
#define BACKOFF_SYS_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/target.h"

#define LOG_NONE (-1)

/* One thing that happened; fields set to NULL or LOG_NONE are left out. */
struct log_event {
	const char *event; /* retry, success, giveup, pass */
	const char *call;  /* connect, ... */
	const struct target_addr *target;
	const char *name;     /* printed as the target when target is NULL: a host name */
	int err;	      /* 0: none */
	const char *err_name; /* err's name when it is not an errno value (EAI_AGAIN) */
	uint64_t attempt;     /* 0: none */
	int64_t delay_ms;     /* the delay the policy drew */
	int64_t wait_ms;      /* the wait made, shorter at the end of the budget */
	int64_t elapsed_ms;
	const char *reason;
};

/* Take the sink, format and level from @cfg, which must outlive every log call. */
void log_configure(const struct config *cfg);

/* Whether messages of @level are written. */
bool log_enabled(enum config_log_level level);

/* Write @ev at @level.  Async-signal-safe; errno preserved. */
void log_event(enum config_log_level level, const struct log_event *ev);

/* Write a configuration problem at warn level.  errno preserved. */
void log_config_problem(const struct config_problem *p);

/* Write the BACKOFF_STATS summary line.  errno preserved. */
void log_stats(uint64_t calls, uint64_t retries, uint64_t giveups, uint64_t waited_ms);

#endif
