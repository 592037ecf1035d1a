/*
 * Unit tests of engine/engine, the rules of one call's attempts: one row per
 * rule, named after it, each a script of events at fake times with fixed
 * draws, and the action each must give.
 */
#include "engine/engine.h"

#include <errno.h>
#include <sys/socket.h>

#include "unit.h"

#define INF CONFIG_INFINITE
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* One step of a script: an event, and the action it must give. */
struct step {
	enum engine_event_kind kind;
	uint64_t now;
	int err;
	unsigned facts; /* F_* */
	uint64_t budget_left;
	/* the action */
	enum engine_do what;
	uint64_t until; /* ENGINE_ATTEMPT, ENGINE_WAIT */
	int want_err;	/* ENGINE_END; and the error said */
	unsigned say;
	const char *reason;
	unsigned flags; /* A_* */
};

enum { F_LEFT = 1, F_DOWN = 2, F_MORE = 4 };
enum { A_FIRST = 1, A_FINAL = 2 };

/* The configuration of a row: a fixed delay per retry (no jitter). */
struct setup {
	uint64_t base, cap, retries, timeout, attempt_timeout;
	bool until_next;
};

struct row {
	const char *rule;
	struct setup set;
	struct step steps[6];
};

/* The plain setup: 100 ms doubling to 1 s, 5 retries, a 10 s budget, 5 s attempts. */
#define PLAIN                                    \
	{                                        \
		100, 1000, 5, 10000, 5000, false \
	}

#define FAILED(t, e) ENGINE_FAILED, (t), (e), 0, INF
#define DUE(t) ENGINE_DUE, (t), 0, 0, INF
#define WAIT(u, e, say) ENGINE_WAIT, (u), (e), (say), NULL
#define ATTEMPT(u) ENGINE_ATTEMPT, (u), 0, 0, NULL
#define END(e) ENGINE_END, 0, (e)
#define R ENGINE_SAY_RETRY

