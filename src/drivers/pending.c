/* Managed non-blocking connects: hide a failed attempt, retry it, hand the outcome over. */
#include "drivers/pending.h"
#include "drivers/pending_again.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/conn.h"
#include "drivers/decide.h"
#include "facts/record.h"
#include "drivers/early.h"
#include "engine/engine.h"
#include "tables/epollreg.h"
#include "counters/events.h"
#include "sys/clock.h"
#include "sys/sock.h"
#include "sys/real.h"
#include "sys/kcall.h"

/* The earliest due retry (a lower bound: a scan recomputes it), monotonic ms. */
static _Atomic uint64_t due_earliest = CONFIG_INFINITE;

/* One scan of due retries at a time; a scan abandoned by siglongjmp expires. */
static _Atomic uint64_t scan_since_ns;
#define SCAN_STALE_NS 1000000000ULL

static void due_lower(uint64_t due)
{
	uint64_t cur = atomic_load_explicit(&due_earliest, memory_order_relaxed);

	while (due < cur &&
	       !atomic_compare_exchange_weak_explicit(&due_earliest, &cur, due,
						      memory_order_release, memory_order_relaxed))
		;
}

static bool timed(unsigned state)
{
	return state == FDS_HIDDEN || state == FDS_CONNECTING || state == FDS_AWAIT;
}

/* @s (claimed) is in @state; a timed one is due at its conn.due_ms, which may be the earliest. */
static unsigned due_set(struct fdslot *s, unsigned state)
{
	if (timed(state))
		due_lower(atomic_load_explicit(&fdconn_of(s)->due_ms, memory_order_relaxed));
	return state;
}

/*
 * The socket behind @fd is still the one that was managed (fd numbers are
 * reused).  A connect managed under way (EINPROGRESS) is known by its
 * identity from the first time the library acts on it (an answer, a
 * deadline, a close), if @fd is a socket then: a healthy connect, handed
 * over at its success, never asks (no system call).  An internet socket
 * made on the number since ended its state (fdtable_mode_made); any other
 * is met by what follows (its TCP state, read before a retry).  @s is
 * claimed.
 */
static bool same_socket(struct fdslot *s, int fd)
{
	struct fdconn *c = fdconn_of(s);
	struct stat st;

	if (kcall_fstat(fd, &st) != 0)
		return false;
	if (c->ino == 0 && c->dev == 0 && S_ISSOCK(st.st_mode)) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
	return st.st_ino == c->ino && st.st_dev == c->dev;
}

