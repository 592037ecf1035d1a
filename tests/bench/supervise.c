/* supervise: the cost of the supervisor engine: unrelated system calls and loopback connects. */

/*
 * usage: supervise syscalls N | connects N
 *
 * syscalls: N getppid() calls (a system call the filter lets through), prints
 * "ns_per_call=X".  connects: N blocking connects to a listener of its own on
 * 127.0.0.1 (a thread accepts and closes), each on a new socket, made with
 * connect(); prints "us_per_connect=X".  Built twice: statically (raw system
 * calls, the supervisor's work) and dynamically (the preload's).
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *acceptor(void *arg)
{
	int l = *(int *)arg, c;

	while ((c = accept(l, NULL, NULL)) >= 0)
		close(c);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0, i;
	pthread_t t;
	double t0;
	int l;

	if (n <= 0 || (strcmp(argv[1], "syscalls") != 0 && strcmp(argv[1], "connects") != 0)) {
		fprintf(stderr, "usage: supervise syscalls N | connects N\n");
		return 2;
	}
	if (strcmp(argv[1], "syscalls") == 0) {
		t0 = now_ns();
		for (i = 0; i < n; i++)
			(void)getppid();
		printf("ns_per_call=%.1f\n", (now_ns() - t0) / (double)n);
		return 0;
	}
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&in, len) != 0 || listen(l, 4096) != 0 ||
	    getsockname(l, (struct sockaddr *)&in, &len) != 0)
		return 1;
	pthread_create(&t, NULL, acceptor, &l);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0 || connect(s, (struct sockaddr *)&in, len) != 0)
			return 1;
		close(s);
	}
	printf("us_per_connect=%.1f\n", (now_ns() - t0) / (double)n / 1000.0);
	return 0;
}
