/*
 * The C library's string functions that the library calls, its own and
 * hidden: each one imported is a symbol the dynamic linker looks up and binds
 * at load (-z now), about 800 instructions in every process the library is
 * in, whether it ever connects or not.  Plain loops over the short strings
 * the library reads (variables, names, addresses); byte for byte the C
 * library's results, but that case is ASCII's, as every string compared so
 * is.  Linked into libbackoff.so alone: a static program (the supervisor,
 * the launcher) and a sanitizer's build keep the C library's.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

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

#else
typedef int cstring_libc; /* the C library's functions serve */
#endif
