/*
 * Where one call stands between attempts: plain data, held by the call's
 * driver, written and read by engine/engine alone (engine_begin,
 * engine_step); a driver asks what it may know of it (engine_planned_ms,
 * engine_started_ms, engine_attempted) and reads what is said from the
 * engine's actions.
 */
#ifndef BACKOFF_ENGINE_PROGRESS_H
#define BACKOFF_ENGINE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct retry_progress {
	uint64_t attempt;     /* attempts made so far */
	uint64_t prev_ms;     /* the previous delay (decorrelated jitter) */
	uint64_t start_ms;    /* monotonic time of the first attempt */
	uint64_t deadline_ms; /* CONFIG_INFINITE or start + budget */
	uint64_t rng;	      /* this call's own random sequence (splitmix64 state) */
	uint64_t planned_ms;  /* when the planned attempt is due */
	int answer_err;	      /* the last error the kernel gave, not our deadline's ETIMEDOUT */
	int last_err;	      /* the error of the last attempt, ours or another's */
	bool told;	      /* the long wait was said (CONFIG_TELL_WAIT_MS) */
	bool real;	      /* an attempt of the call's own was made */
	bool final; /* its next (or current) attempt is its last: its outcome is the call's */
	/*
	 * The new connection of an early close (engine_begin's @again): whether
	 * its destination is local (its listener has ENGINE_ACCEPT_MS to take
	 * it), and by when it must have answered (CONFIG_INFINITE: no bound), 0
	 * for a connect of the program's own.
	 */
	bool again_local;
	uint64_t again_until_ms;
};

#endif
