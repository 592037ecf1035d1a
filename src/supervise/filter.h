/* The seccomp filter that sends connect(2) and getsockopt(SO_ERROR) to the supervisor. */
#ifndef BACKOFF_SUPERVISE_FILTER_H
#define BACKOFF_SUPERVISE_FILTER_H

/*
 * Install the filter on the calling thread (inherited across fork and exec)
 * and return its listener fd (close-on-exec), or -1 with errno set and
 * *why naming the step that failed.  Sets PR_SET_NO_NEW_PRIVS unless the
 * caller may install a filter without it (CAP_SYS_ADMIN).
 */
int filter_install(const char **why);

#endif