/* The fd is still the socket managed, and non-blocking: else not ours to connect. */
static bool still_ours(struct fdslot *s, int fd)
{
	return same_socket(s, fd) && (real_fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
}

/*
 * Whether @s (hidden) is still @fd's socket; if it is not (closed behind
 * the hooks, by fclose, and the number reused) its state is dropped.
 * errno untouched.
 */
static bool hidden_still_here(struct fdslot *s, int fd)
{
	int saved = errno;
	bool here = same_socket(s, fd);

	if (!here)
		fdtable_forget(fd);
	errno = saved;
	return here;
}

/*
 * The other hidden connects of @d in this process: due now, so that they
 * learn at the next wait that it is up (each checks the slot's success count).
 */
static void release_waiters(const struct dest *d)
{
	uint64_t now = clock_now_ms();
	unsigned top = fdtable_top(), fd;

	for (fd = 0; fd <= top; fd++) {
		struct fdslot *o = fdtable_peek((int)fd);

		if (!o) {
			fd |= (1U << FDTABLE_LEAF_BITS) - 1; /* the rest of an unmapped page */
			continue;
		}
		if (fdtable_state_of(o) == FDS_HIDDEN &&
		    __atomic_load_n(&fdconn_of(o)->dest, __ATOMIC_RELAXED) == d)
			atomic_store_explicit(&fdconn_of(o)->due_ms, now, memory_order_relaxed);
	}
	due_lower(now);
}

/*
 * The connection of @s (claimed) is the program's alone: one made again
 * after an early close is made again no more.  Its new state, free.
 */
static unsigned programs_own(struct fdslot *s)
{
	if (early_again(s))
		atomic_store_explicit(&s->again_until_ms, 0, memory_order_relaxed);
	return FDS_FREE;
}

/*
 * The connect of @s (@fd, claimed) succeeded at @now; its destination is
 * up.  Returns the new state: free, or, for a connection made again after
 * an early close, visible and awaited until its time (FDS_AWAIT).
 */
static unsigned succeeded(struct fdslot *s, int fd, uint64_t now)
{
	int cancel = fdtable_nocancel(); /* a log line is a cancellation point */
	bool turn;
	struct engine_action a = decide_loop_succeeded(fdconn_of(s), fd, now, &turn);

	if (turn)
		release_waiters(fdconn_of(s)->dest);
	fdtable_cancel_restore(cancel);
	if (a.what == ENGINE_AWAIT) {
		/* An early close's new connection: its first byte awaited, visible. */
		atomic_store_explicit(&fdconn_of(s)->due_ms, a.until_ms, memory_order_relaxed);
		return due_set(s, FDS_AWAIT);
	}
	return programs_own(s);
}

/* When the attempt of @s made at @now is next looked at (decide_loop_attempt_deadline). */
static uint64_t attempt_until(const struct fdslot *s, uint64_t now)
{
	return decide_loop_attempt_deadline(fdconn_read(s), now);
}

/* A managed slot of @fd, its state settled (no other thread changing it), or NULL. */
static struct fdslot *managed_slot(int fd)
{
	struct fdslot *s = fdtable_peek(fd);

	return s && fdtable_state_of(s) != FDS_FREE && fdtable_settled(s) != FDS_FREE ? s : NULL;
}

/* Schedule the retry of @s (claimed, out of its epoll sets) at @due: hidden until then. */
static unsigned schedule(struct fdslot *s, int fd, uint64_t due)
{
	uint64_t look_ms = fdconn_of(s)->fate.look_ns / 1000000, now = clock_now_ms(),
		 look = now + look_ms;

	/*
	 * One hidden connect per destination in the process is back sooner: to
	 * look for a listener, or to learn that another process connected; it
	 * releases the others.  The rest wait for their planned attempt.
	 */
	if (fdconn_of(s)->fate.looking && fdconn_of(s)->dest && look < due &&
	    dest_look_turn(fdconn_of(s)->dest, fd, now, look + 2 * look_ms))
		due = look;
	atomic_store_explicit(&fdconn_of(s)->due_ms, due, memory_order_relaxed);
	due_lower(due);
	return FDS_HIDDEN;
}

/* @s (claimed) has an attempt under way: due at its deadline @due. */
static unsigned connecting(struct fdslot *s, uint64_t due)
{
	atomic_store_explicit(&fdconn_of(s)->due_ms, due, memory_order_relaxed);
	if (due != CONFIG_INFINITE)
		due_lower(due);
	return FDS_CONNECTING;
}

/*
 * The attempt of @s (@fd, claimed, hidden) failed with @err at @now:
 * the engine's action carried out.  A retry hidden until its time; an early
 * close's new connection over; else the call's failure handed over.
 */
static unsigned failed(struct fdslot *s, int fd, int err, uint64_t now)
{
	struct engine_action a = decide_loop_failed(fdconn_of(s), fd, err, now);

	switch (a.what) {
	case ENGINE_WAIT:
		return schedule(s, fd, a.until_ms);
	case ENGINE_OVER:
		return again_over(s, fd, a.err, a.over, true);
	default:
		atomic_store_explicit(&fdconn_of(s)->err, err, memory_order_relaxed);
		epollreg_replay(s, fd);
		return FDS_FAILED;
	}
}

/*
 * The time of a look at the connect of @s (@fd, claimed, still ours) came
 * at @now: an attempt's deadline, or an early close's new connection
 * awaiting its first byte.  What the driver finds is told to the engine,
 * and its action carried out: awaited on, aborted (never abandoned: the
 * kernel would complete it later, then a failed attempt with ETIMEDOUT,
 * retried hidden or handed over: the program's wait sees the abort, its
 * SO_ERROR the last answer the kernel gave, ETIMEDOUT when it gave none),
 * over, or the program's.
 */
static unsigned looked(struct fdslot *s, int fd, uint64_t now)
{
	struct decide_look f = {
		.answered = !(atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_FIRST),
		.unanswered = sock_tcp_state(fd) == TCP_SYN_SENT,
	};
	struct engine_action a;

	if (engine_facts(fdconn_of(s)->cfg, &fdconn_of(s)->progress, ENGINE_LOOK) &
	    ENGINE_FACTS_ACCEPT)
		f.unaccepted = early_unaccepted(fdconn_of(s)->cfg, fd);
	a = decide_loop_look(fdconn_of(s), &f, now);
	switch (a.what) {
	case ENGINE_AWAIT:
		atomic_store_explicit(&fdconn_of(s)->due_ms, a.until_ms, memory_order_relaxed);
		return due_set(s, fdtable_state_of(s));
	case ENGINE_ABORT:
		a = decide_loop_failed(fdconn_of(s), fd, ETIMEDOUT, now);
		if (a.what == ENGINE_WAIT) {
			epollreg_hide(s, fd);
			sock_abort_connect(fd);
			return schedule(s, fd, a.until_ms);
		}
		sock_abort_connect(fd);
		atomic_store_explicit(&fdconn_of(s)->err, a.err, memory_order_relaxed);
		return FDS_FAILED;
	case ENGINE_OVER:
		return again_over(s, fd, a.err, a.over, false);
	default:
		return programs_own(s);
	}
}

/* Hide @fd (claimed) until @due: out of every epoll set, masked in poll and select. */
static unsigned hide(struct fdslot *s, int fd, uint64_t due)
{
	epollreg_hide(s, fd);
	return schedule(s, fd, due);
}

/* pending_manage, or with @later_ms (not 0) pending_manage_later. */
static bool manage(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		   const struct target_addr *t, int sync_err, uint64_t later_ms)
{
	struct fdslot *s = fdtable_get(fd);
	unsigned state = FDS_FREE;
	struct stat st = { .st_dev = 0, .st_ino = 0 };
	uint64_t now;
	int saved = errno;

	/* Its identity now if it is hidden at once; else at its first answer (same_socket). */
	if (!s || len > sizeof(fdconn_of(s)->addr) ||
	    ((sync_err || later_ms) && kcall_fstat(fd, &st) != 0))
		goto out;
	if (!fdtable_claim(s, true))
		goto out;
	if ((atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_UNKNOWN) &&
	    !epollreg_from_proc(s, fd))
		goto out_release;
	if (!epollreg_index(s, fd)) {
		events_unmanaged();
		goto out_release;
	}
	fdconn_of(s)->dev = st.st_dev;
	fdconn_of(s)->ino = st.st_ino;
	memcpy(&fdconn_of(s)->addr, addr, len);
	fdconn_of(s)->addrlen = len;
	fdconn_of(s)->target = *t;
	now = clock_now_ms();
	/* With @later_ms no attempt yet: the first is made when due, as a retry is. */
	if (later_ms && later_ms <= now)
		later_ms = now + 1;
	decide_loop_begin(cfg, fdconn_of(s), now, later_ms,
			  atomic_load_explicit(&s->again_until_ms, memory_order_relaxed));
	if (later_ms) {
		state = hide(s, fd, later_ms);
		if (early_again(s) || decide_full_line(cfg, t) >= 0)
			state = due_set(s, again_look(cfg, s, now));
		goto out_release;
	}
	state = connecting(s, attempt_until(s, now));
	if (sync_err) {
		int cancel = fdtable_nocancel(); /* a log line is a cancellation point */
		struct engine_action a = decide_loop_failed(fdconn_of(s), fd, sync_err, now);

		/* Not retried: the caller gives the program the failure (an early close's end). */
		state = a.what == ENGINE_WAIT ? hide(s, fd, a.until_ms) : FDS_FREE;
		fdtable_cancel_restore(cancel);
	}
out_release:
	state = fdtable_release(s, state);
out:
	errno = saved;
	return state != FDS_FREE;
}

bool pending_manage(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		    const struct target_addr *t, int sync_err)
{
	return manage(cfg, fd, addr, len, t, sync_err, 0);
}

bool pending_manage_later(const struct config *cfg, int fd, const struct sockaddr *addr,
			  socklen_t len, const struct target_addr *t, uint64_t due_ms)
{
	return manage(cfg, fd, addr, len, t, 0, due_ms ? due_ms : 1);
}

/*
 * A visible attempt of @s (claimed) failed and the kernel still holds its
 * error.  With retries left: hide, consume the error with one connect()
 * (which also resets the socket for the next attempt, measured) and
 * schedule.  Returns the new state.
 */
static unsigned attempt_failed_claimed(struct fdslot *s, int fd);

/* attempt_failed_claimed with cancellation off: it connects and logs. */
static unsigned attempt_failed(struct fdslot *s, int fd)
{
	int cancel = fdtable_nocancel();
	unsigned state = attempt_failed_claimed(s, fd);

	fdtable_cancel_restore(cancel);
	return state;
}

static unsigned attempt_failed_claimed(struct fdslot *s, int fd)
{
	uint64_t now = clock_now_ms();
	int err;

	if (!still_ours(s, fd))
		return FDS_FREE; /* replaced behind the hooks, or made blocking */
	if (decide_loop_final(fdconn_of(s), fd, now))
		return FDS_FINAL;
	epollreg_hide(s, fd);
	err = sock_connect(fd, (const struct sockaddr *)&fdconn_of(s)->addr, fdconn_of(s)->addrlen);
	/*
	 * Not a failure: the connection was made and both sides have ended it
	 * since (the program's shutdown() took it as connected: EISCONN).  Its
	 * end is the program's to read, and the watch's for its first byte.
	 */
	if (err == 0 || err == EISCONN) {
		epollreg_replay(s, fd);
		return succeeded(s, fd, now);
	}
	return failed(s, fd, err, now);
}

/* One real attempt of the hidden connect in @ctx, if its fd is still ours: 0 or its errno. */
struct wake_attempt {
	struct fdslot *s;
	int fd;
};

static int attempt_real(void *ctx, uint64_t deadline_ms)
{
	const struct wake_attempt *w = ctx;

	(void)deadline_ms; /* a look at a stale unix socket: answered at once */
	if (!still_ours(w->s, w->fd))
		return EBADF;
	return sock_connect(w->fd, (const struct sockaddr *)&fdconn_of(w->s)->addr,
			    fdconn_of(w->s)->addrlen);
}

/* The retry of @s (claimed, hidden, due).  Returns the new state. */
static unsigned attempt_again(const struct config *cfg, struct fdslot *s, int fd, uint64_t now_ms)
{
	struct wake_attempt w = { s, fd };
	uint64_t due, deadline;
	bool made = false;
	/* A first attempt not made yet may wait in a full server's line too. */
	bool lined = early_again(s) || (!engine_attempted(&fdconn_of(s)->progress) &&
					decide_full_line(cfg, &fdconn_of(s)->target) >= 0);
	int err = 0;

	switch (decide_loop_wake(fdconn_of(s), now_ms, lined, attempt_real, &w, &err, &due)) {
	case DECIDE_WAKE_SLEEP:
		return schedule(s, fd, due);
	case DECIDE_WAKE_LINE:
		return due_set(s, again_look(cfg, s, now_ms));
	case DECIDE_WAKE_OVER:
		return again_over(s, fd, 0, ENGINE_OVER_GONE, true);
	case DECIDE_WAKE_MADE:
		made = true;
		break;
	case DECIDE_WAKE_ATTEMPT:
		break;
	}
	if (!still_ours(s, fd))
		return FDS_FREE; /* replaced behind the hooks, or made blocking */
	if (fdconn_of(s)->fate.slot)
		events_probed();
	/* Before the attempt: once it is made, another thread may see the fd ready. */
	deadline = attempt_until(s, now_ms);
	if (!made)
		err = sock_connect(fd, (const struct sockaddr *)&fdconn_of(s)->addr,
				   fdconn_of(s)->addrlen);
	if (err == 0) {
		epollreg_replay(s, fd);
		return succeeded(s, fd, now_ms);
	}
	if (err == EINPROGRESS) {
		epollreg_replay(s, fd);
		return connecting(s, deadline);
	}
	return failed(s, fd, err, now_ms);
}

bool pending_event(int fd, bool maybe_failed, bool *extra_err)
{
	struct fdslot *s = managed_slot(fd);
	unsigned state;
	bool show = true;
	int saved = errno, tcp;

	*extra_err = false;
	if (!s)
		return true;
	state = fdtable_state_of(s);
	if (state == FDS_HIDDEN)
		return false;
	if (state == FDS_FAILED) {
		*extra_err = true;
		return true;
	}
	if (state != FDS_CONNECTING || !fdtable_claim(s, true))
		return true; /* another thread decides; the program sees what the kernel says */
	state = fdtable_state_of(s);
	tcp = state == FDS_CONNECTING && maybe_failed ? sock_tcp_state(fd) : TCP_ESTABLISHED;
	if (state == FDS_CONNECTING && tcp == TCP_CLOSE) {
		state = attempt_failed(s, fd);
		show = state != FDS_HIDDEN;
		*extra_err = state == FDS_FAILED;
	} else if (state == FDS_CONNECTING && tcp == TCP_SYN_SENT) {
		/*
		 * An error reported while the socket still says SYN_SENT: a reset
		 * being processed on another CPU (the kernel sets the error, then
		 * the state).  Not shown: the state change wakes the wait again.
		 */
		show = false;
	} else if (state == FDS_CONNECTING) {
		state = succeeded(s, fd, clock_now_ms()); /* handed over */
	}
	fdtable_release(s, state);
	errno = saved;
	return show;
}

uint64_t pending_next_due(void)
{
	/* Attempts under way have a deadline too, hidden retries a due time. */
	if (!fdtable_any())
		return CONFIG_INFINITE;
	return atomic_load_explicit(&due_earliest, memory_order_acquire);
}

static bool scan_begin(void)
{
	uint64_t now = clock_now_ns(),
		 since = atomic_load_explicit(&scan_since_ns, memory_order_relaxed);

	if (since != 0 && now - since < SCAN_STALE_NS)
		return false;
	return atomic_compare_exchange_strong_explicit(&scan_since_ns, &since, now,
						       memory_order_acquire, memory_order_relaxed);
}

/* The states that are due at a time: a hidden retry, an attempt's deadline, a first byte's. */
/* What is due of @s (@fd, claimed, timed) at @now_ms: the new state. */
static unsigned run_one(const struct config *cfg, struct fdslot *s, int fd, uint64_t now_ms)
{
	switch (fdtable_state_of(s)) {
	case FDS_HIDDEN:
		return attempt_again(cfg, s, fd, now_ms);
	case FDS_CONNECTING:
		return still_ours(s, fd) ? looked(s, fd, now_ms) : FDS_FREE;
	default:
		return same_socket(s, fd) ? looked(s, fd, now_ms) : FDS_FREE;
	}
}

void pending_run_due(const struct config *cfg, uint64_t now_ms)
{
	uint64_t next = CONFIG_INFINITE;
	unsigned top, fd;
	int saved = errno;

	if (pending_next_due() > now_ms || !scan_begin())
		return;
	atomic_store_explicit(&due_earliest, CONFIG_INFINITE, memory_order_relaxed);
	top = fdtable_top();
	for (fd = 0; fd <= top; fd++) {
		struct fdslot *s = fdtable_peek((int)fd);
		uint64_t due;

		if (!s) {
			fd |= (1U << FDTABLE_LEAF_BITS) - 1; /* the rest of an unmapped page */
			continue;
		}
		if (!timed(fdtable_state_of(s)))
			continue;
		due = atomic_load_explicit(&fdconn_of(s)->due_ms, memory_order_relaxed);
		if (due == CONFIG_INFINITE)
			continue;
		if (due > now_ms || !fdtable_claim(s, false)) {
			next = due > now_ms ? (due < next ? due : next) : now_ms + 1;
			if (due <= now_ms && next > now_ms + 1)
				next = now_ms + 1;
			continue;
		}
		if (timed(fdtable_state_of(s))) {
			int cancel = fdtable_nocancel(); /* connect and a log line: cancellation
							    points */

			fdtable_release(s, run_one(cfg, s, (int)fd, now_ms));
			fdtable_cancel_restore(cancel);
		} else
			fdtable_release(s, fdtable_state_of(s));
		if (timed(fdtable_state_of(s))) {
			due = atomic_load_explicit(&fdconn_of(s)->due_ms, memory_order_relaxed);
			next = due < next ? due : next;
		}
	}
	due_lower(next);
	atomic_store_explicit(&scan_since_ns, 0, memory_order_release);
	errno = saved;
}

/* Hand over a failure held for the program: the slot is freed if it can be claimed. */
static void hand_over(struct fdslot *s)
{
	if (fdtable_claim(s, true)) {
		if (fdtable_state_of(s) == FDS_FAILED)
			fdtable_release(s, FDS_FREE);
		else
			fdtable_release(s, fdtable_state_of(s));
	}
}

/*
 * The answer of a hidden or failed @fd: @hidden_err while hidden (checked
 * against fd reuse), the error when failed (handed over).
 */
static enum pending_answer masked_answer(int fd, int hidden_err, int *err)
{
	struct fdslot *s = managed_slot(fd);
	unsigned state;

	if (!s)
		return PENDING_PASS;
	state = fdtable_state_of(s);
	if (state == FDS_HIDDEN) {
		if (!hidden_still_here(s, fd))
			return PENDING_PASS;
		*err = hidden_err;
		return PENDING_IN_PROGRESS;
	}
	if (state == FDS_FAILED) {
		*err = atomic_load_explicit(&fdconn_of(s)->err, memory_order_relaxed);
		hand_over(s);
		return PENDING_FAILED;
	}
	/* Visible, or the last failure handed over: the kernel answers (then release). */
	return PENDING_CONNECTING;
}

enum pending_answer pending_connect_answer(int fd, int *err)
{
	return masked_answer(fd, EALREADY, err);
}

void pending_release(const struct config *cfg, int fd, bool connected)
{
	struct fdslot *s = managed_slot(fd);

	if (s && fdtable_claim(s, true)) {
		if (connected)
			decide_connected(cfg, &fdconn_of(s)->target, 0);
		fdtable_release(s, FDS_FREE);
	}
}

enum pending_answer pending_io_answer(int fd, int *err)
{
	enum pending_answer a = masked_answer(fd, EAGAIN, err);

	return a == PENDING_CONNECTING ? PENDING_PASS : a;
}

bool pending_hidden(int fd, uint64_t *due_ms)
{
	struct fdslot *s = managed_slot(fd);

	if (!s || fdtable_state_of(s) != FDS_HIDDEN || !hidden_still_here(s, fd))
		return false;
	*due_ms = atomic_load_explicit(&fdconn_of(s)->due_ms, memory_order_relaxed);
	return true;
}

bool pending_managed(int fd)
{
	return managed_slot(fd) != NULL;
}

enum pending_answer pending_so_error(int fd, int *err)
{
	struct fdslot *s = managed_slot(fd);
	enum pending_answer a;
	int saved = errno;

	if (!s)
		return PENDING_PASS;
	if (fdtable_state_of(s) == FDS_CONNECTING && fdtable_claim(s, true)) {
		unsigned state = fdtable_state_of(s);

		if (state == FDS_CONNECTING) {
			int tcp = sock_tcp_state(fd);

			if (tcp == TCP_CLOSE) {
				state = attempt_failed(s, fd);
			} else if (tcp == TCP_ESTABLISHED) {
				state = succeeded(s, fd, clock_now_ms());
			}
		}
		fdtable_release(s, state);
	}
	errno = saved;
	a = masked_answer(fd, 0, err);
	return a == PENDING_CONNECTING ? PENDING_PASS : a;
}

bool pending_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data, int *rc, int *err)
{
	struct fdslot *s = managed_slot(fd);
	int saved = errno;

	if (!s || !fdtable_claim(s, true))
		return false;
	*rc = 0;
	*err = 0;
	if (fdtable_state_of(s) == FDS_FREE) {
		fdtable_release(s, FDS_FREE);
		return false;
	}
	if (fdtable_state_of(s) != FDS_HIDDEN) {
		struct epoll_event ev = { .events = events, .data.u64 = data };

		*rc = real_epoll_ctl(epfd, op, fd, &ev);
		*err = *rc == 0 ? 0 : errno;
		if (*rc == 0)
			epollreg_apply(s, fd, epfd, op, events, data);
	} else {
		/* Hidden: the kernel has no registration, so the record answers. */
		*err = epollreg_apply(s, fd, epfd, op, events, data);
		*rc = *err ? -1 : 0;
	}
	if (*rc == 0 && !epollreg_index(s, fd)) {
		/* No room to find its events: stop managing; the kernel decides. */
		if (fdtable_state_of(s) == FDS_HIDDEN)
			epollreg_replay(s, fd);
		events_unmanaged();
		fdtable_release(s, FDS_FREE);
	} else {
		fdtable_release(s, fdtable_state_of(s));
	}
	errno = saved;
	return true;
}

