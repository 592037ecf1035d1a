/* Run a command under the supervisor engine, keeping this process's PID. */
#ifndef BACKOFF_SUPERVISE_RUN_H
#define BACKOFF_SUPERVISE_RUN_H

/*
 * Start the supervisor, install the filter on this process and exec
 * @command: the file @path if not NULL (a preload's exec hook: the tree may
 * hold a preload, which then marks its connects), else the one PATH names;
 * with LD_PRELOAD=@preload if not NULL.  The configuration comes from the
 * environment.  Returns only on failure, with an exit status (126, 127, or 2
 * for BACKOFF_STRICT and an unknown name).
 */
int supervise_run(const char *preload, const char *path, char **command);

#endif
