/* Managed non-blocking connects: hide a failed attempt, retry it, hand the outcome over. */
#include "core/pending.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/addrlist.h"
#include "core/dest.h"
#include "core/epollreg.h"
#include "core/retry.h"
#include "core/share.h"
#include "sys/clock.h"
#include "sys/fdinfo.h"
#include "sys/listen.h"
#include "sys/real.h"

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

/* The socket behind @fd is still the one that was managed (fd numbers are reused). */
static bool same_socket(const struct fdslot *s, int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_ino == s->conn.ino && st.st_dev == s->conn.dev;
}

/* The fd is still the socket managed, and non-blocking: else not ours to connect. */
static bool still_ours(const struct fdslot *s, int fd)
{
	return same_socket(s, fd) && (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
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

static struct retry_call call_of(const struct config *cfg, struct fdslot *s)
{
	struct retry_call c = {
		.call = "connect",
		.target = &s->conn.target,
		.retryable =
			s->conn.target.family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet,
		.budget_ms = CONFIG_INFINITE,
	};

	return c;
}

/*
 * A failed attempt of @s at @now: its destination's clock runs from its
 * first failure, and the call's deadline is never past the destination's.
 */
static void charge(const struct config *cfg, struct fdslot *s, uint64_t now)
{
	uint64_t left;

	if (!s->conn.dest)
		/* Stored atomically: release_waiters() reads it without the claim. */
		__atomic_store_n(&s->conn.dest, dest_of(cfg, &s->conn.target), __ATOMIC_RELAXED);
	if (!s->conn.shared && cfg->shared) {
		s->conn.shared = share_get(cfg, &s->conn.target);
		s->conn.looking =
			s->conn.shared && cfg->local_probe_ms && share_is_local(&s->conn.target);
		s->conn.seq = s->conn.shared ? share_seq(s->conn.shared) : 0;
		s->conn.look_ms = (uint32_t)cfg->local_probe_ms;
	}
	left = dest_budget_left(cfg, s->conn.dest, now);

	if (left != CONFIG_INFINITE && now + left < s->conn.progress.deadline_ms)
		s->conn.progress.deadline_ms = now + left;
}

/* A connect of @s succeeded: its destination is up (if its clock runs; else no lookup). */
static void dest_up(const struct config *cfg, struct fdslot *s)
{
	if (dest_any_clock())
		dest_succeeded(s->conn.dest ? s->conn.dest : dest_of(cfg, &s->conn.target));
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
		    __atomic_load_n(&o->conn.dest, __ATOMIC_RELAXED) == d)
			atomic_store_explicit(&o->conn.due_ms, now, memory_order_relaxed);
	}
	due_lower(now);
}

/* The connect of @s (@fd) succeeded at @now: logged if it took retries; its destination is up. */
static void succeeded(const struct config *cfg, struct fdslot *s, int fd, uint64_t now)
{
	if (s->conn.progress.attempt > 1) {
		struct retry_call c = call_of(cfg, s);
		int cancel = fdtable_nocancel(); /* a log line is a cancellation point */

		retry_succeeded(&c, &s->conn.progress, now);
		fdtable_cancel_restore(cancel);
	}
	if (s->conn.shared) {
		share_note(s->conn.shared, 0, clock_now_ns());
		share_leave(s->conn.shared);
		if (dest_look_done(s->conn.dest, fd))
			release_waiters(s->conn.dest);
	}
	dest_up(cfg, s);
}

/* A real attempt of @s failed with @err: what the others learn, and our baseline. */
static void failed_attempt(struct fdslot *s, int err)
{
	s->conn.last_err = err;
	if (!s->conn.shared)
		return;
	s->conn.last_ns = clock_now_ns();
	share_note(s->conn.shared, err, s->conn.last_ns);
	s->conn.seq = share_seq(s->conn.shared);
}

/* The connect of @s (@fd) gave up at @now: its destination may be known down from now on. */
static void gave_up(const struct config *cfg, struct fdslot *s, int fd, uint64_t now)
{
	if (s->conn.shared) {
		share_leave(s->conn.shared);
		dest_look_done(s->conn.dest, fd);
	}
	dest_gave_up(cfg, s->conn.dest, &s->conn.target, now);
}

/*
 * The TCP state of @fd, or -1 (not TCP).  A failed attempt shows as
 * TCP_CLOSE without consuming the pending error (measured), so the last
 * failure can be left to the kernel.
 */
