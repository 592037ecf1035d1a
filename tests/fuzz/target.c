/* libFuzzer target: BACKOFF_TARGETS patterns, socket addresses, matching and printing. */
#include "config/target.h"
#include "fuzz.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* Parse @text, which must be accepted, and say whether @t is eligible under it. */
static bool accepted_and_matches(const char *text, const struct target_addr *t)
{
	static struct target_set set;
	char why[256];

	REQUIRE(target_parse_list(text, &set, why, sizeof(why)) == 0);
	return target_matches(&set, t);
}

/*
 * The address part of the input: a family selector, a length adjustment, then
 * the bytes of a sockaddr of that family (any length the caller could pass).
 */
static bool address_from(const uint8_t *data, size_t size, struct target_addr *t)
{
	struct sockaddr_storage ss;
	static const sa_family_t families[] = { AF_INET, AF_INET6, AF_UNIX, AF_UNSPEC };
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	if (size < 2)
		return target_from_sockaddr(NULL, 0, t);
	ss.ss_family = families[data[0] % 4];
	len = (socklen_t)(data[1] % (sizeof(ss) + 1));
	size -= 2;
	if (size > sizeof(ss) - sizeof(sa_family_t))
		size = sizeof(ss) - sizeof(sa_family_t);
	memcpy((char *)&ss + sizeof(sa_family_t), data + 2, size);
	return target_from_sockaddr((struct sockaddr *)&ss, len, t);
}

static void check_printing(const struct target_addr *t)
{
	char buf[TARGET_TEXT_MAX], tiny[5];
	size_t n = target_format(t, buf, sizeof(buf));

	REQUIRE(n < sizeof(buf) && strlen(buf) == n);
	n = target_format(t, tiny, sizeof(tiny));
	REQUIRE(n < sizeof(tiny) && strlen(tiny) == n);
	REQUIRE(target_format(t, tiny, 0) == 0);
}

/* A unix path that reads the same as a glob and as text: no wildcard, separator or escape. */
static bool plain_path(const struct target_addr *t)
{
	size_t i;

	if (t->path_len == 0 || t->path[0] == ' ' || t->path[t->path_len - 1] == ' ' ||
	    t->path[0] == '\t' || t->path[t->path_len - 1] == '\t')
		return false;
	for (i = 0; i < t->path_len; i++) {
		unsigned char c = (unsigned char)t->path[i];

		if (c < 0x20 || c >= 0x7f || c == '*' || c == '?' || c == ',' || c == '\\')
			return false;
	}
	return true;
}

/* Patterns written from the address itself must accept it; their negation must not. */
static void check_self_patterns(const struct target_addr *t, unsigned bits)
{
	char text[TARGET_TEXT_MAX + 32], net[INET6_ADDRSTRLEN], neg[sizeof(text) + 1];
	unsigned char masked[16];
	unsigned i, max_bits;

	/* glibc's own sockets (nscd) match no pattern: never retried, whatever the list. */
	if (target_is_libc_internal(t)) {
		REQUIRE(!accepted_and_matches("*", t));
		return;
	}
	REQUIRE(accepted_and_matches("*", t));
	REQUIRE(!accepted_and_matches("!*", t));
	if (t->family == AF_UNIX) {
		if (!plain_path(t))
			return;
		target_format(t, text, sizeof(text));
	} else {
		target_format(t, text, sizeof(text));
		/* The network of the address with any prefix length, port included. */
		max_bits = t->family == AF_INET ? 32 : 128;
		bits %= max_bits + 1;
		memcpy(masked, t->ip, 16);
		for (i = 0; i < 16; i++) {
			unsigned keep = bits > i * 8 ? bits - i * 8 : 0;

			masked[i] &=
				(unsigned char)(keep >= 8 ? 0xff : (0xff << (8 - keep)) & 0xff);
		}
		inet_ntop(t->family, masked, net, sizeof(net));
		snprintf(neg, sizeof(neg), t->family == AF_INET ? "%s/%u:%u" : "[%s/%u]:%u", net,
			 bits, (unsigned)t->port);
		REQUIRE(accepted_and_matches(neg, t));
		snprintf(neg, sizeof(neg), "*:%u", (unsigned)t->port);
		REQUIRE(accepted_and_matches(neg, t));
	}
	REQUIRE(accepted_and_matches(text, t));
	snprintf(neg, sizeof(neg), "!%s", text);
	REQUIRE(!accepted_and_matches(neg, t));
	snprintf(neg, sizeof(neg), "!%s,*", text);
	REQUIRE(!accepted_and_matches(neg, t));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct target_set set;
	const uint8_t *nl = memchr(data, '\n', size);
	size_t text_len = nl ? (size_t)(nl - data) : size;
	char *text = malloc(text_len + 1), why[256];
	struct target_addr t;
	bool have_addr;
	int rc;

	REQUIRE(text != NULL);
	memcpy(text, data, text_len);
	text[text_len] = '\0';
	have_addr = nl && address_from(nl + 1, size - text_len - 1, &t);

	memset(why, 'x', sizeof(why));
	rc = target_parse_list(text, &set, why, sizeof(why));
	REQUIRE(rc == 0 || rc == -1);
	if (rc != 0) {
		REQUIRE(terminated(why, sizeof(why)) && why[0] != '\0');
	} else {
		REQUIRE(set.count >= 1 && set.count <= TARGET_PATTERNS_MAX);
		if (have_addr)
			(void)target_matches(&set, &t);
	}
	if (have_addr) {
		REQUIRE(t.family == AF_INET || t.family == AF_INET6 || t.family == AF_UNIX);
		REQUIRE(t.path_len <= TARGET_PATH_MAX);
		REQUIRE(target_same_address(&t, &t));
		check_printing(&t);
		check_self_patterns(&t, size > 0 ? data[size - 1] : 0);
	}
	free(text);
	return 0;
}
