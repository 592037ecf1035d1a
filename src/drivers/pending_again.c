/* The event loop's carrying out of a connection made again after an early close
 * (drivers/pending's). */
#include "drivers/pending_again.h"

#include "drivers/conn.h"
#include "drivers/decide.h"
#include "drivers/early.h"
#include "engine/engine.h"
#include "tables/epollreg.h"

/*
 * The new connection of an early close on @s (@fd, claimed) failed with
 * @err, or (0) is over as @why says: the program gets the end the first
 * one met, a reset as the error held for it.  @hidden: out of its epoll
 * sets, which get it back.
 */
unsigned again_over(struct fdslot *s, int fd, int err, enum engine_over why, bool hidden)
{
	int cancel = fdtable_nocancel(); /* a log line is a cancellation point */
	int end = early_over(fd, err, why);

	fdtable_cancel_restore(cancel);
	if (hidden)
		epollreg_replay(s, fd);
	if (end == 0)
		return FDS_FREE;
	atomic_store_explicit(&fdconn_of(s)->err, end, memory_order_relaxed);
	return FDS_FAILED;
}

/*
 * A hidden new connection of an early close (@s, claimed) waits for its
 * planned attempt: a local destination's is back every BACKOFF_LOCAL_PROBE
 * to look whether its listener is gone.  Returns its state, hidden.
 */
unsigned again_look(const struct config *cfg, struct fdslot *s, uint64_t now)
{
	uint64_t due = engine_planned_ms(&fdconn_of(s)->progress),
		 look = decide_look_ms(cfg, &fdconn_of(s)->target);

	if (decide_full_line(cfg, &fdconn_of(s)->target) >= 0)
		look = ENGINE_FULL_LOOK_MS; /* in a full server's line: a place freed is looked for
					     */
	if (look && now + look < due)
		due = now + look;
	atomic_store_explicit(&fdconn_of(s)->due_ms, due, memory_order_relaxed);
	return FDS_HIDDEN;
}
