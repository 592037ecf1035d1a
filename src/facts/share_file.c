/* The state file: found or made, checked, mapped, and said once when it cannot be used. */
#include "facts/share.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/compat.h"
#include "sys/log.h"
#include "sys/startup.h"
#include "sys/kcall.h"

STARTUP_DATA struct share_head *_Atomic share_map;

/*
 * Made once: the first thread to need the file maps it, the others find it.
 * SHARE_UNTRIED until a connect needs it; SHARE_QUIET after a first try that
 * could not say why (a connect's look); SHARE_SETTLED when there is nothing
 * more to try (mapped, said unusable, or sharing off).
 */
STARTUP_DATA atomic_int share_tried;
static atomic_bool share_warned;
STARTUP_DATA static const struct config *share_cfg;

/*
 * The quiet mark: a file beside the state file (its name and ".quiet"),
 * made by a process whose first look found nothing in the head that a
 * healthy connect must see (no slot down, no prober's lease or new
 * connects' gate running, no full server), and removed by every process
 * that writes such news there, after writing it.  While it exists, a
 * process's first connect does not map the state file (one stat instead of
 * five calls and the first touch of two of its pages); it looks again
 * SHARE_REST_NS later, and maps it at its first failure.  A hint as every
 * field of the file: a mark that should not be there costs a first attempt
 * not left to a prober, never an answer the kernel did not give.
 */
#define SHARE_REST_NS (250 * UINT64_C(1000000))
STARTUP_DATA static atomic_bool quiet_here; /* the mapped file is the one the mark is beside */
STARTUP_DATA static atomic_uint quiet_uid;  /* the user whose mark it is */
STARTUP_DATA static _Atomic uint64_t rest_until_ns; /* a resting process looks again then */

const char *share_check(const void *image, size_t len)
{
	const struct share_head *h = image;

	if (len != SHARE_FILE_SIZE)
		return "wrong size";
	if (atomic_load_explicit(&h->magic, memory_order_acquire) != SHARE_MAGIC)
		return "not a libbackoff state file";
	if (atomic_load_explicit(&h->version, memory_order_relaxed) != SHARE_VERSION ||
	    atomic_load_explicit(&h->slots, memory_order_relaxed) != SHARE_SLOTS ||
	    atomic_load_explicit(&h->slot_size, memory_order_relaxed) != sizeof(struct share_slot))
		return "another version's layout";
	return NULL;
}

void share_use(void *image)
{
	atomic_store_explicit(&share_map, image, memory_order_release);
	atomic_store_explicit(&share_tried, SHARE_SETTLED, memory_order_release);
}

static void warn_unusable(const struct config *cfg, const char *path, const char *why, int err)
{
	char msg[PATH_MAX + 200], buf[128];
	const char *reason = err ? compat_strerror(err, buf, sizeof(buf)) : "";

	if (atomic_exchange_explicit(&share_warned, true, memory_order_relaxed))
		return;
	if (cfg->has_shared_path) {
		snprintf(msg, sizeof(msg),
			 "state file not used (%s%s%s): each connect backs off on "
			 "its own",
			 why, err ? ": " : "", reason);
		log_config_problem("BACKOFF_SHARED", path, msg);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "BACKOFF_SHARED: state file %s not used (%s%s%s): each connect backs off on its "
		 "own",
		 path, why, err ? ": " : "", reason);
	log_notice(LOG_LEVEL_WARN, "shared", msg);
}

void share_default_path(unsigned uid, const char *dir, char *buf, size_t size)
{
	snprintf(buf, size, "%s/libbackoff-%u.v%u", dir, uid, (unsigned)SHARE_VERSION);
}

static void path_of(const struct config *cfg, unsigned uid, const char *dir, char *buf, size_t size)
{
	if (cfg->has_shared_path)
		snprintf(buf, size, "%s", config_shared_path(cfg));
	else
		share_default_path(uid, dir, buf, size);
}

const char *share_check_file(const struct stat *st, unsigned owner, bool empty_ok)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != owner)
		return "owned by another user";
	if (st->st_mode & 077)
		return "readable or writable by others";
	if (st->st_size == 0 && empty_ok)
		return NULL;
	if (st->st_size < 0 || (size_t)st->st_size != SHARE_FILE_SIZE)
		return "wrong size";
	return NULL;
}

/* Open @path without following a link, made if @create: -1 with errno otherwise. */
static int open_state(const char *path, bool create)
{
	return kcall_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
}

