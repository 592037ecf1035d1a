/* The host-wide settings file: its NAME=value lines, parsed into the values config_parse looks up.
 */
#include "config/config.h"

#include <stdio.h>
#include <string.h>

#include "sys/startup.h"

STARTUP_CODE static void add_bad(struct config_file *out, unsigned line, const char *what,
				 const char *message)
{
	struct config_file_bad *b;

	if (out->bad_count++ >= CONFIG_FILE_BAD_MAX)
		return;
	b = &out->bad[out->bad_count - 1];
	b->line = line;
	snprintf(b->message, sizeof(b->message), "%s: %s", what, message);
}

/* One line @s (@n bytes, NUL-ended at @n), the @line-th of the file. */
STARTUP_CODE static void take_line(char *s, size_t n, unsigned line, struct config_file *out)
{
	struct config_unknown u;
	char what[64];
	const char *eq;

	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	if (n == 0 || *s == '#')
		return;
	eq = strchr(s, '=');
	if (strlen(s) == n && eq) {
		for (size_t i = 0; i < CONFIG_VARIABLES; i++) {
			if (strlen(config_variables[i]) == (size_t)(eq - s) &&
			    strncmp(config_variables[i], s, (size_t)(eq - s)) == 0) {
				out->value[i] = eq + 1;
				return;
			}
		}
		if (config_unknown_entry(s, &u)) {
			add_bad(out, line, u.name, u.message);
			return;
		}
	}
	config_excerpt(what, sizeof(what), s);
	if (strlen(s) != n)
		add_bad(out, line, what, "a NUL byte in the line");
	else
		add_bad(out, line, what,
			"expected NAME=value, NAME one of the BACKOFF_* variables");
}

STARTUP_CODE void config_file_parse(char *text, size_t len, struct config_file *out)
{
	size_t start = 0;
	unsigned line = 0;

	memset(out, 0, sizeof(*out));
	while (start < len) {
		size_t end = start;

		line++;
		while (end < len && text[end] != '\n')
			end++;
		text[end] = '\0';
		take_line(text + start, end - start, line, out);
		start = end + 1;
	}
}

const char *config_file_lookup(const char *name, void *ctx)
{
	const struct config_file *file = ctx;
	size_t i;

	/*
	 * config_parse asks with the table's own strings: a comparison of
	 * pointers finds each, where 27 names each compared with up to 27 cost
	 * 10,000 instructions at every start on a host with the file.
	 */
	for (i = 0; i < CONFIG_VARIABLES; i++)
		if (config_variables[i] == name)
			return file->value[i];
	for (i = 0; i < CONFIG_VARIABLES; i++)
		if (strcmp(config_variables[i], name) == 0)
			return file->value[i];
	return NULL;
}
