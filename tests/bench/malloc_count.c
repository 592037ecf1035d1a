/* malloc_count.so: counts heap allocations, in all and those called from libbackoff.so. */

/*
 * Preload it first: LD_PRELOAD="malloc_count.so libbackoff.so" PROGRAM...
 * It forwards every allocator entry to glibc's __libc_* functions and counts
 * the calls that allocate (malloc, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc).  A call whose
 * return address lies in a mapping of an object named libbackoff* also
 * counts as the library's own.  Calls glibc makes on the library's behalf
 * (fopen, strdup, ...) count only in the total: compare totals with and
 * without the library to see them.
 *
 * At exit one line is appended to $MALLOC_COUNT_FILE (stderr if unset):
 *   malloc_count pid=P total=N libbackoff=M hwm_kb=K
 * K is the peak resident set size (VmHWM of /proc/self/status): unlike
 * getrusage's ru_maxrss it does not inherit the parent's size across exec.
 */

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void *__libc_valloc(size_t n);
void *__libc_pvalloc(size_t n);
void __libc_free(void *p);
/* Obsolete entries <malloc.h> declares; declared here to keep the header out. */
void *memalign(size_t align, size_t n);
void *pvalloc(size_t n);

static atomic_ulong total, from_lib;

/* The address ranges of libbackoff's loaded segments, found once. */
#define MAX_RANGES 8
static uintptr_t range_lo[MAX_RANGES], range_hi[MAX_RANGES];
static atomic_int nranges = -1;

static int find_ranges(struct dl_phdr_info *info, size_t size, void *ctx)
{
	const char *slash = strrchr(info->dlpi_name, '/');
	const char *base = slash ? slash + 1 : info->dlpi_name;
	int *n = ctx;

	(void)size;
	if (strncmp(base, "libbackoff", 10) != 0)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && *n < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		range_lo[*n] = info->dlpi_addr + ph->p_vaddr;
		range_hi[*n] = range_lo[*n] + ph->p_memsz;
		(*n)++;
	}
	return 0;
}

static void locate(void)
{
	int n = 0;

	dl_iterate_phdr(find_ranges, &n);
	atomic_store(&nranges, n);
}

static void count(const void *caller)
{
	static __thread int locating;
	int n = atomic_load_explicit(&nranges, memory_order_relaxed);

	/* An allocation made before the constructor ran (libbackoff's own constructor). */
	if (n < 0 && !locating) {
		locating = 1;
		locate();
		locating = 0;
		n = atomic_load_explicit(&nranges, memory_order_relaxed);
	}

	atomic_fetch_add_explicit(&total, 1, memory_order_relaxed);
	for (int i = 0; i < n; i++) {
		if ((uintptr_t)caller >= range_lo[i] && (uintptr_t)caller < range_hi[i]) {
			atomic_fetch_add_explicit(&from_lib, 1, memory_order_relaxed);
			return;
		}
	}
}

__attribute__((constructor)) static void locate_at_load(void)
{
	if (atomic_load(&nranges) < 0)
		locate();
}

#define CALLER __builtin_extract_return_addr(__builtin_return_address(0))

EXPORT void *malloc(size_t n)
{
	count(CALLER);
	return __libc_malloc(n);
}

EXPORT void *calloc(size_t k, size_t n)
{
	count(CALLER);
	return __libc_calloc(k, n);
}

EXPORT void *realloc(void *p, size_t n)
{
	count(CALLER);
	return __libc_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t k, size_t n)
{
	count(CALLER);
	if (n && k > SIZE_MAX / n) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, k * n);
}

EXPORT void free(void *p)
{
	__libc_free(p);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	count(CALLER);
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	count(CALLER);
	return __libc_memalign(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	count(CALLER);
	return __libc_memalign(align, n);
}

EXPORT void *valloc(size_t n)
{
	count(CALLER);
	return __libc_valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
	count(CALLER);
	return __libc_pvalloc(n);
}

/* VmHWM in kB, read without allocating; -1 if unknown. */
static long peak_rss_kb(void)
{
	char buf[4096];
	const char *p;
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "VmHWM:");
	return p ? strtol(p + 6, NULL, 10) : -1;
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("MALLOC_COUNT_FILE");
	char line[160];
	int len, fd = STDERR_FILENO;

	len = snprintf(line, sizeof(line),
		       "malloc_count pid=%ld total=%lu libbackoff=%lu hwm_kb=%ld\n", (long)getpid(),
		       atomic_load(&total), atomic_load(&from_lib), peak_rss_kb());
	if (path && *path)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 && len > 0 && write(fd, line, (size_t)len) < 0)
		fd = -1; /* nothing more to do at exit */
	if (fd > STDERR_FILENO)
		close(fd);
}
