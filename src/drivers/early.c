/* Early close: the watch on a connection until its first byte, and the look when it ends. */
#include "drivers/early.h"

#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <string.h>

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
#include "sys/text.h"

/* A new connection on @s's fd: what was recorded of the last one is forgotten. */
static void flight_restart(struct fdslot *s)
{
	struct flight *fl;

	if (!fdtable_claim(s, false)) {
		/* Busy: what it holds cannot be cleared, so it is never replayed. */
		atomic_fetch_or_explicit(&s->word, FDS_NOREPLAY, memory_order_relaxed);
		return;
	}
	atomic_fetch_and_explicit(&s->word, ~(FDS_NOREPLAY | FDS_SHUT), memory_order_relaxed);
	fl = atomic_load_explicit(&s->flight, memory_order_relaxed);
	if (fl && (atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FLIGHT))
		fl->len = 0;
	fdtable_release(s, fdtable_state_of(s));
}

void early_watch_inet(const struct config *cfg, int fd, struct fdslot *s,
		      const struct sockaddr *addr, socklen_t len)
{
	if (!cfg->enabled || !cfg->shared)
		return;
	if (!s && !(s = fdtable_peek(fd)) && !(s = fdtable_get(fd)))
		return;
	fdtable_cover(fd);
	/*
	 * A slot of its own, not the managed connect's, so no claim: only a
	 * connect of this fd writes it, and early_seen reads it once the flag
	 * set after it is seen.
	 */
	if (len > sizeof(s->first_addr))
		len = sizeof(s->first_addr);
	/* An IPv4 address, the usual one, copied at its fixed length (no call). */
	if (len == sizeof(struct sockaddr_in))
		memcpy(&s->first_addr, addr, sizeof(struct sockaddr_in));
	else
		memcpy(&s->first_addr, addr, len);
	s->first_len = len;
	/* A new connection: nothing sent on it yet (rare: a replay's flight is held apart). */
	if (__builtin_expect(atomic_load_explicit(&s->word, memory_order_relaxed) &
				     (FDS_FLIGHT | FDS_NOREPLAY | FDS_SHUT),
			     0))
		flight_restart(s);
	fdtable_set_first(s, true);
}

/*
 * Take @s's flight if what the connection sent (@f) is all in it, in order
 * to send it again; else NULL (and the flight is dropped: this connection
 * is never replayed).
 */
static struct flight *replayable(struct fdslot *s, const struct sock_first *f)
{
	uint32_t w = atomic_load_explicit(&s->word, memory_order_acquire);
	struct flight *fl;

	/* Recorded under BACKOFF_REPLAY=on, or a start-up without effect (early_record). */
	if ((w & FDS_NOREPLAY) || !(fl = fdtable_flight_take(s)))
		return NULL;
	/* Bytes the kernel sent that were not recorded (sendfile, a raw system call): not safe. */
	if (fl->len == 0 || f->bytes_out == UINT64_MAX || f->bytes_out > fl->len ||
	    (atomic_load_explicit(&s->word, memory_order_acquire) & FDS_NOREPLAY)) {
		fdtable_flight_free(fl);
		return NULL;
	}
	return fl;
}

/*
 * The server's first bytes into @head (@size bytes at most): the @n read, of
 * which @got's buffer holds the first, and when that buffer holds them all
 * and they are fewer than @enough, the rest of them in @fd's buffer, looked
 * at without taking them (a program that reads a byte at a time).  Their
 * count.  errno untouched.
 */
static size_t first_bytes(int fd, const struct iovec *got, size_t n, size_t enough,
			  unsigned char *head, size_t size)
{
	size_t k = got->iov_len < n ? got->iov_len : n;
	int saved = errno;

	if (k > size)
		k = size;
	memcpy(head, got->iov_base, k);
	if (k == n && k < enough) {
		ssize_t more = real_recv(fd, head + k, size - k, MSG_PEEK | MSG_DONTWAIT);

		if (more > 0)
			k += (size_t)more;
	}
	errno = saved;
	return k;
}

