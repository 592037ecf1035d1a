/* empty: a preloaded library with nothing in it, the floor that any preload pays at start-up. */

/* ISO C wants a translation unit to declare something. */
int backoff_bench_empty;
