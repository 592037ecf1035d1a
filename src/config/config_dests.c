/* BACKOFF_DESTINATIONS: some destinations served by a policy of their own. */
#include "config/config.h"
#include "config/config_dests.h"

#include <stdio.h>
#include <string.h>

#include "sys/startup.h"
#include "sys/text.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * What an entry may set: the variables of a call's attempts, without
 * BACKOFF_, in lower case.  Not the protocols' answers or the early close's
 * reading: those are read on a connection's bytes, under the global values.
 */
static const char keys[][16] = {
	"policy",  "base",    "multiplier",	 "cap",	   "jitter",
	"retries", "timeout", "attempt-timeout", "errors", "",
};

#define ENTRY_MAX 512 /* the longest entry, in bytes */

/* Whether @c separates an entry's words. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* The variable that @key (@len bytes) sets into @name, or false if it is not one of keys. */
STARTUP_CODE static bool variable_of(const char *key, size_t len, char *name, size_t size)
{
	size_t i, k;

	for (k = 0; keys[k][0]; k++)
		if (strlen(keys[k]) == len && memcmp(keys[k], key, len) == 0)
			break;
	if (!keys[k][0] || sizeof("BACKOFF_") + len > size)
		return false;
	memcpy(name, "BACKOFF_", 8);
	for (i = 0; i < len; i++)
		name[8 + i] = (char)(key[i] == '-' ? '_' : key[i] - 'a' + 'A');
	name[8 + len] = '\0';
	return true;
}

/* One setting KEY=VALUE of an entry, into @cfg: 0, or -1 with why in @why. */
STARTUP_CODE static int take_setting(struct config *cfg, char *word, bool presets, char *why,
				     size_t why_size)
{
	char *eq = strchr(word, '='), name[40], inner[160];
	const char *said = inner;

	if (!eq || eq == word) {
		snprintf(why, why_size,
			 "\"%.40s\" is not a setting: expected KEY=VALUE such as timeout=2s", word);
		return -1;
	}
	*eq = '\0';
	/* The preset first, whatever the order: the other settings amend it. */
	if ((strcmp(word, "policy") == 0) != presets)
		return 0;
	if (!variable_of(word, (size_t)(eq - word), name, sizeof(name))) {
		const char *list[N(keys)], *near;
		size_t k;

		for (k = 0; k < N(keys); k++) /* config_nearest's list, NULL last */
			list[k] = keys[k][0] ? keys[k] : NULL;
		near = config_nearest(word, (size_t)(eq - word), list);

		if (near)
			snprintf(why, why_size, "no setting \"%.30s\" (did you mean %s?)", word,
				 near);
		else
			snprintf(why, why_size,
				 "no setting \"%.30s\": expected policy, base, multiplier, cap, "
				 "jitter, retries, timeout, attempt-timeout or errors",
				 word);
		return -1;
	}
	if (presets) {
		if (config_preset_apply(cfg, eq + 1))
			return 0;
		said = "expected default, google, clearblade, aws, grpc or none";
	} else if (config_set_variable(cfg, name, eq + 1, inner, sizeof(inner)) == 0) {
		return 0;
	}
	snprintf(why, why_size, "%.20s=%.30s: %.100s", word, eq + 1, said);
	return -1;
}

/* The entry @text (@len bytes) into @d, a copy of @base: 0, or -1 with why in @why. */
STARTUP_CODE static int take_entry(const struct config *base, const char *text, size_t len,
				   struct config_dest *d, char *why, size_t why_size)
{
	char buf[ENTRY_MAX], *word, *words[64];
	size_t n = 0, i;
	int pass;

	if (len >= sizeof(buf)) {
		snprintf(why, why_size, "longer than %d bytes", ENTRY_MAX - 1);
		return -1;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	for (word = buf; *word;) {
		while (is_blank(*word))
			*word++ = '\0';
		if (!*word)
			break;
		if (n == N(words)) {
			snprintf(why, why_size, "more than %zu words", N(words));
			return -1;
		}
		words[n++] = word;
		while (*word && !is_blank(*word))
			word++;
	}
	if (n < 2) {
		struct text t;

		/* Not snprintf: a constant's copy would import strcpy, a lookup at every start. */
		text_init(&t, why, why_size);
		text_str(&t, "expected PATTERNS then settings such as timeout=2s");
		return -1;
	}
	if (target_parse_list(words[0], &d->match, why, why_size) != 0)
		return -1;
	d->cfg = *base;
	d->cfg.dests_text = NULL;
	d->cfg.dests = NULL;
	d->cfg.dest_count = 0;
	for (pass = 0; pass < 2; pass++)
		for (i = 1; i < n; i++) {
			/* take_setting cuts the word at its '=': a copy for each pass. */
			char one[ENTRY_MAX];

			snprintf(one, sizeof(one), "%s", words[i]);
			if (take_setting(&d->cfg, one, pass == 0, why, why_size) != 0)
				return -1;
		}
	/* The cap is the largest delay: not below the base. */
	if (d->cfg.policy.cap_ms < d->cfg.policy.base_ms) {
		snprintf(why, why_size, "its cap (%llums) is below its base (%llums)",
			 (unsigned long long)d->cfg.policy.cap_ms,
			 (unsigned long long)d->cfg.policy.base_ms);
		return -1;
	}
	return 0;
}

STARTUP_CODE void config_dests_build(struct config *cfg, struct config_dest *table, unsigned max,
				     struct config_problems *problems)
{
	const char *p = cfg->dests_text, *end;
	char why[220], message[260];
	unsigned n = 0, entry = 0;

	cfg->dests = NULL;
	cfg->dest_count = 0;
	if (!p)
		return;
	for (; *p; p = *end ? end + 1 : end) {
		const char *q;

		end = strchr(p, ';');
		if (!end)
			end = p + strlen(p);
		for (q = p; q < end && is_blank(*q); q++)
			;
		if (q == end)
			continue; /* an empty entry: a trailing ';' */
		entry++;
		if (n == max) {
			snprintf(message, sizeof(message), "at most %u entries", max);
			goto bad;
		}
		if (take_entry(cfg, p, (size_t)(end - p), &table[n], why, sizeof(why)) != 0) {
			snprintf(message, sizeof(message), "entry %u: %s", entry, why);
			goto bad;
		}
		n++;
	}
	cfg->dests = table;
	cfg->dest_count = n;
	return;
bad:
	config_add_problem(problems, "BACKOFF_DESTINATIONS", cfg->dests_text, message);
}

unsigned config_entry_of(const struct config *cfg, const struct target_addr *t)
{
	unsigned i;

	for (i = 0; i < cfg->dest_count; i++)
		if (target_matches(&cfg->dests[i].match, t))
			return i + 1;
	return 0;
}

const struct config *config_for_slow(const struct config *cfg, const struct target_addr *t)
{
	unsigned i = config_entry_of(cfg, t);

	return i ? &cfg->dests[i - 1].cfg : cfg;
}
