/* early.so: a preloaded library whose constructor connects before libbackoff's has run. */

/*
 * With LD_PRELOAD="libbackoff.so:early.so" the loader runs early.so's
 * constructor first (the later object is initialised first), so its
 * connect() reaches libbackoff's hook before libbackoff's own constructor.
 *
 * EARLY_CONNECT=HOST:PORT (IPv4) makes the connect; EARLY_NONBLOCK=1 makes it
 * non-blocking, waited for with poll() and read with SO_ERROR.  Writes
 * "early: connecting" to stderr before it, and "early: OK" or "early: ENAME"
 * to stdout after it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int connect_nonblocking(int fd, const struct sockaddr_in *to)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0)
		return errno;
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	if (poll(&pfd, 1, 20000) != 1)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return errno;
	return err;
}

__attribute__((constructor)) static void early_connect(void)
{
	const char *spec = getenv("EARLY_CONNECT"), *colon;
	struct sockaddr_in to = { .sin_family = AF_INET };
	char host[INET_ADDRSTRLEN];
	int fd, err;

	if (!spec || !(colon = strchr(spec, ':')) || (size_t)(colon - spec) >= sizeof(host))
		return;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	if (inet_pton(AF_INET, host, &to.sin_addr) != 1)
		return;
	to.sin_port = htons((uint16_t)atoi(colon + 1));
	fprintf(stderr, "early: connecting\n");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (getenv("EARLY_NONBLOCK"))
		err = connect_nonblocking(fd, &to);
	else
		err = connect(fd, (const struct sockaddr *)&to, sizeof(to)) == 0 ? 0 : errno;
	printf("early: %s\n", err == 0 ? "OK" : strerrorname_np(err));
	fflush(stdout);
	close(fd);
}
