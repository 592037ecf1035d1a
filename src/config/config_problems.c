/* What a rejected value is told: its problem recorded and formatted, the value shown escaped. */
#include "config/config.h"

#include <stdio.h>
#include <string.h>

void config_excerpt(char *out, size_t size, const char *value)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(value), i, o = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		size_t need = (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') ? 1 : 4;

		if (o + need + 4 >= size) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (need == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

void config_add_problem(struct config_problems *problems, const char *name, const char *value,
			const char *message)
{
	struct config_problem *p;

	/* Defensive: a variable has one problem at most, and there are fewer than the slots. */
	if (problems->count == CONFIG_PROBLEMS_MAX) /* LCOV_EXCL_BR_LINE: defensive */
		return;
	p = &problems->item[problems->count++];
	snprintf(p->variable, sizeof(p->variable), "%s", name);
	config_excerpt(p->value, sizeof(p->value), value);
	snprintf(p->message, sizeof(p->message), "%s", message);
}

size_t config_problem_format(const struct config_problem *p, char *buf, size_t size)
{
	int n = snprintf(buf, size, "backoff: %s=\"%s\": %s", p->variable, p->value, p->message);

	/* Defensive: snprintf fails only for output beyond INT_MAX bytes. */
	if (n < 0) /* LCOV_EXCL_BR_LINE: defensive */
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}
