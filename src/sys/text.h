/* Bounded text building without stdio: async-signal-safe, always terminated. */
#ifndef BACKOFF_SYS_TEXT_H
#define BACKOFF_SYS_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct text {
	char *buf;
	size_t size; /* > 0 */
	size_t len;
};

void text_init(struct text *t, char *buf, size_t size);
void text_put(struct text *t, const char *s, size_t n);
void text_str(struct text *t, const char *s);
void text_u64(struct text *t, uint64_t v);
/* Zero-padded to @width digits. */
void text_u64_pad(struct text *t, uint64_t v, unsigned width);
/* Bytes outside printable ASCII and the backslash as \xNN. */
void text_escaped(struct text *t, const char *s, size_t n);
/* A JSON string literal, quotes included; other bytes >= 0x80 as \u00NN. */
void text_json_string(struct text *t, const char *s, size_t n);

#endif
