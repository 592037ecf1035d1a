/*
 * The library's own string, memory and address-text functions
 * (sys/cstring.c) against the C library's, on every pair of a table of
 * strings and each byte: the same sign, the same pointer, the same bytes and
 * errno.  Compiled here under other names.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

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
void *own_memcpy(void *restrict dst, const void *restrict src, size_t n);
void *own_memmove(void *dst, const void *src, size_t n);
int own_inet_pton(int af, const char *restrict src, void *restrict dst);
const char *own_inet_ntop(int af, const void *restrict src, char *restrict dst, socklen_t size);
char *own_secure_getenv(const char *name);

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
#define memcpy own_memcpy
#define memmove own_memmove
#define inet_pton own_inet_pton
#define inet_ntop own_inet_ntop
#define secure_getenv own_secure_getenv
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
#undef memcpy
#undef memmove
#undef inet_pton
#undef inet_ntop
#undef secure_getenv

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

/* Addresses as text, good and bad, for both families. */
static const char *const addresses[] = {
	"0.0.0.0",
	"127.0.0.1",
	"255.255.255.255",
	"1.2.3.4",
	"256.1.1.1",
	"1.2.3",
	"1.2.3.4.",
	"1.2.3.4.5",
	"01.2.3.4",
	"1.02.3.4",
	"1.2.3.0",
	"1..2.3",
	".1.2.3",
	"1.2.3.4 ",
	" 1.2.3.4",
	"1.2.3.a",
	"",
	"::",
	"::1",
	"1::",
	"1::2",
	":1::",
	"1:::2",
	":::",
	"1:",
	":",
	"::1:",
	"1::2:",
	"1:2:3:4:5:6:7:8",
	"1:2:3:4:5:6:7:8:9",
	"1:2:3:4:5:6:7",
	"1:2:3:4:5:6:7::",
	"::2:3:4:5:6:7:8",
	"1:2:3:4:5:6::8",
	"1::2::3",
	"12345::",
	"ABCD:ef01::FfFf",
	"g::",
	"::ffff:1.2.3.4",
	"::1.2.3.4",
	"::ffff:1.2.3",
	"::ffff:1.2.3.4.5",
	"1:2:3:4:5:6:1.2.3.4",
	"1:2:3:4:5:6:7:1.2.3.4",
	"::1234.1.1.1",
	"::a.2.3.4",
	"::ffff:01.2.3.4",
	"fe80::1%1",
	"2001:db8::1",
	"2001:db8:0:0:1:0:0:1",
	"2001:0db8:0000:0000:0000:0000:0000:0001",
	"1.2.3.4:80",
	"[::1]",
	"::ffff:0:1.2.3.4",
	"0:0:0:0:0:0:0:0",
	"0:0:0:0:0:0:0:1",
};
#define ADDRESSES (sizeof(addresses) / sizeof(addresses[0]))

/* inet_pton of @text in @af by both: the same answer, the same bytes; then back to text. */
static void check_address(int af, const char *text)
{
	unsigned char mine[16] = { 0 }, theirs[16] = { 0 };
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	socklen_t size;
	int r = own_inet_pton(af, text, mine);

	CHECK(r == inet_pton(af, text, theirs));
	CHECK(memcmp(mine, theirs, sizeof(mine)) == 0);
	if (r != 1)
		return;
	for (size = 0; size <= sizeof(a); size++) {
		const char *x, *y;
		int ex, ey;

		errno = 0;
		x = own_inet_ntop(af, mine, a, size);
		ex = errno;
		errno = 0;
		y = inet_ntop(af, mine, b, size);
		ey = errno;
		CHECK((x == NULL) == (y == NULL));
		CHECK(ex == ey);
		if (x && y)
			CHECK(strcmp(a, b) == 0);
	}
}

/* inet_ntop of every address made of runs of zero and other groups, and mapped ones. */
static void check_groups(void)
{
	unsigned char addr[16];
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	unsigned mask, i;

	for (mask = 0; mask < 256; mask++) {
		for (i = 0; i < 8; i++) {
			addr[2 * i] = (mask >> i & 1) ? (unsigned char)(i * 17) : 0;
			addr[2 * i + 1] = (mask >> i & 1) ? (unsigned char)(i + 1) : 0;
		}
		CHECK(strcmp(own_inet_ntop(AF_INET6, addr, a, sizeof(a)),
			     inet_ntop(AF_INET6, addr, b, sizeof(b))) == 0);
		addr[10] = addr[11] = 0xff;
		CHECK(strcmp(own_inet_ntop(AF_INET6, addr, a, sizeof(a)),
			     inet_ntop(AF_INET6, addr, b, sizeof(b))) == 0);
	}
	errno = 0;
	CHECK(own_inet_pton(AF_UNIX, "1.2.3.4", addr) == -1 && errno == EAFNOSUPPORT);
	errno = 0;
	CHECK(own_inet_ntop(AF_UNIX, addr, a, sizeof(a)) == NULL && errno == EAFNOSUPPORT);
}

/* memcpy and memmove at every alignment, length and overlap of a small buffer. */
static void check_copies(void)
{
	unsigned char mine[64], theirs[64];
	unsigned from, to, n, i;

	for (from = 0; from < 24; from++)
		for (to = 0; to < 24; to++)
			for (n = 0; n < 40; n++) {
				for (i = 0; i < sizeof(mine); i++)
					mine[i] = theirs[i] = (unsigned char)(i * 7 + 1);
				CHECK(own_memmove(mine + to, mine + from, n) == mine + to);
				memmove(theirs + to, theirs + from, n);
				CHECK(memcmp(mine, theirs, sizeof(mine)) == 0);
				if (from + n > to && to + n > from)
					continue; /* memcpy's areas do not overlap */
				for (i = 0; i < sizeof(mine); i++)
					mine[i] = theirs[i] = (unsigned char)(i * 5 + 3);
				CHECK(own_memcpy(mine + to, theirs + from + 0, n) == mine + to);
				memcpy(theirs + to, theirs + from, n);
				CHECK(memcmp(mine + to, theirs + to, n) == 0);
			}
}

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
	for (i = 0; i < ADDRESSES; i++) {
		check_address(AF_INET, addresses[i]);
		check_address(AF_INET6, addresses[i]);
	}
	check_groups();
	check_copies();
	/* The environment: a name, its prefix, a longer one, an empty value, none. */
	setenv("CSTRING_A", "one", 1);
	setenv("CSTRING_AB", "", 1);
	{
		static const char *const names[] = { "CSTRING_A",     "CSTRING_AB", "CSTRING_",
						     "CSTRING_ABC",   "",	    "PATH",
						     "CSTRING_A=one", "NOPE" };

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			CHECK(own_secure_getenv(names[i]) == secure_getenv(names[i]));
	}
	/* Bytes above 127 are larger, as unsigned char. */
	CHECK(own_strcmp("\xff", "a") > 0);
	CHECK(own_memcmp("\x80", "\x01", 1) > 0);
#endif
	return unit_report("cstring");
}
