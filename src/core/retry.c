/* The retry decisions (count, budget, delay) and the blocking retry loop, with counters. */
#include "core/retry.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include "core/policy.h"
#include "core/share.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/listen.h"
#include "sys/rng.h"
#include "sys/text.h"

static atomic_uint_fast64_t stat_calls, stat_retries, stat_giveups, stat_waited_ms, stat_unmanaged;
static atomic_uint_fast64_t stat_probed, stat_waited;

static void count(atomic_uint_fast64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static void uncount(atomic_uint_fast64_t *counter, uint64_t n)
{
	atomic_fetch_sub_explicit(counter, n, memory_order_relaxed);
}

void retry_stats_read(struct retry_stats *out)
{
	out->calls = atomic_load_explicit(&stat_calls, memory_order_relaxed);
	out->retries = atomic_load_explicit(&stat_retries, memory_order_relaxed);
	out->giveups = atomic_load_explicit(&stat_giveups, memory_order_relaxed);
	out->waited_ms = atomic_load_explicit(&stat_waited_ms, memory_order_relaxed);
	out->unmanaged = atomic_load_explicit(&stat_unmanaged, memory_order_relaxed);
	out->probed = atomic_load_explicit(&stat_probed, memory_order_relaxed);
	out->waited = atomic_load_explicit(&stat_waited, memory_order_relaxed);
}

void retry_count_shared(bool waited)
{
	count(waited ? &stat_waited : &stat_probed, 1);
}

void retry_count_unmanaged(void)
{
	count(&stat_unmanaged, 1);
}

/* The destination as the log prints it: the address, else the name looked up. */
static const char *target_text(const struct retry_call *c, char *buf, size_t size)
{
	struct text t;

	if (c->target) {
		target_format(c->target, buf, size);
	} else {
		/* A host name is escaped as target_format escapes a unix path. */
		text_init(&t, buf, size);
		if (c->name)
			text_escaped(&t, c->name, strnlen(c->name, size));
	}
	return buf;
}

static void log_simple(enum log_level level, const char *event, const struct retry_call *c, int err,
		       uint64_t attempt, int64_t delay_ms, int64_t elapsed_ms, const char *reason)
{
	char target[TARGET_TEXT_MAX];
	struct log_event ev = {
		.event = event,
		.call = c->call,
		.err = err,
		.err_name = err && c->err_name ? c->err_name(err) : NULL,
		.attempt = attempt,
		.delay_ms = delay_ms,
		.wait_ms = LOG_NONE,
		.elapsed_ms = elapsed_ms,
		.reason = reason,
	};

	if (!log_enabled(level))
		return;
	ev.target = target_text(c, target, sizeof(target));
	log_event(level, &ev);
}

void retry_log_pass(const char *call, const struct target_addr *target, int err, const char *reason)
{
	struct retry_call c = { .call = call, .target = target };

	if (log_enabled(LOG_LEVEL_DEBUG))
		log_simple(LOG_LEVEL_DEBUG, "pass", &c, err, 0, LOG_NONE, LOG_NONE, reason);
}

void retry_log_down(const char *call, const struct target_addr *target, uint64_t elapsed_ms)
{
	struct retry_call c = { .call = call, .target = target };

	log_simple(LOG_LEVEL_INFO, "down", &c, 0, 0, LOG_NONE, (int64_t)elapsed_ms, "budget-spent");
}

void retry_begin(const struct config *cfg, struct retry_progress *p, uint64_t budget_ms,
		 uint64_t now_ms)
{
	uint64_t budget = budget_ms < cfg->timeout_ms ? budget_ms : cfg->timeout_ms;

	p->attempt = 1;
	p->prev_ms = cfg->policy.base_ms;
	p->start_ms = now_ms;
	p->deadline_ms = budget == CONFIG_INFINITE ? CONFIG_INFINITE : now_ms + budget;
	/*
	 * Each call draws from a sequence of its own: with BACKOFF_SEED the same
	 * for every call, whichever thread makes it (the one --schedule prints),
	 * else one seeded from the thread's generator.
	 */
	p->rng = cfg->seeded ? rng_seed_state(cfg->seed, 0) : rng_next();
}

bool retry_allowed(const struct config *cfg, const struct retry_progress *p, uint64_t now_ms)
{
	return (cfg->retries == CONFIG_INFINITE || p->attempt <= cfg->retries) &&
	       now_ms < p->deadline_ms;
}

bool retry_is_last(const struct config *cfg, const struct retry_progress *p, uint64_t wake_ms)
{
	return wake_ms >= p->deadline_ms ||
	       (cfg->retries != CONFIG_INFINITE && p->attempt + 1 > cfg->retries);
}

bool retry_plan(const struct config *cfg, const struct retry_call *c, struct retry_progress *p,
		int err, uint64_t now_ms, uint64_t *wake_ms)
{
	const char *reason;
	uint64_t delay;

	/* Calls are counted at their first failure: a managed connect that succeeds is not one. */
	if (p->attempt == 1)
		count(&stat_calls, 1);
	if (cfg->retries != CONFIG_INFINITE && p->attempt > cfg->retries) {
		reason = "retries";
		goto give_up;
	}
	if (now_ms >= p->deadline_ms) {
		reason = "timeout";
		goto give_up;
	}
	delay = policy_next_delay(&cfg->policy, p->attempt, p->prev_ms, rng_step(&p->rng));
	p->prev_ms = delay;
	/* A wait never runs past the budget: the last attempt is made at its end. */
	*wake_ms = delay < p->deadline_ms - now_ms ? now_ms + delay : p->deadline_ms;
	if (log_enabled(LOG_LEVEL_INFO)) {
		char target[TARGET_TEXT_MAX];
		struct log_event ev = {
			.event = "retry",
			.call = c->call,
			.target = target_text(c, target, sizeof(target)),
			.err = err,
			.err_name = err && c->err_name ? c->err_name(err) : NULL,
			.attempt = p->attempt,
			.delay_ms = (int64_t)delay,
			.wait_ms = (int64_t)(*wake_ms - now_ms),
			.elapsed_ms = LOG_NONE,
		};

		log_event(LOG_LEVEL_INFO, &ev);
	}
	count(&stat_retries, 1);
	count(&stat_waited_ms, *wake_ms - now_ms);
	return true;
give_up:
	count(&stat_giveups, 1);
	log_simple(LOG_LEVEL_WARN, "giveup", c, err, p->attempt, LOG_NONE,
		   (int64_t)(now_ms - p->start_ms), reason);
	return false;
}

void retry_succeeded(const struct retry_call *c, const struct retry_progress *p, uint64_t now_ms)
{
	if (p->attempt > 1)
		log_simple(LOG_LEVEL_INFO, "success", c, 0, p->attempt, LOG_NONE,
			   (int64_t)(now_ms - p->start_ms), NULL);
}

/*
 * At debug: planned attempt @attempt was left to the prober, whose thread id
 * the line names (0: the attempt of another that holds no lease).
 */
static void log_waited(const struct retry_call *c, int err, uint64_t attempt, uint64_t start_ms)
{
	char why[64];
	struct text t;

	if (!log_enabled(LOG_LEVEL_DEBUG))
		return;
	text_init(&t, why, sizeof(why));
	text_str(&t, "left to prober tid ");
	text_u64(&t, (uint64_t)share_prober(c->shared));
	log_simple(LOG_LEVEL_DEBUG, "waited", c, err, attempt, LOG_NONE,
		   (int64_t)(clock_now_ms() - start_ms), why);
}

/* What a wait between attempts ended with. */
enum wait_end {
	WAIT_DUE,    /* the planned time came */
	WAIT_NOW,    /* a success or a listener: attempt at once */
	WAIT_SIGNAL, /* cut short by a signal */
	WAIT_MADE,   /* the prober's look was an attempt: its result is in *err */
};

/*
 * Wait until @until_ns on the shared slot of @c: woken by a success; as the
 * prober of a local destination (one thread per destination on the host),
 * looking for a listener every c->look_ns and renewing its lease; as a
 * waiter, taking over when the prober's lease runs out.  *@looking is
 * cleared when a look cannot be made; *@seen_listener keeps a listener
 * whose attempt failed from starting another before it goes away.
 */
static enum wait_end wait_shared(const struct retry_call *c, uint64_t until_ns, uint32_t seq,
				 bool *looking, bool *seen_listener, int *err)
{
	struct share_slot *s = c->shared;

	for (;;) {
		uint64_t now = clock_now_ns(), next = until_ns;

		if (share_seq(s) != seq)
			return WAIT_NOW;
		if (now >= until_ns)
			return WAIT_DUE;
		if (*looking && share_lead(s, now, now + 5 * c->look_ns)) {
			int found = listen_probe(c->target);

			if (found == 1 && !*seen_listener) {
				*seen_listener = true;
				return WAIT_NOW;
			}
			if (found == 0) {
				*seen_listener = false;
				share_note_looked(s, now);
			}
			if (found < 0 && c->target->family == AF_UNIX) {
				/*
				 * A socket file no socket here holds (stale, or bound in
				 * another network namespace): a refused unix attempt costs
				 * nothing, so the look is an attempt.
				 */
				*err = c->attempt(c->ctx);
				if (*err == 0 || !config_errset_has(c->retryable, *err))
					return WAIT_MADE;
				share_note(s, *err, clock_now_ns());
			} else if (found < 0) {
				*looking =
					false; /* the policy's attempts alone, as without sharing */
				share_leave(s);
			}
			if (now + c->look_ns < next)
				next = now + c->look_ns;
		} else if (*looking) {
			/*
			 * One waiter, the deputy, is back when the prober's lease
			 * ends, to take over if it is gone; the others sleep until a
			 * success or their planned attempt.
			 */
			uint64_t lease = share_lease_end(s);

			if (lease < now + c->look_ns)
				lease = now + c->look_ns;
			if (lease < next && share_deputy(s, now, lease + 5 * c->look_ns))
				next = lease;
		}
		if (share_wait(s, seq, next) != 0)
			return WAIT_SIGNAL;
	}
}

int retry_blocking(const struct config *cfg, const struct retry_call *c, int first_err)
{
	struct retry_progress p;
	uint64_t wake, last_ns = clock_now_ns();
	bool real = !c->first_waited, looking = c->shared && c->look_ns, seen_listener = false;
	uint32_t seq = c->shared ? share_seq(c->shared) : 0;
	int err = first_err;

	retry_begin(cfg, &p, c->budget_ms, last_ns / 1000000);
	/* Our first failure is news to the others (its errno included), unless it was theirs. */
	if (c->shared && real) {
		share_note(c->shared, first_err, last_ns);
		seq = share_seq(c->shared);
	}
	for (;;) {
		uint64_t now_ns = clock_now_ns(), now_ms = now_ns / 1000000, wake_ns;
		enum wait_end end = WAIT_DUE;
		bool last;

		if (!retry_plan(cfg, c, &p, err, now_ms, &wake))
			break;
		/* The wait is measured from now, not from now rounded down to the ms. */
		wake_ns = now_ns + (wake - now_ms) * 1000000;
		last = retry_is_last(cfg, &p, wake);
		if (c->shared)
			end = wait_shared(c, wake_ns, seq, &looking, &seen_listener, &err);
		else if (clock_wait_until_ns(wake_ns) != 0)
			end = WAIT_SIGNAL;
		if (end == WAIT_NOW || end == WAIT_MADE) {
			/* Woken before the planned time: the stats count the wait made. */
			uint64_t woke = clock_now_ns();

			if (woke < wake_ns)
				uncount(&stat_waited_ms, (wake_ns - woke) / 1000000);
		}
		if (end == WAIT_SIGNAL) {
			count(&stat_giveups, 1);
			log_simple(LOG_LEVEL_WARN, "giveup", c, err, p.attempt, LOG_NONE,
				   (int64_t)(clock_now_ms() - p.start_ms), "signal");
			break;
		}
		p.attempt++;
		if (end == WAIT_DUE && !last && c->shared &&
		    share_probed_since(c->shared, last_ns, clock_now_ns())) {
			/* Another found it down since our last attempt: its result is ours. */
			count(&stat_waited, 1);
			log_waited(c, err, p.attempt, p.start_ms);
			continue;
		}
		if (end != WAIT_MADE)
			err = c->attempt(c->ctx);
		real = true;
		last_ns = clock_now_ns();
		if (c->shared) {
			count(&stat_probed, 1);
			share_note(c->shared, err, last_ns);
			seq = share_seq(c->shared);
		}
		if (err == 0) {
			retry_succeeded(c, &p, last_ns / 1000000);
			break;
		}
		if (!config_errset_has(c->retryable, err))
			break;
	}
	if (c->shared)
		share_leave(c->shared);
	if (!real) {
		/* Every attempt was left to the prober: the answer is the kernel's, now. */
		err = c->attempt(c->ctx);
		share_note(c->shared, err, clock_now_ns());
	}
	return err;
}

static void errset_add(struct config_errset *set, int err)
{
	set->bits[err / 64] |= 1ULL << (err % 64);
}

/*
 * Measured on Linux: a connected AF_UNIX datagram socket whose receiver went
 * away fails once with ECONNREFUSED and is disconnected by it, so that a
 * second send fails with ENOTCONN: only a send that names its destination can
 * be repeated.  A connected UDP socket stays connected: ECONNREFUSED reports
 * the ICMP error of an earlier datagram and this one was not sent.
 */
void retry_send_errors(int family, int type, bool addressed, struct config_errset *out)
{
	bool any = family == AF_UNSPEC;

	memset(out, 0, sizeof(*out));
	errset_add(out, ENOBUFS);
	errset_add(out, ENOMEM);
	if (type != SOCK_DGRAM && !any)
		return;
	if (family == AF_INET || family == AF_INET6 || any) {
		errset_add(out, ECONNREFUSED);
		errset_add(out, ENETUNREACH);
		errset_add(out, EHOSTUNREACH);
		errset_add(out, ENETDOWN);
	}
	if ((family == AF_UNIX || any) && addressed) {
		errset_add(out, ENOENT);
		errset_add(out, ECONNREFUSED);
	}
}

void retry_dns_errors(struct config_errset *out)
{
	memset(out, 0, sizeof(*out));
	errset_add(out, RETRY_DNS_AGAIN);
}