/* What a start-up's answer must hold to be told: a CONNACK's code, 57P03's code field. */
#define STARTUP_ENOUGH 32

/* What a Redis refusal must hold to be told, and to be quoted in the log. */
#define RESP_ENOUGH 128

/* What an HTTP response head must hold to be told: its status line and Retry-After. */
#define HTTP_ENOUGH 1024

/* "HTTP/1.1 503": what tells a status. */
#define HTTP_STATUS_LINE 12

/* A "try later" answer as the log says it: the protocol, then what the server said. */
#define SAID_MAX 160

/* The longest part of a server's line that the log quotes. */
#define SAID_QUOTED 72

/*
 * @what, then the first line of the server's answer @p (@n bytes; none if
 * 0), quoted, cut and escaped, into @said: a text protocol's refusal as it
 * was written.
 */
static void say_line(char said[SAID_MAX], const char *what, const unsigned char *p, size_t n)
{
	struct text t;
	size_t k = 0;

	while (k < n && p[k] != '\r' && p[k] != '\n')
		k++;
	text_init(&t, said, SAID_MAX);
	text_str(&t, what);
	if (n == 0)
		return;
	text_str(&t, ": \"");
	text_escaped(&t, (const char *)p, k < SAID_QUOTED ? k : SAID_QUOTED);
	text_str(&t, k > SAID_QUOTED ? "...\"" : "\"");
}

/* An HTTP answer for the log: its status code, and the wait its Retry-After asked for. */
static void say_http(char said[SAID_MAX], const unsigned char *p, uint64_t wait_ms)
{
	struct text t;

	text_init(&t, said, SAID_MAX);
	text_str(&t, "HTTP ");
	text_put(&t, (const char *)p + 9, 3); /* "HTTP/1.x NNN": told by ready_http_answer */
	if (wait_ms != 0) {
		text_str(&t, ", Retry-After ");
		text_u64(&t, (wait_ms + 999) / 1000);
		text_str(&t, " s");
	}
}

/*
 * An MQTT CONNACK for the log (@p, @n bytes, told a refusal by ready_connack):
 * its return code (3.1.1) or reason code (5), after the flags that follow
 * the remaining length (1 to 4 bytes).
 */
static void say_connack(char said[SAID_MAX], const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	struct text t;
	size_t at = 1;
	unsigned char c;
	char code[4] = { '0', 'x', '0', '0' };

	while (at < 4 && at < n && (p[at] & 0x80))
		at++;
	c = at + 2 < n ? p[at + 2] : 0;
	code[2] = hex[c >> 4];
	code[3] = hex[c & 15];

	text_init(&t, said, SAID_MAX);
	text_str(&t, "MQTT: CONNACK ");
	text_put(&t, code, sizeof(code));
}

/*
 * A start-up that awaits its answer (@fl, recorded from the start) got the
 * first bytes @got of it (@n of them) on @fd: what they say (@said: the
 * answer, as text, when not ready; *full: it says the server is full).
 */
