/*
 * The C library's string, memory and address-text functions that the library
 * calls, its own and hidden: each one imported is a symbol the dynamic linker
 * looks up and binds at load (-z now), about 650 instructions in every
 * process the library is in, whether it ever connects or not.  Plain loops
 * over the short strings and records the library reads (variables, names,
 * addresses, its own slots); byte for byte the C library's results, but that
 * case is ASCII's, as every string compared so is.  Linked into libbackoff.so
 * alone: a static program (the supervisor, the launcher) and a sanitizer's
 * build keep the C library's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/kcall.h"

#ifndef KCALL_WRAPPERS

#define OWN __attribute__((visibility("hidden")))

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

OWN size_t strlen(const char *s)
{
	const char *p = s;

	while (*p)
		p++;
	return (size_t)(p - s);
}

OWN size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

OWN char *strchrnul(const char *s, int c)
{
	while (*s && *s != (char)c)
		s++;
	return (char *)s;
}

OWN char *strchr(const char *s, int c)
{
	s = strchrnul(s, c);
	return *s == (char)c ? (char *)s : NULL;
}

OWN char *strrchr(const char *s, int c)
{
	const char *found = NULL;

	do {
		if (*s == (char)c)
			found = s;
	} while (*s++);
	return (char *)found;
}

OWN int strncmp(const char *a, const char *b, size_t n)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; n > 0; n--, x++, y++)
		if (*x != *y || !*x)
			return *x - *y;
	return 0;
}

OWN int strcmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; *x == *y && *x; x++, y++)
		;
	return *x - *y;
}

OWN int strncasecmp(const char *a, const char *b, size_t n)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; n > 0; n--, x++, y++)
		if (lower(*x) != lower(*y) || !*x)
			return lower(*x) - lower(*y);
	return 0;
}

OWN int strcasecmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; lower(*x) == lower(*y) && *x; x++, y++)
		;
	return lower(*x) - lower(*y);
}

OWN void *memchr(const void *s, int c, size_t n)
{
	const unsigned char *p = s;

	for (; n > 0; n--, p++)
		if (*p == (unsigned char)c)
			return (void *)p;
	return NULL;
}

OWN int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n > 0; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

OWN char *strstr(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (strncmp(hay, needle, n) == 0)
			return (char *)hay;
	return n == 0 ? (char *)hay : NULL;
}

/*
 * A word at a time where both ends are aligned (the records the library
 * copies are), else a byte.  Compiled without loop-to-call rewriting: the
 * compiler would turn these loops into calls to themselves.
 */
typedef unsigned long __attribute__((may_alias)) word;
#define WORD sizeof(word)

OWN void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if ((((uintptr_t)d | (uintptr_t)s) & (WORD - 1)) == 0)
		for (; n >= WORD; n -= WORD, d += WORD, s += WORD)
			*(word *)(void *)d = *(const word *)(const void *)s;
	for (; n > 0; n--)
		*d++ = *s++;
	return dst;
}

OWN void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if ((uintptr_t)d - (uintptr_t)s >= n) /* forward: @d is before @s or past its end */
		for (; n > 0; n--)
			*d++ = *s++;
	else
		while (n-- > 0)
			d[n] = s[n];
	return dst;
}

static int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Dotted decimal, four parts of 0 to 255, no leading zero: 4 bytes at @out.  1, else 0. */
static int pton4(const char *s, unsigned char *out)
{
	unsigned parts = 0, v;

	for (;;) {
		if (*s < '0' || *s > '9' || parts == 4)
			return 0;
		if (*s == '0' && s[1] >= '0' && s[1] <= '9')
			return 0;
		for (v = 0; *s >= '0' && *s <= '9'; s++)
			if ((v = v * 10 + (unsigned)(*s - '0')) > 255)
				return 0;
		out[parts++] = (unsigned char)v;
		if (*s == '\0')
			return parts == 4;
		if (*s++ != '.')
			return 0;
	}
}

/*
 * Groups of one to four hex digits joined by ':', one "::" for a run of zero
 * groups, a dotted quad in the last 4 bytes: 16 bytes at @out.  1, else 0.
 */
