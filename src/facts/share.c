/* The state file's slots: one user's processes share, per destination, who probes and what it
 * found. */
#include "facts/share.h"
#include "facts/share_int.h"

#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/compat.h"
#include "sys/log.h"
#include "sys/startup.h"
#include "sys/kcall.h"

/* The network namespace's inode, read at the first key made (0: unknown). */
STARTUP_DATA static _Atomic uint64_t share_netns;
STARTUP_DATA static atomic_bool share_netns_read;

/* Slots looked at from a destination's hash; a full neighbourhood means no sharing for it. */
#define SHARE_PROBES 16
/* Waiters woken by each success: the ramp doubles as their connects succeed. */
#define SHARE_RAMP 2

static __thread int share_tid __attribute__((tls_model("initial-exec")));
STARTUP_DATA static atomic_int share_pid; /* cached: getpid() is a system call */

static int my_tid(void)
{
	if (!share_tid)
		share_tid = (int)kcall_gettid();
	return share_tid;
}

static int my_pid(void)
{
	int pid = atomic_load_explicit(&share_pid, memory_order_relaxed);

	if (!pid) {
		pid = (int)kcall_getpid();
		atomic_store_explicit(&share_pid, pid, memory_order_relaxed);
	}
	return pid;
}

void share_after_fork(void)
{
	share_tid = 0;
	atomic_store_explicit(&share_pid, 0, memory_order_relaxed);
}

static struct share_slot *slots_of(struct share_head *h)
{
	return (struct share_slot *)(h + 1);
}

uint64_t share_ns_inode(const char *link, size_t n)
{
	static const char prefix[] = "net:[";
	uint64_t ino = 0;
	size_t i;

	if (n < sizeof(prefix) + 1 || link[n - 1] != ']')
		return 0;
	for (i = 0; i < sizeof(prefix) - 1; i++)
		if (link[i] != prefix[i])
			return 0;
	for (; i < n - 1; i++) {
		uint64_t d = (uint64_t)(link[i] - '0');

		if (link[i] < '0' || link[i] > '9' || ino > (UINT64_MAX - d) / 10)
			return 0;
		ino = ino * 10 + d;
	}
	return ino;
}

/*
 * Loopback and unix paths of another network namespace are another
 * destination.  Read when the first key is made, not at start-up: a process
 * that never waits for a destination never needs it.  Its inode from the
 * link's text (net:[INODE]): a third of the cost of a stat, which follows
 * the link into the namespace's own file system.
 */
static uint64_t netns(void)
{
	char link[40];
	ssize_t n;

	if (atomic_load_explicit(&share_netns_read, memory_order_acquire))
		return atomic_load_explicit(&share_netns, memory_order_relaxed);
	n = kcall_readlink("/proc/self/ns/net", link, sizeof(link));
	if (n > 0 && (size_t)n < sizeof(link))
		atomic_store_explicit(&share_netns, share_ns_inode(link, (size_t)n),
				      memory_order_relaxed);
	atomic_store_explicit(&share_netns_read, true, memory_order_release);
	return atomic_load_explicit(&share_netns, memory_order_relaxed);
}

/* FNV-1a: its multiplications wrap by design (the fuzzers' integer checks are told so). */
#if defined(__clang__)
#define WRAPS __attribute__((no_sanitize("unsigned-integer-overflow")))
#else
#define WRAPS
#endif

/* The key of @t seen from network namespace @netns. */
WRAPS static uint64_t key_of(const struct target_addr *t, uint64_t netns)
{
	const unsigned char *p = t->family == AF_UNIX ? (const unsigned char *)t->path : t->ip;
	size_t n = t->family == AF_UNIX ? t->path_len : t->family == AF_INET ? 4 : 16, i;
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ netns * UINT64_C(0x9e3779b97f4a7c15), high;
	unsigned bucket;

	if (n > TARGET_PATH_MAX)
		n = TARGET_PATH_MAX;
	h ^= (uint64_t)(unsigned)t->family | (uint64_t)t->port << 16 |
	     (uint64_t)(t->abstract ? 1U : 0U) << 40;
	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	h ^= h >> 29;
	/* The low 7 bits carry the bucket the connect hook computes from an address. */
	high = h & ~(uint64_t)127;
	bucket = share_bucket_of_target(t);
	/* Never 0 (an empty slot's key): bit 7 stands in for high bits that are all 0. */
	return high | bucket | (high != 0 ? 0 : 128);
}

