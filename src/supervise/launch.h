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

struct config;

/*
 * The BACKOFF_* variables read into @cfg and checked with the library's own
 * parser: each problem on a line, then exit 2 (with the launcher's usage
 * line when a bad value came from an option); the unknown BACKOFF_* names
 * said once for the tree; the log configured.  For launch() and backoff wait.
 */
void launch_validate(struct config *cfg);

/* backoff status ARGS: exec backoff-status next to @candidate with @args, LD_PRELOAD unset. */
_Noreturn void launch_status(const char *candidate, char **args);

/*
 * backoff --schedule: exec backoff-schedule of the build for /bin/sh's C
 * library, with --attempts @attempts and --for @dest_for if not NULL,
 * LD_PRELOAD unset.
 */
_Noreturn void launch_schedule(const char *candidate, const char *attempts, const char *dest_for);

/*
 * backoff --print-env: check the environment as launch() does, then print
 * the export line of LD_PRELOAD and those of the variables among @names
 * (NULL-terminated, in that order) that options set.  Returns 0, 1 if
 * stdout failed.
 */
int launch_print_env(const char *candidate, const char *const *names);

/*
 * --print-env --off: the shell lines that undo --print-env's: LD_PRELOAD
 * without libbackoff's entries (unset when none is left), and @names (the
 * BACKOFF_* variables, NULL-ended) and the supervisor's path unset.  0, or 1
 * if stdout could not be written.
 */
int launch_print_off(const char *const *names);

#endif
