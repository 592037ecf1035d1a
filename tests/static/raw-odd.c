/* raw-odd: connect system calls the kernel refuses, each result printed, built with gcc -static. */

/*
 * usage: raw-odd PORT
 *
 * Makes, with syscall(SYS_connect), the calls a supervisor must hand back to
 * the kernel untouched: a bad fd, a pipe, a null or unmapped address, short
 * and overlong lengths, an unknown family, a datagram socket, then a stream
 * socket to 127.0.0.1:PORT.  One line each: "NAME OK" or "NAME ERRNO".
 */

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../helpers/common.h"

static void show(const char *name, long rc)
{
	printf("%s %s\n", name, rc == 0 ? "OK" : strerrorname_np(errno));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	int p[2], s;
	long port;
	void *gone;

	if (argc != 2 || number_in(argv[1], 1, 65535, &port) != 0) {
		fprintf(stderr, "usage: raw-odd PORT\n");
		return 2;
	}
	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (pipe(p) != 0)
		return 1;
	gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	show("bad-fd", syscall(SYS_connect, 12345, in, sizeof(*in)));
	show("pipe", syscall(SYS_connect, p[0], in, sizeof(*in)));
	s = socket(AF_INET, SOCK_STREAM, 0);
	show("null-address", syscall(SYS_connect, s, NULL, sizeof(*in)));
	show("unmapped-address", syscall(SYS_connect, s, gone, sizeof(*in)));
	show("length-1", syscall(SYS_connect, s, in, 1));
	show("length-huge", syscall(SYS_connect, s, in, 100000));
	ss.ss_family = 12345;
	show("unknown-family", syscall(SYS_connect, s, &ss, sizeof(*in)));
	ss.ss_family = AF_INET;
	show("datagram", syscall(SYS_connect, socket(AF_INET, SOCK_DGRAM, 0), in, sizeof(*in)));
	show("stream", syscall(SYS_connect, s, in, sizeof(*in)));
	return 0;
}
