/*
 * Three C library calls bound at the version x86-64 glibc first gave them
 * (GLIBC_2.2.5), which today's glibc still exports at the same address as
 * its default one: dlsym and pthread_once (default GLIBC_2.34, since libdl
 * and libpthread joined libc) and clock_gettime (GLIBC_2.17, since librt).
 * Each version the library needs is one the loader checks in every process
 * it is preloaded into, whether it ever connects or not: five were 1,800
 * instructions at every start, three are 1,100, and the library loads into
 * programs of a glibc from 2.16 on.  Linked into libbackoff.so alone (a static
 * program has no versions); other architectures and C libraries call the
 * functions as they are.
 */
#include <features.h>

#include "sys/kcall.h"
#include "sys/startup.h"

#if defined(__GLIBC__) && defined(__x86_64__) && !defined(KCALL_WRAPPERS)

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define OWN __attribute__((visibility("hidden")))

__asm__(".symver compat_dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver compat_pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver compat_clock_gettime,clock_gettime@GLIBC_2.2.5");
extern void *compat_dlsym(void *handle, const char *name);
extern int compat_pthread_once(pthread_once_t *once, void (*run)(void));
extern int compat_clock_gettime(clockid_t clock, struct timespec *ts);

/*
 * The caller that RTLD_NEXT counts from is the library still: this one's
 * caller's.  With the start-up code: the constructor resolves the real
 * symbols a signal handler may reach through it, and runs once through
 * pthread_once, so each would be a page of code faulted in at every start.
 */
STARTUP_CODE OWN void *dlsym(void *restrict handle, const char *restrict name)
{
	return compat_dlsym(handle, name);
}

STARTUP_CODE OWN int pthread_once(pthread_once_t *once, void (*run)(void))
{
	return compat_pthread_once(once, run);
}

OWN int clock_gettime(clockid_t clock, struct timespec *ts)
{
	return compat_clock_gettime(clock, ts);
}

#else
typedef int symver_none; /* the calls as the C library defines them */
#endif