static uint64_t hash_of(const struct target_addr *t)
{
	return key_of(t, netns());
}

/*
 * Whether @t names no destination: a unix address whose bytes are all 0 or
 * none, what a program whose socket path was left empty connects to (a
 * whole sockaddr_un of zeros is the abstract name of 107 zero bytes).  Not
 * shared: no row of `backoff status` would say what it waits for.
 */
static bool nameless(const struct target_addr *t)
{
	size_t i, n = t->path_len < TARGET_PATH_MAX ? t->path_len : TARGET_PATH_MAX;

	if (t->family != AF_UNIX)
		return false;
	for (i = 0; i < n; i++)
		if (t->path[i] != '\0')
			return false;
	return true;
}

#define DEST_WORDS (sizeof(((struct share_dest *)0)->bytes) / sizeof(uint64_t))
_Static_assert(DEST_WORDS * 8 >= TARGET_PATH_MAX, "a slot holds a unix path");

/*
 * Write @t into @d, for the status reader: once per claim, never on a
 * connect's way.  Word by word, so that two claimers race on no byte.
 */
static void write_dest(struct share_dest *d, const struct target_addr *t)
{
	uint64_t w[DEST_WORDS];
	size_t n = t->family == AF_UNIX ? t->path_len : sizeof(t->ip), i;

	memset(w, 0, sizeof(w));
	if (n > TARGET_PATH_MAX)
		n = TARGET_PATH_MAX;
	memcpy(w, t->family == AF_UNIX ? (const void *)t->path : (const void *)t->ip, n);
	atomic_store_explicit(&d->netns, netns(), memory_order_relaxed);
	atomic_store_explicit(&d->family, (uint16_t)t->family, memory_order_relaxed);
	atomic_store_explicit(&d->port, t->port, memory_order_relaxed);
	atomic_store_explicit(&d->len, (uint16_t)(t->family == AF_UNIX ? n : 0),
			      memory_order_relaxed);
	atomic_store_explicit(&d->abstract, t->abstract ? 1 : 0, memory_order_relaxed);
	for (i = 0; i < DEST_WORDS; i++)
		atomic_store_explicit(&d->bytes[i], w[i], memory_order_relaxed);
}

bool share_read_dest(const struct share_dest *d, uint64_t key, struct target_addr *t,
		     uint64_t *netns)
{
	uint64_t w[DEST_WORDS];
	unsigned family = atomic_load_explicit(&d->family, memory_order_relaxed);
	size_t len = atomic_load_explicit(&d->len, memory_order_relaxed), i;

	memset(t, 0, sizeof(*t));
	if ((family != AF_INET && family != AF_INET6 && family != AF_UNIX) || len > TARGET_PATH_MAX)
		return false;
	for (i = 0; i < DEST_WORDS; i++)
		w[i] = atomic_load_explicit(&d->bytes[i], memory_order_relaxed);
	t->family = (int)family;
	t->port = atomic_load_explicit(&d->port, memory_order_relaxed);
	if (family == AF_UNIX) {
		memcpy(t->path, w, len);
		t->path_len = len;
		t->abstract = atomic_load_explicit(&d->abstract, memory_order_relaxed) == 1;
	} else {
		memcpy(t->ip, w, family == AF_INET ? 4 : 16);
	}
	*netns = atomic_load_explicit(&d->netns, memory_order_relaxed);
	return !nameless(t) && key_of(t, *netns) == key;
}

/* The bucket a key carries (any value of a hostile file: in range). */
static unsigned bucket_of(uint64_t key)
{
	unsigned b = (unsigned)(key & 127);

	return b < SHARE_BUCKETS ? b : SHARE_UNIX_BUCKET;
}