static const struct row rows[] = {
	{ "a retryable failure plans a retry after the policy's delay",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(5100), 0 },
	    { FAILED(150, ECONNREFUSED), WAIT(350, ECONNREFUSED, R), 0 } } },
	{ "a wait never runs past the budget",
	  { 100, 1000, 5, 250, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(250), 0 },
	    { FAILED(100, ECONNREFUSED), WAIT(250, ECONNREFUSED, R), 0 } } },
	{ "a call gives up when its retries are spent",
	  { 100, 1000, 1, 10000, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(5100), 0 },
	    { FAILED(100, ECONNREFUSED), END(ECONNREFUSED), ENGINE_SAY_GIVE_UP, "retries",
	      A_FINAL } } },
	{ "no retries at all: the first failure gives up, counted",
	  { 100, 1000, 0, 10000, 5000, false },
	  { { FAILED(0, ECONNREFUSED), END(ECONNREFUSED), ENGINE_SAY_GIVE_UP, "retries",
	      A_FIRST | A_FINAL } } },
	{ "a call gives up when its budget is spent, with the kernel's last answer",
	  { 100, 1000, 5, 100, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(100), 0 },
	    { FAILED(100, ETIMEDOUT), END(ECONNREFUSED), ENGINE_SAY_GIVE_UP, "timeout",
	      A_FINAL } } },
	{ "our deadline's ETIMEDOUT stands when the kernel never answered",
	  { 100, 1000, 0, 10000, 5000, false },
	  { { FAILED(0, ETIMEDOUT), END(ETIMEDOUT), ENGINE_SAY_GIVE_UP, "retries",
	      A_FIRST | A_FINAL } } },
	{ "an error not worth another attempt ends the call at once",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(5100), 0 },
	    { FAILED(100, EACCES), END(EACCES), 0, NULL, A_FINAL } } },
	{ "a program with another address to try moves on at once",
	  PLAIN,
	  { { ENGINE_FAILED, 0, ECONNREFUSED, F_MORE, INF, END(ECONNREFUSED), ENGINE_SAY_PASS,
	      "not-last-address", 0 } } },
	{ "a destination known down gets the kernel's answer at once",
	  PLAIN,
	  { { ENGINE_FAILED, 0, ECONNREFUSED, F_DOWN, INF, END(ECONNREFUSED), ENGINE_SAY_PASS,
	      "known-down", 0 } } },
	{ "known down and other addresses are asked at the first failure only",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(5100), 0 },
	    { ENGINE_FAILED, 100, ECONNREFUSED, F_DOWN | F_MORE, INF, WAIT(300, ECONNREFUSED, R),
	      0 } } },
	{ "the destination's budget bounds the call's",
	  PLAIN,
	  { { ENGINE_FAILED, 0, ECONNREFUSED, 0, 60, WAIT(60, ECONNREFUSED, R), A_FIRST },
	    { DUE(60), ATTEMPT(60), 0 },
	    { FAILED(60, ECONNREFUSED), END(ECONNREFUSED), ENGINE_SAY_GIVE_UP, "timeout",
	      A_FINAL } } },
	{ "another's result since our last attempt stands for the planned one",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_DUE, 100, 0, F_LEFT, INF, WAIT(300, ECONNREFUSED, ENGINE_SAY_LEFT | R), 0 },
	    { DUE(300), ATTEMPT(5300), 0 } } },
	{ "the last attempt is always made, whoever else found the destination down",
	  { 100, 1000, 1, 10000, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_DUE, 100, 0, F_LEFT, INF, ATTEMPT(5100), 0 } } },
	{ "a planned attempt that another's result cannot replace in time is made",
	  { 100, 1000, 5, 150, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_DUE, 160, 0, F_LEFT, INF, ATTEMPT(150), 0 } } },
	{ "a call whose attempts were all another's makes one of its own before it gives up",
	  { 100, 1000, 0, 10000, 5000, false },
	  { { ENGINE_FAILED, 0, ECONNREFUSED, F_LEFT, INF, ENGINE_ATTEMPT, 5000, ECONNREFUSED,
	      ENGINE_SAY_GIVE_UP, "retries", A_FIRST | A_FINAL },
	    { FAILED(3, ECONNRESET), END(ECONNRESET), 0, NULL, A_FINAL } } },
	{ "a first attempt left to another is no answer to pass on: the program's own is made",
	  PLAIN,
	  { { ENGINE_FAILED, 0, ECONNREFUSED, F_LEFT | F_DOWN, INF, ATTEMPT(5000), A_FINAL },
	    { ENGINE_CONNECTED, 2, 0, 0, INF, END(0), 0, NULL, 0 } } },
	{ "an error the kernel holds is collected while a retry may follow",
	  PLAIN,
	  { { ENGINE_HELD, 0, 0, 0, INF, ENGINE_COLLECT, 0, 0, 0, NULL, 0 },
	    { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST } } },
	{ "the error the kernel holds for the last attempt is left to the program",
	  { 100, 1000, 0, 10000, 5000, false },
	  { { ENGINE_HELD, 0, 0, 0, INF, END(0), ENGINE_SAY_GIVE_UP, "retries",
	      A_FIRST | A_FINAL } } },
	{ "the error the kernel holds when the budget is spent is left to the program",
	  PLAIN,
	  { { ENGINE_HELD, 0, 0, 0, 0, END(0), ENGINE_SAY_GIVE_UP, "timeout",
	      A_FIRST | A_FINAL } } },
	{ "the error the kernel holds for a program with another address is its own",
	  PLAIN,
	  { { ENGINE_HELD, 0, 0, F_MORE, INF, END(0), ENGINE_SAY_PASS, "not-last-address", 0 } } },
	{ "a signal that cuts the wait ends the call with its last error",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_SIGNAL, 40, 0, 0, INF, END(ECONNREFUSED), ENGINE_SAY_GIVE_UP, "signal",
	      A_FINAL } } },
	{ "a retry that succeeds is said",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(5100), 0 },
	    { ENGINE_CONNECTED, 101, 0, 0, INF, END(0), ENGINE_SAY_SUCCESS, NULL, 0 } } },
	{ "with no limit on retries, retries go on",
	  { 100, 1000, INF, INF, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_DUE, 100, 0, F_LEFT, INF, WAIT(300, ECONNREFUSED, ENGINE_SAY_LEFT | R), 0 },
	    { ENGINE_HELD, 300, 0, 0, INF, ENGINE_COLLECT, 0, 0, 0, NULL, 0 } } },
	{ "the attempt at the budget's end is the last, whoever else found the destination down",
	  { 100, 1000, 5, 80, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(80, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_DUE, 80, 0, F_LEFT, INF, ATTEMPT(80), 0 } } },
	{ "a destination's budget longer than the call's changes nothing",
	  PLAIN,
	  { { ENGINE_FAILED, 0, ECONNREFUSED, 0, 20000, WAIT(100, ECONNREFUSED, R), A_FIRST } } },
	{ "the one attempt of a call that made none of its own is not said as a retry's success",
	  PLAIN,
	  { { ENGINE_FAILED, 0, ECONNREFUSED, F_LEFT, INF, WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_DUE, 100, 0, F_LEFT, INF, WAIT(300, ECONNREFUSED, ENGINE_SAY_LEFT | R), 0 },
	    { ENGINE_SIGNAL, 150, 0, 0, INF, ENGINE_ATTEMPT, 5150, ECONNREFUSED, ENGINE_SAY_GIVE_UP,
	      "signal", A_FINAL },
	    { ENGINE_CONNECTED, 151, 0, 0, INF, END(0), 0, NULL, 0 } } },
	{ "a first attempt that succeeds says nothing",
	  PLAIN,
	  { { ENGINE_CONNECTED, 0, 0, 0, INF, END(0), 0, NULL, 0 } } },
	{ "a wait that takes the call past a few seconds is said once",
	  { 3000, 10000, 5, INF, 5000, false },
	  { { FAILED(0, ECONNREFUSED), WAIT(3000, ECONNREFUSED, R), A_FIRST },
	    { DUE(3000), ATTEMPT(8000), 0 },
	    { FAILED(3000, ECONNREFUSED), WAIT(9000, ECONNREFUSED, R | ENGINE_SAY_WAITING), 0 },
	    { DUE(9000), ATTEMPT(14000), 0 },
	    { FAILED(9000, ECONNREFUSED), WAIT(19000, ECONNREFUSED, R), 0 } } },
	{ "a first attempt under way that the program closes is not yet a call of ours",
	  PLAIN,
	  { { ENGINE_CLOSED, 10, 0, 0, INF, END(0), 0, NULL, 0 } } },
	{ "the program that closes a waiting call ended it: the wait not made is not counted",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_CLOSED, 30, 0, F_LEFT, INF, END(ECONNREFUSED),
	      ENGINE_SAY_ENDED | ENGINE_SAY_EARLY, NULL, 0 } } },
	{ "the program that closes an attempt under way ended the call",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { DUE(100), ATTEMPT(5100), 0 },
	    { ENGINE_CLOSED, 130, 0, 0, INF, END(ECONNREFUSED), ENGINE_SAY_ENDED, NULL, 0 } } },
	{ "the program that closes a call after its planned time waited it all",
	  PLAIN,
	  { { FAILED(0, ECONNREFUSED), WAIT(100, ECONNREFUSED, R), A_FIRST },
	    { ENGINE_CLOSED, 120, 0, F_LEFT, INF, END(ECONNREFUSED), ENGINE_SAY_ENDED, NULL,
	      0 } } },
};

