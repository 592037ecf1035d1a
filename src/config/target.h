/* Destinations: socket addresses normalised for matching, printing and patterns. */
#ifndef BACKOFF_CONFIG_TARGET_H
#define BACKOFF_CONFIG_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "sys/addr.h"

#define TARGET_TEXT_MAX 720 /* "unix:" + a path with every byte escaped */
#define TARGET_PATTERNS_MAX 32
#define TARGET_NAME_MAX 253    /* the longest DNS name, its final dot not counted */
#define TARGET_NAMES_TEXT 2048 /* BACKOFF_NAMES: the patterns' bytes, terminators included */

struct target_pattern {
	bool exclude;
	bool any;   /* "*": every destination */
	int family; /* AF_INET, AF_INET6, AF_UNIX, or 0 for "*:PORT" */
	unsigned char ip[16];
	unsigned prefix_bits;
	bool any_port;
	uint16_t port;
	char glob[TARGET_PATH_MAX + 1]; /* AF_UNIX: '*' and '?' wildcards */
};

struct target_set {
	unsigned count;	  /* 0: everything matches */
	bool has_include; /* any pattern without '!' */
	struct target_pattern pattern[TARGET_PATTERNS_MAX];
};

/*
 * BACKOFF_NAMES: the host names that may be missing from the resolver for a
 * while (a service not yet registered), as patterns with '*' wildcards, in
 * lower case, without a final dot, each terminated, one after the other.
 */
struct target_names {
	unsigned count; /* 0: no name is retried when the resolver does not know it */
	char text[TARGET_NAMES_TEXT];
};

/*
 * Fill @t from a socket address.  Returns false for families libbackoff does
 * not handle or a length too short for the family.  Async-signal-safe.
 */
bool target_from_sockaddr(const struct sockaddr *sa, socklen_t len, struct target_addr *t);

/*
 * Whether destination @t is an internet loopback one (127/8, ::1; an IPv4
 * address mapped into IPv6 is kept as IPv4).  Pure.
 */
static inline bool target_is_loopback(const struct target_addr *t)
{
	static const unsigned char loop6[16] = { [15] = 1 };

	if (t->family == AF_INET)
		return t->ip[0] == 127;
	return t->family == AF_INET6 && memcmp(t->ip, loop6, 16) == 0;
}

/*
 * Whether @t is on this host (loopback, or a unix path): an attempt that
 * fails costs no server anything, and a listener can be looked for.  Pure.
 */
static inline bool target_is_local(const struct target_addr *t)
{
	return t->family == AF_UNIX || target_is_loopback(t);
}

/* Whether two destinations are the same address (and port, unless either is 0). */
bool target_same_address(const struct target_addr *a, const struct target_addr *b);

/*
 * Print @t as 127.0.0.1:80, [::1]:80, unix:/path or unix:@name into @buf,
 * always terminated; bytes outside printable ASCII are written as \xNN.
 * Returns the length written.  Async-signal-safe.
 */
size_t target_format(const struct target_addr *t, char *buf, size_t size);

/*
 * Parse a BACKOFF_TARGETS list into @set.  Returns 0, or -1 with the reason
 * written into @why (@why_size bytes, terminated, cut to fit) and @set partly
 * filled, not to be used.  Pure.
 */
int target_parse_list(const char *text, struct target_set *set, char *why, size_t why_size);

/*
 * Whether @t is a socket the C library connects to for its own purposes
 * (nscd's), never retried whatever BACKOFF_TARGETS says.  Async-signal-safe.
 */
bool target_is_libc_internal(const struct target_addr *t);

/*
 * Whether @t is eligible under @set: never a libc-internal socket; else the
 * first matching pattern decides; with no match, eligible unless the list
 * has an inclusive pattern.
 */
bool target_matches(const struct target_set *set, const struct target_addr *t);

/*
 * Parse a BACKOFF_NAMES list into @set: comma-separated patterns of letters,
 * digits, '-', '_', '.' and '*' (any run of characters, dots included), no
 * empty label; "" is the empty list.  Returns 0, or -1 with the reason in
 * @why (@why_size bytes, terminated, cut to fit; the bad pattern quoted,
 * escaped) and @set empty.  Pure.
 */
int target_parse_names(const char *text, struct target_names *set, char *why, size_t why_size);

/*
 * Whether host name @name (NULL: none) matches a pattern of @set, case
 * ignored, a final dot too.  Pure; async-signal-safe.
 */
bool target_name_matches(const struct target_names *set, const char *name);

#endif
