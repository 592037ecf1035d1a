/*
 * The library's own string functions (sys/cstring.c) against the C
 * library's, on every pair of a table of strings and each byte: the same
 * sign, the same pointer.  Compiled here under other names.
 */
#include <string.h>
#include <strings.h>

size_t own_strlen(const char *s);
size_t own_strnlen(const char *s, size_t max);
char *own_strchrnul(const char *s, int c);
char *own_strchr(const char *s, int c);
char *own_strrchr(const char *s, int c);
int own_strncmp(const char *a, const char *b, size_t n);
int own_strcmp(const char *a, const char *b);
int own_strncasecmp(const char *a, const char *b, size_t n);
int own_strcasecmp(const char *a, const char *b);
void *own_memchr(const void *s, int c, size_t n);
int own_memcmp(const void *a, const void *b, size_t n);
char *own_strstr(const char *hay, const char *needle);

#define strlen own_strlen
#define strnlen own_strnlen
#define strchrnul own_strchrnul
#define strchr own_strchr
#define strrchr own_strrchr
#define strncmp own_strncmp
#define strcmp own_strcmp
#define strncasecmp own_strncasecmp
#define strcasecmp own_strcasecmp
#define memchr own_memchr
#define memcmp own_memcmp
#define strstr own_strstr
#include "../../src/sys/cstring.c"
#undef strlen
#undef strnlen
#undef strchrnul
#undef strchr
#undef strrchr
#undef strncmp
#undef strcmp
#undef strncasecmp
#undef strcasecmp
#undef memchr
#undef memcmp
#undef strstr

#include "unit.h"

#ifndef KCALL_WRAPPERS /* a sanitizer's build keeps the C library's */
static int sign(int v)
{
	return (v > 0) - (v < 0);
}

static const char *const words[] = {
	"",	  "a",	  "A",	      "ab",  "aB",	 "abc",	      "abd",	     "ab\xe9",
	"AB\xc9", "\xff", "\x80\x61", "inf", "INFINITY", "infinity",  "on",	     "ON",
	"off",	  "oN",	  "[",	      "{",   "@",	 "`",	      "duration",    "a duration",
	"/x/y/z", "::1",  "z",	      "zz",  "ab:cd:ef", "/ld-musl-", "x/ld-musl-y",
};
#define WORDS (sizeof(words) / sizeof(words[0]))

#endif

int main(void)
{
#ifndef KCALL_WRAPPERS
	unsigned i, j;
	size_t n;
	int c;

	for (i = 0; i < WORDS; i++) {
		const char *a = words[i];

		CHECK_U64(own_strlen(a), strlen(a));
		for (n = 0; n < 12; n++)
			CHECK_U64(own_strnlen(a, n), strnlen(a, n));
		for (c = 0; c < 256; c++) {
			CHECK(own_strchr(a, c) == strchr(a, c));
			CHECK(own_strrchr(a, c) == strrchr(a, c));
			CHECK(own_strchrnul(a, c) == strchrnul(a, c));
			CHECK(own_memchr(a, c, strlen(a)) == memchr(a, c, strlen(a)));
		}
		for (j = 0; j < WORDS; j++) {
			const char *b = words[j];
			size_t m = strlen(a) < strlen(b) ? strlen(a) : strlen(b);

			CHECK(sign(own_strcmp(a, b)) == sign(strcmp(a, b)));
			CHECK(sign(own_memcmp(a, b, m)) == sign(memcmp(a, b, m)));
			/* ASCII's case: the library compares no other case. */
			CHECK(sign(own_strcasecmp(a, b)) == sign(strcasecmp(a, b)) ||
			      strpbrk(a, "\x80\xc9\xe9\xff") || strpbrk(b, "\x80\xc9\xe9\xff"));
			CHECK(own_strstr(a, b) == strstr(a, b));
			for (n = 0; n < 12; n++) {
				CHECK(sign(own_strncmp(a, b, n)) == sign(strncmp(a, b, n)));
				CHECK(sign(own_strncasecmp(a, b, n)) ==
					      sign(strncasecmp(a, b, n)) ||
				      strpbrk(a, "\x80\xc9\xe9\xff") ||
				      strpbrk(b, "\x80\xc9\xe9\xff"));
			}
		}
	}
	/* Bytes above 127 are larger, as unsigned char. */
	CHECK(own_strcmp("\xff", "a") > 0);
	CHECK(own_memcmp("\x80", "\x01", 1) > 0);
#endif
	return unit_report("cstring");
}
