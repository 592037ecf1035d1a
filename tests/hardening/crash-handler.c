/* crash-handler.so: installs fault handlers the way crash reporters and runtimes do. */

/*
 * Preloaded, its constructor installs handlers for SIGSEGV, SIGBUS and
 * SIGFPE with SA_SIGINFO | SA_ONSTACK and without SA_RESTART, as breakpad,
 * the JVM, Go, Python's faulthandler and the sanitizers do.  The handlers
 * restore the default action and return, so that a real fault still ends
 * the process as it would have.
 */
#include <signal.h>
#include <string.h>

static void on_fault(int sig, siginfo_t *info, void *context)
{
	(void)info;
	(void)context;
	signal(sig, SIG_DFL);
}

__attribute__((constructor)) static void install_fault_handlers(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE };
	struct sigaction sa;
	unsigned i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}
