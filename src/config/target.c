/* Destinations: normalising socket addresses, printing them, matching patterns. */
#include "config/target.h"

#include "sys/text.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

static const unsigned char v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool target_from_sockaddr(const struct sockaddr *sa, socklen_t len, struct target_addr *t)
{
	memset(t, 0, sizeof(*t));
	if (!sa || len < (socklen_t)sizeof(sa_family_t))
		return false;
	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		if (len < (socklen_t)sizeof(*in))
			return false;
		t->family = AF_INET;
		t->port = ntohs(in->sin_port);
		memcpy(t->ip, &in->sin_addr, 4);
		return true;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

		if (len < (socklen_t)sizeof(*in6))
			return false;
		t->port = ntohs(in6->sin6_port);
		if (memcmp(&in6->sin6_addr, v4_mapped_prefix, 12) == 0) {
			t->family = AF_INET;
			memcpy(t->ip, (const unsigned char *)&in6->sin6_addr + 12, 4);
		} else {
			t->family = AF_INET6;
			memcpy(t->ip, &in6->sin6_addr, 16);
		}
		return true;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)sa;
		size_t n = (size_t)len - offsetof(struct sockaddr_un, sun_path);

		if (n > sizeof(un->sun_path))
			n = sizeof(un->sun_path);
		t->family = AF_UNIX;
		if (n > 0 && un->sun_path[0] == '\0') {
			t->abstract = true;
			memcpy(t->path, un->sun_path + 1, n - 1);
			t->path_len = n - 1;
		} else {
			t->path_len = strnlen(un->sun_path, n);
			memcpy(t->path, un->sun_path, t->path_len);
		}
		return true;
	}
	default:
		return false;
	}
}

bool target_same_address(const struct target_addr *a, const struct target_addr *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == AF_UNIX)
		return a->abstract == b->abstract && a->path_len == b->path_len &&
		       memcmp(a->path, b->path, a->path_len) == 0;
	if (a->port != 0 && b->port != 0 && a->port != b->port)
		return false;
	return memcmp(a->ip, b->ip, a->family == AF_INET ? 4 : 16) == 0;
}

size_t target_format(const struct target_addr *t, char *buf, size_t size)
{
	struct text o;
	char ip[INET6_ADDRSTRLEN];

	if (size == 0)
		return 0;
	text_init(&o, buf, size);
	switch (t->family) {
	case AF_UNIX:
		text_str(&o, t->abstract ? "unix:@" : "unix:");
		text_escaped(&o, t->path, t->path_len);
		break;
	case AF_INET:
		inet_ntop(AF_INET, t->ip, ip, sizeof(ip));
		text_str(&o, ip);
		text_str(&o, ":");
		text_u64(&o, t->port);
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, t->ip, ip, sizeof(ip));
		text_str(&o, "[");
		text_str(&o, ip);
		text_str(&o, "]:");
		text_u64(&o, t->port);
		break;
	default:
		text_str(&o, "?");
		break;
	}
	return o.len;
}