/*
 * Map @path: it must be a regular file of ours, private to us, of the right
 * size (an empty one is given it) and layout.  NULL with *why otherwise.
 */
static struct share_head *map_state(const char *path, unsigned uid, bool create, const char **why,
				    int *err)
{
	struct share_head *h;
	struct stat st;
	uint64_t zero = 0;
	int fd = open_state(path, create);

	*err = 0;
	if (fd < 0) {
		*err = errno;
		*why = "cannot open";
		return NULL;
	}
	h = NULL;
	if (kcall_fstat(fd, &st) != 0) {
		*err = errno;
		*why = "cannot stat";
	} else if ((*why = share_check_file(&st, uid, true)) != NULL) {
		/* *why said */
	} else if (st.st_size == 0 && kcall_ftruncate(fd, (off_t)SHARE_FILE_SIZE) != 0) {
		*err = errno;
		*why = "cannot size";
	} else {
		void *m = kcall_mmap(SHARE_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd);

		if (m == MAP_FAILED) {
			*err = errno;
			*why = "cannot map";
		} else {
			h = m;
		}
	}
	syscall(SYS_close, fd);
	if (!h)
		return NULL;
	if (atomic_load_explicit(&h->magic, memory_order_acquire) == 0) {
		/* New: every maker writes the same layout, then the first one marks it. */
		atomic_store_explicit(&h->version, SHARE_VERSION, memory_order_relaxed);
		atomic_store_explicit(&h->slots, SHARE_SLOTS, memory_order_relaxed);
		atomic_store_explicit(&h->slot_size, (uint32_t)sizeof(struct share_slot),
				      memory_order_relaxed);
		atomic_compare_exchange_strong_explicit(&h->magic, &zero, SHARE_MAGIC,
							memory_order_release, memory_order_relaxed);
	}
	*why = share_check(h, SHARE_FILE_SIZE);
	if (*why) {
		kcall_munmap(h, SHARE_FILE_SIZE);
		return NULL;
	}
	return h;
}

/* Map the file (made if @create); said once if it is unusable and @warn. */
static void attach(const struct config *cfg, bool create, bool warn)
{
	char path[PATH_MAX];
	const char *why = NULL;
	struct share_head *h;
	unsigned uid = (unsigned)kcall_geteuid();
	int err = 0;

	path_of(cfg, uid, "/dev/shm", path, sizeof(path));
	h = map_state(path, uid, create, &why, &err);
	atomic_store_explicit(&quiet_uid, uid, memory_order_relaxed);
	atomic_store_explicit(&quiet_here, h != NULL, memory_order_relaxed);
	if (!h && !cfg->has_shared_path && err == ENOENT && create) {
		path_of(cfg, uid, "/tmp", path, sizeof(path)); /* no /dev/shm */
		h = map_state(path, uid, create, &why, &err);
	}
	if (h)
		atomic_store_explicit(&share_map, h, memory_order_release);
	else if (warn)
		warn_unusable(cfg, path, why, err);
}

/* Whether the head holds nothing a healthy connect must see at @now_ns. */
static bool head_quiet(struct share_head *h, uint64_t now_ns)
{
	unsigned b;

	if (atomic_load_explicit(&h->downs, memory_order_acquire) != 0 ||
	    atomic_load_explicit(&h->full_until, memory_order_relaxed) > now_ns)
		return false;
	for (b = 0; b < SHARE_BUCKETS; b++)
		if (atomic_load_explicit(&h->probing_until[b], memory_order_relaxed) > now_ns)
			return false;
	return true;
}

/*
 * The quiet mark's path in @buf: beside the state file's first choice, for
 * @uid.  False if it does not fit (then there is no mark).
 */
static bool quiet_path_of(const struct config *cfg, unsigned uid, char *buf, size_t size)
{
	static const char tail[] = ".quiet";
	size_t n;

	path_of(cfg, uid, "/dev/shm", buf, size);
	n = strlen(buf);
	/* A path cut short by its buffer (size - 1 bytes) has no room left either. */
	if (n + sizeof(tail) > size)
		return false;
	memcpy(buf + n, tail, sizeof(tail));
	return true;
}

/* Whether @uid's quiet mark is there, theirs (a file another user made says nothing). */
static bool quiet_marked(unsigned uid)
{
	char path[PATH_MAX];
	struct stat st;

	return quiet_path_of(share_cfg, uid, path, sizeof(path)) && kcall_lstat(path, &st) == 0 &&
	       S_ISREG(st.st_mode) && st.st_uid == uid;
}

