/* Managed non-blocking connects: hide a failed attempt, retry it, hand the outcome over. */
#include "core/pending.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/retry.h"
#include "sys/clock.h"
#include "sys/real.h"
#include "sys/text.h"

enum entry_state {
	ENTRY_FREE,
	ENTRY_CONNECTING, /* an attempt is in the kernel's hands, visible */
	ENTRY_HIDDEN,	  /* a failed attempt, hidden until its retry is due */
	ENTRY_FAILED,	  /* the outcome is an error the kernel no longer holds */
	ENTRY_FINAL,	  /* the last failure was handed over: connect() is the kernel's */
};

struct reg {
	int epfd;
	uint32_t events;
	uint64_t data;
};

struct entry {
	atomic_int fd;
	atomic_int state;
	dev_t dev; /* the socket's identity, against fd reuse */
	ino_t ino;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct target_addr target;
	struct retry_progress progress;
	uint64_t due_ms; /* ENTRY_HIDDEN: when to retry */
	int err;	 /* ENTRY_FAILED: the error to hand over */
	unsigned nreg;
	struct reg reg[PENDING_REGS];
};

atomic_uint pending_active;
atomic_uint pending_masked;

static struct entry table[PENDING_MAX];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* fds ever added to an epoll set while unmanaged, and the latest such additions. */
#define RECENT_ADDS 256
atomic_uint_fast64_t pending_added_bits[PENDING_ADDED_FDS / 64];
static struct {
	atomic_int fd, epfd;
} recent_adds[RECENT_ADDS];
static atomic_uint recent_next;
static atomic_uint added_top; /* the highest fd ever marked: range scans stop there */

/*
 * The process this state belongs to, once it has any.  A vfork() child runs
 * in its parent's memory until it execs, and may close fds meanwhile (a
 * child closing what it must not inherit): those are its own fds, so it must
 * leave the parent's records alone.
 */
static atomic_int owner_pid;

static void note_owner(void)
{
	if (atomic_load_explicit(&owner_pid, memory_order_relaxed) == 0)
		atomic_store_explicit(&owner_pid, (int)getpid(), memory_order_relaxed);
}

static bool in_vfork_child(void)
{
	int owner = atomic_load_explicit(&owner_pid, memory_order_relaxed);

	return owner != 0 && owner != (int)getpid();
}

static void lock(void)
{
	pthread_mutex_lock(&table_lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&table_lock);
}

static int state_of(struct entry *e)
{
	return atomic_load_explicit(&e->state, memory_order_relaxed);
}

static bool masks(int state)
{
	return state == ENTRY_HIDDEN || state == ENTRY_FAILED;
}

static void set_state(struct entry *e, int state)
{
	int old = state_of(e);

	if (masks(old) && !masks(state))
		atomic_fetch_sub_explicit(&pending_masked, 1, memory_order_relaxed);
	else if (!masks(old) && masks(state))
		atomic_fetch_add_explicit(&pending_masked, 1, memory_order_relaxed);
	atomic_store_explicit(&e->state, state, memory_order_relaxed);
}

static void release(struct entry *e)
{
	set_state(e, ENTRY_FREE);
	atomic_store_explicit(&e->fd, -1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&pending_active, 1, memory_order_relaxed);
}

/* The socket behind @fd is still the one that was managed (fd numbers are reused). */
static bool same_socket(const struct entry *e, int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_ino == e->ino && st.st_dev == e->dev;
}

/*
 * The entry of @fd, under the lock.  An fd closed without the close() hook
 * (fclose, a raw system call) may have been reused: the socket's inode says
 * so, and such an entry is dropped.
 */
static struct entry *find(int fd)
{
	unsigned i;

	if (fd < 0)
		return NULL;
	for (i = 0; i < PENDING_MAX; i++) {
		struct entry *e = &table[i];

		if (state_of(e) == ENTRY_FREE ||
		    atomic_load_explicit(&e->fd, memory_order_relaxed) != fd)
			continue;
		if (same_socket(e, fd))
			return e;
		release(e);
		return NULL;
	}
	return NULL;
}

