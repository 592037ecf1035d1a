/* Bounded text building without stdio, for log lines and addresses. */
#include "sys/text.h"

#include <string.h>

static const char hex[] = "0123456789abcdef";

void text_init(struct text *t, char *buf, size_t size)
{
	t->buf = buf;
	t->size = size;
	t->len = 0;
	buf[0] = '\0';
}

void text_put(struct text *t, const char *s, size_t n)
{
	size_t room = t->size - 1 - t->len;

	if (n > room)
		n = room;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

void text_str(struct text *t, const char *s)
{
	text_put(t, s, strlen(s));
}

void text_u64_pad(struct text *t, uint64_t v, unsigned width)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	while (sizeof(tmp) - i < width && i > 0)
		tmp[--i] = '0';
	text_put(t, tmp + i, sizeof(tmp) - i);
}

void text_u64(struct text *t, uint64_t v)
{
	text_u64_pad(t, v, 1);
}

void text_escaped(struct text *t, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			text_put(t, (const char *)&c, 1);
		} else {
			char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };

			text_put(t, e, 4);
		}
	}
}

void text_json_string(struct text *t, const char *s, size_t n)
{
	size_t i;

	text_put(t, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			text_put(t, e, 2);
		} else if (c >= 0x20 && c < 0x7f) {
			text_put(t, (const char *)&c, 1);
		} else {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			text_put(t, e, 6);
		}
	}
	text_put(t, "\"", 1);
}