static struct config configured(const struct setup *set)
{
	struct config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.policy.base_ms = set->base;
	cfg.policy.cap_ms = set->cap;
	cfg.policy.multiplier_milli = 2000;
	cfg.policy.jitter = POLICY_JITTER_NONE;
	cfg.retries = set->retries;
	cfg.timeout_ms = set->timeout;
	cfg.attempt_timeout_ms = set->attempt_timeout;
	cfg.attempt_until_next = set->until_next;
	cfg.errors_inet.bits[0] = 0;
	cfg.errors_inet.bits[ECONNREFUSED / 64] |= 1ULL << (ECONNREFUSED % 64);
	cfg.errors_inet.bits[ETIMEDOUT / 64] |= 1ULL << (ETIMEDOUT % 64);
	cfg.errors_inet.bits[ECONNRESET / 64] |= 1ULL << (ECONNRESET % 64);
	return cfg;
}

static void run_row(const struct row *r)
{
	struct config cfg = configured(&r->set);
	struct retry_progress p;
	unsigned i;

	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	for (i = 0; i < N(r->steps) && (r->steps[i].budget_left || r->steps[i].kind); i++) {
		const struct step *s = &r->steps[i];
		struct engine_event ev = {
			.kind = s->kind,
			.now_ms = s->now,
			.err = s->err,
			.theirs = (s->facts & F_LEFT) != 0 && s->kind == ENGINE_FAILED,
			.found = (s->facts & F_LEFT) != 0 && s->kind == ENGINE_DUE,
			.waiting = (s->facts & F_LEFT) != 0 && s->kind == ENGINE_CLOSED,
			.known_down = (s->facts & F_DOWN) != 0,
			.more_addresses = (s->facts & F_MORE) != 0,
			.budget_left_ms = s->budget_left,
			.seed = 42,
		};
		struct engine_action a = engine_step(&cfg, &cfg.errors_inet, &p, &ev);
		bool ok = a.what == s->what && a.say == s->say &&
			  (s->what == ENGINE_END || s->what == ENGINE_COLLECT ||
			   a.until_ms == s->until) &&
			  (s->what != ENGINE_END && !(s->say & (R | ENGINE_SAY_GIVE_UP))
				   ? true
				   : a.err == s->want_err) &&
			  (s->reason ? a.reason && strcmp(a.reason, s->reason) == 0 : !a.reason) &&
			  a.first == ((s->flags & A_FIRST) != 0) &&
			  a.final == ((s->flags & A_FINAL) != 0);

		CHECK(ok);
		if (!ok)
			fprintf(stderr,
				"  rule \"%s\", step %u: got what %d until %" PRIu64
				" err %d say %#x reason %s first %d final %d\n",
				r->rule, i + 1, (int)a.what, a.until_ms, a.err, a.say,
				a.reason ? a.reason : "-", a.first, a.final);
	}
}

/* The attempt's deadline: its own time, the grpc rule, a cap, the budget. */
static void test_attempt_deadline(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct retry_progress p;

	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 0), 5000);
	/* A loopback listener's full queue: cut short. */
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, true, false, 0), CONFIG_LOCAL_ATTEMPT_MS);
	/* Never past the call's deadline. */
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 9000), 10000);
	/* A destination known down: one attempt of its time, whatever the budget. */
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, true, 9000), 14000);
	/* The grpc rule, with an attempt time longer than the next planned attempt. */
	cfg.attempt_until_next = true;
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 0), 5000);
	/* The grpc rule: no sooner than the next planned attempt. */
	cfg.attempt_until_next = true;
	cfg.attempt_timeout_ms = 50;
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 0), 100);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, true, 0), 50);
	/* A budget of 0 bounds nothing: the attempt timeout alone. */
	cfg.timeout_ms = 0;
	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 0), 100);
	cfg.attempt_until_next = false;
	cfg.attempt_timeout_ms = INF;
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 0), INF);
}

/* A call's own bound (a send timeout) is the budget when it is the smaller. */
static void test_own_bound(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct retry_progress p;

	engine_begin(&cfg, &p, 300, 1000, 0, NULL);
	CHECK_U64(p.deadline_ms, 1300);
	engine_begin(&cfg, &p, INF, 1000, 0, NULL);
	CHECK_U64(p.deadline_ms, 11000);
	cfg.timeout_ms = INF;
	engine_begin(&cfg, &p, INF, 1000, 0, NULL);
	CHECK_U64(p.deadline_ms, INF);
}

/* Each call draws from a sequence of its own: seeded once, or from BACKOFF_SEED. */
static void test_draws(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct retry_progress p, q;
	struct engine_event ev = {
		.kind = ENGINE_FAILED, .err = ECONNREFUSED, .budget_left_ms = INF, .seed = 7
	};
	struct engine_action a, b;

	cfg.policy.jitter = POLICY_JITTER_FULL;
	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	CHECK(engine_facts(&cfg, &p, ENGINE_FAILED) & ENGINE_FACTS_SEED);
	CHECK(engine_facts(&cfg, &p, ENGINE_DUE) & ENGINE_FACTS_SEED);
	CHECK(!(engine_facts(&cfg, &p, ENGINE_CONNECTED) & ENGINE_FACTS_SEED));
	CHECK(!(engine_facts(&cfg, &p, ENGINE_HELD) & ENGINE_FACTS_SEED));
	a = engine_step(&cfg, &cfg.errors_inet, &p, &ev);
	CHECK(!(engine_facts(&cfg, &p, ENGINE_FAILED) & ENGINE_FACTS_SEED));
	engine_begin(&cfg, &q, INF, 0, 0, NULL);
	b = engine_step(&cfg, &cfg.errors_inet, &q, &ev);
	CHECK_U64(a.delay_ms, b.delay_ms); /* the same seed, the same draw */
	cfg.seeded = true;
	cfg.seed = 1;
	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	CHECK(!(engine_facts(&cfg, &p, ENGINE_FAILED) & ENGINE_FACTS_SEED));
	CHECK(p.rng != 0);
	/* BACKOFF_SEED=0: the sequence of state 0, the one --schedule prints, never a drawn seed.
	 */
	cfg.seed = 0;
	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	CHECK(!(engine_facts(&cfg, &p, ENGINE_FAILED) & ENGINE_FACTS_SEED));
}

