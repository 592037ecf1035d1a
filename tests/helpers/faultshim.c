/* faultshim: a preloaded test shim that makes chosen real calls fail, for the tests only. */

/*
 * Preloaded after libbackoff (LD_PRELOAD="libbackoff.so:faultshim.so"), it is
 * the "real" call libbackoff's hooks reach, so every attempt, first or retry,
 * goes through it.  It fails the calls of FAULT_CALL, one of send, sendto,
 * sendmsg, sendmmsg, connect, getaddrinfo, gethostbyname, gethostbyname2,
 * gethostbyname_r, gethostbyname2_r; other calls pass through.
 *
 *   FAULT_COUNT=N      the first N calls of the process fail
 *   FAULT_RATE=P       each call fails with probability P (0 to 1), drawn
 *   FAULT_SEED=S       from the call's number and S: the same calls fail on
 *                      every run (default seed 1)
 *   FAULT_ERRNO=NAME   the socket calls return -1 with errno NAME (ENOBUFS)
 *   FAULT_EAI=NAME     getaddrinfo returns NAME (EAI_AGAIN, EAI_NONAME, ...)
 *   FAULT_HERRNO=NAME  the gethostbyname forms fail with h_errno NAME
 *                      (TRY_AGAIN, HOST_NOT_FOUND, NO_RECOVERY, NO_DATA)
 *   FAULT_REPORT=FILE  at exit, append one line "CALL calls=C faults=F"
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fault_config {
	const char *call;
	uint64_t count;
	double rate;
	uint64_t seed;
	int err, eai, herr;
	const char *report;
};

static struct fault_config cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t calls, faults;

static const struct {
	const char *name;
	int value;
} codes[] = {
	{ "EAI_AGAIN", EAI_AGAIN },	{ "EAI_NONAME", EAI_NONAME },
	{ "EAI_FAIL", EAI_FAIL },	{ "EAI_NODATA", EAI_NODATA },
	{ "EAI_MEMORY", EAI_MEMORY },	{ "EAI_SYSTEM", EAI_SYSTEM },
	{ "TRY_AGAIN", TRY_AGAIN },	{ "HOST_NOT_FOUND", HOST_NOT_FOUND },
	{ "NO_RECOVERY", NO_RECOVERY }, { "NO_DATA", NO_DATA },
};

static void bad(const char *var, const char *value)
{
	fprintf(stderr, "faultshim: %s=\"%s\" is not understood\n", var, value);
	abort();
}

static int errno_value(const char *name)
{
	int e;

	for (e = 1; e < 200; e++) {
		const char *n = strerrorname_np(e);

		if (n && strcmp(n, name) == 0)
			return e;
	}
	bad("FAULT_ERRNO", name);
	return 0;
}

static int code_value(const char *var, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(codes[i].name, name) == 0)
			return codes[i].value;
	bad(var, name);
	return 0;
}

static uint64_t number(const char *var, const char *value)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || *end)
		bad(var, value);
	return v;
}

static void configure(void)
{
	const char *v;
	int saved = errno;

	cfg.call = getenv("FAULT_CALL");
	if ((v = getenv("FAULT_COUNT")))
		cfg.count = number("FAULT_COUNT", v);
	if ((v = getenv("FAULT_RATE"))) {
		char *end;

		cfg.rate = strtod(v, &end);
		if (end == v || *end || !(cfg.rate >= 0 && cfg.rate <= 1))
			bad("FAULT_RATE", v);
	}
	cfg.seed = 1;
	if ((v = getenv("FAULT_SEED")))
		cfg.seed = number("FAULT_SEED", v);
	cfg.err = EIO;
	if ((v = getenv("FAULT_ERRNO")))
		cfg.err = errno_value(v);
	cfg.eai = EAI_AGAIN;
	if ((v = getenv("FAULT_EAI")))
		cfg.eai = code_value("FAULT_EAI", v);
	cfg.herr = TRY_AGAIN;
	if ((v = getenv("FAULT_HERRNO")))
		cfg.herr = code_value("FAULT_HERRNO", v);
	cfg.report = getenv("FAULT_REPORT");
	errno = saved;
}

/* splitmix64: the draw of call @n depends on nothing else. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Whether this call of @call fails; counts it if @call is the one configured. */
static bool fault_now(const char *call)
{
	uint64_t n;
	bool fail;

	pthread_once(&cfg_once, configure);
	if (!cfg.call || strcmp(cfg.call, call) != 0)
		return false;
	n = atomic_fetch_add(&calls, 1);
	fail = n < cfg.count ||
	       (cfg.rate > 0 && (double)(mix(cfg.seed ^ mix(n)) >> 11) * 0x1p-53 < cfg.rate);
	if (fail)
		atomic_fetch_add(&faults, 1);
	return fail;
}