void share_gate_until(struct share_head *h, uint64_t key, uint64_t until)
{
	_Atomic uint64_t *u = &h->probing_until[bucket_of(key)];
	uint64_t cur = atomic_load_explicit(u, memory_order_relaxed);
	/* A gate opened where none ran: news for the quiet mark, once written. */
	bool opened = cur < until && cur <= clock_now_ns();

	while (cur < until && !atomic_compare_exchange_weak_explicit(
				      u, &cur, until, memory_order_relaxed, memory_order_relaxed))
		;
	if (opened)
		share_stirred();
}

bool share_probing_until(struct share_head *h, unsigned bucket, uint64_t until)
{
	if (until > clock_coarse_ns())
		return true;
	/* Over (its prober left, or died): cleared, so that the next connect reads one 0. */
	atomic_compare_exchange_strong_explicit(&h->probing_until[bucket % SHARE_BUCKETS], &until,
						0, memory_order_relaxed, memory_order_relaxed);
	return false;
}

/* Whether a process's event loop has a connect waiting for @s at @now. */
static bool loops_waiting(struct share_slot *s, uint64_t now)
{
	unsigned i;

	for (i = 0; i < SHARE_LOOPS; i++)
		if (share_loop_lease_left(atomic_load_explicit(&s->loops[i], memory_order_relaxed),
					  now))
			return true;
	return false;
}

/* Nobody has used @s for a while: no attempt, look, lease, deputy, sleeper or event loop. */
static bool stale(struct share_slot *s, uint64_t now)
{
	uint64_t probed = atomic_load_explicit(&s->probed_ns, memory_order_relaxed),
		 looked = atomic_load_explicit(&s->looked_ns, memory_order_relaxed),
		 last = probed > looked ? probed : looked;

	if (atomic_load_explicit(&s->lease_ns, memory_order_relaxed) > now ||
	    atomic_load_explicit(&s->deputy_ns, memory_order_relaxed) > now ||
	    atomic_load_explicit(&s->damp_ns, memory_order_relaxed) > now)
		return false;
	if (atomic_load_explicit(&s->waiters, memory_order_relaxed) != 0)
		return share_older_than(last, now, SHARE_SLEEPERS_NS);
	if (loops_waiting(s, now))
		return false;
	return share_older_than(last, now, SHARE_IDLE_NS);
}

/* The file's count of slots down, as a slot's state went from @was to @is. */
static void count_downs(const struct share_slot *s, uint32_t was, uint32_t is)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);
	uint64_t n;

	if (!h || (was == SHARE_DOWN) == (is == SHARE_DOWN))
		return;
	if (is == SHARE_DOWN) {
		/* The bucket's bit before the count: a success that sees the count sees the bit. */
		unsigned b = (unsigned)(atomic_load_explicit(&s->key, memory_order_relaxed) & 127) %
			     SHARE_BUCKETS;
		if (!((atomic_load_explicit(&h->down_buckets[b / 64], memory_order_relaxed) >>
		       (b % 64)) &
		      1))
			atomic_fetch_or_explicit(&h->down_buckets[b / 64], UINT64_C(1) << (b % 64),
						 memory_order_relaxed);
		if (atomic_fetch_add_explicit(&h->downs, 1, memory_order_release) == 0)
			share_stirred(); /* the first slot down: news for the quiet mark */
		return;
	}
	/* Never below 0: a count another library's version left may be short. */
	n = atomic_load_explicit(&h->downs, memory_order_relaxed);
	while (n != 0 && !atomic_compare_exchange_weak_explicit(
				 &h->downs, &n, n - 1, memory_order_relaxed, memory_order_relaxed))
		;
}

/* The slot of @key: found, or claimed for @make (NULL: only found). */
static struct share_slot *lookup(struct share_head *h, uint64_t key, const struct target_addr *make)
{
	struct share_slot *slots = slots_of(h);
	uint64_t now = make ? clock_now_ns() : 0;
	unsigned k;

