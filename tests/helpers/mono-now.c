/* mono-now: print CLOCK_MONOTONIC in milliseconds, the clock of the tests' "ready" lines. */

/*
 * usage: mono-now
 * A compiled program, so that the time it prints is its start and not an
 * interpreter's (python's start-up takes tens of milliseconds under load).
 */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		perror("mono-now: clock_gettime");
		return 1;
	}
	printf("%lld\n", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	return 0;
}