static int tcp_state(int fd)
{
	struct tcp_info info;
	socklen_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return real_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 ? info.tcpi_state : -1;
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
	uint64_t now = clock_now_ms(), look = now + s->conn.look_ms;

	s->conn.policy_due_ms = due;
	/*
	 * One hidden connect per destination in the process is back sooner: to
	 * look for a listener, or to learn that another process connected; it
	 * releases the others.  The rest wait for their planned attempt.
	 */
	if (s->conn.looking && s->conn.dest && look < due &&
	    dest_look_turn(s->conn.dest, fd, now, look + 2 * (uint64_t)s->conn.look_ms))
		due = look;
	atomic_store_explicit(&s->conn.due_ms, due, memory_order_relaxed);
	due_lower(due);
	return FDS_HIDDEN;
}

/* Hide @fd (claimed) until @due: out of every epoll set, masked in poll and select. */
static unsigned hide(struct fdslot *s, int fd, uint64_t due)
{
	epollreg_hide(s, fd);
	return schedule(s, fd, due);
}

/*
 * Registrations made where the hooks could not record them (a handler on the
 * claiming thread): looked up in /proc in every epoll set the library knows.
 * False if that cannot be done; then the fd is not managed.
 */
static bool registrations_from_proc(struct fdslot *s, int fd)
{
	unsigned top = fdtable_top(), e;

	for (e = 0; e <= top; e++) {
		struct fdslot *es = fdtable_peek((int)e);
		uint32_t events;
		uint64_t data;
		int rc;

		if (!es || !(atomic_load_explicit(&es->word, memory_order_relaxed) & FDS_EPOLL))
			continue;
		rc = fdinfo_read((int)e, fd, &events, &data);
		if (rc < 0)
			return false;
		if (rc == 1 && epollreg_apply(s, fd, (int)e, EPOLL_CTL_ADD, events, data) == ENOMEM)
			return false;
	}
	return true;
}

bool pending_manage(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		    const struct target_addr *t, int sync_err)
{
	struct fdslot *s = fdtable_get(fd);
	struct retry_call c;
	unsigned state = FDS_FREE;
	struct stat st;
	uint64_t now, due;
	int saved = errno;

	if (!s || len > sizeof(s->conn.addr) || fstat(fd, &st) != 0)
		goto out;
	if (!fdtable_claim(s, true))
		goto out;
	if ((atomic_load_explicit(&s->word, memory_order_relaxed) & FDS_UNKNOWN) &&
	    !registrations_from_proc(s, fd))
		goto out_release;
	if (!epollreg_index(s, fd)) {
		retry_count_unmanaged();
		goto out_release;
	}
	s->conn.dev = st.st_dev;
	s->conn.ino = st.st_ino;
	memcpy(&s->conn.addr, addr, len);
	s->conn.addrlen = len;
	s->conn.target = *t;
	/* Looked up here only when some destination is down; else at a first failure. */
	__atomic_store_n(&s->conn.dest, dest_any_down() ? dest_of(cfg, t) : NULL, __ATOMIC_RELAXED);
	s->conn.shared = NULL; /* taken at a first failure */
	s->conn.looking = s->conn.seen_listener = false;
	s->conn.last_ns = clock_now_ns();
	s->conn.last_err = sync_err;
	now = clock_now_ms();
	retry_begin(cfg, &s->conn.progress, CONFIG_INFINITE, now);
	state = FDS_CONNECTING;
	if (dest_down(s->conn.dest)) {
		/*
		 * Known down: this attempt is the kernel's alone (no retry), only
		 * watched, so that its success makes the destination up again.
		 */
		if (sync_err)
			state = FDS_FREE;
		s->conn.progress.deadline_ms = now;
	} else if (sync_err) {
		int cancel = fdtable_nocancel(); /* a log line is a cancellation point */

		c = call_of(cfg, s);
		charge(cfg, s, now);
		if (!retry_plan(cfg, &c, &s->conn.progress, sync_err, now, &due)) {
			gave_up(cfg, s, fd, now);
			state = FDS_FREE;
		} else {
			state = hide(s, fd, due);
		}
		fdtable_cancel_restore(cancel);
	}
out_release:
	state = fdtable_release(s, state);
out:
	errno = saved;
	return state != FDS_FREE;
}

/*
 * A visible attempt of @s (claimed) failed and the kernel still holds its
 * error.  With retries left: hide, consume the error with one connect()
 * (which also resets the socket for the next attempt, measured) and
 * schedule.  Returns the new state.
 */