	for (k = 0; k < SHARE_PROBES; k++) {
		/* Placed by the hash's high bits: the low ones are the bucket. */
		struct share_slot *s = &slots[((key >> 7) % SHARE_SLOTS + k) % SHARE_SLOTS];
		uint64_t cur = atomic_load_explicit(&s->key, memory_order_acquire);

		if (cur == key)
			return s;
		if (!make)
			continue;
		if (cur != 0 && !stale(s, now))
			continue;
		/* Empty, or unused for a while: ours now. */
		if (atomic_compare_exchange_strong_explicit(
			    &s->key, &cur, key, memory_order_acq_rel, memory_order_acquire)) {
			if (cur != 0) {
				count_downs(s,
					    atomic_exchange_explicit(&s->state, SHARE_UNKNOWN,
								     memory_order_relaxed),
					    SHARE_UNKNOWN);
				atomic_store_explicit(&s->probed_ns, 0, memory_order_relaxed);
				atomic_store_explicit(&s->looked_ns, 0, memory_order_relaxed);
				atomic_store_explicit(&s->prober, 0, memory_order_relaxed);
				atomic_store_explicit(&s->deputy, 0, memory_order_relaxed);
				atomic_store_explicit(&s->waiters, 0, memory_order_relaxed);
				atomic_store_explicit(&s->since_ns, 0, memory_order_relaxed);
				atomic_store_explicit(&s->attempts, 0, memory_order_relaxed);
				atomic_store_explicit(&s->saved, 0, memory_order_relaxed);
				atomic_store_explicit(&s->prober_pid, 0, memory_order_relaxed);
				atomic_store_explicit(&s->early, 0, memory_order_relaxed);
				atomic_store_explicit(&s->damp_ns, 0, memory_order_relaxed);
				atomic_store_explicit(&s->early_ns, 0, memory_order_relaxed);
				atomic_store_explicit(&s->dest.greeted, 0, memory_order_relaxed);
				atomic_store_explicit(&s->greeted_by, 0, memory_order_relaxed);
				atomic_store_explicit(&s->run, 0, memory_order_relaxed);
				atomic_store_explicit(&s->run_until_ns, 0, memory_order_relaxed);
				atomic_store_explicit(&s->run_giveups, 0, memory_order_relaxed);
				for (unsigned i = 0; i < SHARE_LOOPS; i++)
					atomic_store_explicit(&s->loops[i], 0,
							      memory_order_relaxed);
			}
			write_dest(&s->dest, make);
			return s;
		}
		if (cur == key)
			return s;
	}
	return NULL;
}

struct share_slot *share_find(const struct target_addr *t)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);

	return h ? lookup(h, hash_of(t), NULL) : NULL;
}

struct share_slot *share_get(const struct config *cfg, const struct target_addr *t)
{
	struct share_head *h;

	if (!cfg->enabled || !cfg->shared || nameless(t))
		return NULL;
	h = share_map_made(cfg);
	return h ? lookup(h, hash_of(t), t) : NULL;
}

int share_prober_finding(struct share_slot *s, uint64_t now_ns, uint64_t *age_ns)
{
	uint64_t probed = atomic_load_explicit(&s->probed_ns, memory_order_relaxed),
		 looked = atomic_load_explicit(&s->looked_ns, memory_order_relaxed);
	int prober = atomic_load_explicit(&s->prober, memory_order_relaxed);
	uint32_t err = atomic_load_explicit(&s->err, memory_order_relaxed);

	if (atomic_load_explicit(&s->state, memory_order_relaxed) != SHARE_DOWN || prober == 0 ||
	    prober == my_tid() ||
	    atomic_load_explicit(&s->lease_ns, memory_order_relaxed) <= now_ns)
		return 0;
	if (looked > probed)
		probed = looked;
	if (probed > now_ns || err >= CONFIG_ERRNO_MAX)
		return 0;
	*age_ns = now_ns - probed;
	return (int)err;
}