/*
 * The verdict on an early close @e at @now: the call begun at the close
 * (ENGINE_EARLY), its close counted (ENGINE_COUNTED) when the engine asks
 * (ENGINE_COUNT).  *why: "answer", "gone", the reason it is not connected
 * again, or NULL when it is, answered by *until; *delay: the damping.
 */
static void early_verdict(const struct config *cfg, uint64_t now, const struct engine_early *e,
			  bool local, bool gone, const char **why, uint64_t *until, uint64_t *delay)
{
	struct engine_again again = { .until_ms = INF, .local = local };
	struct engine_event ev = { .kind = ENGINE_EARLY, .now_ms = now, .close = e };
	struct retry_progress p;
	struct engine_action a;

	engine_begin(cfg, &p, INF, now, now, &again);
	CHECK_U64(engine_facts(cfg, &p, ENGINE_EARLY), local ? ENGINE_FACTS_GONE : 0);
	ev.gone = gone;
	a = engine_step(cfg, NULL, &p, &ev);
	*until = INF;
	*delay = 0;
	if (a.what == ENGINE_OVER) {
		CHECK(a.over == ENGINE_OVER_ANSWER || a.over == ENGINE_OVER_GONE);
		*why = a.over == ENGINE_OVER_ANSWER ? "answer" : "gone";
		return;
	}
	CHECK(a.what == ENGINE_COUNT);
	ev.kind = ENGINE_COUNTED;
	a = engine_step(cfg, NULL, &p, &ev);
	CHECK(a.say == ENGINE_SAY_CLOSE);
	*delay = a.delay_ms;
	if (a.what == ENGINE_OVER) {
		CHECK(a.over == ENGINE_OVER_CLOSED);
		*why = a.reason;
		return;
	}
	CHECK(a.what == ENGINE_ATTEMPT);
	CHECK(strcmp(a.reason, e->sent ? "replay" : "reconnect") == 0);
	/* The call goes on as the new connection's, answered by its time. */
	CHECK_U64(p.again_until_ms, a.until_ms);
	*why = NULL;
	*until = a.until_ms;
}

/* An early close: one row per rule of the engine's ENGINE_EARLY and ENGINE_COUNTED, named after it.
 */
