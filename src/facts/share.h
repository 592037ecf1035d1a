/* What one user's processes know of each destination: a mapped file, one prober, waiters. */
#ifndef BACKOFF_FACTS_SHARE_H
#define BACKOFF_FACTS_SHARE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config/target.h"

#define SHARE_SLOTS 1024
#define SHARE_MAGIC UINT64_C(0x316572616873626c) /* "lbshare1" */
#define SHARE_VERSION 7

enum share_state { SHARE_UNKNOWN, SHARE_DOWN, SHARE_UP };

/*
 * A slot's destination, written by whoever claims the slot: its bytes with the
 * network namespace hash to the slot's key, which is how a reader knows them
 * whole and the slot's own (a claim in progress, or a hostile writer, does not
 * hash right).
 */
struct share_dest {
	_Atomic uint64_t netns;	  /* the claimer's network namespace (inode), 0: unknown */
	_Atomic uint16_t family;  /* AF_INET, AF_INET6 or AF_UNIX */
	_Atomic uint16_t port;	  /* host byte order; 0 for AF_UNIX */
	_Atomic uint16_t len;	  /* AF_UNIX: bytes of the path or abstract name */
	_Atomic uint8_t abstract; /* AF_UNIX: an abstract name */
	/*
	 * Not hashed: its server spoke first, a connection's first bytes came
	 * before the program sent any (a greeting).  A close before them is then
	 * no answer of the server's.
	 */
	_Atomic uint8_t greeted;
	_Atomic uint64_t bytes[14]; /* the address (4 or 16 bytes) or the path */
};

/* Processes whose event loops' waiters one slot counts; those of a ninth are not counted. */
#define SHARE_LOOPS 8
/* pid in the high 32 bits, the count in the next 16, the lease's end in seconds (mod 2^16). */
#define SHARE_LOOP_WORD(pid, count, lease_s)                                  \
	((uint64_t)(uint32_t)(pid) << 32 | (uint64_t)((count)&0xffff) << 16 | \
	 (uint64_t)((lease_s)&0xffff))
/* A lease further ahead than this is no lease (a hostile value, or one of a wrapped clock). */
#define SHARE_LOOP_LEASE_MAX_S 3600

/*
 * One destination.  Every field is a hint written by processes of the same
 * user, which may have died at any point or been replaced by a hostile
 * writer: none is trusted to be in range, and a wrong one costs a wait (each
 * waiter keeps its own deadline), never an answer the kernel did not give.
 */
