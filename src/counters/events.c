/* Counters for BACKOFF_STATS and the event lines of retries, give-ups and passes. */
#include "counters/events.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "config/config.h"
#include "sys/log.h"
#include "sys/text.h"

/* What an event line says, by its kind. */
enum events_kind {
	EVENTS_KIND_OTHER, /* its name and reason */
	EVENTS_KIND_RETRY,
	EVENTS_KIND_SUCCESS,
	EVENTS_KIND_GIVEUP,
	EVENTS_KIND_WAITING,
	EVENTS_KIND_WOKE,
	EVENTS_KIND_ENDED,
	EVENTS_KIND_EARLY, /* an early close, or a "try later" answer (ev->answer) */
	EVENTS_KIND_EARLY_END,
	EVENTS_KIND_FULL,
	EVENTS_KIND_DAMPED,
	EVENTS_KIND_DOWN,
};

static atomic_uint_fast64_t stat_calls, stat_retries, stat_giveups, stat_waited_ms, stat_unmanaged;
static atomic_uint_fast64_t stat_probed, stat_waited, stat_early, stat_try_later;

static void count(atomic_uint_fast64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

void events_stats_read(struct log_stats *out)
{
	out->calls = atomic_load_explicit(&stat_calls, memory_order_relaxed);
	out->retries = atomic_load_explicit(&stat_retries, memory_order_relaxed);
	out->giveups = atomic_load_explicit(&stat_giveups, memory_order_relaxed);
	out->waited_ms = atomic_load_explicit(&stat_waited_ms, memory_order_relaxed);
	out->unmanaged = atomic_load_explicit(&stat_unmanaged, memory_order_relaxed);
	out->probed = atomic_load_explicit(&stat_probed, memory_order_relaxed);
	out->waited = atomic_load_explicit(&stat_waited, memory_order_relaxed);
	out->early = atomic_load_explicit(&stat_early, memory_order_relaxed);
	out->try_later = atomic_load_explicit(&stat_try_later, memory_order_relaxed);
}

void events_probed(void)
{
	count(&stat_probed, 1);
}

void events_waited(void)
{
	count(&stat_waited, 1);
}

void events_unmanaged(void)
{
	count(&stat_unmanaged, 1);
}

void events_woke_early(uint64_t early_ms)
{
	atomic_fetch_sub_explicit(&stat_waited_ms, early_ms, memory_order_relaxed);
}

static const char *reason_text(const char *reason)
{
	if (strcmp(reason, "retries") == 0)
		return "retries exhausted";
	if (strcmp(reason, "timeout") == 0)
		return "time budget spent";
	if (strcmp(reason, "signal") == 0)
		return "interrupted by a signal";
	return reason;
}

/* What follows an early close, by its reason. */
static const char *early_text(const char *reason)
{
	if (strcmp(reason, "reconnect") == 0)
		return "connecting again (nothing was sent)";
	if (strcmp(reason, "replay") == 0)
		return "connecting again, then sending again what was sent";
	if (strcmp(reason, "sent") == 0)
		return "the program sees it (it had sent data, not replayed)";
	if (strcmp(reason, "nonblocking") == 0)
		return "the program sees it (a non-blocking socket)";
	if (strcmp(reason, "retries") == 0)
		return "the program sees it (retries exhausted)";
	if (strcmp(reason, "budget") == 0)
		return "the program sees it (time budget spent)";
	if (strcmp(reason, "own-timeout") == 0)
		return "the program sees it (its read has a timeout of its own)";
	return reason;
}

/*
 * The sentence of an event of @kind, for the text format (the JSON format
 * gives its fields), in @t; NULL: the event's name and reason are said.
 */
static const char *sentence(struct text *t, enum events_kind kind, const struct log_event *ev)
{
	switch (kind) {
	case EVENTS_KIND_RETRY:
		text_str(t, log_err_text(ev));
		text_str(t, " (attempt ");
		text_u64(t, ev->attempt);
		text_str(t, "), retrying in ");
		text_u64(t, (uint64_t)(ev->wait_ms != LOG_NONE ? ev->wait_ms : ev->delay_ms));
		text_str(t, "ms");
		if (ev->wait_ms != LOG_NONE && ev->wait_ms != ev->delay_ms) {
			text_str(t, " (the end of the time budget; drawn ");
			text_u64(t, (uint64_t)ev->delay_ms);
			text_str(t, "ms)");
		}
		break;
	case EVENTS_KIND_SUCCESS:
		text_str(t, "succeeded on attempt ");
		text_u64(t, ev->attempt);
		text_str(t, " after ");
		text_u64(t, (uint64_t)ev->elapsed_ms);
		text_str(t, "ms");
		break;
	case EVENTS_KIND_GIVEUP:
		text_str(t, "giving up after ");
		text_u64(t, ev->attempt);
		text_str(t, ev->attempt == 1 ? " attempt in " : " attempts in ");
		text_u64(t, (uint64_t)ev->elapsed_ms);
		text_str(t, "ms: ");
		/* A non-blocking give-up leaves the error pending for the program, unread. */
		text_str(t, ev->err ? log_err_text(ev) : "connection failed");
		text_str(t, " (");
		text_str(t, reason_text(ev->reason ? ev->reason : "?"));
		text_str(t, ")");
		break;
	case EVENTS_KIND_WAITING:
		text_str(t, ev->err ? log_err_text(ev) : "no connection");
		text_str(t, " for ");
		text_u64(t, (uint64_t)ev->elapsed_ms);
		text_str(t, "ms (");
		text_u64(t, ev->attempt);
		text_str(t, ev->attempt == 1 ? " attempt), still retrying"
					     : " attempts), still retrying");
		if (ev->wait_ms != LOG_NONE) {
			text_str(t, " for up to ");
			text_u64(t, (uint64_t)ev->wait_ms);
			text_str(t, "ms more (BACKOFF_TIMEOUT)");
		} else {
			text_str(t, " with no time budget (BACKOFF_TIMEOUT=inf)");
		}
		text_str(t, "; BACKOFF_LOG=info shows each retry");
		break;
	case EVENTS_KIND_WOKE:
		text_str(t, "the planned wait ended ");
		text_u64(t, (uint64_t)ev->wait_ms);
		text_str(t, ev->reason && strcmp(ev->reason, "look") == 0
				    ? "ms early: a look at the destination made an attempt, which "
				      "counts as "
				      "this call's"
				    : "ms early: a listener appeared or another process connected; "
				      "attempting now");
		break;
	case EVENTS_KIND_ENDED:
		text_str(t, "ended by the program (it closed the socket) after ");
		text_u64(t, ev->attempt);
		text_str(t, ev->attempt == 1 ? " attempt in " : " attempts in ");
		text_u64(t, (uint64_t)ev->elapsed_ms);
		text_str(t, "ms");
		break;
	case EVENTS_KIND_EARLY:
		if (!ev->answer) {
			text_str(t, "closed by the peer before its first byte (early close ");
		} else {
			text_str(t, "the server said \"try later\" (");
			text_str(t, ev->answer ? ev->answer : "?");
			text_str(t, "; ");
		}
		text_u64(t, ev->attempt);
		text_str(t, " in a row); ");
		text_str(t, early_text(ev->reason ? ev->reason : "?"));
		text_str(t, ", new connects wait ");
		text_u64(t, (uint64_t)ev->delay_ms);
		text_str(t, "ms");
		break;
	case EVENTS_KIND_EARLY_END:
		if (ev->err) {
			text_str(t, log_err_text(ev));
			text_str(t, " on connecting again");
		} else if (ev->reason && strcmp(ev->reason, "answer") == 0) {
			text_str(t, "closed by the peer before its first byte, nothing sent: "
				    "taken for its answer (BACKOFF_EARLY_CLOSE=refusal connects "
				    "again)");
		} else if (ev->reason && strcmp(ev->reason, "unaccepted") == 0) {
			text_str(t, "closed by the peer before its first byte, and its listener "
				    "did not accept the new connection");
		} else if (ev->reason && strcmp(ev->reason, "gone") == 0) {
			text_str(t, "closed by the peer before its first byte, and nothing listens "
				    "there "
				    "any more");
		} else {
			text_str(t, "the new connection sent nothing in its attempt's time");
		}
		if (ev->reason &&
		    (strcmp(ev->reason, "gone") == 0 || strcmp(ev->reason, "unaccepted") == 0))
			text_str(t, ": the listener served its one connection");
		text_str(t, "; the program gets the end it met");
		break;
	case EVENTS_KIND_FULL:
		text_str(t,
			 "the server said it is full: waiting in its line for a connection to it "
			 "to close (");
		text_u64(t, ev->attempt);
		text_str(t, " ahead; looking again in ");
		text_u64(t, (uint64_t)ev->wait_ms);
		text_str(t, "ms)");
		break;
	case EVENTS_KIND_DAMPED:
		text_str(t, "waiting ");
		text_u64(t, (uint64_t)ev->wait_ms);
		text_str(t, "ms before connecting: ");
		text_u64(t, ev->attempt);
		text_str(t, ev->attempt == 1 ? " connection ended early or said \"try later\""
					     : " connections in a row ended early or said \"try "
					       "later\"");
		break;
	case EVENTS_KIND_DOWN:
		text_str(t, "known down: no success in ");
		text_u64(t, (uint64_t)ev->elapsed_ms);
		text_str(t, "ms, its time budget; further connects get the kernel's answer at once "
			    "until one succeeds");
		break;
	case EVENTS_KIND_OTHER:
		return NULL;
	}
	return t->buf;
}

/* The destination as the log prints it: the address, else the name looked up. */
static const char *subject_text(const struct events_subject *s, char *buf, size_t size)
{
	struct text t;

	if (s->target) {
		target_format(s->target, buf, size);
	} else {
		/* A host name is escaped as target_format escapes a unix path. */
		text_init(&t, buf, size);
		if (s->name)
			text_escaped(&t, s->name, strnlen(s->name, size));
	}
	return buf;
}

static void line_answer(enum events_kind kind, enum log_level level, const char *event,
			const struct events_subject *s, int err, uint64_t attempt, int64_t delay_ms,
			int64_t wait_ms, int64_t elapsed_ms, const char *reason, const char *answer)
{
	char target[TARGET_TEXT_MAX];
	struct log_event ev = {
		.event = event,
		.call = s->call,
		.err = err,
		.err_name = err && s->err_name ? s->err_name(err) : NULL,
		.attempt = attempt,
		.delay_ms = delay_ms,
		.wait_ms = wait_ms,
		.elapsed_ms = elapsed_ms,
		.reason = reason,
		.answer = answer,
	};

	if (!log_enabled(level))
		return;
	ev.target = subject_text(s, target, sizeof(target));
	if (!log_is_json()) {
		char said[1024];
		struct text t;

		text_init(&t, said, sizeof(said));
		ev.text = sentence(&t, kind, &ev);
		log_event(level, &ev); /* while said is there */
		return;
	}
	log_event(level, &ev);
}

static void line(enum events_kind kind, enum log_level level, const char *event,
		 const struct events_subject *s, int err, uint64_t attempt, int64_t delay_ms,
		 int64_t wait_ms, int64_t elapsed_ms, const char *reason)
{
	line_answer(kind, level, event, s, err, attempt, delay_ms, wait_ms, elapsed_ms, reason,
		    NULL);
}

void events_retry(const struct events_subject *s, bool first, int err, uint64_t attempt,
		  uint64_t delay_ms, uint64_t wait_ms)
{
	/* Calls are counted at their first failure: a managed connect that succeeds is not one. */
	if (first)
		count(&stat_calls, 1);
	line(EVENTS_KIND_RETRY, LOG_LEVEL_INFO, "retry", s, err, attempt, (int64_t)delay_ms,
	     (int64_t)wait_ms, LOG_NONE, NULL);
	count(&stat_retries, 1);
	count(&stat_waited_ms, wait_ms);
}

/* The destinations whose long wait this process has said (hashes of their text; 0: free). */
#define TOLD_SLOTS 16
static _Atomic uint64_t told[TOLD_SLOTS];

/* FNV-1a of @text, never 0. */
static uint64_t text_hash(const char *text)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *text; text++)
		h = (h ^ (unsigned char)*text) * 1099511628211ULL;
	return h ? h : 1;
}

