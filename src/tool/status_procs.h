/* backoff status: its looks into /proc (a prober's command, --processes). */
#ifndef BACKOFF_TOOL_STATUS_PROCS_H
#define BACKOFF_TOOL_STATUS_PROCS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * @pid's command name (/proc/PID/comm), escaped as target_format escapes
 * bytes, into @buf (@size bytes, terminated; "" if it cannot be read).
 * False if it cannot be read (the process is gone, or /proc hides it).
 */
bool status_procs_comm(int pid, char *buf, size_t size);

/*
 * backoff status --processes: the processes libbackoff is in, on stdout,
 * sorted by pid: a table (PID, USER, ENGINE, COMMAND), or one JSON object
 * per process and line if @json.  Those of the user whose effective uid is
 * @uid, or every user's if @every_user; a process whose /proc entries
 * cannot be read is left out.  Returns 0, or -1 with errno when /proc
 * cannot be listed or memory runs out.
 */
int status_procs_show(bool json, bool every_user, unsigned uid);

#endif