/* '*' matches any run of bytes, '?' one byte; iterative, no recursion. */
static bool glob_match(const char *pat, const char *s, size_t n)
{
	const char *star = NULL;
	size_t i = 0, mark = 0;

	while (i < n) {
		if (*pat == '*') {
			star = pat++;
			mark = i;
		} else if (*pat != '\0' && (*pat == '?' || *pat == s[i])) {
			pat++;
			i++;
		} else if (star) {
			pat = star + 1;
			i = ++mark;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

static bool prefix_match(const unsigned char *a, const unsigned char *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[whole] ^ b[whole]) & (unsigned char)(0xff << (8 - rest))) == 0;
}

static bool pattern_matches(const struct target_pattern *p, const struct target_addr *t)
{
	if (p->any)
		return true;
	if (p->family == AF_UNIX) {
		char name[TARGET_PATH_MAX + 1];
		size_t n = 0;

		if (t->family != AF_UNIX)
			return false;
		if (t->abstract)
			name[n++] = '@';
		memcpy(name + n, t->path, t->path_len);
		n += t->path_len;
		return glob_match(p->glob, name, n);
	}
	if (t->family == AF_UNIX)
		return false;
	if (p->family != 0 &&
	    (p->family != t->family || !prefix_match(p->ip, t->ip, p->prefix_bits)))
		return false;
	return p->any_port || p->port == t->port;
}

bool target_is_libc_internal(const struct target_addr *t)
{
	/*
	 * glibc's nscd client connects here before every user, group and host
	 * lookup and, when nscd is absent, falls back to its other sources at
	 * once: a retry could only delay each lookup of a program (id, ls -l).
	 */
	static const char *const paths[] = { "/var/run/nscd/socket", "/run/nscd/socket" };
	size_t i;

	if (t->family != AF_UNIX || t->abstract)
		return false;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (t->path_len == strlen(paths[i]) && memcmp(t->path, paths[i], t->path_len) == 0)
			return true;
	return false;
}

bool target_matches(const struct target_set *set, const struct target_addr *t)
{
	unsigned i;

	if (target_is_libc_internal(t))
		return false;
	for (i = 0; i < set->count; i++)
		if (pattern_matches(&set->pattern[i], t))
			return !set->pattern[i].exclude;
	return !set->has_include;
}

/* Parse a decimal number in [lo, hi] from exactly @n bytes. */
static int parse_num(const char *s, size_t n, unsigned long lo, unsigned long hi,
		     unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* HOST[/BITS] where HOST is an IPv4 or (bracket-free) IPv6 literal. */
static int parse_host(const char *s, size_t n, int family, struct target_pattern *p)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = memchr(s, '/', n);
	size_t hn = slash ? (size_t)(slash - s) : n;
	unsigned max_bits = family == AF_INET ? 32 : 128;
	unsigned long bits = max_bits;

	if (hn == 0 || hn >= sizeof(host))
		return -1;
	memcpy(host, s, hn);
	host[hn] = '\0';
	if (inet_pton(family, host, p->ip) != 1)
		return -1;
	if (slash && parse_num(slash + 1, n - hn - 1, 0, max_bits, &bits) != 0)
		return -1;
	p->family = family;
	p->prefix_bits = (unsigned)bits;
	if (family == AF_INET6 && memcmp(p->ip, v4_mapped_prefix, 12) == 0 && bits >= 96) {
		/* Destinations store v4-mapped addresses as IPv4: match them so. */
		memmove(p->ip, p->ip + 12, 4);
		p->family = AF_INET;
		p->prefix_bits = (unsigned)bits - 96;
	}
	return 0;
}

static int parse_port(const char *s, size_t n, struct target_pattern *p)
{
	unsigned long port;

	if (n == 1 && s[0] == '*') {
		p->any_port = true;
		return 0;
	}
	if (parse_num(s, n, 0, 65535, &port) != 0)
		return -1;
	p->port = (uint16_t)port;
	return 0;
}

static bool looks_like_name(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((s[i] >= 'g' && s[i] <= 'z') || (s[i] >= 'G' && s[i] <= 'Z'))
			return true;
	return false;
}

static const char pattern_help[] =
	"expected a comma list of ADDR:PORT patterns such as 127.0.0.1:5432, [::1]:*, "
	"*:6379, 10.0.0.0/8, unix:/run/*.sock, each optionally prefixed with !";

static int parse_pattern(const char *s, size_t n, struct target_pattern *p, const char **why)
{
	const char *colon;

	memset(p, 0, sizeof(*p));
	*why = pattern_help;
	if (n > 0 && s[0] == '!') {
		p->exclude = true;
		s++;
		n--;
	}
	if (n == 0)
		return -1;
	if ((n == 1 && s[0] == '*') || (n == 3 && memcmp(s, "*:*", 3) == 0)) {
		p->any = true;
		return 0;
	}
	if (n >= 5 && memcmp(s, "unix:", 5) == 0) {
		if (n - 5 == 0 || n - 5 > TARGET_PATH_MAX)
			return -1;
		p->family = AF_UNIX;
		memcpy(p->glob, s + 5, n - 5);
		return memchr(p->glob, '\0', n - 5) ? -1 : 0;
	}
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);
		size_t rest;

		if (!close || parse_host(s + 1, (size_t)(close - s - 1), AF_INET6, p) != 0)
			return -1;
		rest = n - (size_t)(close - s) - 1;
		if (rest == 0) {
			p->any_port = true;
			return 0;
		}
		if (close[1] != ':')
			return -1;
		return parse_port(close + 2, rest - 1, p);
	}
	colon = memchr(s, ':', n);
	if (colon && memchr(colon + 1, ':', n - (size_t)(colon - s) - 1)) {
		*why = "IPv6 addresses go in brackets, as in [::1]:5432";
		return -1;
	}
	{
		size_t hn = colon ? (size_t)(colon - s) : n;

		if (looks_like_name(s, hn)) {
			*why = "names are not resolved: give addresses such as 127.0.0.1:5432 or "
			       "[::1]:*";
			return -1;
		}
		if (!(hn == 1 && s[0] == '*') && parse_host(s, hn, AF_INET, p) != 0)
			return -1;
		if (!colon) {
			p->any_port = true;
			return 0;
		}
		return parse_port(colon + 1, n - hn - 1, p);
	}
}