struct share_slot {
	_Atomic uint64_t key; /* 0: empty; the destination's hash, network namespace included */
	_Atomic uint64_t probed_ns; /* the last real attempt (its outcome is state) */
	_Atomic uint64_t lease_ns;  /* when the local prober's lease ends (CLOCK_MONOTONIC) */
	_Atomic uint32_t seq;	    /* futex word: bumped by each success */
	_Atomic uint32_t state;	    /* enum share_state */
	_Atomic int32_t prober;	    /* the local prober's thread id, 0: none */
	_Atomic uint32_t err;	    /* errno of the last failed attempt */
	_Atomic uint32_t waiters;   /* threads asleep on seq */
	_Atomic int32_t deputy;	    /* the one waiter that watches the lease, 0: none */
	_Atomic uint64_t looked_ns; /* the prober's last look that found no listener */
	_Atomic uint64_t deputy_ns; /* when the deputy's turn ends unless renewed */
	/*
	 * The rest is for `backoff status`; a connect reads only the 64 bytes
	 * above.  Written when the slot is claimed, a lease taken, an attempt
	 * noted or left to another, never by a connect that waits for nothing.
	 */
	_Atomic uint64_t since_ns;  /* found down while up or new: the outage's start */
	_Atomic uint64_t attempts;  /* real attempts noted since the slot was claimed */
	_Atomic uint64_t saved;	    /* planned attempts left to another's result */
	_Atomic int32_t prober_pid; /* the process of the prober's thread id, 0: none */
	/*
	 * Early closes: connections the peer ended before their first byte.  A
	 * streak ends at a first byte, or when its last one is long past.
	 */
	_Atomic uint32_t early;	    /* the streak's length */
	_Atomic uint64_t damp_ns;   /* a new connect waits until then */
	_Atomic uint64_t early_ns;  /* the streak's last early close */
	_Atomic uint64_t streak_ns; /* its first */
	_Atomic uint64_t damp_ms;   /* the delay drawn at the last one */
	struct share_dest dest;
	/*
	 * Connects of event loops waiting for their planned retry, by process:
	 * each word is SHARE_LOOP_WORD(pid, count, lease), written by that
	 * process only.  A word whose lease is over, or whose process is gone,
	 * counts nothing (the process died, or exec'd with connects in flight).
	 */
	_Atomic uint64_t loops[SHARE_LOOPS];
	/*
	 * The last run (BACKOFF_RUN) that spent its budget here: until
	 * run_until_ns, that run's calls get the kernel's answer at once; any
	 * success ends it.  run_giveups: its give-ups in a row (the open time
	 * grows with them).
	 */
	_Atomic uint64_t run;
	_Atomic uint64_t run_until_ns;
	_Atomic uint32_t run_giveups;
	/*
	 * When an event loop's connect in a full server's line (share_full_turn)
	 * last looked (monotonic ms, mod 2^32): such connects are in line, though
	 * not counted in queued.
	 */
	_Atomic uint32_t polled_ms;
	/*
	 * The local listener whose server greeted (dest.greeted): its socket's
	 * inode, 0: not known (a remote destination).  Another listener on the
	 * port is another server, whose closes the greeting says nothing of.
	 */
	_Atomic uint64_t greeted_by;
	/*
	 * A full server (a "try later" answer that means its connections are
	 * all taken: share_note_full): when it last said so.  Its line:
	 * connects waiting for one of the connections held to it to close,
	 * queued of them asleep on freed, which each such close bumps (at
	 * freed_ns); claimed: the places taken of those freed.
	 */
	_Atomic uint64_t full_ns;
	_Atomic uint32_t freed;
	_Atomic uint32_t queued;
	_Atomic uint32_t claimed;
	_Atomic uint32_t scout_ms; /* a stalled line's next attempt (monotonic ms, mod 2^32) */
	_Atomic uint64_t freed_ns;
};

/* The connect hook's gate counts probers in buckets: by port, and one for unix paths. */
#define SHARE_PORT_BUCKETS 64		       /* a port's low 6 bits */
#define SHARE_UNIX_BUCKET SHARE_PORT_BUCKETS   /* every unix path */
#define SHARE_BUCKETS (SHARE_PORT_BUCKETS + 1) /* the low 7 bits of a key */

struct share_head {
	_Atomic uint64_t magic;
	_Atomic uint32_t version, slots, slot_size, spare;
	/*
	 * When the latest lease of a prober in each bucket ends (CLOCK_MONOTONIC
	 * ns; 0: none), by the bucket of its destination (a slot's key carries it
	 * in its low bits).  A lease left by a prober that died ends by itself:
	 * the first connect that finds it over clears it.
	 */
	_Atomic uint64_t probing_until[SHARE_BUCKETS];
	/*
	 * Slots whose state is SHARE_DOWN, a hint kept by each transition: a
	 * success looks for its destination's slot only when some slot is
	 * down (a wrong count costs a look, never a wrong state).
	 */
	_Atomic uint64_t downs;
	/*
	 * Until when some destination may be full (CLOCK_MONOTONIC ns; 0: none
	 * is): the close hook reads this one word, and looks further only while
	 * it is set.
	 */
	_Atomic uint64_t full_until;
	/*
	 * Bit b (of the 65 buckets): a destination of bucket b has been down
	 * since the file was made.  Never cleared (a bit lost to a race would
	 * leave a slot down after its recovery): a success whose bucket's bit is
	 * clear has no slot to look for.  All clear with slots down: set by a
	 * build that kept no bits, and every bucket is looked in.
	 */
	_Atomic uint64_t down_buckets[2];
};

#define SHARE_FILE_SIZE (sizeof(struct share_head) + SHARE_SLOTS * sizeof(struct share_slot))

/* The mapped file, or NULL: sharing is off, not yet needed, or the file is unusable. */
extern struct share_head *_Atomic share_map;