uint64_t share_probed_since(struct share_slot *s, uint64_t since_ns, uint64_t now_ns)
{
	int prober = atomic_load_explicit(&s->prober, memory_order_relaxed);
	uint64_t probed = atomic_load_explicit(&s->probed_ns, memory_order_relaxed), looked;

	if (atomic_load_explicit(&s->state, memory_order_relaxed) != SHARE_DOWN)
		return 0;
	if (probed > since_ns)
		return probed;
	/* Another thread's looks, while it holds the lease; never our own. */
	if (prober == 0 || prober == my_tid() ||
	    atomic_load_explicit(&s->lease_ns, memory_order_relaxed) <= now_ns)
		return 0;
	looked = atomic_load_explicit(&s->looked_ns, memory_order_relaxed);
	return looked > since_ns ? looked : 0;
}

uint32_t share_seq(struct share_slot *s)
{
	return atomic_load_explicit(&s->seq, memory_order_acquire);
}

long share_futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	/* Not FUTEX_PRIVATE_FLAG: the word is in a file other processes map. */
	return syscall(SYS_futex, word, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* Found down at @now: the outage starts now unless it was already down. */
static void mark_down(struct share_slot *s, uint64_t now)
{
	uint32_t was = atomic_exchange_explicit(&s->state, SHARE_DOWN, memory_order_relaxed);

	if (was != SHARE_DOWN) {
		/* An outage begins at its first failure after a success (or ever). */
		atomic_store_explicit(&s->since_ns, now, memory_order_relaxed);
		count_downs(s, was, SHARE_DOWN);
	}
}

void share_note(struct share_slot *s, int err, uint64_t now_ns)
{
	atomic_fetch_add_explicit(&s->attempts, 1, memory_order_relaxed);
	if (err) {
		atomic_store_explicit(&s->err, (uint32_t)err, memory_order_relaxed);
		atomic_store_explicit(&s->probed_ns, now_ns, memory_order_relaxed);
		mark_down(s, now_ns);
		return;
	}
	atomic_store_explicit(&s->probed_ns, now_ns, memory_order_relaxed);
	count_downs(s, atomic_exchange_explicit(&s->state, SHARE_UP, memory_order_relaxed),
		    SHARE_UP);
	/* Up: no run's give-up stands any more. */
	if (atomic_load_explicit(&s->run_until_ns, memory_order_relaxed) != 0) {
		atomic_store_explicit(&s->run_until_ns, 0, memory_order_relaxed);
		atomic_store_explicit(&s->run_giveups, 0, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_release);
	if (atomic_load_explicit(&s->waiters, memory_order_relaxed) != 0) {
		int saved = errno;

		share_futex(&s->seq, FUTEX_WAKE_BITSET, SHARE_RAMP, NULL);
		errno = saved;
	}
}

uint32_t share_note_early(struct share_slot *s, uint64_t now_ns, uint64_t stale_ns,
			  uint64_t *since_ns, uint64_t *prev_ms)
{
	uint64_t last = atomic_exchange_explicit(&s->early_ns, now_ns, memory_order_relaxed);
	uint32_t n;

	atomic_fetch_add_explicit(&s->attempts, 1, memory_order_relaxed);
	if (last == 0 || !share_older_than(last, now_ns, 0) ||
	    share_older_than(last, now_ns, stale_ns)) {
		/* A new streak (a time in the future is a hostile one: restarted too). */
		atomic_store_explicit(&s->early, 1, memory_order_relaxed);
		atomic_store_explicit(&s->streak_ns, now_ns, memory_order_relaxed);
		atomic_store_explicit(&s->damp_ms, 0, memory_order_relaxed);
		n = 1;
	} else {
		n = atomic_fetch_add_explicit(&s->early, 1, memory_order_relaxed);
		/* A count that wraps (a hostile one) starts again at one. */
		n = n == UINT32_MAX ? 1 : n + 1;
	}
	*since_ns = atomic_load_explicit(&s->streak_ns, memory_order_relaxed);
	if (*since_ns > now_ns)
		*since_ns = now_ns;
	*prev_ms = atomic_load_explicit(&s->damp_ms, memory_order_relaxed);
	return n;
}

void share_damp(struct share_slot *s, uint64_t until_ns, uint64_t delay_ms)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_relaxed);

	atomic_store_explicit(&s->damp_ms, delay_ms, memory_order_relaxed);
	atomic_store_explicit(&s->damp_ns, until_ns, memory_order_relaxed);
	if (h)
		share_gate_until(h, atomic_load_explicit(&s->key, memory_order_relaxed), until_ns);
}