static unsigned attempt_failed_claimed(const struct config *cfg, struct fdslot *s, int fd);

/* attempt_failed_claimed with cancellation off: it connects and logs. */
static unsigned attempt_failed(const struct config *cfg, struct fdslot *s, int fd)
{
	int cancel = fdtable_nocancel();
	unsigned state = attempt_failed_claimed(cfg, s, fd);

	fdtable_cancel_restore(cancel);
	return state;
}

static unsigned attempt_failed_claimed(const struct config *cfg, struct fdslot *s, int fd)
{
	struct retry_call c = call_of(cfg, s);
	uint64_t now = clock_now_ms(), due;
	int err;

	if (!still_ours(s, fd))
		return FDS_FREE; /* replaced behind the hooks, or made blocking */
	if (s->conn.progress.attempt == 1 &&
	    addrlist_find(&s->conn.target, now) == ADDRLIST_NOT_LAST) {
		/* Another address follows: the program moves on at once, as without libbackoff. */
		retry_log_pass("connect", &s->conn.target, 0, "not-last-address");
		return FDS_FINAL;
	}
	if (!dest_down(s->conn.dest))
		charge(cfg, s, now);
	if (!retry_allowed(cfg, &s->conn.progress, now)) {
		/*
		 * The last attempt: the program sees the kernel's own outcome, and a
		 * connect() that checks it (hiredis, perl) must get it from the
		 * kernel too, not start another round.
		 */
		if (!dest_down(s->conn.dest)) {
			retry_plan(cfg, &c, &s->conn.progress, 0, now, &due);
			gave_up(cfg, s, fd, now);
		}
		return FDS_FINAL;
	}
	epollreg_hide(s, fd);
	if (real_connect(fd, (const struct sockaddr *)&s->conn.addr, s->conn.addrlen) == 0) {
		epollreg_replay(s, fd); /* cannot happen: a closed socket has an error */
		return FDS_FREE;
	}
	err = errno;
	failed_attempt(s, err);
	if (!config_errset_has(c.retryable, err) ||
	    !retry_plan(cfg, &c, &s->conn.progress, err, now, &due)) {
		gave_up(cfg, s, fd, now);
		atomic_store_explicit(&s->conn.err, err, memory_order_relaxed);
		epollreg_replay(s, fd);
		return FDS_FAILED;
	}
	return schedule(s, fd, due);
}

/*
 * Shared fate, at a wake of hidden @s: whether the planned or an early
 * attempt is to be made now (true), or @s stays hidden (*state, rescheduled):
 * between planned attempts its prober looks for a local listener, and a
 * planned attempt is left to another that found the destination down since
 * our last one.  The last attempt allowed is always made.
 */
static bool attempt_now(const struct config *cfg, struct fdslot *s, int fd, uint64_t now_ms,
			unsigned *state)
{
	struct share_slot *sh = s->conn.shared;
	struct retry_progress *p = &s->conn.progress;
	uint64_t now_ns = clock_now_ns(), due;
	struct retry_call c;
	bool last;

	if (share_seq(sh) != s->conn.seq)
		return true; /* someone connected since our last attempt */
	if (now_ms < s->conn.policy_due_ms) {
		if (s->conn.looking &&
		    share_lead(sh, now_ns, now_ns + 5ULL * s->conn.look_ms * 1000000)) {
			int found = listen_probe(&s->conn.target);

			if (found == 1 && !s->conn.seen_listener) {
				s->conn.seen_listener = true;
				return true;
			}
			if (found == 0) {
				s->conn.seen_listener = false;
				share_note_looked(sh, now_ns);
			} else if (found < 0) {
				s->conn.looking = false; /* the planned attempts only */
				share_leave(sh);
			}
		}
		*state = schedule(s, fd, s->conn.policy_due_ms);
		return false;
	}
	last = retry_is_last(cfg, p, s->conn.policy_due_ms);
	if (last || !share_probed_since(sh, s->conn.last_ns, now_ns))
		return true;
	/* Another found it down since our last attempt: its result is ours. */
	c = call_of(cfg, s);
	p->attempt++;
	if (!retry_plan(cfg, &c, p, s->conn.last_err, now_ms, &due)) {
		p->attempt--;
		return true;
	}
	retry_count_shared(true);
	*state = schedule(s, fd, due);
	return false;
}

