/* real_<call> pointers: the definitions that libbackoff's hooks delegate to. */
#include "sys/real.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int (*real_connect)(int, const struct sockaddr *, socklen_t);
int (*real_getaddrinfo)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

static void die(const char *name, const char *why)
{
	static const char prefix[] = "backoff: cannot resolve ";
	ssize_t ignored;

	ignored = write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
	ignored = write(STDERR_FILENO, name, strlen(name));
	ignored = write(STDERR_FILENO, why, strlen(why));
	(void)ignored;
	abort();
}

static void *resolve(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p)
		die(name, ": not found after libbackoff\n");
	return p;
}

/* memcpy converts between object and function pointers, which ISO C leaves undefined. */
#define RESOLVE(name)                                                        \
	do {                                                                 \
		void *found_ = resolve(#name), *self_;                       \
		__typeof__(real_##name) hook_ = name;                        \
		memcpy(&self_, &hook_, sizeof(self_));                       \
		if (found_ == self_)                                         \
			die(#name, ": resolves to libbackoff itself\n");     \
		memcpy(&real_##name, &found_, sizeof(found_));               \
	} while (0)

void real_resolve(void)
{
	RESOLVE(connect);
	RESOLVE(getaddrinfo);
}