static void test_early_close(void)
{
	static const struct {
		const char *rule;
		uint64_t now;
		struct engine_early e;
		uint64_t retries, timeout;
		const char *why; /* NULL: connected again */
		uint64_t until;
		bool nonblock;
		enum config_early mode; /* BACKOFF_EARLY_CLOSE */
	} closes[] = {
		{ "nothing sent: connected again, one attempt's time after its delay",
		  1000,
		  { .since_ms = 1000, .greeted = true, .streak = 1, .blocking = true },
		  5,
		  10000,
		  NULL,
		  1000 + 100 + 5000,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "a full server: the new connect's time is the budget's (its line holds it while "
		  "it moves)",
		  1000,
		  { .since_ms = 1000, .streak = 1, .said = true, .full = true, .blocking = true },
		  5,
		  10000,
		  NULL,
		  1000 + 10000,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "a full server: its line's time within the budget",
		  1000,
		  { .since_ms = 1000, .streak = 1, .said = true, .full = true, .blocking = true },
		  5,
		  3000,
		  NULL,
		  1000 + 3000,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "what was sent is recorded: connected again, and sent again",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .sent = true, .replay = true },
		  5,
		  10000,
		  NULL,
		  6100,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "the new connection's time ends with the budget",
		  9000,
		  { .since_ms = 5000,
		    .greeted = true,
		    .streak = 2,
		    .prev_delay_ms = 100,
		    .blocking = true },
		  5,
		  5000,
		  NULL,
		  10000,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "no budget and no attempt time: the new connection waits as the program chose",
		  1000,
		  { .since_ms = 1000, .greeted = true, .streak = 1, .blocking = true },
		  5,
		  INF,
		  NULL,
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "what was sent and not recorded is never sent again",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .sent = true },
		  5,
		  10000,
		  "sent",
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "an event loop's connection only under BACKOFF_NONBLOCK",
		  1000,
		  { .since_ms = 1000, .greeted = true, .streak = 1 },
		  5,
		  10000,
		  "nonblocking",
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "an event loop's connection under BACKOFF_NONBLOCK is connected again",
		  1000,
		  { .since_ms = 1000, .greeted = true, .streak = 1 },
		  5,
		  10000,
		  NULL,
		  6100,
		  true,
		  CONFIG_EARLY_AUTO },
		{ "a read with a timeout of its own is the program's",
		  1000,
		  { .since_ms = 1000,
		    .greeted = true,
		    .streak = 1,
		    .blocking = true,
		    .timed = true },
		  5,
		  10000,
		  "own-timeout",
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "the streak counts as the attempts: BACKOFF_RETRIES bounds it",
		  1000,
		  { .since_ms = 1000, .greeted = true, .streak = 6, .blocking = true },
		  5,
		  10000,
		  "retries",
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "no limit on retries: the streak goes on",
		  1000,
		  { .since_ms = 1000, .greeted = true, .streak = 60, .blocking = true },
		  INF,
		  INF,
		  NULL,
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "the server's own wait (Retry-After), when longer than the policy's, is the "
		  "delay",
		  1000,
		  { .since_ms = 1000,
		    .greeted = true,
		    .streak = 1,
		    .blocking = true,
		    .at_least_ms = 2000 },
		  5,
		  10000,
		  NULL,
		  1000 + 2000 + 5000,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "the budget counts from the streak's first early close",
		  10950,
		  { .since_ms = 1000,
		    .greeted = true,
		    .streak = 2,
		    .prev_delay_ms = 100,
		    .blocking = true },
		  5,
		  10000,
		  "budget",
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "nothing sent to a server never heard first, on an ordinary port: its answer",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .port = 8080 },
		  5,
		  10000,
		  "answer",
		  INF,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "nothing sent to a well-known port whose server speaks first: a refusal",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .port = 3306 },
		  5,
		  10000,
		  NULL,
		  6100,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "nothing sent, but the server said \"try later\": a refusal",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .said = true },
		  5,
		  10000,
		  NULL,
		  6100,
		  false,
		  CONFIG_EARLY_AUTO },
		{ "BACKOFF_EARLY_CLOSE=refusal: any close before a byte is a refusal",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .port = 8080 },
		  5,
		  10000,
		  NULL,
		  6100,
		  false,
		  CONFIG_EARLY_REFUSAL },
		{ "BACKOFF_EARLY_CLOSE=answer: even a greeting server's close is its answer",
		  1000,
		  { .since_ms = 1000,
		    .streak = 1,
		    .blocking = true,
		    .greeted = true,
		    .port = 3306 },
		  5,
		  10000,
		  "answer",
		  INF,
		  false,
		  CONFIG_EARLY_ANSWER },
		{ "BACKOFF_EARLY_CLOSE=answer: a recorded start-up is still sent again",
		  1000,
		  { .since_ms = 1000, .streak = 1, .blocking = true, .sent = true, .replay = true },
		  5,
		  10000,
		  NULL,
		  6100,
		  false,
		  CONFIG_EARLY_ANSWER },
	};
	struct setup set = PLAIN;
	unsigned i;

	for (i = 0; i < N(closes); i++) {
		struct config cfg = configured(&set);
		const char *why;
		uint64_t until, delay;
		bool ok;

		cfg.retries = closes[i].retries;
		cfg.timeout_ms = closes[i].timeout;
		if (closes[i].timeout == INF)
			cfg.attempt_timeout_ms = INF; /* nothing bounds the new connection */
		cfg.nonblock = closes[i].nonblock;
		cfg.early_close = closes[i].mode;
		early_verdict(&cfg, closes[i].now, &closes[i].e, false, false, &why, &until,
			      &delay);
		ok = (closes[i].why ? why && strcmp(why, closes[i].why) == 0 : !why) &&
		     until == closes[i].until &&
		     (delay >= 100) == !(why && strcmp(why, "answer") == 0);
		CHECK(ok);
		if (!ok)
			fprintf(stderr, "  rule \"%s\": got why %s until %" PRIu64 "\n",
				closes[i].rule, why ? why : "-", until);
	}
}

/*
 * An early close to a local destination whose listener is gone (it served
 * its one connection): no failed attempt, nothing counted; the server's
 * answer is judged first, and a remote destination's listener is never asked.
 */
static void test_early_close_gone(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct engine_early sent = { .sent = true, .blocking = true };
	struct engine_early quiet = { .blocking = true, .port = 8080 };
	const char *why;
	uint64_t until, delay;

	early_verdict(&cfg, 1000, &sent, true, true, &why, &until, &delay);
	CHECK(strcmp(why, "gone") == 0 && delay == 0);
	early_verdict(&cfg, 1000, &quiet, true, true, &why, &until, &delay);
	CHECK(strcmp(why, "answer") == 0);
	sent.streak = sent.since_ms = 1;
	sent.replay = true;
	early_verdict(&cfg, 1000, &sent, true, false, &why, &until, &delay);
	CHECK(why == NULL && until == 1000 + delay + cfg.attempt_timeout_ms);
}

/* A destination's budget: BACKOFF_TIMEOUT from its clock's start, spent at its end, or none. */
static void test_budget_left(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);

	cfg.timeout_ms = 500;
	CHECK_U64(engine_budget_left_ms(&cfg, 1000, 1000), 500);
	CHECK_U64(engine_budget_left_ms(&cfg, 1000, 1200), 300);
	CHECK_U64(engine_budget_left_ms(&cfg, 1000, 1499), 1);
	CHECK_U64(engine_budget_left_ms(&cfg, 1000, 1500), 0);
	CHECK_U64(engine_budget_left_ms(&cfg, 1000, 9000), 0);
	cfg.timeout_ms = INF;
	CHECK_U64(engine_budget_left_ms(&cfg, 1000, UINT64_MAX / 2), INF);
}

/* A run's open time: the budget, doubled with each give-up in a row, capped, then 0.8 to 1.2 of it.
 */
static void test_run_open(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);

	cfg.timeout_ms = 1000;
	CHECK_U64(engine_run_open_ms(&cfg, 1, 0), 800);
	CHECK_U64(engine_run_open_ms(&cfg, 1, 400), 1200);
	CHECK_U64(engine_run_open_ms(&cfg, 1, 401), 800); /* the draw wraps in the window */
	CHECK_U64(engine_run_open_ms(&cfg, 3, 0), 3200);
	CHECK_U64(engine_run_open_ms(&cfg, 64, 0),
		  ENGINE_RUN_OPEN_MAX_MS - ENGINE_RUN_OPEN_MAX_MS / 5);
	cfg.timeout_ms = 3600000; /* a budget longer than the cap: the cap */
	CHECK_U64(engine_run_open_ms(&cfg, 1, 0),
		  ENGINE_RUN_OPEN_MAX_MS - ENGINE_RUN_OPEN_MAX_MS / 5);
	cfg.timeout_ms = INF; /* no budget: the delay's cap stands for it */
	cfg.policy.cap_ms = 2000;
	CHECK_U64(engine_run_open_ms(&cfg, 1, 0), 1600);
}

