/* gate.so: holds a freshly exec'd program in its constructor until herd opens the gate. */

/*
 * Preloaded by herd into every client: HERD_GATE_FDS="R,W" names two
 * inherited pipe ends.  The constructor writes one byte to W (this process
 * is loaded and waiting), closes W, then reads R until end of file (herd
 * closed the other end: the release) and closes R.  So exec, the dynamic
 * loader and the libraries' start-up all happen before the release, and the
 * clients' first connects follow it within a few milliseconds.
 * Without the variable it does nothing.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void wait_at_gate(void)
{
	const char *spec = getenv("HERD_GATE_FDS");
	int rfd, wfd;
	char c;
	ssize_t n;

	if (!spec || sscanf(spec, "%d,%d", &rfd, &wfd) != 2)
		return;
	unsetenv("HERD_GATE_FDS"); /* not for the program's own children */
	while (write(wfd, "r", 1) < 0 && errno == EINTR)
		;
	close(wfd);
	while ((n = read(rfd, &c, 1)) != 0 && (n > 0 || errno == EINTR))
		;
	close(rfd);
}