/* Whether the file has been looked for: a process that never connects never opens it. */
enum share_tried { SHARE_UNTRIED, SHARE_MAKING, SHARE_QUIET, SHARE_SETTLED, SHARE_RESTING };
extern atomic_int share_tried;

/*
 * The first connect's look: map the file (made if it is missing) for a
 * destination of a family that is retried, so that this first attempt can be
 * left to a prober.  The map, or NULL.  Silent: a file that cannot be used is
 * said at the first failure.
 */
struct share_head *share_first_look(const struct sockaddr *addr);

/*
 * The mapped file, mapped (made if missing) at the first call that needs it,
 * and said once if it cannot be used; NULL then.  For share_get.
 */
struct share_head *share_map_made(const struct config *cfg);

/*
 * News a healthy connect must see was just written to the head (a slot
 * down where none was, a gate or lease where none ran): the quiet mark
 * goes, so that new processes map the file.  errno is kept.
 */
void share_stirred(void);

/*
 * A process resting on the quiet mark (SHARE_RESTING) whose rest is over
 * looks again: the mark still there, it rests on; else it maps the file.
 * The map, or NULL.
 */
struct share_head *share_rested(void);

/* Whether some destination of the file is down: one or two loads. */
static inline bool share_any_down(void)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);

	return h && atomic_load_explicit(&h->downs, memory_order_relaxed) != 0;
}

/*
 * Whether a destination of @bucket may be down: some slot is, and one of its
 * bucket has been (down_buckets).  A few loads, for every successful
 * connect: a success elsewhere looks for no slot while one destination of
 * the host is down.
 */
static inline bool share_down_in(unsigned bucket)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);
	uint64_t lo, hi;

	/* Acquire: the bit is set before the count that it goes with. */
	if (!h || atomic_load_explicit(&h->downs, memory_order_acquire) == 0)
		return false;
	lo = atomic_load_explicit(&h->down_buckets[0], memory_order_relaxed);
	hi = atomic_load_explicit(&h->down_buckets[1], memory_order_relaxed);
	if (lo == 0 && hi == 0)
		return true;
	return ((bucket < 64 ? lo : hi) >> (bucket % 64)) & 1;
}

/* The bucket of a connect's address (@len bytes; a short one: the unix bucket's). */
static inline unsigned share_bucket_of(const struct sockaddr *addr, socklen_t len)
{
	/*
	 * sin_port and sin6_port are at the same place; another family's bytes
	 * there cost at most a lookup that finds nothing.
	 */
	if (len < 4 || addr->sa_family == AF_UNIX)
		return SHARE_UNIX_BUCKET;
	return ntohs(((const struct sockaddr_in *)(const void *)addr)->sin_port) &
	       (SHARE_PORT_BUCKETS - 1);
}

/* The bucket of a destination @t: its port's low bits, or the unix paths' one. */
static inline unsigned share_bucket_of_target(const struct target_addr *t)
{
	return t->family == AF_UNIX ? SHARE_UNIX_BUCKET : t->port & (SHARE_PORT_BUCKETS - 1);
}

/* share_down_in for @t's bucket. */
static inline bool share_down_for(const struct target_addr *t)
{
	return share_down_in(share_bucket_of_target(t));
}

/*
 * A connect to @t succeeded (a first attempt's too): a slot that says it is
 * down says up from now, and its waiters are woken; nothing is written when
 * none is down or its slot says so already.  No system call but the wake.
 */
void share_note_up(const struct target_addr *t, uint64_t now_ns);

/* The rare case of share_probing: a lease is on record; whether it is still running. */
bool share_probing_until(struct share_head *h, unsigned bucket, uint64_t until);

/*
 * Whether a destination of @addr's bucket is being probed now: a few loads,
 * for every connect (a first attempt may be left to the prober).
 */
static inline bool share_probing(const struct sockaddr *addr, socklen_t len)
{
	/* Acquire: another thread's first connect may have mapped it a moment ago. */
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);
	unsigned b;
	uint64_t until;

	if (__builtin_expect(!h, 0)) {
		int tried = atomic_load_explicit(&share_tried, memory_order_relaxed);

		if ((tried != SHARE_UNTRIED && tried != SHARE_RESTING) || len < 4 ||
		    !(h = share_first_look(addr)))
			return false;
	}
	if (len < 4)
		return false;
	b = share_bucket_of(addr, len);
	until = atomic_load_explicit(&h->probing_until[b], memory_order_relaxed);
	return until != 0 && share_probing_until(h, b, until);
}

