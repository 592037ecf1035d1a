/* Unit tests of drivers/decide: a first attempt left to a prober that is not the call's to wait
 * with. */
#include "drivers/decide.h"
#include "engine/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "unit.h"

/* The driver's first attempts: how many were made, and what each answers. */
struct driver {
	unsigned firsts, attempts;
	int answer;
};

static int first(struct decide_connect *c)
{
	struct driver *d = c->ctx;

	d->firsts++;
	c->started_ms = 42;
	return d->answer;
}

static int attempt(void *ctx, uint64_t deadline_ms)
{
	struct driver *d = ctx;

	(void)deadline_ms;
	d->attempts++;
	return d->answer;
}

/*
 * A connect to 127.0.0.1:1 whose first attempt ended with @err (@waited:
 * left to a prober): its outcome, as returned and as left in the call.
 */
static int run(struct driver *d, int err, bool waited, int *out)
{
	static const char *const env[] = { "BACKOFF_SHARED=off", NULL };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(1) };
	struct config cfg;
	CONFIG_PROBLEMS_ROOM(problems);
	struct target_addr t;
	struct decide_connect c = {
		.fd = -1,
		.target = &t,
		.err = err,
		.waited = waited,
		.attempt = attempt,
		.first = first,
		.ctx = d,
	};
	int outcome;

	config_parse(unit_env, (void *)env, &cfg, &problems);
	engine_derive(&cfg);
	CHECK_U64(problems.count, 0);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	CHECK(target_from_sockaddr((const struct sockaddr *)&sin, sizeof(sin), &t));
	outcome = decide_failed(&cfg, &c);
	*out = c.err;
	CHECK(!c.waited);
	return outcome;
}

/*
 * An error no connect is retried on (EACCES): a call's own failure is its
 * outcome, no attempt made; one that a prober's finding stood for is the
 * program's own attempt's, made once, whatever it answers.
 */
static void test_a_left_attempt_not_retried_is_made_once(void)
{
	struct driver d = { .answer = 0 };
	int err = -1;

	CHECK_U64((uint64_t)run(&d, EACCES, false, &err), EACCES);
	CHECK_U64((uint64_t)err, EACCES);
	CHECK_U64(d.firsts + d.attempts, 0);

	CHECK_U64((uint64_t)run(&d, EACCES, true, &err), 0);
	CHECK_U64((uint64_t)err, 0);
	CHECK_U64(d.firsts, 1);

	d = (struct driver){ .answer = EACCES };
	CHECK_U64((uint64_t)run(&d, EACCES, true, &err), EACCES);
	CHECK_U64((uint64_t)err, EACCES);
	CHECK_U64(d.firsts, 1);
	CHECK_U64(d.attempts, 0);
}

int main(void)
{
	test_a_left_attempt_not_retried_is_made_once();
	return unit_report("decide");
}
