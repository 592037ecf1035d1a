/* Load-time set-up, run once: by the constructor or by the first hook called. */
#ifndef BACKOFF_INIT_H
#define BACKOFF_INIT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "config/config.h"

/* Marks the hooks: everything else is hidden (-fvisibility=hidden, exports.map). */
#define EXPORT __attribute__((visibility("default")))

extern atomic_bool init_done;
extern struct config init_config;

/*
 * The supervisor that a static or Go program exec'd from this process runs
 * under (an absolute path), or NULL: set at load when the launcher's default
 * engine asked for it and no filter is in place yet.
 */
extern const char *init_supervisor;

void init_run_once(void);

/*
 * The configuration, initialising on first use: a hook may run before the
 * constructor (another library's constructor, a C++ static initialiser).
 * After set-up this costs one relaxed load.
 */
static inline const struct config *init_config_get(void)
{
	if (__builtin_expect(!atomic_load_explicit(&init_done, memory_order_acquire), 0))
		init_run_once();
	return &init_config;
}

#endif
