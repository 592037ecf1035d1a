/* The event loop's steps of a connection made again after an early close (drivers/pending's). */
#ifndef BACKOFF_DRIVERS_PENDING_AGAIN_H
#define BACKOFF_DRIVERS_PENDING_AGAIN_H

#include <stdint.h>

#include "config/config.h"
#include "counters/events.h"
#include "tables/fdtable.h"

/*
 * A connection made again after an early close, in the event loop
 * (pending_again.c): when it is next looked at, awaited until its first
 * byte, over, due, or hidden until its planned attempt.  Each returns the
 * slot's new state; one that is timed has its conn.due_ms set, which the
 * caller makes the earliest due if it is sooner.
 */
uint64_t again_look_at(const struct config *cfg, const struct fdslot *s, uint64_t now);
unsigned await_first(const struct config *cfg, struct fdslot *s, uint64_t now);
unsigned again_over(struct fdslot *s, int fd, int err, enum events_end why, bool hidden);
unsigned again_due(const struct config *cfg, struct fdslot *s, int fd, uint64_t now);
unsigned again_look(const struct config *cfg, struct fdslot *s, uint64_t now);

#endif