/* Whether the long wait of @call to @target was said already; if not, it is now. */
static bool told_before(const char *call, const char *target)
{
	uint64_t h = text_hash(target) ^ text_hash(call), cur;
	unsigned i, at = (unsigned)(h % TOLD_SLOTS);

	for (i = 0; i < TOLD_SLOTS; i++)
		if (atomic_load_explicit(&told[i], memory_order_relaxed) == h)
			return true;
	/* A free slot, else the one the hash names: a destination forgotten says it again. */
	for (i = 0; i < TOLD_SLOTS; i++) {
		cur = 0;
		if (atomic_compare_exchange_strong_explicit(&told[i], &cur, h, memory_order_relaxed,
							    memory_order_relaxed))
			return false;
	}
	atomic_store_explicit(&told[at], h, memory_order_relaxed);
	return false;
}

void events_waiting(const struct events_subject *s, int err, uint64_t attempt, uint64_t elapsed_ms,
		    uint64_t left_ms)
{
	char target[TARGET_TEXT_MAX];

	if (!log_enabled(LOG_LEVEL_WARN) ||
	    told_before(s->call ? s->call : "", subject_text(s, target, sizeof(target))))
		return;
	line(EVENTS_KIND_WAITING, LOG_LEVEL_WARN, "waiting", s, err, attempt, LOG_NONE,
	     left_ms == CONFIG_INFINITE ? LOG_NONE : (int64_t)left_ms, (int64_t)elapsed_ms, NULL);
}

