/* The event loop's carrying out of a connection made again after an early close
 * (drivers/pending's). */
#ifndef BACKOFF_DRIVERS_PENDING_AGAIN_H
#define BACKOFF_DRIVERS_PENDING_AGAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "engine/engine.h"
#include "tables/fdtable.h"

/*
 * A connection made again after an early close, in the event loop
 * (pending_again.c), whose rules are the engine's (engine_begin's @again):
 * over as the engine said (ENGINE_OVER), or hidden until its planned
 * attempt.  Each returns the slot's new state; one that is timed has its
 * conn.due_ms set, which the caller makes the earliest due if it is sooner.
 */
unsigned again_over(struct fdslot *s, int fd, int err, enum engine_over why, bool hidden);
unsigned again_look(const struct config *cfg, struct fdslot *s, uint64_t now);

#endif