/*
 * At start-up: note @cfg for the first connect's look (share_first_look),
 * which maps the file; no system call.  Sharing off, or a set-user-ID
 * program: no file is ever looked for.
 */
void share_init(const struct config *cfg);

/*
 * The slot of @t: found, or made (creating and mapping the file on first
 * use).  NULL when sharing is off, the file unusable (said once), or @t a
 * unix address of zero bytes (no destination to name).
 * Async-signal-safe after the first call of the process.
 */
struct share_slot *share_get(const struct config *cfg, const struct target_addr *t);

/* The slot of @t if it has one; no file is made.  Lock-free. */
struct share_slot *share_find(const struct target_addr *t);

/*
 * The inode a network namespace's link names (@n bytes of readlink(2) of
 * /proc/PID/ns/net, "net:[INODE]", no NUL), or 0 if it names none.  Pure.
 */
uint64_t share_ns_inode(const char *link, size_t n);

/*
 * Another thread probes @s, holds its lease at @now_ns and found it down: the
 * errno of its last attempt (0: none, or out of any errset's range), and in
 * *age_ns how long ago it found so (an attempt or a look; never a time to
 * come).  Whether the finding is fresh enough, and the error one retried, is
 * the caller's to judge (engine_finding_fresh_ns).
 */
int share_prober_finding(struct share_slot *s, uint64_t now_ns, uint64_t *age_ns);

/*
 * When @s was found down after @since_ns, if it is not known up since: by a
 * real attempt of anyone, or by a look of another thread holding the lease
 * at @now_ns; 0 if it was not.  Our own looks do not count: a prober's
 * planned attempts stay real, so a process alone attempts on the policy's
 * schedule, as without sharing.
 */
uint64_t share_probed_since(struct share_slot *s, uint64_t since_ns, uint64_t now_ns);

/* The success count of @s, to wait on. */
uint32_t share_seq(struct share_slot *s);

/*
 * A real attempt to @s ended at @now_ns: @err 0 is a success (waiters are
 * released in a ramp: two more for each success), else the errno.
 */
void share_note(struct share_slot *s, int err, uint64_t now_ns);

/* A look for a listener of @s found none at @now_ns. */
void share_note_looked(struct share_slot *s, uint64_t now_ns);

/*
 * Take or renew the lease to probe @s until @until_ns: true if the calling
 * thread holds it (no other holds a live one).
 */
bool share_lead(struct share_slot *s, uint64_t now_ns, uint64_t until_ns);

/*
 * Whether the calling thread is (or becomes, the turn being free or not
 * renewed by @now_ns) the one waiter of @s that wakes when the prober's
 * lease ends, to take over from a prober that died; renewed until
 * @until_ns.  The other waiters sleep until a success or their own
 * planned attempt, so that 100 of them cost no more than one.
 */
bool share_deputy(struct share_slot *s, uint64_t now_ns, uint64_t until_ns);

/*
 * A planned attempt to @s was not made: another's result since our last
 * attempt stood for it.  Counted for `backoff status`.
 */
void share_note_saved(struct share_slot *s);

/*
 * An early close of @s at @now_ns: the streak grows (a new one begins when
 * its last was more than @stale_ns ago).  Returns its length; *since_ns when
 * it began, *prev_ms the delay drawn at its previous one.
 */
uint32_t share_note_early(struct share_slot *s, uint64_t now_ns, uint64_t stale_ns,
			  uint64_t *since_ns, uint64_t *prev_ms);

/*
 * New connects to @s wait until @until_ns (the delay @delay_ms drawn for the
 * streak): the connect hook's gate is open until then.
 */
void share_damp(struct share_slot *s, uint64_t until_ns, uint64_t delay_ms);

/*
 * When a new connect to @s may be made, if later than @now_ns (else 0), and
 * never more than @max_ns from now (a hostile value); *streak: the streak.
 */
uint64_t share_damped_until(struct share_slot *s, uint64_t now_ns, uint64_t max_ns,
			    uint32_t *streak);

