/* An early close met by a blocking read: the socket connected again, what was sent sent again. */
#include "drivers/early.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>

#include "config/config_dests.h"
#include "drivers/before.h"
#include "drivers/decide.h"
#include "engine/engine.h"
#include "counters/events.h"
#include "engine/ready.h"
#include "config/target.h"
#include "sys/clock.h"
#include "sys/listen.h"
#include "sys/real.h"
#include "sys/sock.h"

int early_connect_once(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		       uint64_t deadline_ms)
{
	int err = fdtable_connect_from(fd, NULL, addr, len, clock_now_ms(), deadline_ms,
				       SOCK_TIMEO_ASK);

	if (err == 0 && early_watched(addr, len))
		early_watch_inet(cfg, fd, NULL, addr, len);
	return err;
}

/* @ns (-1: for ever) as poll's timeout in ms, rounded up. */
static int poll_ms(int64_t ns)
{
	if (ns < 0)
		return -1;
	if (ns / 1000000 >= INT_MAX)
		return INT_MAX;
	return (int)((ns + 999999) / 1000000);
}

/* Send @n bytes at @p on @fd, whole (MSG_NOSIGNAL: an end shows in the read that follows). */
static int send_all(int fd, const unsigned char *p, uint32_t n)
{
	uint32_t done = 0;

	while (done < n) {
		ssize_t k = real_send(fd, p + done, n - done, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EPIPE;
		done += (uint32_t)k;
	}
	return 0;
}

/*
 * Wait until @until_ms (CONFIG_INFINITE: for ever) for @fd to be readable:
 * 0 when it is, -1 if it is not by then (silent), else an errno: EINTR when
 * a signal that may not restart the call cut the wait short (the program's
 * own timer, say: as its read would be).
 */
static int readable_by(int fd, uint64_t until_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		uint64_t now = clock_now_ms();
		int64_t left_ns = until_ms == CONFIG_INFINITE ? -1
				  : now >= until_ms	      ? 0
							      : (int64_t)(until_ms - now) * 1000000;
		int rc = real_poll(&p, 1, poll_ms(left_ns));

		if (rc > 0)
			return 0;
		if (rc == 0)
			return -1;
		if (errno != EINTR || !clock_every_handler_restarts())
			return errno;
	}
}

/* How often a new connection's local listener is asked whether it took it, in ms. */
#define ACCEPT_LOOK_MS 1

/*
 * Wait until @until_ms for the local listener at the other end of @fd to
 * accept its connection: 0 once it did (or when that cannot be told, or
 * once the connection is readable: only a server that took it can answer or
 * end it, after which its side may be gone from the table), -1 if it has
 * not by then, else an errno (EINTR, as readable_by).
 */
static int accepted_by(int fd, uint64_t until_ms)
{
	for (;;) {
		uint64_t now;
		int err;

		if (listen_accepted(fd) != 0)
			return 0;
		now = clock_now_ms();
		if (now >= until_ms)
			return -1;
		/* Readable by the next look (its time overshot by one at most): taken. */
		if ((err = readable_by(fd, now + ACCEPT_LOOK_MS)) != -1)
			return err;
	}
}

/* The server's one-byte answer on @fd (readable) is @want: 0, else an errno. */
static int answered(int fd, unsigned char want)
{
	unsigned char got = 0;
	ssize_t n = real_recv(fd, &got, 1, 0);

	return n == 1 && got == want ? 0 : n < 0 ? errno : ECONNRESET;
}

/* fcntl(F_SETFL) of @fd to @flags, the table following as the fcntl hook has it follow. */
static void set_flags(int fd, int flags)
{
	if (real_fcntl(fd, F_SETFL, flags) == 0)
		fdtable_mode_change(fd, FDS_NONBLOCK, (flags & O_NONBLOCK) != 0);
}

/*
 * Send @fl again on @fd's new connection: a start-up that negotiated first
 * (PostgreSQL's SSLRequest) stops for the server's answer, which must be the
 * one the program had (in the clear), before the rest.  0, else an errno
 * (EINTR: a signal cut the wait short), or -1: no answer by @until_ms.
 */
static int send_flight(int fd, const struct flight *fl, uint64_t until_ms)
{
	uint32_t pause = ready_pause(fl->data, fl->len);
	int err;

	if (pause == 0 || pause >= fl->len)
		return send_all(fd, fl->data, fl->len);
	if ((err = send_all(fd, fl->data, pause)) != 0 || (err = readable_by(fd, until_ms)) != 0)
		return err;
	if ((err = answered(fd, READY_GO_ON)) != 0)
		return err;
	return send_all(fd, fl->data + pause, fl->len - pause);
}

