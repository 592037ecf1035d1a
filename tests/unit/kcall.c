/*
 * The system calls the library makes for itself (sys/kcall.h) against the C
 * library's wrappers: the same answers.  Here the disposition of every
 * signal, with handlers installed with and without SA_RESTART, and the C
 * library's own signals (thread cancellation) set up by a cancelled thread.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "sys/kcall.h"
#include "unit.h"

static void handler(int sig)
{
	(void)sig;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* kcall_disposition and sigaction agree on every signal. */
static void check_all(void)
{
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		void (*h)(int) = NULL;
		unsigned long flags = 0;
		int theirs = sigaction(sig, NULL, &sa), mine = kcall_disposition(sig, &h, &flags);

		CHECK(mine == (theirs == 0 ? 0 : -1));
		if (mine != 0 || theirs != 0)
			continue;
		CHECK(h == sa.sa_handler);
		CHECK((flags & SA_RESTART) == ((unsigned long)sa.sa_flags & SA_RESTART));
	}
}

int main(void)
{
	struct sigaction sa = { .sa_handler = handler };
	pthread_t t;

	check_all();
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGTERM, &sa, NULL);
	/* A cancelled thread: the C library installs its cancellation handler. */
	if (pthread_create(&t, NULL, sleeper, NULL) == 0) {
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
	check_all();
	{
		void (*h)(int) = NULL;
		unsigned long flags = 0;

		CHECK(kcall_disposition(SIGUSR1, &h, &flags) == 0 && h == handler &&
		      !(flags & SA_RESTART));
		CHECK(kcall_disposition(SIGUSR2, &h, &flags) == 0 && h == handler &&
		      (flags & SA_RESTART));
	}
	return unit_report("kcall");
}