static enum ready_answer startup_answer(const struct config *cfg, int fd, const struct flight *fl,
					const struct iovec *got, size_t n, char said[SAID_MAX],
					bool *full, uint64_t *at_least_ms)
{
	unsigned char head[HTTP_ENOUGH];
	enum ready_answer a;
	size_t k;

	if (!fl || fl->len == 0 || !got)
		return READY_ANSWERED;
	switch (ready_request(cfg->protocols, fl->data, fl->len)) {
	case READY_REQUEST_POSTGRESQL:
		/* One byte read alone ('N' to an SSLRequest) is the answer as it is. */
		k = first_bytes(fd, got, n, n == 1 ? 1 : STARTUP_ENOUGH, head, sizeof(head));
		a = ready_answer(head, k, fl->data, fl->len);
		*full = a == READY_NOT && ready_says_full(READY_REQUEST_POSTGRESQL, head, k, 0);
		if (a == READY_NOT)
			say_line(said,
				 *full ? "PostgreSQL: SQLSTATE 53300 (too many connections)"
				       : "PostgreSQL: SQLSTATE 57P03",
				 NULL, 0);
		return a;
	case READY_REQUEST_MQTT:
		k = first_bytes(fd, got, n, STARTUP_ENOUGH, head, sizeof(head));
		a = ready_connack(head, k, fl->data, fl->len);
		if (a == READY_NOT)
			say_connack(said, head, k);
		return a;
	case READY_REQUEST_REDIS:
		/* A first byte that is no error's ('+PONG', '$5'): answered, nothing to look at. */
		if (n > 0 && got->iov_len > 0 && *(const unsigned char *)got->iov_base != '-')
			return READY_ANSWERED;
		k = first_bytes(fd, got, n, RESP_ENOUGH, head, sizeof(head));
		a = ready_resp_answer(head, k);
		if (a == READY_NOT)
			say_line(said, "Redis", head, k);
		return a;
	case READY_REQUEST_HTTP:
		k = got->iov_len < n ? got->iov_len : n;
		/* A status line read whole that is not "try later" tells: nothing to look at. */
		if (k >= HTTP_STATUS_LINE &&
		    ready_http_answer(got->iov_base, k, 0, at_least_ms) == READY_ANSWERED)
			return READY_ANSWERED;
		k = first_bytes(fd, got, n, sizeof(head), head, sizeof(head));
		a = ready_http_answer(head, k, clock_wall_ms() / 1000, at_least_ms);
		*full = a == READY_NOT &&
			ready_says_full(READY_REQUEST_HTTP, head, k, *at_least_ms);
		if (a == READY_NOT)
			say_http(said, head, *at_least_ms);
		return a;
	case READY_REQUEST_NONE:
		break;
	}
	return READY_ANSWERED;
}

/* What a refusal in place of a greeting must hold to be told (NATS's comes after its INFO). */
#define GREETING_ENOUGH 512

/*
 * Whether the server's first bytes, @n read of which @got's buffer holds the
 * first, sent before anything was sent to it, refuse the connection for now
 * (ready_greeting, for cfg->protocols; @said: the answer, as text, an FTP or
 * SMTP reply quoted).  A read too short to tell looks at the rest
 * (first_bytes).
 */
static bool greeting_refused(const struct config *cfg, int fd, const struct iovec *got, size_t n,
			     char said[SAID_MAX], bool *full)
{
	unsigned char head[GREETING_ENOUGH];
	const unsigned char *p = got->iov_base;
	const char *name = NULL;
	size_t k = got->iov_len < n ? got->iov_len : n;
	enum ready_greeting g = ready_greeting(p, k, cfg->protocols, &name);

	if (g == READY_UNDECIDED) {
		k = first_bytes(fd, got, n, sizeof(head), head, sizeof(head));
		p = head;
		g = ready_greeting(p, k, cfg->protocols, &name);
	}
	if (g != READY_REFUSAL)
		return false;
	*full = ready_greeting_full(name);
	/* FTP's and SMTP's reply says why; the others' names say all. */
	say_line(said, name, p, k >= 3 && memcmp(p, "421", 3) == 0 ? k : 0);
	return true;
}

/*
 * Whether the program has ended its own side of @s's connection: it called
 * shutdown (@w), or its FIN is out (a raw system call; once both ends are
 * through, TCP_CLOSE says no more than a reset does).  A new connection
 * would not carry that end (a server reading to it would wait), so it is
 * never made: the end counts as a sent request's does.
 */
static bool own_side_ended(uint32_t w, int state)
{
	switch (state) {
	case TCP_FIN_WAIT1:
	case TCP_FIN_WAIT2:
	case TCP_CLOSING:
	case TCP_LAST_ACK:
	case TCP_TIME_WAIT:
		return true;
	default:
		return (w & FDS_SHUT) != 0;
	}
}

void early_shutdown(int fd, int how)
{
	struct fdslot *s = fdtable_peek(fd);

	if (how != SHUT_RD && s &&
	    (atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FIRST))
		atomic_fetch_or_explicit(&s->word, FDS_SHUT, memory_order_relaxed);
}