/*
 * The event that a wait on @fd's new connection met, as readable_by's @err
 * (readable, -1 not by its time, or an errno), into *ev: and whether its
 * local listener took it when the engine asks.
 */
static void looked(const struct config *c, const struct retry_progress *p, int fd, int err,
		   struct engine_event *ev)
{
	/* A signal that may not restart the call (the program's own timer). */
	ev->kind = err > 0 ? ENGINE_SIGNAL : ENGINE_LOOK;
	ev->err = err > 0 ? err : 0;
	ev->answered = err == 0;
	if (err == -1 && (engine_facts(c, p, ENGINE_LOOK) & ENGINE_FACTS_ACCEPT))
		ev->unaccepted = early_unaccepted(c, fd);
}

bool early_again_blocking(const struct config *cfg, int fd, const struct sockaddr_storage *addr,
			  socklen_t len, struct flight *fl, int *end)
{
	struct fdslot *s = fdtable_peek(fd);
	uint64_t until = s ? atomic_load_explicit(&s->again_until_ms, memory_order_relaxed) : 0,
		 later = 0, now = clock_now_ms();
	int flags = real_fcntl(fd, F_GETFL), err = 0;
	bool nonblocking = flags >= 0 && (flags & O_NONBLOCK), known, unsent = false;
	struct engine_again again = { .until_ms = until ? until : CONFIG_INFINITE };
	struct engine_event ev = { .kind = ENGINE_DUE };
	const struct config *c = cfg;
	struct retry_progress p;
	struct engine_action a;
	struct target_addr t;

	known = target_from_sockaddr((const struct sockaddr *)addr, len, &t);
	if (known) {
		c = config_for(cfg, &t); /* BACKOFF_DESTINATIONS */
		again.local = decide_look_ms(c, &t) != 0;
	}
	/* Not made yet: its one attempt is the engine's, after the destination's delay. */
	engine_begin(c, &p, CONFIG_INFINITE, now, now + 1, &again);
	if (nonblocking)
		set_flags(fd, flags & ~O_NONBLOCK);
	/*
	 * The destination's delay, ended by a local listener that goes away (it
	 * served its one connection), or by a signal, as the end would have been.
	 */
	if (known)
		err = before_damp(cfg, fd, &t, &later, true);
	ev.gone = err == ECONNREFUSED;
	if (err == EINTR) {
		ev.kind = ENGINE_SIGNAL;
		ev.err = err;
	}
	for (;;) {
		ev.now_ms = clock_now_ms();
		a = engine_step(c, &c->errors_inet, &p, &ev);
		memset(&ev, 0, sizeof(ev));
		if (a.what == ENGINE_ATTEMPT) {
			/* A blocking connect within its whole time; what was sent, sent again. */
			err = early_connect_once(cfg, fd, (const struct sockaddr *)addr, len,
						 again.until_ms);
			/*
			 * To a local listener, what was sent goes again once it took the
			 * connection: one that never does (the program's own server, in
			 * the thread this read holds) would serve it later, to nobody.
			 */
			unsent = err == 0 && fl && again.local;
			if (err == 0 && fl && !unsent)
				err = send_flight(fd, fl, again.until_ms);
			/* -1: no answer to its pause in time, silent. */
			ev.kind = err ? ENGINE_FAILED : ENGINE_CONNECTED;
			ev.err = err > 0 ? err : 0;
		} else if (a.what == ENGINE_AWAIT) {
			/* Unsent: what was sent goes again once its listener took it. */
			err = unsent ? accepted_by(fd, a.until_ms) : 0;
			if (unsent && err == 0) {
				unsent = false;
				err = send_flight(fd, fl, again.until_ms);
				if (err != 0) {
					ev.kind = ENGINE_FAILED;
					ev.err = err > 0 ? err : 0;
					continue;
				}
			}
			looked(c, &p, fd, unsent ? err : readable_by(fd, a.until_ms), &ev);
		} else {
			break;
		}
	}
	/* Taken as the call ended (no look said so): sent as ever (an end shows in its read). */
	if (unsent && a.what != ENGINE_OVER)
		(void)send_flight(fd, fl, again.until_ms);
	if (nonblocking)
		set_flags(fd, flags);
	if (fl)
		early_flight_done(fd, fl);
	if (a.what != ENGINE_OVER) {
		if (s)
			atomic_store_explicit(&s->again_until_ms, 0, memory_order_relaxed);
		return true;
	}
	*end = early_over(fd, a.err, a.over);
	return false;
}
