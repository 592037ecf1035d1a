/* backoff status: a destination's row, and the formats that show rows. */
#ifndef BACKOFF_TOOL_STATUS_FORMAT_H
#define BACKOFF_TOOL_STATUS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "facts/share.h"
#include "config/target.h"

#define STATUS_COMM_MAX 64 /* /proc/PID/comm is 16 bytes; escaped, at most 4 times that */

/* One destination to show: the slot's view and what is derived from it. */
struct status_row {
	struct share_view v;
	char dest[TARGET_TEXT_MAX];
	const char *state;		      /* full, waiting, down, early, up, unknown, past */
	bool prober_alive;		      /* the prober's thread is in its process, now */
	char comm[STATUS_COMM_MAX];	      /* the prober's command name, escaped; "" unknown */
	const char *err_name;		      /* NULL: none */
	uint64_t since_ms_ago, probed_ms_ago; /* valid when since_ns / probed_ns are */
	unsigned uid;			      /* the user whose file holds it */
	char user[64];			      /* that user's name, else the uid */
	unsigned entry; /* the BACKOFF_DESTINATIONS entry that serves it, from 1; 0: none */
};

/* The rows to show, sorted, and what the formats add to them. */
struct status_view {
	const struct status_row *rows;
	unsigned n;
	bool several_users; /* a row is another user's (root's view): whose each is */
	bool several_netns; /* the rows come from more than one network namespace */
	bool policy;	    /* BACKOFF_DESTINATIONS is set: the entry that serves each */
	uint64_t wall_ms;   /* the wall clock when they were read, ms since the epoch */
};

/* Whether clients wait for @v's destination: a prober's lease runs, or waiters. */
static inline bool status_is_waiting(const struct share_view *v)
{
	return v->probing || v->waiters > 0;
}

/*
 * The rows of @w on stdout as a table, one line saying there is none if
 * there is none (@path: the state file read).
 */
void status_format_table(const struct status_view *w, const char *path);

/* The rows of @w on stdout, one JSON object per row and line. */
void status_format_json(const struct status_view *w);

/* The rows of @w on stdout as OpenMetrics gauges, ending with # EOF. */
void status_format_openmetrics(const struct status_view *w);

/* @uid's user name into @buf (@size bytes, terminated), else the number. */
void status_format_user(unsigned uid, char *buf, size_t size);

#endif
