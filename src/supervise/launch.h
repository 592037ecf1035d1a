/* backoff-supervise --launch: what scripts/backoff does once its options are read. */
#ifndef BACKOFF_SUPERVISE_LAUNCH_H
#define BACKOFF_SUPERVISE_LAUNCH_H

/* Run @command under the supervisor engine, with LD_PRELOAD=@preload if not NULL. */
typedef int launch_supervise_fn(const char *preload, char **command);

/*
 * Run @command as scripts/backoff does with the library @candidate (as the
 * launcher found it, not yet made absolute): the build for the command's C
 * library, the BACKOFF_* variables checked (exit 2 with the launcher's usage
 * line), LD_PRELOAD with the library in front, then the engine that
 * BACKOFF_ENGINE names (auto: the supervisor, or the preload alone for a
 * set-user-ID command).  Returns only on failure, with an exit status.
 */
int launch(const char *candidate, char **command, launch_supervise_fn *supervise);

#endif