bool pending_again_shut(int fd)
{
	struct fdslot *s = managed_slot(fd);
	unsigned state;
	bool again;

	if (!s || !early_again(s) || !fdtable_claim(s, true))
		return false;
	state = fdtable_state_of(s);
	again = early_again(s) && (state == FDS_HIDDEN || state == FDS_CONNECTING) &&
		same_socket(s, fd);
	if (again) {
		early_abandon(fd);
		if (state == FDS_HIDDEN)
			epollreg_replay(s, fd);
		state = FDS_FREE;
	}
	fdtable_release(s, state);
	return again;
}

void pending_closing(int fd)
{
	struct fdslot *s = managed_slot(fd);
	unsigned state;
	int saved = errno;

	if (!s || !fdtable_claim(s, true))
		return;
	state = fdtable_state_of(s);
	if ((state == FDS_HIDDEN || state == FDS_CONNECTING) && hidden_still_here(s, fd))
		decide_loop_closed(fdconn_of(s), fd, state == FDS_HIDDEN, clock_now_ms());
	fdtable_release(s, fdtable_state_of(s));
	errno = saved;
}

void pending_after_fork(void)
{
	fdtable_after_fork();
	atomic_store_explicit(&due_earliest, CONFIG_INFINITE, memory_order_relaxed);
	atomic_store_explicit(&scan_since_ns, 0, memory_order_relaxed);
}