/*
 * The first look mapped the file and found its head quiet: the mark is made,
 * and taken back if news came meanwhile (its writer may have looked for the
 * mark before it was made).
 */
static void mark_quiet(struct share_head *h)
{
	char path[PATH_MAX];
	int fd;

	if (!atomic_load_explicit(&quiet_here, memory_order_relaxed) ||
	    !head_quiet(h, clock_now_ns()) ||
	    !quiet_path_of(share_cfg, atomic_load_explicit(&quiet_uid, memory_order_relaxed), path,
			   sizeof(path)))
		return;
	fd = kcall_open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	syscall(SYS_close, fd);
	if (!head_quiet(h, clock_now_ns()))
		kcall_unlink(path);
}

void share_stirred(void)
{
	char path[PATH_MAX];
	int saved = errno;

	if (atomic_load_explicit(&quiet_here, memory_order_relaxed) && share_cfg &&
	    quiet_path_of(share_cfg, atomic_load_explicit(&quiet_uid, memory_order_relaxed), path,
			  sizeof(path)))
		kcall_unlink(path);
	errno = saved;
}

STARTUP_CODE void share_init(const struct config *cfg)
{
	share_cfg = cfg;
	/*
	 * A set-user-ID program shares nothing: its file would be its owner's,
	 * written to by whoever runs it.
	 */
	if (getauxval(AT_SECURE) || !cfg->enabled || !cfg->shared)
		atomic_store_explicit(&share_tried, SHARE_SETTLED, memory_order_relaxed);
}

/* Whether the calling thread makes the file, which was in state @from. */
static bool make_turn(int from)
{
	return atomic_compare_exchange_strong_explicit(&share_tried, &from, SHARE_MAKING,
						       memory_order_acquire, memory_order_relaxed);
}

/*
 * The look of a process that took the turn: the quiet mark, else the file
 * mapped (made if need be).  Silently: a file that cannot be used is said at
 * the first failure.
 */
static struct share_head *look(void)
{
	struct share_head *h;
	int saved = errno; /* a mark not there is ENOENT: the program's errno is kept */

	if (quiet_marked((unsigned)kcall_geteuid())) {
		errno = saved;
		atomic_store_explicit(&rest_until_ns, clock_coarse_ns() + SHARE_REST_NS,
				      memory_order_relaxed);
		atomic_store_explicit(&share_tried, SHARE_RESTING, memory_order_release);
		return NULL;
	}
	attach(share_cfg, true, false);
	h = atomic_load_explicit(&share_map, memory_order_acquire);
	if (h)
		mark_quiet(h);
	atomic_store_explicit(&share_tried, h ? SHARE_SETTLED : SHARE_QUIET, memory_order_release);
	errno = saved;
	return h;
}

struct share_head *share_rested(void)
{
	if (atomic_load_explicit(&share_tried, memory_order_relaxed) != SHARE_RESTING ||
	    clock_coarse_ns() < atomic_load_explicit(&rest_until_ns, memory_order_relaxed) ||
	    !make_turn(SHARE_RESTING))
		return atomic_load_explicit(&share_map, memory_order_acquire);
	return look();
}

struct share_head *share_first_look(const struct sockaddr *addr)
{
	/* Only a destination that can be retried needs the file; glibc's netlink does not. */
	if (!share_cfg || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6 &&
			   addr->sa_family != AF_UNIX))
		return NULL;
	/*
	 * Mapped (made if need be) before the process's first attempt, so that a
	 * process started before an outage leaves its first attempt to the
	 * prober, unless the quiet mark says there is nothing to see: then
	 * looked at again SHARE_REST_NS later (share_rested).  A thread that
	 * finds the file being made attempts at once.
	 */
	return make_turn(SHARE_UNTRIED) ? look() : share_rested();
}

struct share_head *share_map_made(const struct config *cfg)
{
	struct share_head *h = atomic_load_explicit(&share_map, memory_order_acquire);

	/*
	 * Not tried yet, tried by a connect's look that could not say why, or
	 * left by one that found the quiet mark.
	 */
	if (!h &&
	    (make_turn(SHARE_UNTRIED) || make_turn(SHARE_QUIET) || make_turn(SHARE_RESTING))) {
		attach(cfg, true, true);
		atomic_store_explicit(&share_tried, SHARE_SETTLED, memory_order_release);
		h = atomic_load_explicit(&share_map, memory_order_acquire);
	}
	return h;
}