void events_cut_short(const struct events_subject *s, uint64_t early_ms, bool made)
{
	events_woke_early(early_ms);
	line(EVENTS_KIND_WOKE, LOG_LEVEL_INFO, "woke", s, 0, 0, LOG_NONE, (int64_t)early_ms,
	     LOG_NONE, made ? "look" : "news");
}

void events_giveup(const struct events_subject *s, bool first, int err, uint64_t attempt,
		   uint64_t elapsed_ms, const char *reason)
{
	if (first)
		count(&stat_calls, 1);
	count(&stat_giveups, 1);
	line(EVENTS_KIND_GIVEUP, LOG_LEVEL_WARN, "giveup", s, err, attempt, LOG_NONE, LOG_NONE,
	     (int64_t)elapsed_ms, reason);
}

void events_ended(const struct events_subject *s, int err, uint64_t attempt, uint64_t elapsed_ms)
{
	count(&stat_giveups, 1);
	/* Not a "giveup" line: the program, not libbackoff, gave up. */
	line(EVENTS_KIND_ENDED, LOG_LEVEL_INFO, "ended", s, err, attempt, LOG_NONE, LOG_NONE,
	     (int64_t)elapsed_ms, "closed");
}

void events_success(const struct events_subject *s, uint64_t attempt, uint64_t elapsed_ms)
{
	line(EVENTS_KIND_SUCCESS, LOG_LEVEL_INFO, "success", s, 0, attempt, LOG_NONE, LOG_NONE,
	     (int64_t)elapsed_ms, NULL);
}