uint64_t share_damped_until(struct share_slot *s, uint64_t now_ns, uint64_t max_ns,
			    uint32_t *streak)
{
	uint64_t until = atomic_load_explicit(&s->damp_ns, memory_order_relaxed);

	*streak = atomic_load_explicit(&s->early, memory_order_relaxed);
	if (until <= now_ns)
		return 0;
	return until - now_ns > max_ns ? now_ns + max_ns : until;
}

/*
 * The word of process @me counting @count connects in @w (its own, or a
 * lapsed one) after @delta, its lease the later of @w's running one and
 * @lease_s (a -1 keeps @w's).  0: the word is freed.
 */
static uint64_t loop_word(uint64_t w, int me, int delta, uint64_t lease_s, uint64_t now)
{
	unsigned left = share_loop_lease_left(w, now),
		 count = (int)(w >> 32) == me && left ? (unsigned)(w >> 16 & 0xffff) : 0;
	uint64_t now_s = now / 1000000000ULL;

	if (delta < 0)
		count = count ? count - 1 : 0;
	else if (delta > 0 && count < 0xffff)
		count++;
	if (count == 0)
		return 0;
	/* Another connect of the process may wait longer: its lease stands. */
	if (delta < 0 || (left && now_s + left > lease_s))
		lease_s = now_s + left;
	return SHARE_LOOP_WORD(me, count, lease_s);
}

bool share_loop_wait(struct share_slot *s, int delta, uint64_t until_ns)
{
	uint64_t now = clock_now_ns(), lease_s = until_ns / 1000000000ULL + 1, w, nw;
	unsigned i;
	int me = my_pid();

	/* A lease never longer than the reader believes: renewed at each wake. */
	if (lease_s > now / 1000000000ULL + SHARE_LOOP_LEASE_MAX_S)
		lease_s = now / 1000000000ULL + SHARE_LOOP_LEASE_MAX_S;
	for (i = 0; i < SHARE_LOOPS; i++) {
		w = atomic_load_explicit(&s->loops[i], memory_order_relaxed);
		/* Ours: its threads race on it (a failed exchange reloads it), and a claimer once
		 * it lapsed. */
		while ((int)(w >> 32) == me) {
			nw = loop_word(w, me, delta, lease_s, now);
			if (atomic_compare_exchange_weak_explicit(&s->loops[i], &w, nw,
								  memory_order_relaxed,
								  memory_order_relaxed))
				return nw != 0;
		}
	}
	if (delta <= 0)
		return false;
	for (i = 0; i < SHARE_LOOPS; i++) {
		w = atomic_load_explicit(&s->loops[i], memory_order_relaxed);
		if (w != 0 && share_loop_lease_left(w, now))
			continue;
		/* Free, or its lease is over: ours. */
		if (atomic_compare_exchange_strong_explicit(
			    &s->loops[i], &w, SHARE_LOOP_WORD(me, 1, lease_s), memory_order_relaxed,
			    memory_order_relaxed))
			return true;
	}
	return false;
}

void share_note_first_byte(struct share_slot *s)
{
	if (atomic_load_explicit(&s->early, memory_order_relaxed) == 0 &&
	    atomic_load_explicit(&s->damp_ns, memory_order_relaxed) == 0)
		return; /* nothing to end: a load, no write to a line others read */
	atomic_store_explicit(&s->early, 0, memory_order_relaxed);
	atomic_store_explicit(&s->damp_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&s->early_ns, 0, memory_order_relaxed);
}

