/* Monotonic clock and the interruptible wait between attempts. */
#include "sys/clock.h"
#include "sys/kcall.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

/* The clocks read here exist and @ts is ours: clock_gettime cannot fail, errno is untouched. */
static uint64_t read_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t clock_now_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;
	int saved = errno;

	clock_gettime(id, &ts);
	errno = saved;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t clock_coarse_ns(void)
{
	return read_ns(CLOCK_MONOTONIC_COARSE);
}

uint64_t clock_now_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

uint64_t clock_wall_ms(void)
{
	return read_ms(CLOCK_REALTIME);
}

/*
 * A signal that only a fault of the thread itself raises: it cannot have
 * interrupted a sleep.  Crash reporters, language runtimes and the
 * sanitizers install handlers for these without SA_RESTART.
 */
static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
	       sig == SIGTRAP || sig == SIGSYS;
}

/*
 * EINTR does not say which signal ran.  A blocking connect would have been
 * restarted only under SA_RESTART, so the wait goes on only when every
 * installed handler has SA_RESTART; otherwise the signal may have been one the
 * program expects to cut the call short.
 */
bool clock_every_handler_restarts(void)
{
	void (*handler)(int);
	unsigned long flags;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		if (is_fault_signal(sig) || kcall_disposition(sig, &handler, &flags) != 0)
			continue;
		if (handler == SIG_DFL || handler == SIG_IGN)
			continue;
		if (!(flags & SA_RESTART))
			return false;
	}
	return true;
}

int clock_wait_until_ns(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};
	int saved = errno, rc;

	for (;;) {
		rc = kcall_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts);
		if (rc != EINTR)
			break;
		if (!clock_every_handler_restarts())
			break;
	}
	errno = saved;
	return rc == EINTR ? EINTR : 0;
}
