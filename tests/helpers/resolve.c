/* resolve: one name lookup with a chosen call, its outcome and duration printed. */

/*
 * usage: resolve [--call getaddrinfo|gethostbyname|gethostbyname2|
 *                 gethostbyname_r|gethostbyname2_r] [--numeric] NAME
 *
 * Looks NAME up once (getaddrinfo by default, AF_INET for the forms that
 * take a family; --numeric: getaddrinfo with AI_NUMERICHOST, which never
 * asks a resolver).  stdout: the first IPv4 or IPv6 address found, or the
 * name of the failure (EAI_NONAME, TRY_AGAIN, ...), then "elapsed_ms=E".
 * Exit status 0 when the name was found, 1 otherwise.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common.h"

static const char *prog = "resolve";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [--call getaddrinfo|gethostbyname|gethostbyname2|gethostbyname_r|\n"
		"       gethostbyname2_r] [--numeric] NAME\n",
		prog);
	exit(2);
}

static const char *gai_name(int rc)
{
	switch (rc) {
	case EAI_AGAIN:
		return "EAI_AGAIN";
	case EAI_NONAME:
		return "EAI_NONAME";
	case EAI_FAIL:
		return "EAI_FAIL";
	case EAI_NODATA:
		return "EAI_NODATA";
	case EAI_SYSTEM:
		return "EAI_SYSTEM";
	default:
		return "EAI_?";
	}
}

static const char *herr_name(int herr)
{
	switch (herr) {
	case TRY_AGAIN:
		return "TRY_AGAIN";
	case HOST_NOT_FOUND:
		return "HOST_NOT_FOUND";
	case NO_RECOVERY:
		return "NO_RECOVERY";
	case NO_DATA:
		return "NO_DATA";
	default:
		return "NETDB_INTERNAL";
	}
}

/* The answer as text into @out, or the failure's name; returns 1 if found. */
static int lookup(const char *call, int numeric, const char *name, char *out, size_t size)
{
	struct hostent h, *res = NULL;
	char buf[8192];
	int herr = 0, rc;

	if (strcmp(call, "getaddrinfo") == 0) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		const void *addr;

		hints.ai_flags = numeric ? AI_NUMERICHOST : 0;
		rc = getaddrinfo(name, NULL, &hints, &ai);
		if (rc != 0) {
			snprintf(out, size, "%s", gai_name(rc));
			return 0;
		}
		addr = ai->ai_family == AF_INET6
			       ? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr
			       : (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
		inet_ntop(ai->ai_family, addr, out, (socklen_t)size);
		freeaddrinfo(ai);
		return 1;
	}
	if (strcmp(call, "gethostbyname") == 0) {
		res = gethostbyname(name);
		herr = h_errno;
	} else if (strcmp(call, "gethostbyname2") == 0) {
		res = gethostbyname2(name, AF_INET);
		herr = h_errno;
	} else if (strcmp(call, "gethostbyname_r") == 0) {
		gethostbyname_r(name, &h, buf, sizeof(buf), &res, &herr);
	} else if (strcmp(call, "gethostbyname2_r") == 0) {
		gethostbyname2_r(name, AF_INET, &h, buf, sizeof(buf), &res, &herr);
	} else {
		usage();
	}
	if (!res) {
		snprintf(out, size, "%s", herr_name(herr));
		return 0;
	}
	inet_ntop(res->h_addrtype, res->h_addr_list[0], out, (socklen_t)size);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "call", required_argument, NULL, 'c' },
		{ "numeric", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *call = "getaddrinfo";
	char answer[INET6_ADDRSTRLEN + 32];
	int numeric = 0, opt, found;
	long long start;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			call = optarg;
			break;
		case 'n':
			numeric = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	start = mono_ms();
	found = lookup(call, numeric, argv[optind], answer, sizeof(answer));
	printf("%s\nelapsed_ms=%lld\n", answer, mono_ms() - start);
	return found ? 0 : 1;
}
