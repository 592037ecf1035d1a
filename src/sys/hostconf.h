/* The host-wide settings file: found, checked and read once, at load. */
#ifndef BACKOFF_SYS_HOSTCONF_H
#define BACKOFF_SYS_HOSTCONF_H

#include <stddef.h>

/*
 * Where it is: fixed at build time (make HOSTCONF=...), not read from the
 * environment, which the programs /etc/ld.so.preload reaches do not carry.
 */
#ifndef BACKOFF_HOSTCONF
#define BACKOFF_HOSTCONF "/etc/libbackoff.conf"
#endif

#define HOSTCONF_MAX 8192 /* bytes the file may hold */

enum hostconf_result {
	HOSTCONF_ABSENT,  /* not there, or not for this process to open: as if absent */
	HOSTCONF_READ,	  /* read whole */
	HOSTCONF_IGNORED, /* there, and not taken: the reason says why */
};

/*
 * Read the file at @path into @buf (HOSTCONF_MAX + 1 bytes: the last stays
 * free for a NUL), its length into *@len, if it is a regular file of root's
 * that no one else may write, of HOSTCONF_MAX bytes at most; else
 * HOSTCONF_IGNORED and the reason into *@why.  An absent file costs one failed
 * open(2).  errno preserved.  At load only: not async-signal-safe.
 */
enum hostconf_result hostconf_read(const char *path, char *buf, size_t *len, const char **why);

#endif
