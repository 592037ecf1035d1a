/*
 * The page faults of a process's first socket: the minor faults getrusage(2)
 * counts around one socket(2), printed.  What a short-lived client pays the
 * library's fd table for its first connection.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "common.h"

int main(void)
{
	struct rusage before, after;
	int fd;

	/* Twice: the first call's own pages are faulted in before counting. */
	getrusage(RUSAGE_SELF, &before);
	getrusage(RUSAGE_SELF, &before);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	getrusage(RUSAGE_SELF, &after);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	printf("%ld\n", after.ru_minflt - before.ru_minflt);
	return 0;
}