/*
 * An event loop's connect to @s waits for its planned retry until @until_ns
 * (its next wake) or ends: @delta +1 counts it as a waiter of the calling
 * process, 0 renews the process's lease to @until_ns, -1 ends its count.
 * Returns whether it is counted after +1 (false: the slot's room for
 * processes is full); a -1 is only for a +1 that was.  No system call after
 * the process's first.
 */
bool share_loop_wait(struct share_slot *s, int delta, uint64_t until_ns);

/*
 * An event loop's connect to @s, counted as a waiter already or not
 * (@counted), waits until @until_ns: its lease renewed, or it is counted
 * anew if it was not or its lease lapsed meanwhile (a wait longer than any
 * lease).  Returns whether it is counted now.
 */
bool share_loop_renew(struct share_slot *s, bool counted, uint64_t until_ns);

/*
 * An event loop's attempt at @s failed with @err at @now_ns (share_note),
 * and, with @until_ns (0: it gave up), its connect waits until then
 * (share_loop_renew, @counted): one event of the slot.  Returns whether it
 * is counted as a waiter.
 */
bool share_loop_failed(struct share_slot *s, int err, uint64_t now_ns, bool counted,
		       uint64_t until_ns);

/*
 * Run @run spent its budget for @s: its give-ups in a row there, this one
 * included (1 for a run other than the last one recorded), recorded and
 * returned; share_note_run_open then says until when its calls get the
 * kernel's answer at once.
 */
uint32_t share_note_run_giveup(struct share_slot *s, uint64_t run);
void share_note_run_open(struct share_slot *s, uint64_t until_ns);

/* Whether run @run spent its budget for @t and its open time still runs at @now_ns. */
bool share_run_spent(const struct target_addr *t, uint64_t run, uint64_t now_ns);

/*
 * @s answered at @now_ns that it is full: it is so for @window_ns from now
 * (each such answer renews it), and new connects to it find its line.
 */
void share_note_full(struct share_slot *s, uint64_t now_ns, uint64_t window_ns);

/* How many connects wait in @s's line if it is full at @now_ns, for @window_ns since its answer;
 * -1: not full. */
int share_full_line(const struct share_slot *s, uint64_t now_ns, uint64_t window_ns);

/*
 * Whether some destination of the file may be full: one or two loads, for
 * every close (a process resting on the quiet mark looks again once its rest
 * is over: a connection it made then may hold a full server's place).
 */
static inline bool share_any_full(void)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);

	if (!h && atomic_load_explicit(&share_tried, memory_order_relaxed) == SHARE_RESTING)
		h = share_rested();
	return h && atomic_load_explicit(&h->full_until, memory_order_relaxed) != 0;
}

/*
 * A connection to @t is being closed at @now_ns: if its destination said it
 * is full within @window_ns, the first connect in its line is woken.  A file
 * whose last full destination's time is over, or is further ahead than
 * @max_ns (no configuration's window is: a hostile value), is cleared, so
 * that closes read one 0 again.  The mark was set by whoever was told
 * "full", on its own policy: a longer one than the closer's is no hostile one.
 */
void share_note_closing(const struct target_addr *t, uint64_t now_ns, uint64_t window_ns,
			uint64_t max_ns);

/* The count of closes seen by @s's line, to wait on. */
uint32_t share_freed(struct share_slot *s);

/* When a place in @s's line was last freed (0: never). */
uint64_t share_freed_ns(const struct share_slot *s);

/*
 * A connect in @s's stalled line whose time came at @now_ms: true if it is
 * the one to attempt now (the line's last attempt was a delay ago, the
 * delay drawn at the streak's last early close); else *next_ms is when
 * the next one may.
 */
bool share_full_scout(struct share_slot *s, uint64_t now_ms, uint64_t *next_ms);

/*
 * Take a place freed in @s's line at @now_ns: true if one was (a close
 * since the last taken, within @fresh_ns: an older one was taken by a
 * connect made meanwhile, or by nobody).  One place, one connect.
 */
bool share_full_claim(struct share_slot *s, uint64_t now_ns, uint64_t fresh_ns);

/* An event loop's connect in @s's line looked at @now_ns: share_full_line counts it a while. */
void share_full_looked(struct share_slot *s, uint64_t now_ns);