/*
 * Another's finding stands for a first attempt three of its prober's looks,
 * for a planned retry the longest delay and the longest attempt; a sum past
 * what nanoseconds hold is for ever.
 */
static void test_finding_fresh(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);

	cfg.local_probe_ms = 100;
	CHECK_U64(engine_finding_fresh_ns(&cfg, true), 300000000ULL);
	cfg.attempt_timeout_ms = CONFIG_INFINITE;
	CHECK_U64(engine_finding_fresh_ns(&cfg, false), 2 * cfg.policy.cap_ms * 1000000);
	cfg.attempt_timeout_ms = 250;
	CHECK_U64(engine_finding_fresh_ns(&cfg, false), (cfg.policy.cap_ms + 250) * 1000000);
	/* Another's finding stands while younger than that, a first attempt's and a retry's. */
	CHECK(engine_finding_stands(&cfg, true, 299999999ULL));
	CHECK(!engine_finding_stands(&cfg, true, 300000000ULL));
	CHECK(engine_finding_stands(&cfg, false, (cfg.policy.cap_ms + 250) * 1000000 - 1));
	CHECK(!engine_finding_stands(&cfg, false, (cfg.policy.cap_ms + 250) * 1000000));
	cfg.attempt_timeout_ms = UINT64_MAX / 1000000;
	CHECK_U64(engine_finding_fresh_ns(&cfg, false), UINT64_MAX);
	/* No finding (an age of UINT64_MAX) stands for nothing, even when none is ever stale. */
	CHECK(engine_finding_stands(&cfg, false, UINT64_MAX - 1));
	CHECK(!engine_finding_stands(&cfg, false, UINT64_MAX));
}

/*
 * A full server's line: a connect in it attempts by half the cap to the cap
 * (by the draw), or its planned delay's end if later; "full" lasts as long
 * as a streak of early closes.
 */
static void test_full_line(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);

	CHECK_U64(engine_streak_stale_ms(&cfg), 2 * (1000 + 1000));
	CHECK_U64(engine_full_until_ms(&cfg, 1000, 0, 0), 1500);
	CHECK_U64(engine_full_until_ms(&cfg, 1000, 0, 500), 2000);
	CHECK_U64(engine_full_until_ms(&cfg, 1000, 0, 501), 1500);  /* the draw wraps */
	CHECK_U64(engine_full_until_ms(&cfg, 1000, 1800, 0), 1800); /* its delay's end to come */
	CHECK_U64(engine_full_until_ms(&cfg, 1000, 1200, 500), 1200);
	CHECK_U64(engine_full_until_ms(&cfg, 1000, 1000, 500), 2000); /* a delay over is none */
	/* The line moves while a place freed less than half the cap ago. */
	CHECK(!engine_full_moving(&cfg, 1000, 0));
	CHECK(engine_full_moving(&cfg, 1000, 600));
	CHECK(!engine_full_moving(&cfg, 1000, 500));
	CHECK(!engine_full_moving(&cfg, 1000, 1200)); /* a time to come */
}

/* Which failed connect is the library's to retry, in both engines. */
static void test_eligible(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct target_addr inet = { .family = AF_INET }, local = { .family = AF_UNIX };
	char why[100];

	cfg.enabled = true;
	cfg.nonblock = true;
	CHECK(!engine_why_not(&cfg, &inet, SOCK_STREAM, true));
	CHECK(!engine_why_not(&cfg, &inet, SOCK_STREAM, false));
	/* A unix datagram connect fails too while its receiver is missing. */
	CHECK(!engine_why_not(&cfg, &local, SOCK_DGRAM, true));
	CHECK_STR(engine_why_not(&cfg, &inet, SOCK_DGRAM, true), "not-stream");
	CHECK_STR(engine_why_not(&cfg, &local, SOCK_SEQPACKET, true), "not-stream");
	/* A non-blocking datagram connect ends at once: nothing under way. */
	CHECK_STR(engine_why_not(&cfg, &local, SOCK_DGRAM, false), "nonblocking");
	cfg.nonblock = false;
	CHECK_STR(engine_why_not(&cfg, &inet, SOCK_STREAM, false), "nonblocking");
	CHECK(!engine_why_not(&cfg, &inet, SOCK_STREAM, true));
	CHECK(target_parse_list("!0.0.0.0:0", &cfg.targets, why, sizeof(why)) == 0);
	CHECK_STR(engine_why_not(&cfg, &inet, SOCK_STREAM, true), "excluded");
	CHECK(!engine_takes(&cfg, &inet));
	cfg.targets.count = 0;
	CHECK(engine_takes(&cfg, &inet));
	cfg.enabled = false;
	CHECK(!engine_takes(&cfg, &inet));
}

/*
 * A call's outcome: an attempt our deadline cut (ETIMEDOUT) is no answer of
 * the kernel's, so the last one the kernel gave stands at a give-up,
 * ETIMEDOUT only when it gave none; any other error is the kernel's own.
 */
