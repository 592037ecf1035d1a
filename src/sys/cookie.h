/* The mark that keeps the preload's own connects away from the supervisor engine. */
#ifndef BACKOFF_SYS_COOKIE_H
#define BACKOFF_SYS_COOKIE_H

/*
 * connect(2) ignores its 4th to 6th arguments.  Under the supervisor engine
 * the preload passes these two values there, and the supervisor's seccomp
 * filter lets such a call through without a notification: a connect in a
 * preloaded process is retried by the preload alone.  It is a convention,
 * not a secret: a program that forges it only opts out of the retries.
 */
#define COOKIE_ARG3 0x6261636b6f666621ULL /* "backoff!" */
#define COOKIE_ARG4 0x7072656c6f61642eULL /* "preload." */

/*
 * getsockopt(2) ignores its 6th argument: the preload passes COOKIE_ARG3
 * there when it reads SO_ERROR of a connection it made itself (marked), which
 * the supervisor does not manage, and the filter lets the read through rather
 * than send it to the supervisor (a round trip of about 28 us, at every
 * connect of an event-loop client).
 */
#define COOKIE_ARG5 COOKIE_ARG3

/*
 * Set in the environment by the supervisor engine for the tree it watches,
 * to the supervisor's PID: the preload marks its connects only where this is
 * set and a seccomp filter is in place, and names the supervisor as the
 * tracer of its children (Yama).
 */
#define COOKIE_ENV "BACKOFF_SUPERVISED"

/*
 * Set by the launcher's default engine for a tree that runs under the
 * preload alone, to the supervisor's absolute path: the preload in each
 * process of the tree execs a program that only the supervisor reaches (a
 * static or Go one) through it, as backoff-supervise --exec PATH -- ARGV.
 * Absent, or under a filter already, every exec is the program's own.
 */
#define SUPERVISOR_PATH_ENV "LIBBACKOFF_SUPERVISOR"

#endif