/* The end the first connection of @s met, if the library made it again (then forgotten): *end. */
static bool first_end(struct fdslot *s, int *end)
{
	int e = atomic_exchange_explicit(&s->again_end, 0, memory_order_relaxed);

	if (e == 0)
		return false;
	*end = e - 1;
	return true;
}

enum early_action early_seen(const struct config *cfg, int fd, ssize_t rc, int err, bool sending,
			     const struct iovec *got, struct sockaddr_storage *addr, socklen_t *len,
			     struct flight **flight, int *end)
{
	struct fdslot *s = fdtable_peek(fd);
	struct sock_first f = { .segs_in = 1 };
	enum ready_answer answer = READY_ANSWERED;
	char said[SAID_MAX] = ""; /* the "try later" answer, as text */
	uint64_t at_least = 0;	  /* the wait it asked for */
	struct target_addr t;
	struct flight *fl = NULL;
	bool again, blocking, sent, ended, recorded = false, full = false;
	uint64_t until = CONFIG_INFINITE;
	uint32_t w;

	if (!s || !((w = atomic_load_explicit(&s->word, memory_order_acquire)) & FDS_FIRST))
		return EARLY_NONE;
	if (rc < 0 && err != ECONNRESET && err != EPIPE)
		return EARLY_NONE; /* EAGAIN, EINTR...: nothing yet */
	if (rc > 0 && sending)
		return EARLY_NONE; /* what we sent says nothing of the peer */
	if (rc <= 0) {
		/* An end, or a read of nothing: one look tells which. */
		if (!sock_first(fd, &f)) {
			fdtable_set_first(s, false); /* not TCP: nothing to watch */
			return EARLY_NONE;
		}
		if (f.segs_in == 0 && (f.state == TCP_ESTABLISHED || f.state == TCP_SYN_SENT))
			return EARLY_NONE; /* still open: a read of nothing */
	}
	*len = s->first_len;
	memcpy(addr, &s->first_addr, *len);
	if (w & FDS_FLIGHT) {
		if (!fdtable_claim(s, true))
			return EARLY_NONE;
		fl = (atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FLIGHT)
			     ? atomic_load_explicit(&s->flight, memory_order_relaxed)
			     : NULL;
		recorded = fl && fl->len != 0;
		/* Data on a start-up without effect: the server's answer may be "not ready". */
		if (rc > 0 && !(w & FDS_NOREPLAY))
			answer = startup_answer(cfg, fd, fl, got, (size_t)rc, said, &full,
						&at_least);
		fl = NULL;
		fdtable_release(s, fdtable_state_of(s));
	}
	if (answer == READY_GOES_ON)
		return EARLY_NONE; /* the start-up goes on: still watched */
	/*
	 * The server's first bytes, to nothing or to what the library recorded:
	 * a greeting, or a refusal for now, written before it read anything (so
	 * what was sent is safe to send again).
	 */
	if (answer != READY_NOT && rc > 0 && !sending && got && !(w & FDS_NOREPLAY) &&
	    greeting_refused(cfg, fd, got, (size_t)rc, said, &full))
		answer = READY_NOT;
	if (!fdtable_set_first(s, false))
		return EARLY_NONE; /* another thread saw it first */
	/* Only a destination of the library's has a streak. */
	if (!target_from_sockaddr((const struct sockaddr *)addr, *len, &t) ||
	    !engine_takes(cfg, &t))
		return EARLY_NONE;
	if (answer == READY_NOT && !sock_first(fd, &f))
		answer = READY_ANSWERED;
	if (answer == READY_ANSWERED && f.segs_in != 0) {
		/* Bytes before any the hooks saw sent: a greeting. */
		decide_first_byte(cfg, &t,
				  rc > 0 && !sending && !recorded &&
					  !(w & (FDS_NOREPLAY | FDS_SHUT)));
		(void)first_end(s, end); /* answered: the connection is the program's */
		return EARLY_NONE;
	}
	ended = own_side_ended(w, f.state);
	sent = f.segs_out != 0 || sending || recorded || ended;
	/*
	 * A failed send is only counted: the program is told, and sends again if
	 * it will.  An ended side is never replayed: the end would not be.
	 */
	if (sent && !sending && !ended)
		fl = replayable(s, &f);
	/*
	 * A Redis command or an HTTP request recorded by default is sent again
	 * only after an answer that proves it did not run; after a close alone
	 * nobody knows whether the server (or a front) ran it.
	 */
	if (fl && !cfg->replay && answer != READY_NOT &&
	    !ready_request_without_effect(ready_request(cfg->protocols, fl->data, fl->len))) {
		fdtable_flight_free(fl);
		fl = NULL;
	}
	blocking = sock_is_blocking(fd);
	/* A blocking read with a timeout of its own is not made to wait for a new connection. */
	again = decide_early_close(
		cfg, &t, answer == READY_NOT ? said : NULL, answer == READY_NOT && full, at_least,
		sent, fl != NULL, blocking, blocking && sock_rcvtimeo_ms(fd) != UINT64_MAX, &until);
	if (!again) {
		fdtable_flight_free(fl);
		/* Ended by a connection of the library's: the first end is the program's. */
		if (first_end(s, end) && rc <= 0 && !sending)
			return EARLY_END;
		return EARLY_NONE;
	}
	/*
	 * What the program gets if the new connections fail, stay silent or end
	 * too; and the first connection's own address, which the program's
	 * getsockname gives while the library connects again.
	 */
	if (atomic_load_explicit(&s->again_end, memory_order_relaxed) == 0) {
		socklen_t local = sizeof(s->again_local);

		if (real_getsockname(fd, (struct sockaddr *)&s->again_local, &local) != 0 ||
		    local > sizeof(s->again_local))
			local = 0;
		s->again_local_len = local;
		atomic_store_explicit(&s->again_end, 1 + (rc < 0 ? err : 0), memory_order_relaxed);
	}
	atomic_store_explicit(&s->again_until_ms, until, memory_order_relaxed);
	sock_abort_connect(fd);
	*flight = fl;
	return fl ? EARLY_REPLAY : EARLY_RECONNECT;
}