static int pton6(const char *s, unsigned char *out)
{
	unsigned char b[16] = { 0 };
	size_t n = 0, gap = 16 + 1, i; /* gap: where "::" stands (none) */
	const char *group;
	unsigned v = 0, digits = 0;
	int h;

	if (*s == ':' && *++s != ':')
		return 0;
	for (group = s; *s; s++) {
		if ((h = hex_digit(*s)) >= 0) {
			if (++digits > 4)
				return 0;
			v = v << 4 | (unsigned)h;
		} else if (*s == ':') {
			group = s + 1;
			if (digits == 0) { /* the second ':' of "::" */
				if (gap <= 16)
					return 0;
				gap = n;
				continue;
			}
			if (s[1] == '\0' || n + 2 > 16)
				return 0;
			b[n++] = (unsigned char)(v >> 8);
			b[n++] = (unsigned char)v;
			v = digits = 0;
		} else if (*s == '.' && n + 4 <= 16 && pton4(group, b + n)) {
			n += 4; /* to the end of the text */
			digits = 0;
			break;
		} else {
			return 0;
		}
	}
	if (digits > 0) {
		if (n + 2 > 16)
			return 0;
		b[n++] = (unsigned char)(v >> 8);
		b[n++] = (unsigned char)v;
	}
	if (gap <= 16) {
		if (n == 16)
			return 0;
		memmove(b + 16 - (n - gap), b + gap, n - gap);
		for (i = gap; i < 16 - (n - gap); i++)
			b[i] = 0;
	} else if (n != 16) {
		return 0;
	}
	memcpy(out, b, 16);
	return 1;
}

OWN int inet_pton(int af, const char *restrict src, void *restrict dst)
{
	if (af == AF_INET) {
		unsigned char b[4];

		if (!pton4(src, b))
			return 0;
		memcpy(dst, b, 4);
		return 1;
	}
	if (af == AF_INET6)
		return pton6(src, dst);
	errno = EAFNOSUPPORT;
	return -1;
}

static char *put_u(char *p, unsigned v, unsigned base)
{
	char digits[8];
	int n = 0;

	do
		digits[n++] = "0123456789abcdef"[v % base];
	while ((v /= base) > 0);
	while (n > 0)
		*p++ = digits[--n];
	return p;
}

static char *ntop4(const unsigned char *a, char *p)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (i)
			*p++ = '.';
		p = put_u(p, a[i], 10);
	}
	return p;
}

/*
 * The longest run of two or more zero groups (the first of equals) as "::";
 * an address of 96 zero bits, or 80 and then ffff, ends in a dotted quad.
 */
static char *ntop6(const unsigned char *a, char *p)
{
	unsigned g[8];
	int i, best = -1, best_len = 0, run = 0;

	for (i = 0; i < 8; i++) {
		g[i] = (unsigned)a[(size_t)i * 2] << 8 | a[(size_t)i * 2 + 1];
		run = g[i] == 0 ? run + 1 : 0;
		if (run > best_len) {
			best_len = run;
			best = i - run + 1;
		}
	}
	if (best_len < 2)
		best = -1;
	for (i = 0; i < 8; i++) {
		if (i == best) {
			*p++ = ':';
			if (best + best_len == 8)
				*p++ = ':';
			i += best_len - 1;
			continue;
		}
		if (i)
			*p++ = ':';
		if (i == 6 && best == 0 && (best_len == 6 || (best_len == 5 && g[5] == 0xffff)))
			return ntop4(a + 12, p);
		p = put_u(p, g[i], 16);
	}
	return p;
}

OWN const char *inet_ntop(int af, const void *restrict src, char *restrict dst, socklen_t size)
{
	char buf[INET6_ADDRSTRLEN], *end;

	if (af == AF_INET)
		end = ntop4(src, buf);
	else if (af == AF_INET6)
		end = ntop6(src, buf);
	else {
		errno = EAFNOSUPPORT;
		return NULL;
	}
	*end = '\0';
	if ((size_t)(end - buf) + 1 > size) {
		errno = ENOSPC;
		return NULL;
	}
	memcpy(dst, buf, (size_t)(end - buf) + 1);
	return dst;
}

/* Nothing under secure execution (setuid, setgid, capabilities); else getenv's answer. */
OWN char *secure_getenv(const char *name)
{
	size_t n = strlen(name);
	char **e;

	if (n == 0 || getauxval(AT_SECURE))
		return NULL;
	for (e = environ; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

#else
typedef int cstring_libc; /* the C library's functions serve */
#endif