static void test_outcome(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct engine_event refused = { .kind = ENGINE_FAILED,
					.err = ECONNREFUSED,
					.budget_left_ms = INF,
					.seed = 7 },
			    cut = { .kind = ENGINE_FAILED,
				    .err = ETIMEDOUT,
				    .budget_left_ms = INF,
				    .seed = 7 },
			    due = { .kind = ENGINE_DUE, .seed = 7 };
	struct retry_progress p;
	struct engine_action a;

	cfg.retries = 1;
	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	a = engine_step(&cfg, &cfg.errors_inet, &p, &refused);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_WAIT);
	due.now_ms = cut.now_ms = a.until_ms;
	a = engine_step(&cfg, &cfg.errors_inet, &p, &due);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_ATTEMPT);
	a = engine_step(&cfg, &cfg.errors_inet, &p, &cut);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_END);
	CHECK_U64((uint64_t)a.err, ECONNREFUSED);
	/* No answer of the kernel's before: our ETIMEDOUT. */
	cfg.retries = 0;
	engine_begin(&cfg, &p, INF, 0, 0, NULL);
	a = engine_step(&cfg, &cfg.errors_inet, &p, &cut);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_END);
	CHECK_U64((uint64_t)a.err, ETIMEDOUT);
}

/* One event at @now for the call @p, its facts in @ev (kind, facts): the action. */
static struct engine_action step_at(const struct config *cfg, struct retry_progress *p,
				    struct engine_event ev, uint64_t now)
{
	ev.now_ms = now;
	ev.seed = 42;
	return engine_step(cfg, &cfg->errors_inet, p, &ev);
}

#define CHECK_ACTION(a, want_what, want_until)                        \
	do {                                                          \
		CHECK_U64((uint64_t)(a).what, (uint64_t)(want_what)); \
		CHECK_U64((a).until_ms, (want_until));                \
	} while (0)

#define CHECK_OVER(a, want_over, want_err)                            \
	do {                                                          \
		CHECK_U64((uint64_t)(a).what, (uint64_t)ENGINE_OVER); \
		CHECK_U64((uint64_t)(a).over, (uint64_t)(want_over)); \
		CHECK_U64((uint64_t)(a).err, (uint64_t)(want_err));   \
	} while (0)

/*
 * The new connection of an early close, one row per rule: to answer by 2000
 * (a local destination's listener looked at after ENGINE_ACCEPT_MS), its
 * attempt planned at 1200.
 */
