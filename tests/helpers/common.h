/* What the C test helpers share: the monotonic clock, numbers and addresses from the command line.
 */
#ifndef BACKOFF_TESTS_HELPERS_COMMON_H
#define BACKOFF_TESTS_HELPERS_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static inline long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A whole decimal number in [min, max] into *out; -1 if @s is anything else. */
static inline int number_in(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * Fills *ss from "1.2.3.4:80" or "[::1]:80" with a port of at least
 * @min_port; returns the address length, or 0 if @spec is not such an address.
 */
static inline socklen_t inet_from_spec(const char *spec, long min_port, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon = strrchr(spec, ':');
	size_t n;
	long port;

	if (!colon)
		return 0;
	n = (size_t)(colon - spec);
	if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']') {
		spec++;
		n -= 2;
	}
	if (n >= sizeof(host) || number_in(colon + 1, min_port, 65535, &port) != 0)
		return 0;
	memcpy(host, spec, n);
	host[n] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? sizeof(*in6) : 0;
	}
	struct sockaddr_in *in = (struct sockaddr_in *)ss;

	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &in->sin_addr) == 1 ? sizeof(*in) : 0;
}

#endif
