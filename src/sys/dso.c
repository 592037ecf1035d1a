/*
 * What the compiler's start files gave the library, and all of it that it
 * needs: libbackoff.so links without them (-nostartfiles).  Their code at
 * load and unload (transactional memory's clone tables, gprof's hook, the
 * atexit handlers of an unloaded object) cost four symbol lookups in every
 * preloaded process, about 2,800 instructions, for nothing the library uses:
 * its constructor is in .init_array, which the loader runs itself.  What
 * remains is the object's handle, which pthread_atfork passes to the C
 * library; the library is never unloaded (-z nodelete), so its fork handlers
 * never outlive it.
 */
#include <features.h>

#ifdef __GLIBC__
extern void *__dso_handle;
/* Weak: a program linked with the library's objects (a test's) has the start files' own. */
__attribute__((weak, visibility("hidden"))) void *__dso_handle = &__dso_handle;
#else
typedef int dso_none; /* musl's pthread_atfork takes no handle */
#endif
