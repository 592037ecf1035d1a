/* A destination as both layers see it: the leaf type of config/target and sys/listen. */
#ifndef BACKOFF_SYS_ADDR_H
#define BACKOFF_SYS_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TARGET_PATH_MAX 108 /* sizeof(sun_path) */

/* A destination; v4-mapped IPv6 addresses are stored as AF_INET. */
struct target_addr {
	int family;		    /* AF_INET, AF_INET6 or AF_UNIX */
	uint16_t port;		    /* host byte order; 0 for AF_UNIX */
	unsigned char ip[16];	    /* AF_INET uses the first 4 bytes */
	char path[TARGET_PATH_MAX]; /* AF_UNIX: path, or abstract name after '@' */
	size_t path_len;
	bool abstract;
};

#endif