static void test_again(void)
{
	struct setup set = PLAIN;
	struct config cfg = configured(&set);
	struct engine_again local = { .until_ms = 2000, .local = true },
			    remote = { .until_ms = 2000, .local = false },
			    unbounded = { .until_ms = INF, .local = true };
	struct engine_event due = { .kind = ENGINE_DUE }, look = { .kind = ENGINE_LOOK },
			    connected = { .kind = ENGINE_CONNECTED },
			    held = { .kind = ENGINE_HELD },
			    refused = { .kind = ENGINE_FAILED, .err = ECONNREFUSED };
	struct retry_progress p;
	struct engine_action a;

	/* The facts it reads: the listener's at a due attempt and a look, when local; no record. */
	engine_begin(&cfg, &p, INF, 1000, 1200, &local);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_DUE), ENGINE_FACTS_GONE);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_LOOK), ENGINE_FACTS_ACCEPT);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_FAILED), 0);
	engine_begin(&cfg, &p, INF, 1000, 1200, &remote);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_DUE), 0);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_LOOK), 0);
	engine_begin(&cfg, &p, INF, 1000, 0, NULL);
	/* Its sequence not drawn yet: a failure and a planned time come ask for a seed. */
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_FAILED),
		  ENGINE_FACTS_DEST | ENGINE_FACTS_ADDRESSES | ENGINE_FACTS_SEED);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_HELD), ENGINE_FACTS_DEST | ENGINE_FACTS_ADDRESSES);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_DUE), ENGINE_FACTS_FINDING | ENGINE_FACTS_SEED);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_CONNECTED), 0);
	/* A later attempt's failure: the program's other addresses are no longer asked. */
	(void)step_at(&cfg, &p,
		      (struct engine_event){
			      .kind = ENGINE_FAILED, .err = ECONNREFUSED, .budget_left_ms = INF },
		      1010);
	(void)step_at(&cfg, &p, (struct engine_event){ .kind = ENGINE_DUE }, 1200);
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_FAILED), ENGINE_FACTS_DEST);
	/* The call's last attempt is always made: another's finding is not asked for it. */
	cfg.retries = 1;
	CHECK_U64(engine_facts(&cfg, &p, ENGINE_DUE), 0);
	cfg.retries = 5;

	/* Its local listener gone by its planned attempt: over, no attempt. */
	engine_begin(&cfg, &p, INF, 1000, 1200, &local);
	due.gone = true;
	a = step_at(&cfg, &p, due, 1200);
	CHECK_OVER(a, ENGINE_OVER_GONE, 0);
	due.gone = false;

	/* Its attempt: looked at after the listener's time to accept, or at its time. */
	a = step_at(&cfg, &p, due, 1200);
	CHECK_ACTION(a, ENGINE_ATTEMPT, 1200 + ENGINE_ACCEPT_MS);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 1950), 2000);
	engine_begin(&cfg, &p, INF, 1000, 1200, &remote);
	a = step_at(&cfg, &p, due, 1200);
	CHECK_ACTION(a, ENGINE_ATTEMPT, 2000);

	/* One attempt: a failure is the end of it, however the policy would retry. */
	a = step_at(&cfg, &p, refused, 1210);
	CHECK_OVER(a, ENGINE_OVER_SILENT, ECONNREFUSED);
	/* ... its error held collected first, whatever is left of a budget. */
	engine_begin(&cfg, &p, INF, 1000, 1200, &remote);
	(void)step_at(&cfg, &p, due, 1200);
	a = step_at(&cfg, &p, held, 1210);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_COLLECT);

	/* Made: its first byte awaited until its look. */
	engine_begin(&cfg, &p, INF, 1000, 1200, &local);
	(void)step_at(&cfg, &p, due, 1200);
	a = step_at(&cfg, &p, connected, 1250);
	CHECK_ACTION(a, ENGINE_AWAIT, 1250 + ENGINE_ACCEPT_MS);
	/* ... a byte came: the program's. */
	look.answered = true;
	a = step_at(&cfg, &p, look, 1350);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_END);
	CHECK_U64((uint64_t)a.err, 0);
	look.answered = false;
	/* ... left in its listener's queue: over. */
	look.unaccepted = true;
	a = step_at(&cfg, &p, look, 1350);
	CHECK_OVER(a, ENGINE_OVER_UNACCEPTED, 0);
	look.unaccepted = false;
	/* ... accepted: awaited until its time. */
	a = step_at(&cfg, &p, look, 1350);
	CHECK_ACTION(a, ENGINE_AWAIT, 2000);
	/* ... silent at its time: over, with no error; unanswered: ETIMEDOUT. */
	look.unaccepted = true; /* not asked then */
	a = step_at(&cfg, &p, look, 2000);
	CHECK_OVER(a, ENGINE_OVER_SILENT, 0);
	look.unaccepted = false;
	look.unanswered = true;
	a = step_at(&cfg, &p, look, 2001);
	CHECK_OVER(a, ENGINE_OVER_SILENT, ETIMEDOUT);
	look.unanswered = false;

	/* No time from its verdict (a full server's line): one attempt's time from its attempt. */
	unbounded.local = false;
	engine_begin(&cfg, &p, INF, 1000, 1200, &unbounded);
	a = step_at(&cfg, &p, due, 1200);
	CHECK_ACTION(a, ENGINE_ATTEMPT, 1200 + 5000);
	a = step_at(&cfg, &p, connected, 1250);
	CHECK_ACTION(a, ENGINE_AWAIT, 1200 + 5000);
	look.unanswered = true;
	a = step_at(&cfg, &p, look, 6200);
	CHECK_OVER(a, ENGINE_OVER_SILENT, ETIMEDOUT);
	look.unanswered = false;

	/* No bound (no attempt time, no budget): made, it is the program's at once ... */
	cfg.attempt_timeout_ms = INF;
	engine_begin(&cfg, &p, INF, 1000, 1200, &unbounded);
	(void)step_at(&cfg, &p, due, 1200);
	a = step_at(&cfg, &p, connected, 1250);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_END);
	CHECK_U64((uint64_t)a.err, 0);
	/* ... once its local listener took it. */
	unbounded.local = true;
	engine_begin(&cfg, &p, INF, 1000, 1200, &unbounded);
	(void)step_at(&cfg, &p, due, 1200);
	a = step_at(&cfg, &p, connected, 1250);
	CHECK_ACTION(a, ENGINE_AWAIT, 1250 + ENGINE_ACCEPT_MS);
	a = step_at(&cfg, &p, look, 1350);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_END);
	look.unaccepted = true;
	a = step_at(&cfg, &p, look, 1350);
	CHECK_OVER(a, ENGINE_OVER_UNACCEPTED, 0);
	look.unaccepted = false;
	cfg.attempt_timeout_ms = 5000;

	/* A signal cut its wait: over, with EINTR for the log. */
	engine_begin(&cfg, &p, INF, 1000, 1200, &remote);
	a = step_at(&cfg, &p, (struct engine_event){ .kind = ENGINE_SIGNAL, .err = EINTR }, 1100);
	CHECK_OVER(a, ENGINE_OVER_SILENT, EINTR);

	/* The program closes it meanwhile: the call ends, as any. */
	engine_begin(&cfg, &p, INF, 1000, 1200, &remote);
	a = step_at(&cfg, &p, (struct engine_event){ .kind = ENGINE_CLOSED }, 1100);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_END);

	/* Another's finding at a planned attempt: left to it while it stands, made once stale. */
	refused.budget_left_ms = INF;
	engine_begin(&cfg, &p, INF, 1000, 0, NULL);
	(void)step_at(&cfg, &p, refused, 1010);
	a = step_at(&cfg, &p,
		    (struct engine_event){ .kind = ENGINE_DUE,
					   .found = true,
					   .found_age_ns = engine_finding_fresh_ns(&cfg, false) },
		    1110);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_ATTEMPT);
	engine_begin(&cfg, &p, INF, 1000, 0, NULL);
	(void)step_at(&cfg, &p, refused, 1010);
	a = step_at(&cfg, &p,
		    (struct engine_event){ .kind = ENGINE_DUE, .found = true, .found_age_ns = 5 },
		    1110);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_WAIT);
	CHECK(a.say & ENGINE_SAY_LEFT);

	/* A connect of the program's own, looked at by its deadline: answered, its wait sees it. */
	engine_begin(&cfg, &p, INF, 1000, 0, NULL);
	a = step_at(&cfg, &p, look, 6000);
	CHECK_ACTION(a, ENGINE_AWAIT, INF);
	/* ... unanswered: our deadline cuts it. */
	look.unanswered = true;
	a = step_at(&cfg, &p, look, 6000);
	CHECK_U64((uint64_t)a.what, (uint64_t)ENGINE_ABORT);
}

int main(void)
{
	unsigned i;

	for (i = 0; i < N(rows); i++)
		run_row(&rows[i]);
	test_attempt_deadline();
	test_own_bound();
	test_draws();
	test_outcome();
	test_early_close();
	test_early_close_gone();
	test_budget_left();
	test_run_open();
	test_finding_fresh();
	test_full_line();
	test_eligible();
	test_again();
	return unit_report("engine");
}