__attribute__((destructor)) static void report(void)
{
	char line[128];
	int fd, n;
	ssize_t ignored;

	if (!cfg.report || !cfg.call)
		return;
	n = snprintf(line, sizeof(line), "%s calls=%llu faults=%llu\n", cfg.call,
		     (unsigned long long)atomic_load(&calls),
		     (unsigned long long)atomic_load(&faults));
	fd = open(cfg.report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || n < 0)
		return;
	ignored = write(fd, line, (size_t)n);
	(void)ignored;
	close(fd);
}

/* The next definition of @name; memcpy converts the object pointer dlsym returns. */
#define NEXT(name)                                          \
	__extension__({                                     \
		static __typeof__(&name) next_;             \
		if (!next_) {                               \
			void *p_ = dlsym(RTLD_NEXT, #name); \
			memcpy(&next_, &p_, sizeof(p_));    \
			if (!next_)                         \
				bad("symbol", #name);       \
		}                                           \
		next_;                                      \
	})

#define FAIL_WITH_ERRNO(call)            \
	do {                             \
		if (fault_now(call)) {   \
			errno = cfg.err; \
			return -1;       \
		}                        \
	} while (0)

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	FAIL_WITH_ERRNO("send");
	return NEXT(send)(fd, buf, n, flags);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG to,
	       socklen_t tolen)
{
	FAIL_WITH_ERRNO("sendto");
	return NEXT(sendto)(fd, buf, n, flags, to, tolen);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	FAIL_WITH_ERRNO("sendmsg");
	return NEXT(sendmsg)(fd, msg, flags);
}

int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags)
{
	FAIL_WITH_ERRNO("sendmmsg");
	return NEXT(sendmmsg)(fd, vec, vlen, flags);
}

int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
	FAIL_WITH_ERRNO("connect");
	return NEXT(connect)(fd, addr, len);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res)
{
	if (fault_now("getaddrinfo"))
		return cfg.eai;
	return NEXT(getaddrinfo)(node, service, hints, res);
}

struct hostent *gethostbyname(const char *name)
{
	if (fault_now("gethostbyname")) {
		h_errno = cfg.herr;
		return NULL;
	}
	return NEXT(gethostbyname)(name);
}

struct hostent *gethostbyname2(const char *name, int af)
{
	if (fault_now("gethostbyname2")) {
		h_errno = cfg.herr;
		return NULL;
	}
	return NEXT(gethostbyname2)(name, af);
}

/* As the C library answers: EAGAIN with TRY_AGAIN, 0 with a name that is not found. */
static int fail_r(struct hostent **res, int *herr)
{
	*res = NULL;
	*herr = cfg.herr;
	return cfg.herr == TRY_AGAIN ? EAGAIN : 0;
}

int gethostbyname_r(const char *name, struct hostent *h, char *buf, size_t len,
		    struct hostent **res, int *herr)
{
	if (fault_now("gethostbyname_r"))
		return fail_r(res, herr);
	return NEXT(gethostbyname_r)(name, h, buf, len, res, herr);
}

int gethostbyname2_r(const char *name, int af, struct hostent *h, char *buf, size_t len,
		     struct hostent **res, int *herr)
{
	if (fault_now("gethostbyname2_r"))
		return fail_r(res, herr);
	return NEXT(gethostbyname2_r)(name, af, h, buf, len, res, herr);
}
