/* BACKOFF_DESTINATIONS: its entries built, and the one that serves a destination. */
#ifndef BACKOFF_CONFIG_CONFIG_DESTS_H
#define BACKOFF_CONFIG_CONFIG_DESTS_H

#include "config/config.h"
#include "config/target.h"

/*
 * The entries of @cfg's BACKOFF_DESTINATIONS ("PATTERNS key=value ...;
 * ..."), each a copy of @cfg with its settings, into @table (@max entries,
 * the caller's storage, which must outlive @cfg); then @cfg serves them
 * (config_for).  A bad value is one problem in @problems naming the
 * variable, and no entry is taken.  Call it after config_parse, before
 * before_configure.  Pure.
 */
void config_dests_build(struct config *cfg, struct config_dest *table, unsigned max,
			struct config_problems *problems);

/* The entry of BACKOFF_DESTINATIONS that serves @t, from 1; 0: the global policy.  Pure. */
unsigned config_entry_of(const struct config *cfg, const struct target_addr *t);

const struct config *config_for_slow(const struct config *cfg, const struct target_addr *t);

/*
 * The configuration that serves connects to @t: the first entry of
 * BACKOFF_DESTINATIONS whose patterns match it, else @cfg itself (one load
 * when the variable is unset).  Pure.
 */
static inline const struct config *config_for(const struct config *cfg, const struct target_addr *t)
{
	return __builtin_expect(cfg->dest_count == 0, 1) ? cfg : config_for_slow(cfg, t);
}

#endif
