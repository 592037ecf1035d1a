/* module.so: a plugin that a program dlopen()s, connecting on its behalf. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int module_connect(const char *ip, unsigned port);

/* One blocking connect to @ip:@port (IPv4); returns 0 or the errno. */
int module_connect(const char *ip, unsigned port)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd, err;

	if (inet_pton(AF_INET, ip, &to.sin_addr) != 1)
		return EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	err = connect(fd, (const struct sockaddr *)&to, sizeof(to)) == 0 ? 0 : errno;
	close(fd);
	return err;
}