static struct retry_call call_of(const struct config *cfg, struct entry *e)
{
	struct retry_call c = {
		.call = "connect",
		.target = &e->target,
		.retryable = e->target.family == AF_UNIX ? &cfg->errors_unix : &cfg->errors_inet,
		.budget_ms = CONFIG_INFINITE,
	};

	return c;
}

/*
 * A failed TCP attempt shows as TCP_CLOSE in TCP_INFO without consuming the
 * pending error (measured), so the last failure can be left to the kernel.
 */
static bool tcp_failed(int fd)
{
	struct tcp_info info;
	socklen_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return real_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
	       info.tcpi_state == TCP_CLOSE;
}

static bool tcp_established(int fd)
{
	struct tcp_info info;
	socklen_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return real_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
	       info.tcpi_state == TCP_ESTABLISHED;
}

static void hide(struct entry *e, int fd)
{
	unsigned i;

	/* A closed socket is always OUT|HUP and EPOLLHUP cannot be masked: delete, replay later. */
	for (i = 0; i < e->nreg; i++)
		real_epoll_ctl(e->reg[i].epfd, EPOLL_CTL_DEL, fd, NULL);
	set_state(e, ENTRY_HIDDEN);
}

static void unhide(struct entry *e, int fd, int state)
{
	unsigned i;

	set_state(e, state);
	for (i = 0; i < e->nreg; i++) {
		struct epoll_event ev = { .events = e->reg[i].events, .data.u64 = e->reg[i].data };

		if (real_epoll_ctl(e->reg[i].epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
			real_epoll_ctl(e->reg[i].epfd, EPOLL_CTL_MOD, fd, &ev);
	}
}

static void fail(struct entry *e, int fd, int err)
{
	e->err = err;
	unhide(e, fd, ENTRY_FAILED);
}

/* ---- registrations made before the connect, read back from /proc ---- */

static bool added_bit(int fd)
{
	if (fd < 0 || (unsigned)fd >= PENDING_ADDED_FDS)
		return true;
	return (atomic_load_explicit(&pending_added_bits[(unsigned)fd / 64],
				     memory_order_relaxed) >>
		((unsigned)fd % 64)) &
	       1;
}

void pending_note_epoll_add(int epfd, int fd)
{
	unsigned slot;

	note_owner();
	if (fd >= 0 && (unsigned)fd < PENDING_ADDED_FDS && !added_bit(fd)) {
		unsigned top = atomic_load_explicit(&added_top, memory_order_relaxed);

		atomic_fetch_or_explicit(&pending_added_bits[(unsigned)fd / 64],
					 1ULL << ((unsigned)fd % 64), memory_order_relaxed);
		while ((unsigned)fd > top && !atomic_compare_exchange_weak_explicit(
						     &added_top, &top, (unsigned)fd,
						     memory_order_relaxed, memory_order_relaxed))
			;
	}
	slot = atomic_fetch_add_explicit(&recent_next, 1, memory_order_relaxed) % RECENT_ADDS;
	atomic_store_explicit(&recent_adds[slot].fd, -1, memory_order_relaxed);
	atomic_store_explicit(&recent_adds[slot].epfd, epfd, memory_order_relaxed);
	atomic_store_explicit(&recent_adds[slot].fd, fd, memory_order_release);
}

static uint64_t parse_hex(const char **s)
{
	uint64_t v = 0;

	while (**s == ' ')
		(*s)++;
	for (;; (*s)++) {
		char c = **s;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* One fdinfo line "tfd:  FD events: HEX data: HEX ..." about @fd. */
static bool parse_tfd_line(const char *line, int fd, struct reg *r)
{
	const char *s = line;
	long v = 0;

	if (strncmp(s, "tfd:", 4) != 0)
		return false;
	for (s += 4; *s == ' '; s++)
		;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (*s - '0');
	if (v != fd || strncmp(s, " events:", 8) != 0)
		return false;
	s += 8;
	r->events = (uint32_t)parse_hex(&s);
	if (strncmp(s, " data:", 6) != 0)
		return false;
	s += 6;
	r->data = parse_hex(&s);
	return true;
}

/* Find @fd's registration in @epfd from /proc/self/fdinfo; -1 if it cannot be read. */
static int read_registration(int epfd, int fd, struct reg *r)
{
	char path[64], buf[4096], line[160];
	struct text t;
	size_t ll = 0;
	ssize_t n;
	int pfd, found = 0;

	text_init(&t, path, sizeof(path));
	text_str(&t, "/proc/self/fdinfo/");
	text_u64(&t, (uint64_t)epfd);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	if (pfd < 0) /* a set closed since (a stale record of the ring) holds nothing */
		return errno == ENOENT ? 0 : -1;
	while (!found && (n = real_read(pfd, buf, sizeof(buf))) > 0) {
		ssize_t i;

		for (i = 0; i < n && !found; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			if (parse_tfd_line(line, fd, r)) {
				r->epfd = epfd;
				found = 1;
			}
		}
	}
	real_close(pfd);
	return found;
}

/*
 * The epoll sets @fd is in now.  Only an fd added to a set while unmanaged
 * needs a look: then the recent additions say which sets, and /proc says
 * with which events and data.  False when that cannot be known: such an fd
 * is not managed, since hiding it from only some of its sets would lie.
 */
static bool registrations_now(int fd, struct reg *regs, unsigned *nreg)
{
	unsigned i, j;
	bool any = false;

	*nreg = 0;
	if (!added_bit(fd))
		return true;
	for (i = 0; i < RECENT_ADDS; i++) {
		int epfd = atomic_load_explicit(&recent_adds[i].epfd, memory_order_relaxed);
		struct reg r;
		int rc;

		if (atomic_load_explicit(&recent_adds[i].fd, memory_order_acquire) != fd)
			continue;
		any = true;
		for (j = 0; j < *nreg && regs[j].epfd != epfd; j++)
			;
		if (j < *nreg)
			continue;
		rc = read_registration(epfd, fd, &r);
		if (rc < 0)
			return false;
		if (rc == 1) {
			if (*nreg == PENDING_REGS)
				return false;
			regs[(*nreg)++] = r;
		}
	}
	return any;
}

/* ---- the table ---- */

bool pending_manage(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len,
		    const struct target_addr *t, int sync_err)
{
	struct reg regs[PENDING_REGS];
	struct retry_call c;
	struct entry *e = NULL;
	struct stat st;
	unsigned nreg, i;
	uint64_t now;
	int saved = errno;
	bool managed = false;

	note_owner();
	if (len > sizeof(e->addr) || !registrations_now(fd, regs, &nreg) || fstat(fd, &st) != 0)
		goto out;
	lock();
	e = find(fd);
	if (e)
		release(e); /* a stale entry: this fd is connecting anew */
	for (i = 0; i < PENDING_MAX && state_of(&table[i]) != ENTRY_FREE; i++)
		;
	if (i == PENDING_MAX)
		goto out_unlock;
	e = &table[i];
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	memcpy(&e->addr, addr, len);
	e->addrlen = len;
	e->target = *t;
	e->nreg = nreg;
	memcpy(e->reg, regs, nreg * sizeof(regs[0]));
	now = clock_now_ms();
	retry_begin(cfg, &e->progress, CONFIG_INFINITE, now);
	c = call_of(cfg, e);
	if (sync_err) {
		if (!retry_plan(cfg, &c, &e->progress, sync_err, now, &e->due_ms))
			goto out_unlock;
		atomic_store_explicit(&e->fd, fd, memory_order_relaxed);
		atomic_fetch_add_explicit(&pending_active, 1, memory_order_relaxed);
		atomic_store_explicit(&e->state, ENTRY_CONNECTING, memory_order_relaxed);
		hide(e, fd);
	} else {
		atomic_store_explicit(&e->fd, fd, memory_order_relaxed);
		atomic_fetch_add_explicit(&pending_active, 1, memory_order_relaxed);
		atomic_store_explicit(&e->state, ENTRY_CONNECTING, memory_order_relaxed);
	}
	managed = true;
out_unlock:
	unlock();
out:
	errno = saved;
	return managed;
}

/*
 * A visible attempt of @e failed (the kernel still holds its error).  With
 * retries left: hide, consume the error with one connect() (which also resets
 * the socket for the next attempt, measured) and schedule.  Returns true if
 * the program is to see the outcome now.  Under the lock.
 */
static bool attempt_failed(const struct config *cfg, struct entry *e, int fd)
{
	struct retry_call c = call_of(cfg, e);
	uint64_t now = clock_now_ms();
	int err;

	if (!same_socket(e, fd)) {
		release(e);
		return true;
	}
	if (!retry_allowed(cfg, &e->progress, now)) {
		/*
		 * The last attempt: the program sees the kernel's own outcome, and a
		 * connect() that checks it (hiredis, perl) must get it from the
		 * kernel too, not start another round.
		 */
		retry_plan(cfg, &c, &e->progress, 0, now, &e->due_ms);
		set_state(e, ENTRY_FINAL);
		return true;
	}
	hide(e, fd);
	if (real_connect(fd, (const struct sockaddr *)&e->addr, e->addrlen) == 0) {
		unhide(e, fd, ENTRY_CONNECTING); /* cannot happen: a closed socket has an error */
		release(e);
		return true;
	}
	err = errno;
	if (!config_errset_has(c.retryable, err)) {
		fail(e, fd, err);
		return true;
	}
	retry_plan(cfg, &c, &e->progress, err, now, &e->due_ms);
	return false;
}

bool pending_event(const struct config *cfg, int fd, bool maybe_failed, bool *extra_err)
{
	struct entry *e;
	bool show = true;
	int saved = errno;

	*extra_err = false;
	lock();
	e = find(fd);
	if (!e)
		goto out;
	switch (state_of(e)) {
	case ENTRY_HIDDEN:
		show = false;
		break;
	case ENTRY_FAILED:
		*extra_err = true;
		break;
	case ENTRY_CONNECTING:
		if (maybe_failed && tcp_failed(fd)) {
			show = attempt_failed(cfg, e, fd);
			*extra_err = show && state_of(e) == ENTRY_FAILED;
		} else {
			struct retry_call c = call_of(cfg, e);

			retry_succeeded(&c, &e->progress, clock_now_ms());
			release(e); /* handed over */
		}
		break;
	default:
		break;
	}
out:
	unlock();
	errno = saved;
	return show;
}

uint64_t pending_next_due(void)
{
	uint64_t due = CONFIG_INFINITE;
	unsigned i;

	lock();
	for (i = 0; i < PENDING_MAX; i++)
		if (state_of(&table[i]) == ENTRY_HIDDEN && table[i].due_ms < due)
			due = table[i].due_ms;
	unlock();
	return due;
}

void pending_run_due(const struct config *cfg, uint64_t now_ms)
{
	int saved = errno;
	unsigned i;

	lock();
	for (i = 0; i < PENDING_MAX; i++) {
		struct entry *e = &table[i];
		int fd = atomic_load_explicit(&e->fd, memory_order_relaxed);
		struct retry_call c;
		int err;

		if (state_of(e) != ENTRY_HIDDEN || e->due_ms > now_ms)
			continue;
		if (!same_socket(e, fd) || (fcntl(fd, F_GETFL) & O_NONBLOCK) == 0) {
			/* Replaced behind our back, or made blocking: not ours to connect. */
			release(e);
			continue;
		}
		c = call_of(cfg, e);
		e->progress.attempt++;
		if (real_connect(fd, (const struct sockaddr *)&e->addr, e->addrlen) == 0) {
			unhide(e, fd, ENTRY_CONNECTING);
			retry_succeeded(&c, &e->progress, now_ms);
			release(e);
			continue;
		}
		err = errno;
		if (err == EINPROGRESS)
			unhide(e, fd, ENTRY_CONNECTING);
		else if (!config_errset_has(c.retryable, err) ||
			 !retry_plan(cfg, &c, &e->progress, err, now_ms, &e->due_ms))
			fail(e, fd, err);
	}
	unlock();
	errno = saved;
}

enum pending_answer pending_connect_answer(int fd, int *err)
{
	enum pending_answer answer = PENDING_PASS;
	struct entry *e;

	lock();
	e = find(fd);
	if (e && state_of(e) == ENTRY_HIDDEN) {
		*err = EALREADY;
		answer = PENDING_IN_PROGRESS;
	} else if (e && state_of(e) == ENTRY_FAILED) {
		*err = e->err;
		answer = PENDING_FAILED;
		release(e);
	} else if (e) {
		answer = PENDING_CONNECTING;
	}
	unlock();
	return answer;
}

void pending_release(int fd)
{
	struct entry *e;

	lock();
	e = find(fd);
	if (e)
		release(e);
	unlock();
}

unsigned pending_list(int *fds, bool *hidden, unsigned max)
{
	unsigned i, n = 0;

	lock();
	for (i = 0; i < PENDING_MAX && n < max; i++) {
		struct entry *e = &table[i];
		int fd = atomic_load_explicit(&e->fd, memory_order_relaxed);

		if (state_of(e) == ENTRY_FREE || fd < 0)
			continue;
		if (!same_socket(e, fd)) {
			release(e); /* closed behind our back and maybe reused */
			continue;
		}
		fds[n] = fd;
		hidden[n++] = state_of(e) == ENTRY_HIDDEN;
	}
	unlock();
	return n;
}

enum pending_answer pending_io_answer(int fd, int *err)
{
	enum pending_answer answer = PENDING_PASS;
	struct entry *e;

	lock();
	e = find(fd);
	if (e && state_of(e) == ENTRY_HIDDEN) {
		*err = EAGAIN;
		answer = PENDING_IN_PROGRESS;
	} else if (e && state_of(e) == ENTRY_FAILED) {
		*err = e->err;
		answer = PENDING_FAILED;
		release(e);
	}
	unlock();
	return answer;
}

enum pending_answer pending_so_error(const struct config *cfg, int fd, int *err)
{
	enum pending_answer answer = PENDING_PASS;
	struct entry *e;
	int saved = errno;

	lock();
	e = find(fd);
	if (!e)
		goto out;
	if (state_of(e) == ENTRY_CONNECTING && tcp_failed(fd) && !attempt_failed(cfg, e, fd)) {
		/* Failed and rescheduled: still in progress, as far as the program knows. */
	} else if (state_of(e) == ENTRY_CONNECTING && tcp_established(fd)) {
		struct retry_call c = call_of(cfg, e);

		retry_succeeded(&c, &e->progress, clock_now_ms());
		release(e);
		goto out;
	}
	e = find(fd);
	if (e && state_of(e) == ENTRY_HIDDEN) {
		*err = 0;
		answer = PENDING_IN_PROGRESS;
	} else if (e && state_of(e) == ENTRY_FAILED) {
		*err = e->err;
		answer = PENDING_FAILED;
		release(e);
	}
out:
	unlock();
	errno = saved;
	return answer;
}

int pending_fd_by_epoll(int epfd, uint64_t data)
{
	int fd = -1;
	unsigned i, r;

	lock();
	for (i = 0; i < PENDING_MAX && fd < 0; i++) {
		struct entry *e = &table[i];

		if (state_of(e) == ENTRY_FREE)
			continue;
		for (r = 0; r < e->nreg; r++)
			if (e->reg[r].epfd == epfd && e->reg[r].data == data)
				fd = atomic_load_explicit(&e->fd, memory_order_relaxed);
	}
	unlock();
	return fd;
}

static int reg_index(const struct entry *e, int epfd)
{
	unsigned r;

	for (r = 0; r < e->nreg; r++)
		if (e->reg[r].epfd == epfd)
			return (int)r;
	return -1;
}

static void reg_remove(struct entry *e, unsigned r)
{
	e->reg[r] = e->reg[--e->nreg];
}

bool pending_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data, int *rc, int *err)
{
	struct entry *e;
	int r;

	lock();
	e = find(fd);
	if (!e) {
		unlock();
		return false;
	}
	r = reg_index(e, epfd);
	*rc = 0;
	*err = 0;
	if (state_of(e) != ENTRY_HIDDEN) {
		struct epoll_event ev = { .events = events, .data.u64 = data };

		*rc = real_epoll_ctl(epfd, op, fd, &ev);
		*err = errno;
	} else if ((op == EPOLL_CTL_ADD) == (r >= 0)) {
		/* Hidden: the kernel has no registration, so answer from the record. */
		*rc = -1;
		*err = op == EPOLL_CTL_ADD ? EEXIST : ENOENT;
	} else if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL) {
		*rc = -1;
		*err = EINVAL;
	}
	if (*rc == 0) {
		if (op == EPOLL_CTL_DEL && r >= 0) {
			reg_remove(e, (unsigned)r);
		} else if (op == EPOLL_CTL_MOD && r >= 0) {
			e->reg[r].events = events;
			e->reg[r].data = data;
		} else if (op == EPOLL_CTL_ADD && e->nreg < PENDING_REGS) {
			e->reg[e->nreg++] = (struct reg){ epfd, events, data };
		} else if (op == EPOLL_CTL_ADD) {
			/* More sets than can be replayed: stop managing; the kernel decides. */
			if (state_of(e) == ENTRY_HIDDEN)
				unhide(e, fd, ENTRY_CONNECTING);
			release(e);
		}
	}
	unlock();
	return true;
}

/* Whether any of the fds [@lo, @hi] has its added bit; with @clear, clear them. */
static bool added_in(unsigned lo, unsigned hi, bool clear)
{
	unsigned top = atomic_load_explicit(&added_top, memory_order_relaxed), w;
	bool any = false;

	/* Every close() comes here: one word for one fd, and no scan past the top. */
	if (lo == hi && lo < PENDING_ADDED_FDS) {
		uint64_t bit = 1ULL << (lo % 64);

		if (!(atomic_load_explicit(&pending_added_bits[lo / 64], memory_order_relaxed) &
		      bit))
			return false;
		if (clear)
			atomic_fetch_and_explicit(&pending_added_bits[lo / 64], ~bit,
						  memory_order_relaxed);
		return true;
	}
	if (hi > top)
		hi = top;
	for (w = lo / 64; w <= hi / 64 && w < PENDING_ADDED_FDS / 64; w++) {
		uint64_t mask = ~0ULL;

		if (w == lo / 64)
			mask &= ~0ULL << (lo % 64);
		if (w == hi / 64 && hi % 64 != 63)
			mask &= (1ULL << (hi % 64 + 1)) - 1;
		if (!(atomic_load_explicit(&pending_added_bits[w], memory_order_relaxed) & mask))
			continue;
		any = true;
		if (clear)
			atomic_fetch_and_explicit(&pending_added_bits[w], ~mask,
						  memory_order_relaxed);
	}
	return any;
}

void pending_forget(unsigned lo, unsigned hi)
{
	unsigned i, r;

	/* Nothing recorded (the common close): no system call of our own. */
	if ((!added_in(lo, hi, false) && !pending_any()) || in_vfork_child())
		return;
	/* The added bits of closed fds: a reused number starts with no registration. */
	added_in(lo, hi, true);
	if (!pending_any())
		return;
	lock();
	for (i = 0; i < PENDING_MAX; i++) {
		struct entry *e = &table[i];
		int fd = atomic_load_explicit(&e->fd, memory_order_relaxed);

		if (state_of(e) == ENTRY_FREE)
			continue;
		if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi) {
			release(e);
			continue;
		}
		for (r = 0; r < e->nreg;) {
			if (e->reg[r].epfd >= 0 && (unsigned)e->reg[r].epfd >= lo &&
			    (unsigned)e->reg[r].epfd <= hi)
				reg_remove(e, r);
			else
				r++;
		}
	}
	unlock();
}

void pending_after_fork(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	unsigned i;

	memcpy(&table_lock, &fresh, sizeof(fresh));
	for (i = 0; i < PENDING_MAX; i++) {
		atomic_store_explicit(&table[i].state, ENTRY_FREE, memory_order_relaxed);
		atomic_store_explicit(&table[i].fd, -1, memory_order_relaxed);
	}
	atomic_store_explicit(&pending_active, 0, memory_order_relaxed);
	atomic_store_explicit(&pending_masked, 0, memory_order_relaxed);
	atomic_store_explicit(&owner_pid, (int)getpid(), memory_order_relaxed);
}