/* The retry of @s (claimed, hidden, due).  Returns the new state. */
static unsigned attempt_again(const struct config *cfg, struct fdslot *s, int fd, uint64_t now_ms)
{
	struct retry_call c = call_of(cfg, s);
	uint64_t due;
	unsigned state;
	int err;

	if (s->conn.shared && !attempt_now(cfg, s, fd, now_ms, &state))
		return state;
	if (!still_ours(s, fd))
		return FDS_FREE; /* replaced behind the hooks, or made blocking */
	s->conn.progress.attempt++;
	if (s->conn.shared)
		retry_count_shared(false);
	if (real_connect(fd, (const struct sockaddr *)&s->conn.addr, s->conn.addrlen) == 0) {
		epollreg_replay(s, fd);
		succeeded(cfg, s, fd, now_ms);
		return FDS_FREE;
	}
	err = errno;
	if (err == EINPROGRESS) {
		epollreg_replay(s, fd);
		return FDS_CONNECTING;
	}
	failed_attempt(s, err);
	charge(cfg, s, now_ms);
	if (config_errset_has(c.retryable, err) &&
	    retry_plan(cfg, &c, &s->conn.progress, err, now_ms, &due))
		return hide(s, fd, due);
	gave_up(cfg, s, fd, now_ms);
	atomic_store_explicit(&s->conn.err, err, memory_order_relaxed);
	epollreg_replay(s, fd);
	return FDS_FAILED;
}

bool pending_event(const struct config *cfg, int fd, bool maybe_failed, bool *extra_err)
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
	tcp = state == FDS_CONNECTING && maybe_failed ? tcp_state(fd) : TCP_ESTABLISHED;
	if (state == FDS_CONNECTING && tcp == TCP_CLOSE) {
		state = attempt_failed(cfg, s, fd);
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
		succeeded(cfg, s, fd, clock_now_ms());
		state = FDS_FREE; /* handed over */
	}
	fdtable_release(s, state);
	errno = saved;
	return show;
}

uint64_t pending_next_due(void)
{
	if (!fdtable_any_hidden())
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
		if (fdtable_state_of(s) != FDS_HIDDEN)
			continue;
		due = atomic_load_explicit(&s->conn.due_ms, memory_order_relaxed);
		if (due > now_ms || !fdtable_claim(s, false)) {
			next = due > now_ms ? (due < next ? due : next) : now_ms + 1;
			if (due <= now_ms && next > now_ms + 1)
				next = now_ms + 1;
			continue;
		}
		if (fdtable_state_of(s) == FDS_HIDDEN) {
			int cancel = fdtable_nocancel(); /* connect and a log line: cancellation
							    points */

			fdtable_release(s, attempt_again(cfg, s, (int)fd, now_ms));
			fdtable_cancel_restore(cancel);
		} else
			fdtable_release(s, fdtable_state_of(s));
		if (fdtable_state_of(s) == FDS_HIDDEN) {
			due = atomic_load_explicit(&s->conn.due_ms, memory_order_relaxed);
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
		*err = atomic_load_explicit(&s->conn.err, memory_order_relaxed);
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
			dest_up(cfg, s);
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
	*due_ms = atomic_load_explicit(&s->conn.due_ms, memory_order_relaxed);
	return true;
}

bool pending_managed(int fd)
{
	return managed_slot(fd) != NULL;
}

enum pending_answer pending_so_error(const struct config *cfg, int fd, int *err)
{
	struct fdslot *s = managed_slot(fd);
	enum pending_answer a;
	int saved = errno;

	if (!s)
		return PENDING_PASS;
	if (fdtable_state_of(s) == FDS_CONNECTING && fdtable_claim(s, true)) {
		unsigned state = fdtable_state_of(s);

		if (state == FDS_CONNECTING) {
			int tcp = tcp_state(fd);

			if (tcp == TCP_CLOSE) {
				state = attempt_failed(cfg, s, fd);
			} else if (tcp == TCP_ESTABLISHED) {
				succeeded(cfg, s, fd, clock_now_ms());
				state = FDS_FREE;
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
		retry_count_unmanaged();
		fdtable_release(s, FDS_FREE);
	} else {
		fdtable_release(s, fdtable_state_of(s));
	}
	errno = saved;
	return true;
}

void pending_after_fork(void)
{
	fdtable_after_fork();
	atomic_store_explicit(&due_earliest, CONFIG_INFINITE, memory_order_relaxed);
	atomic_store_explicit(&scan_since_ns, 0, memory_order_relaxed);
}