void share_note_greeted(struct share_slot *s, uint64_t by)
{
	if (atomic_load_explicit(&s->dest.greeted, memory_order_relaxed) != 0)
		return;
	atomic_store_explicit(&s->greeted_by, by, memory_order_relaxed);
	atomic_store_explicit(&s->dest.greeted, 1, memory_order_relaxed);
}

bool share_greeted(struct share_slot *s, uint64_t *by)
{
	*by = atomic_load_explicit(&s->greeted_by, memory_order_relaxed);
	return atomic_load_explicit(&s->dest.greeted, memory_order_relaxed) != 0;
}

void share_forget_greeted(struct share_slot *s)
{
	atomic_store_explicit(&s->dest.greeted, 0, memory_order_relaxed);
	atomic_store_explicit(&s->greeted_by, 0, memory_order_relaxed);
}

uint32_t share_note_run_giveup(struct share_slot *s, uint64_t run)
{
	uint32_t n = 1;

	if (atomic_exchange_explicit(&s->run, run, memory_order_relaxed) == run) {
		n = atomic_load_explicit(&s->run_giveups, memory_order_relaxed);
		n = n >= 64 ? 64 : n + 1; /* a hostile count, or one long past mattering */
	}
	atomic_store_explicit(&s->run_giveups, n, memory_order_relaxed);
	return n;
}

void share_note_run_open(struct share_slot *s, uint64_t until_ns)
{
	atomic_store_explicit(&s->run_until_ns, until_ns, memory_order_relaxed);
}

bool share_run_spent(const struct target_addr *t, uint64_t run, uint64_t now_ns)
{
	struct share_slot *s = share_find(t);

	return s && run != 0 && atomic_load_explicit(&s->run, memory_order_relaxed) == run &&
	       now_ns < atomic_load_explicit(&s->run_until_ns, memory_order_relaxed);
}

void share_note_up(const struct target_addr *t, uint64_t now_ns)
{
	struct share_slot *s;

	if (!share_down_for(t) || !(s = share_find(t)) ||
	    atomic_load_explicit(&s->state, memory_order_relaxed) != SHARE_DOWN)
		return;
	share_note(s, 0, now_ns);
}

void share_note_looked(struct share_slot *s, uint64_t now_ns)
{
	atomic_store_explicit(&s->looked_ns, now_ns, memory_order_relaxed);
	mark_down(s, now_ns);
}

void share_note_saved(struct share_slot *s)
{
	atomic_fetch_add_explicit(&s->saved, 1, memory_order_relaxed);
}

/* Take or renew a turn held in @who until @until (another's live turn: false). */
static bool take_turn(_Atomic int32_t *who, _Atomic uint64_t *until, uint64_t now_ns,
		      uint64_t until_ns)
{
	int me = my_tid(), cur = atomic_load_explicit(who, memory_order_relaxed);

	if (cur != me) {
		if (cur != 0 && atomic_load_explicit(until, memory_order_relaxed) > now_ns)
			return false;
		/* Free, or its holder missed its turn (killed, stopped): taken over. */
		if (!atomic_compare_exchange_strong_explicit(who, &cur, me, memory_order_relaxed,
							     memory_order_relaxed))
			return false;
	}
	atomic_store_explicit(until, until_ns, memory_order_relaxed);
	return true;
}

bool share_lead(struct share_slot *s, uint64_t now_ns, uint64_t until_ns)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_relaxed);
	int me = my_tid();

	if (!take_turn(&s->prober, &s->lease_ns, now_ns, until_ns))
		return false;
	/* For the status reader; written again only when another process leads. */
	if (atomic_load_explicit(&s->prober_pid, memory_order_relaxed) != my_pid())
		atomic_store_explicit(&s->prober_pid, my_pid(), memory_order_relaxed);
	/* The connect hook's gate stays open while the lease runs, by itself no longer. */
	if (h)
		share_gate_until(h, atomic_load_explicit(&s->key, memory_order_relaxed), until_ns);
	/* The deputy became the prober: the turn to watch is another's. */
	atomic_compare_exchange_strong_explicit(&s->deputy, &me, 0, memory_order_relaxed,
						memory_order_relaxed);
	return true;
}

