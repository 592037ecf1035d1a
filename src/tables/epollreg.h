/* Epoll registrations of each fd, recorded from epoll_ctl: hidden by deletion, replayed. */
#ifndef BACKOFF_TABLES_EPOLLREG_H
#define BACKOFF_TABLES_EPOLLREG_H

#include <stdbool.h>
#include <stdint.h>

#include "tables/fdtable.h"

/*
 * Record a successful epoll_ctl(@epfd, @op, @fd, {@events, @data}) that went
 * to the kernel.  Claims @fd's slot (waiting for another thread, never for
 * its own).  Returns false if it could not be recorded (no memory, or a
 * handler on the claiming thread): the fd is then marked FDS_UNKNOWN, so that
 * a connect on it asks /proc which sets hold it.  errno untouched.
 */
bool epollreg_record(int epfd, int op, int fd, uint32_t events, uint64_t data);

/*
 * As epollreg_record for a slot the caller holds, and without the kernel:
 * for a hidden fd.  Returns 0 or the errno epoll_ctl would give (EEXIST,
 * ENOENT, ENOMEM).
 */
int epollreg_apply(struct fdslot *s, int fd, int epfd, int op, uint32_t events, uint64_t data);

/* Delete @fd from every set it is recorded in (the caller holds @s).  errno untouched. */
void epollreg_hide(struct fdslot *s, int fd);

/* Add @fd back to every set it is recorded in (the caller holds @s).  errno untouched. */
void epollreg_replay(struct fdslot *s, int fd);

/*
 * Index @fd's registrations so that an event's data finds it.  Returns false
 * if the index has no room for one of them (then the fd is not managed).
 */
bool epollreg_index(const struct fdslot *s, int fd);

/*
 * Registrations made where the hooks could not record them (a handler on the
 * claiming thread): looked up in /proc in every epoll set the library knows.
 * False if that cannot be done; then the fd is not managed.
 */
bool epollreg_from_proc(struct fdslot *s, int fd);

/*
 * The managed fd registered in @epfd with @data, or -1.  Lock-free; the
 * answer is a hint, re-checked by whoever acts on it.
 */
int epollreg_lookup(int epfd, uint64_t data);

#endif