/*
 * @fd (slot @s, or NULL) is not connected again: whatever the socket holds
 * (an attempt under way, a silent connection, an error) is aborted; read-shut,
 * it reads as ended from now on.  Returns how the first connection ended.
 */
static int end_again(int fd, struct fdslot *s)
{
	int end = 0;

	sock_abort_connect(fd);
	(void)real_shutdown(fd, SHUT_RD);
	if (s) {
		fdtable_set_first(s, false);
		atomic_store_explicit(&s->again_until_ms, 0, memory_order_relaxed);
		(void)first_end(s, &end);
	}
	return end;
}

int early_end(int fd, int err, enum events_end why)
{
	struct fdslot *s = fdtable_peek(fd);
	struct events_subject what = { .call = "connect" };
	struct target_addr t;
	int saved = errno, end = end_again(fd, s);

	if (s && target_from_sockaddr((const struct sockaddr *)&s->first_addr, s->first_len, &t)) {
		what.target = &t;
		events_early_end(&what, err, why);
	}
	errno = saved;
	return end;
}

int early_over(int fd, int err, enum engine_over why)
{
	/* Silent: failed or no byte in time (ANSWER and CLOSED are the close's, early.h). */
	return early_end(fd, err,
			 why == ENGINE_OVER_GONE	 ? EVENTS_END_GONE
			 : why == ENGINE_OVER_UNACCEPTED ? EVENTS_END_UNACCEPTED
							 : EVENTS_END_SILENT);
}

bool early_unaccepted(const struct config *cfg, int fd)
{
	struct fdslot *s = fdtable_peek(fd);
	struct target_addr t;

	return s &&
	       target_from_sockaddr((const struct sockaddr *)&s->first_addr, s->first_len, &t) &&
	       decide_look_ms(cfg, &t) != 0 && listen_accepted(fd) == 0;
}

void early_abandon(int fd)
{
	int saved = errno;

	(void)end_again(fd, fdtable_peek(fd));
	errno = saved;
}