void events_left(const struct events_subject *s, int err, uint64_t attempt, uint64_t elapsed_ms,
		 uint64_t prober_tid)
{
	char why[64];
	struct text t;

	count(&stat_waited, 1);
	if (!log_enabled(LOG_LEVEL_DEBUG))
		return;
	text_init(&t, why, sizeof(why));
	/* A remote destination has no prober: its findings are any attempt's. */
	if (prober_tid) {
		text_str(&t, "left to prober tid ");
		text_u64(&t, prober_tid);
	} else {
		text_str(&t, "left to another's finding");
	}
	line(EVENTS_KIND_OTHER, LOG_LEVEL_DEBUG, "waited", s, err, attempt, LOG_NONE, LOG_NONE,
	     (int64_t)elapsed_ms, why);
}

void events_no_look(void)
{
	static atomic_bool said;

	if (log_enabled(LOG_LEVEL_INFO) &&
	    !atomic_exchange_explicit(&said, true, memory_order_relaxed))
		log_notice(LOG_LEVEL_INFO, "nolook",
			   "cannot look for local listeners (the socket tables refused, no "
			   "AF_NETLINK?): local destinations are retried on the policy's "
			   "schedule alone");
}

void events_pass(const char *call, const struct target_addr *target, int err, const char *reason)
{
	struct events_subject s = { .call = call, .target = target };

	line(EVENTS_KIND_OTHER, LOG_LEVEL_DEBUG, "pass", &s, err, 0, LOG_NONE, LOG_NONE, LOG_NONE,
	     reason);
}

void events_down(const char *call, const struct target_addr *target, uint64_t elapsed_ms)
{
	struct events_subject s = { .call = call, .target = target };

	line(EVENTS_KIND_DOWN, LOG_LEVEL_INFO, "down", &s, 0, 0, LOG_NONE, LOG_NONE,
	     (int64_t)elapsed_ms, "budget-spent");
}

void events_early(const struct events_subject *s, const char *answer, uint64_t streak,
		  uint64_t delay_ms, const char *what)
{
	count(answer ? &stat_try_later : &stat_early, 1);
	line_answer(EVENTS_KIND_EARLY, LOG_LEVEL_INFO, answer ? "not-ready" : "early", s, 0, streak,
		    (int64_t)delay_ms, LOG_NONE, LOG_NONE, what, answer);
}

void events_early_end(const struct events_subject *s, int err, enum events_end why)
{
	const char *reason = err == ECONNREFUSED || (err == 0 && why == EVENTS_END_GONE) ? "gone"
			     : err							 ? "failed"
			     : why == EVENTS_END_UNACCEPTED ? "unaccepted"
							    : "silent";

	line(EVENTS_KIND_EARLY_END, LOG_LEVEL_INFO, "early-end", s, err, 0, LOG_NONE, LOG_NONE,
	     LOG_NONE, reason);
}

void events_early_answer(const struct events_subject *s)
{
	line(EVENTS_KIND_EARLY_END, LOG_LEVEL_INFO, "early-end", s, 0, 0, LOG_NONE, LOG_NONE,
	     LOG_NONE, "answer");
}

void events_damped(const struct events_subject *s, uint64_t streak, uint64_t wait_ms, int ahead)
{
	count(&stat_waited_ms, wait_ms);
	if (ahead >= 0)
		line(EVENTS_KIND_FULL, LOG_LEVEL_INFO, "damped", s, 0, (uint64_t)ahead, LOG_NONE,
		     (int64_t)wait_ms, LOG_NONE, "full");
	else
		line(EVENTS_KIND_DAMPED, LOG_LEVEL_INFO, "damped", s, 0, streak, LOG_NONE,
		     (int64_t)wait_ms, LOG_NONE, NULL);
}
