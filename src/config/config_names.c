/* Names: the BACKOFF_* variables the environment holds that no one reads, and the nearest known. */
#include "config/config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sys/cookie.h"
#include "sys/startup.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Names read by the launcher or passed between the engines, not by config_parse. */
static const char other_names[][20] = { "BACKOFF_LIBRARY", COOKIE_ENV };

#define PREFIX "BACKOFF_"
#define PREFIX_LEN (sizeof(PREFIX) - 1)
#define SUFFIX_CMP_MAX 40 /* a longer name gets no suggestion */

static const char *known_name(size_t i)
{
	size_t n = 0;

	while (config_variables[n][0]) /* without the empty name */
		n++;
	return i < n ? config_variables[i] : i - n < N(other_names) ? other_names[i - n] : NULL;
}

/* More than every known name: the suffixes closest_name compares. */
#define NAMES_MAX 64

static int fold(char c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/*
 * Edits (insertion, deletion, substitution, transposition of neighbours) from
 * @a to @b, ASCII case ignored; both at most SUFFIX_CMP_MAX bytes.
 */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t rows[3][SUFFIX_CMP_MAX + 1], i, j;
	size_t *before = rows[0], *prev = rows[1], *cur = rows[2], *spare;

	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t d = prev[j - 1] + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) && before[j - 2] + 1 < d)
				d = before[j - 2] + 1;
			cur[j] = d;
		}
		spare = before;
		before = prev;
		prev = cur;
		cur = spare;
	}
	return prev[lb];
}

const char *config_nearest(const char *word, size_t len, const char *const *names)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX, i;

	if (len > SUFFIX_CMP_MAX)
		return NULL;
	for (i = 0; names[i]; i++) {
		size_t lk = strlen(names[i]), longer = lk > len ? lk : len, d;

		if (lk > SUFFIX_CMP_MAX)
			continue;
		d = edit_distance(word, len, names[i], lk);
		if (d <= (longer + 2) / 3 && d <= 3 && d < best_d) {
			best = names[i];
			best_d = d;
		}
	}
	return best;
}

/*
 * The known name that @suffix (after BACKOFF_) most likely misspells: the
 * nearest within a third of its length (at most 3 edits), else the longest
 * known name it extends by a word (BACKOFF_LOG_LEVEL: BACKOFF_LOG); or NULL.
 */
static const char *closest_name(const char *suffix, size_t len)
{
	const char *suffixes[NAMES_MAX + 1], *best, *k;
	size_t best_len = 0, i, n = 0;

	for (i = 0; (k = known_name(i)) != NULL && n < NAMES_MAX; i++)
		if (strncmp(k, PREFIX, PREFIX_LEN) == 0) /* BACKOFF itself: no suffix */
			suffixes[n++] = k + PREFIX_LEN;
	suffixes[n] = NULL;
	best = config_nearest(suffix, len, suffixes);
	if (best)
		return best - PREFIX_LEN;
	if (len > SUFFIX_CMP_MAX)
		return NULL;
	for (i = 0; (k = known_name(i)) != NULL; i++) {
		size_t lk = strlen(k);

		if (lk > best_len && lk > PREFIX_LEN && lk - PREFIX_LEN < len &&
		    suffix[lk - PREFIX_LEN] == '_' &&
		    strncasecmp(suffix, k + PREFIX_LEN, lk - PREFIX_LEN) == 0) {
			best = k;
			best_len = lk;
		}
	}
	return best;
}

bool config_unknown_entry(const char *entry, struct config_unknown *out)
{
	const char *eq, *closest, *known;
	char name[128];
	size_t len, i;

	if (strncmp(entry, PREFIX, PREFIX_LEN) != 0)
		return false;
	eq = strchr(entry, '=');
	len = eq ? (size_t)(eq - entry) : strlen(entry);
	for (i = 0; (known = known_name(i)) != NULL; i++)
		if (strlen(known) == len && strncmp(known, entry, len) == 0)
			return false;
	/* Cut to the buffer: excerpt() marks a name longer than its output. */
	snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1),
		 entry);
	config_excerpt(out->name, sizeof(out->name), name);
	closest = closest_name(entry + PREFIX_LEN, len - PREFIX_LEN);
	if (closest)
		snprintf(out->message, sizeof(out->message), "unknown variable (did you mean %s?)",
			 closest);
	else
		snprintf(out->message, sizeof(out->message), "unknown variable");
	return true;
}

STARTUP_CODE unsigned config_unknown_scan(char *const *env, config_unknown_fn *report, void *ctx)
{
	struct config_unknown u;
	unsigned n = 0;

	for (; env && *env; env++) {
		if (config_unknown_entry(*env, &u)) {
			report(&u, ctx);
			n++;
		}
	}
	return n;
}
