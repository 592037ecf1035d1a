/* BACKOFF_PROGRAMS: the list of the programs served, checked, and a program looked up in it. */
#include "config/config.h"
#include "sys/startup.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

/*
 * The next name of a BACKOFF_PROGRAMS list from *@s on, without the spaces
 * around it: its start in *@name, its length returned, whether it is an
 * exclusion in *@excluded; *@s moves past its comma, to NULL after the last.
 */
static size_t programs_next(const char **s, const char **name, bool *excluded)
{
	const char *p = *s, *end = strchr(p, ',');
	size_t n = end ? (size_t)(end - p) : strlen(p);

	*s = end ? end + 1 : NULL;
	while (n > 0 && *p == ' ') {
		p++;
		n--;
	}
	while (n > 0 && p[n - 1] == ' ')
		n--;
	*excluded = n > 0 && *p == '!';
	if (*excluded) {
		p++;
		n--;
	}
	*name = p;
	return n;
}

bool config_programs_valid(const char *programs)
{
	const char *rest = programs, *name;
	bool excluded;

	while (rest) {
		size_t n = programs_next(&rest, &name, &excluded), i;

		/* A base name, as execve's file names one: no slash, nothing unprintable. */
		if (n == 0 || n > NAME_MAX)
			return false;
		for (i = 0; i < n; i++)
			if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
				return false;
	}
	return true;
}

STARTUP_CODE bool config_program_served(const char *programs, const char *name)
{
	const char *rest = programs, *item;
	size_t len = strlen(name);
	bool excluded, only_exclusions = true;

	while (rest) {
		size_t n = programs_next(&rest, &item, &excluded);

		if (n == len && strncmp(item, name, n) == 0)
			return !excluded;
		only_exclusions &= excluded;
	}
	return only_exclusions;
}
