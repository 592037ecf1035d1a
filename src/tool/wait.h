/* backoff wait: until each target is ready, with the library's schedule, shared fate and answers.
 */
#ifndef BACKOFF_TOOL_WAIT_H
#define BACKOFF_TOOL_WAIT_H

#include <stddef.h>
#include <stdio.h>

/* The usage line of backoff wait, for a command-line error. */
extern const char wait_usage_line[];

/* Print backoff wait --help to @out. */
void wait_print_help(FILE *out);

/*
 * Wait for the @n targets (tcp://HOST:PORT, unix:/PATH, http://HOST:PORT/PATH,
 * postgres://HOST:PORT, redis://HOST:PORT, mysql://HOST:PORT) in turn, each
 * through core's retry engine with the BACKOFF_* configuration of the
 * environment (checked first: exit 2 on a problem), BACKOFF_TIMEOUT bounding
 * the whole wait.  Then exec @command if not NULL.  Returns the exit status:
 * 0 ready, 1 gave up (one line on stderr naming the target and what it last
 * saw), 2 a bad target (one line), 126 or 127 when the command cannot run.
 */
int wait_run(char *const *targets, size_t n, char **command);

#endif