int target_parse_list(const char *text, struct target_set *set, char *why, size_t why_size)
{
	const char *s = text;

	memset(set, 0, sizeof(*set));
	for (;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		const char *reason;

		while (n > 0 && (*s == ' ' || *s == '\t')) {
			s++;
			n--;
		}
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (set->count == TARGET_PATTERNS_MAX) {
			snprintf(why, why_size, "at most %d patterns", TARGET_PATTERNS_MAX);
			return -1;
		}
		if (parse_pattern(s, n, &set->pattern[set->count], &reason) != 0) {
			snprintf(why, why_size, "%s", reason);
			return -1;
		}
		if (!set->pattern[set->count].exclude)
			set->has_include = true;
		set->count++;
		if (!end)
			return 0;
		s = end + 1;
	}
}

static char lower(char c)
{
	if (c >= 'A' && c <= 'Z')
		return "abcdefghijklmnopqrstuvwxyz"[c - 'A'];
	return c;
}

/* Whether the @n bytes at @s, their final dot already dropped, make a name pattern. */
static bool name_pattern_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > TARGET_NAME_MAX || s[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		char c = lower(s[i]);

		if (c == '.' && s[i - 1] == '.')
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.' || c == '*'))
			return false;
	}
	return true;
}

/* The reason a pattern is refused, @s quoted, at most 64 of its bytes. */
static void name_pattern_why(const char *s, size_t n, char *why, size_t why_size)
{
	struct text t;

	text_init(&t, why, why_size);
	text_str(&t, "\"");
	text_escaped(&t, s, n < 64 ? n : 64);
	text_str(&t, n > 64 ? "...\"" : "\"");
	text_str(&t, " is not a name pattern: expected host names with * wildcards, such as "
		     "db, *.svc.cluster.local, postgres-*");
}

int target_parse_names(const char *text, struct target_names *set, char *why, size_t why_size)
{
	const char *s = text;
	unsigned count = 0;
	size_t used = 0;

	set->count = 0;
	if (*s == '\0')
		return 0;
	for (;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s), i;

		while (n > 0 && (*s == ' ' || *s == '\t')) {
			s++;
			n--;
		}
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (!name_pattern_ok(s, n > 0 && s[n - 1] == '.' ? n - 1 : n)) {
			name_pattern_why(s, n, why, why_size);
			return -1;
		}
		if (s[n - 1] == '.')
			n--;
		if (used + n + 1 > sizeof(set->text)) {
			snprintf(why, why_size, "the patterns take more than %d bytes",
				 TARGET_NAMES_TEXT - 1);
			return -1;
		}
		for (i = 0; i < n; i++)
			set->text[used + i] = lower(s[i]);
		set->text[used + n] = '\0';
		used += n + 1;
		count++;
		if (!end)
			break;
		s = end + 1;
	}
	set->count = count;
	return 0;
}

bool target_name_matches(const struct target_names *set, const char *name)
{
	char low[TARGET_NAME_MAX];
	const char *p = set->text;
	size_t n, i;

	if (!name || set->count == 0)
		return false;
	n = strnlen(name, TARGET_NAME_MAX + 2);
	if (n > 0 && name[n - 1] == '.')
		n--;
	if (n == 0 || n > TARGET_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		low[i] = lower(name[i]);
	for (i = 0; i < set->count; i++, p += strlen(p) + 1)
		if (glob_match(p, low, n))
			return true;
	return false;
}