/*
 * Wait in @s's line until a close wakes the calling thread, or @until_ns.
 * Returns 1 when woken (or a close came since @freed was read), 0 at
 * @until_ns, EINTR as share_wait.  errno preserved.
 */
int share_full_wait(struct share_slot *s, uint32_t freed, uint64_t until_ns);

/* A connection to @s received its first byte: its streak of early closes ends. */
void share_note_first_byte(struct share_slot *s);

/*
 * @s's server greeted (share_dest.greeted), heard from the listener @by
 * (share_slot.greeted_by; 0: not known); a load, and stores the first time.
 */
void share_note_greeted(struct share_slot *s, uint64_t by);

/* Whether @s's server greeted once; *by: the listener it was heard from, 0: not known. */
bool share_greeted(struct share_slot *s, uint64_t *by);

/* Forget @s's greeting: it was another server's. */
void share_forget_greeted(struct share_slot *s);

/* The thread id of @s's prober (0: none), a hint for the log. */
int share_prober(struct share_slot *s);

/* When the lease of @s ends (0: none). */
uint64_t share_lease_end(struct share_slot *s);

/*
 * The calling thread stops probing @s (its call ended): another may take
 * over at once; and an event loop's connect counted as a waiter
 * (@loop_waiter: share_loop_wait) is counted no more.
 */
void share_leave(struct share_slot *s, bool loop_waiter);

/*
 * A call's attempt succeeded at @now_ns and the call leaves the slot: the
 * news (share_note with no error), then share_leave.
 */
void share_connected(struct share_slot *s, uint64_t now_ns, bool loop_waiter);

/*
 * Sleep until @s's success count differs from @seq or @until_ns.  Returns 0,
 * or EINTR when a signal that may not restart the call cut it short.  errno
 * preserved.
 */
int share_wait(struct share_slot *s, uint32_t seq, uint64_t until_ns);

/* In a forked child: thread ids are new. */
void share_after_fork(void);

/*
 * Check a file image of @len bytes: 0 if it is a state file this library
 * can use, else a static reason.  Pure (the fuzzer's entry).
 */
const char *share_check(const void *image, size_t len);

/* Use @image (checked) as the state: for tests and the fuzzer. */
void share_use(void *image);

/*
 * The default state file of user @uid in @dir ("/dev/shm", else "/tmp") into
 * @buf, always terminated.
 */
void share_default_path(unsigned uid, const char *dir, char *buf, size_t size);

/*
 * Check what fstat(2) says of an opened state file: 0 if it is a regular
 * file of user @owner that no one else may read or write, of the right size
 * (or empty, if @empty_ok), else a static reason.  Pure.
 */
const char *share_check_file(const struct stat *st, unsigned owner, bool empty_ok);

/* One slot as `backoff status` shows it: a copy, each field bounded. */
struct share_view {
	enum share_state state; /* SHARE_UNKNOWN for a value out of range */
	bool probing;		/* a prober's lease is running */
	bool named;		/* target is the slot's destination (it hashes to the key) */
	uint64_t netns;		/* its writer's network namespace (inode) if named, 0: unknown */
	uint64_t since_ns;	/* the outage's start (CLOCK_MONOTONIC), 0: unknown */
	uint64_t probed_ns;	/* the last real attempt, 0: none */
	int prober_tid, prober_pid; /* > 0 while probing, else 0 */
	int err;		    /* errno of the last failed attempt, 0: none or out of range */
	uint32_t waiters;	    /* threads asleep on the slot, as the library believes them */
	uint64_t attempts, saved;
	uint32_t early;	 /* early closes in a row, the last within a minute; 0: none */
	bool full;	 /* it said it is full within a minute */
	uint32_t queued; /* connects waiting in its line, when full */
	struct target_addr target;
	/* Event loops' connects waiting, by process, those whose lease runs (count 0: none). */
	int loop_pid[SHARE_LOOPS];
	uint32_t loop_count[SHARE_LOOPS];
};

/*
 * Copy slot @i of @h (an image share_check accepted) at @now_ns
 * (CLOCK_MONOTONIC): false if it is empty or out of range.  Pure; every
 * field of the image is hostile.
 */
bool share_view_slot(const struct share_head *h, unsigned i, uint64_t now_ns, struct share_view *v);

#endif
