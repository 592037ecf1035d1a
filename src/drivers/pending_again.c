/* The event loop's steps of a connection made again after an early close (drivers/pending's). */
#include "drivers/pending_again.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "drivers/conn.h"
#include "drivers/decide.h"
#include "drivers/early.h"
#include "engine/engine.h"
#include "tables/epollreg.h"
#include "sys/sock.h"

/*
 * When @s's new connection, made at @now, is next looked at: at its time,
 * and after ENGINE_ACCEPT_MS first when its destination is local
 * (early_unaccepted).  await_first: it awaits its first byte until then;
 * returns its state, awaited.
 */
uint64_t again_look_at(const struct config *cfg, const struct fdslot *s, uint64_t now)
{
	uint64_t until = atomic_load_explicit(&s->again_until_ms, memory_order_relaxed);

	if (now + ENGINE_ACCEPT_MS < until && decide_look_ms(cfg, &fdconn_read(s)->target))
		until = now + ENGINE_ACCEPT_MS;
	return until;
}

unsigned await_first(const struct config *cfg, struct fdslot *s, uint64_t now)
{
	uint64_t until = again_look_at(cfg, s, now);

	atomic_store_explicit(&fdconn_of(s)->due_ms, until, memory_order_relaxed);
	return FDS_AWAIT;
}

/*
 * The new connection of an early close on @s (@fd, claimed) failed with
 * @err, or (0) is given up as @why says: the program gets the end the first
 * one met, a reset as the error held for it.  @hidden: out of its epoll
 * sets, which get it back.
 */
unsigned again_over(struct fdslot *s, int fd, int err, enum events_end why, bool hidden)
{
	int cancel = fdtable_nocancel(); /* a log line is a cancellation point */
	int end = early_end(fd, err, why);

	fdtable_cancel_restore(cancel);
	if (hidden)
		epollreg_replay(s, fd);
	if (end == 0)
		return FDS_FREE;
	atomic_store_explicit(&fdconn_of(s)->err, end, memory_order_relaxed);
	return FDS_FAILED;
}

/*
 * A time of @s's new connection (@fd, claimed) is up at @now: answered (a
 * byte came), it is the program's alone; left in its local listener's
 * queue, or silent or unanswered at its time, it is over (again_over).
 */
unsigned again_due(const struct config *cfg, struct fdslot *s, int fd, uint64_t now)
{
	uint64_t until = atomic_load_explicit(&s->again_until_ms, memory_order_relaxed);

	if (!(atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FIRST)) {
		atomic_store_explicit(&s->again_until_ms, 0, memory_order_relaxed);
		return FDS_FREE;
	}
	if (now < until) {
		if (early_unaccepted(cfg, fd))
			return again_over(s, fd, 0, EVENTS_END_UNACCEPTED, false);
		/* Accepted, still connecting, or the kernel cannot tell: until its time. */
		atomic_store_explicit(&fdconn_of(s)->due_ms, until, memory_order_relaxed);
		return fdtable_state_of(s);
	}
	/* Its connect unanswered, else the connection silent. */
	return again_over(s, fd, sock_tcp_state(fd) == TCP_SYN_SENT ? ETIMEDOUT : 0,
			  EVENTS_END_SILENT, false);
}

/*
 * A hidden new connection of an early close (@s, claimed) waits for its
 * planned attempt: a local destination's is back every BACKOFF_LOCAL_PROBE
 * to look whether its listener is gone.  Returns its state, hidden.
 */
unsigned again_look(const struct config *cfg, struct fdslot *s, uint64_t now)
{
	uint64_t due = fdconn_of(s)->progress.planned_ms,
		 look = decide_look_ms(cfg, &fdconn_of(s)->target);

	if (decide_full_line(cfg, &fdconn_of(s)->target) >= 0)
		look = ENGINE_FULL_LOOK_MS; /* in a full server's line: a place freed is looked for
					     */
	if (look && now + look < due)
		due = now + look;
	atomic_store_explicit(&fdconn_of(s)->due_ms, due, memory_order_relaxed);
	return FDS_HIDDEN;
}