bool share_deputy(struct share_slot *s, uint64_t now_ns, uint64_t until_ns)
{
	return take_turn(&s->deputy, &s->deputy_ns, now_ns, until_ns);
}

int share_prober(struct share_slot *s)
{
	return atomic_load_explicit(&s->prober, memory_order_relaxed);
}

uint64_t share_lease_end(struct share_slot *s)
{
	return atomic_load_explicit(&s->prober, memory_order_relaxed)
		       ? atomic_load_explicit(&s->lease_ns, memory_order_relaxed)
		       : 0;
}

void share_leave(struct share_slot *s, bool loop_waiter)
{
	int me = my_tid(), deputy = me;

	if (loop_waiter)
		share_loop_wait(s, -1, 0);

	atomic_compare_exchange_strong_explicit(&s->deputy, &deputy, 0, memory_order_relaxed,
						memory_order_relaxed);
	if (atomic_load_explicit(&s->prober, memory_order_relaxed) != me)
		return;
	atomic_store_explicit(&s->lease_ns, 0, memory_order_relaxed);
	/* The bucket's gate closes by itself when the last lease in it ends. */
	atomic_compare_exchange_strong_explicit(&s->prober, &me, 0, memory_order_relaxed,
						memory_order_relaxed);
}

bool share_loop_renew(struct share_slot *s, bool counted, uint64_t until_ns)
{
	if (counted && share_loop_wait(s, 0, until_ns))
		return true;
	return share_loop_wait(s, 1, until_ns);
}

bool share_loop_failed(struct share_slot *s, int err, uint64_t now_ns, bool counted,
		       uint64_t until_ns)
{
	share_note(s, err, now_ns);
	return until_ns ? share_loop_renew(s, counted, until_ns) : counted;
}

void share_connected(struct share_slot *s, uint64_t now_ns, bool loop_waiter)
{
	share_note(s, 0, now_ns);
	share_leave(s, loop_waiter);
}

int share_sleep(_Atomic uint32_t *word, uint32_t val, uint64_t until_ns, _Atomic uint32_t *sleepers)
{
	struct timespec ts = {
		.tv_sec = (time_t)(until_ns / 1000000000ULL),
		.tv_nsec = (long)(until_ns % 1000000000ULL),
	};
	int saved = errno, rc = 1;

	atomic_fetch_add_explicit(sleepers, 1, memory_order_relaxed);
	while (atomic_load_explicit(word, memory_order_acquire) == val) {
		/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
		if (share_futex(word, FUTEX_WAIT_BITSET, val, &ts) == 0 || errno == EAGAIN)
			break; /* woken, or the word changed before the sleep */
		if (errno != EINTR) {
			rc = 0; /* ETIMEDOUT */
			break;
		}
		if (!clock_every_handler_restarts()) {
			rc = EINTR;
			break;
		}
	}
	atomic_fetch_sub_explicit(sleepers, 1, memory_order_relaxed);
	errno = saved;
	return rc;
}

int share_wait(struct share_slot *s, uint32_t seq, uint64_t until_ns)
{
	return share_sleep(&s->seq, seq, until_ns, &s->waiters) == EINTR ? EINTR : 0;
}

/* The layout is the file format: fixed sizes, checked at build time. */
_Static_assert(sizeof(struct share_head) == 576, "share_head is 576 bytes (9 x 64)");
_Static_assert(sizeof(struct share_dest) == 128, "share_dest is 128 bytes");
_Static_assert(offsetof(struct share_slot, since_ns) == 64,
	       "what a connect uses stays in the slot's first 64 bytes");
_Static_assert(offsetof(struct share_slot, run) == 320, "a run's record is the slot's sixth line");
_Static_assert(offsetof(struct share_slot, loops) == 256,
	       "the event loops' line is the slot's fifth");
_Static_assert(sizeof(struct share_slot) == 384, "share_slot is 384 bytes");