bool early_name(int fd, bool peer, struct sockaddr *addr, socklen_t *len)
{
	struct fdslot *s = fdtable_peek(fd);
	const void *name;
	socklen_t n;
	unsigned state;

	if (!s || !early_again(s) || !addr || !len)
		return false;
	/* Connected again (awaiting its first byte): the kernel's answer is the truth. */
	state = fdtable_state_of(s);
	if (state != FDS_HIDDEN && state != FDS_CONNECTING)
		return false;
	name = peer ? (const void *)&s->first_addr : (const void *)&s->again_local;
	n = peer ? s->first_len : s->again_local_len;
	if (n == 0)
		return false;
	/* As the kernel: the name cut to the room given, its whole length said. */
	memcpy(addr, name, *len < n ? *len : n);
	*len = n;
	return true;
}

/* The first bytes of @n sent from @iov, for a look at the protocol. */
static void head_of(const struct iovec *iov, int iovcnt, size_t n, unsigned char head[8])
{
	size_t got = 0;
	int k;

	for (k = 0; k < iovcnt && got < 8 && got < n; k++) {
		size_t part = iov[k].iov_len < 8 - got ? iov[k].iov_len : 8 - got;

		memcpy(head + got, iov[k].iov_base, part);
		got += part;
	}
}

void early_record(const struct config *cfg, int fd, const struct iovec *iov, int iovcnt, size_t n)
{
	struct fdslot *s = fdtable_peek(fd);
	/*
	 * Without BACKOFF_REPLAY only a start-up without effect is kept:
	 * PostgreSQL's, MQTT's CONNECT, one Redis command (kept whole; sent again
	 * only when an answer proves it did not run).
	 */
	const bool only_startup = !cfg->replay;
	unsigned char head[8] = { 0 };
	struct flight *fl;
	uint32_t w;
	int saved, k;

	if (!s)
		return;
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	if (!(w & FDS_FIRST) || (w & FDS_NOREPLAY) || n == 0)
		return;
	saved = errno;
	/* A start-up's first send says so. */
	if (only_startup && !(w & FDS_FLIGHT)) {
		head_of(iov, iovcnt, n, head);
		if (!ready_may_open_any(cfg->protocols, head, n)) {
			atomic_fetch_or_explicit(&s->word, FDS_NOREPLAY, memory_order_relaxed);
			goto out;
		}
	}
	if (!fdtable_claim(s, false)) {
		/* Another thread sends on it too: what is sent when is not ours to know. */
		atomic_fetch_or_explicit(&s->word, FDS_NOREPLAY, memory_order_relaxed);
		goto out;
	}
	fl = (w & FDS_FLIGHT) ? atomic_load_explicit(&s->flight, memory_order_relaxed) : NULL;
	if (!fl && (fl = fdtable_flight_new()) != NULL)
		fdtable_flight_put(s, fl);
	if (!fl || n > FLIGHT_MAX - fl->len) {
		atomic_fetch_or_explicit(&s->word, FDS_NOREPLAY, memory_order_relaxed);
	} else {
		for (k = 0; k < iovcnt && n > 0; k++) {
			size_t part = iov[k].iov_len < n ? iov[k].iov_len : n;

			memcpy(fl->data + fl->len, iov[k].iov_base, part);
			fl->len += (uint32_t)part;
			n -= part;
		}
		if (only_startup &&
		    ready_request(cfg->protocols, fl->data, fl->len) == READY_REQUEST_NONE)
			atomic_fetch_or_explicit(&s->word, FDS_NOREPLAY, memory_order_relaxed);
	}
	fdtable_release(s, fdtable_state_of(s));
out:
	errno = saved;
}

void early_flight_done(int fd, struct flight *flight)
{
	struct fdslot *s = fdtable_peek(fd);

	if (s && (atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FIRST))
		fdtable_flight_put(s, flight);
	else
		fdtable_flight_free(flight);
}

void early_sent(const struct config *cfg, int fd, int err)
{
	struct sockaddr_storage addr;
	struct flight *fl = NULL;
	socklen_t len;
	int saved = errno, end;

	/* Something was being sent: never connected again, only counted. */
	early_seen(cfg, fd, -1, err, true, NULL, &addr, &len, &fl, &end);
	errno = saved;
}
