/* stream-pump: a test program pushing seeded bytes through a stream socket with send(). */

/*
 * usage: stream-pump --calls N --sent FILE --received FILE [--seed S]
 *                    [--max-chunk B]
 *
 * One thread makes N send() calls on one end of a blocking AF_UNIX stream
 * socketpair, each with a chunk of 1 to B pseudo-random bytes (default 64,
 * seeded, the same on every run; a partial send leaves the rest for the next
 * call), then shuts its side down.  Another thread read()s the other end
 * until EOF.  The bytes send() accepted go to --sent, those read to
 * --received, so that the two files can be compared byte for byte.
 *
 * It does nothing about errors but count them, as a plain program would
 * after a failed send (the data of that call is then sent by the next one).
 * stdout at the end: "calls=N failed=F sent=BYTES received=BYTES"; exit 0
 * when nothing failed.  Ends by itself (SIGALRM) after 120 s.
 */

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

static const char *prog = "stream-pump";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s --calls N --sent FILE --received FILE [--seed S] [--max-chunk B]\n",
		prog);
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static long parse_long(const char *s, long min, long max)
{
	long v;

	if (number_in(s, min, max, &v) != 0)
		usage();
	return v;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct reader {
	int fd;
	FILE *out;
	unsigned long long bytes;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	char buf[65536];
	ssize_t n;

	while ((n = read(r->fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read");
		}
		if (fwrite(buf, 1, (size_t)n, r->out) != (size_t)n)
			die("writing --received");
		r->bytes += (unsigned long long)n;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", required_argument, NULL, 'n' },
		{ "sent", required_argument, NULL, 's' },
		{ "received", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "max-chunk", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sent_path = NULL, *received_path = NULL;
	long calls = -1, max_chunk = 64, i, failed = 0;
	uint64_t seed = 1;
	unsigned long long sent = 0;
	struct reader r = { 0 };
	char chunk[65536];
	size_t have = 0, off = 0;
	pthread_t reader;
	FILE *sent_out;
	int sv[2], opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			calls = parse_long(optarg, 0, 100000000);
			break;
		case 's':
			sent_path = optarg;
			break;
		case 'r':
			received_path = optarg;
			break;
		case 'S':
			seed = (uint64_t)parse_long(optarg, 1, 0x7fffffff);
			break;
		case 'b':
			max_chunk = parse_long(optarg, 1, (long)sizeof(chunk));
			break;
		default:
			usage();
		}
	}
	if (optind != argc || calls < 0 || !sent_path || !received_path)
		usage();
	alarm(120);
	sent_out = fopen(sent_path, "w");
	r.out = fopen(received_path, "w");
	if (!sent_out || !r.out)
		die("opening the output files");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		die("socketpair");
	r.fd = sv[1];
	if (pthread_create(&reader, NULL, read_all, &r) != 0)
		die("pthread_create");

	for (i = 0; i < calls; i++) {
		ssize_t n;

		if (off == have) {
			size_t k;

			have = 1 + (size_t)(xorshift(&seed) % (uint64_t)max_chunk);
			for (k = 0; k < have; k++)
				chunk[k] = (char)(xorshift(&seed) >> 56);
			off = 0;
		}
		n = send(sv[0], chunk + off, have - off, 0);
		if (n < 0) {
			failed++;
			continue;
		}
		if (fwrite(chunk + off, 1, (size_t)n, sent_out) != (size_t)n)
			die("writing --sent");
		off += (size_t)n;
		sent += (unsigned long long)n;
	}
	if (shutdown(sv[0], SHUT_WR) != 0)
		die("shutdown");
	if (pthread_join(reader, NULL) != 0)
		die("pthread_join");
	if (fclose(sent_out) != 0 || fclose(r.out) != 0)
		die("closing the output files");
	printf("calls=%ld failed=%ld sent=%llu received=%llu\n", calls, failed, sent, r.bytes);
	return failed ? 1 : 0;
}
