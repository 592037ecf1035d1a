/* The event loop's record of a managed connect, kept in its fd's slot of the table. */
#ifndef BACKOFF_DRIVERS_CONN_H
#define BACKOFF_DRIVERS_CONN_H

#include <stdalign.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "config/config.h"
#include "config/target.h"
#include "engine/progress.h"
#include "facts/record.h"
#include "tables/fdtable.h"

struct dest;

/* A managed connect: written only by the thread that holds the claim. */
struct fdconn {
	const struct config
		*cfg;	   /* what serves its destination (BACKOFF_DESTINATIONS), from its begin */
	struct dest *dest; /* its destination's shared budget, or NULL */
	dev_t dev;	   /* the socket's identity, against fd reuse behind the hooks */
	ino_t ino;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct target_addr target;
	struct retry_progress progress;
	_Atomic uint64_t due_ms; /* FDS_HIDDEN: when to retry or look (monotonic ms) */
	_Atomic int err;	 /* FDS_FAILED: the error to hand over */
	struct fate fate;	 /* shared fate: joined at the first failure */
};

_Static_assert(sizeof(struct fdconn) <= FDTABLE_CONN_BYTES, "a slot keeps a whole fdconn");
_Static_assert(alignof(struct fdconn) <= 8, "a slot's conn bytes are aligned for an fdconn");

/* The managed connect kept in slot @s (claimed, or settled). */
static inline struct fdconn *fdconn_of(struct fdslot *s)
{
	return (struct fdconn *)(void *)s->conn;
}

/* The same, read only. */
static inline const struct fdconn *fdconn_read(const struct fdslot *s)
{
	return (const struct fdconn *)(const void *)s->conn;
}

#endif
