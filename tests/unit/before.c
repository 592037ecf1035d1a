/* Unit tests of drivers/before: the rule before a first attempt, one row per case, no clock. */
#include "drivers/before.h"
#include "engine/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "unit.h"

#define MS 1000000ULL
#define NOW (1000 * MS)

static void parse(struct config *cfg, const char *const *env)
{
	CONFIG_PROBLEMS_ROOM(problems);

	config_parse(unit_env, (void *)env, cfg, &problems);
	engine_derive(cfg);
	CHECK_U64(problems.count, 0);
}

static struct target_addr inet(const char *ip, unsigned port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct target_addr t;

	inet_pton(AF_INET, ip, &sin.sin_addr);
	CHECK(target_from_sockaddr((const struct sockaddr *)&sin, sizeof(sin), &t));
	return t;
}

static struct target_addr unix_path(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct target_addr t;

	strcpy(sun.sun_path, path);
	CHECK(target_from_sockaddr((const struct sockaddr *)&sun, sizeof(sun), &t));
	return t;
}

/* The facts of a stream socket at NOW: @blocking, damped for @damp_ms, found down with @err. */
static struct before_facts facts(bool blocking, uint64_t damp_ms, int err)
{
	return (struct before_facts){
		.type = SOCK_STREAM,
		.blocking = blocking,
		.sndtimeo_ms = CONFIG_INFINITE,
		.now_ns = NOW,
		.damped_until_ns = damp_ms ? NOW + damp_ms * MS : 0,
		.down_err = err,
		.full_line = -1,
	};
}

static void test_nothing_known_attempts_now(void)
{
	static const char *const env[] = { NULL };
	struct target_addr lo = inet("127.0.0.1", 5432);
	struct before_facts f = facts(true, 0, 0);
	struct config cfg;
	uint64_t until = 7;

	parse(&cfg, env);
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_ATTEMPT);
	CHECK_U64(until, 7);
	/* A delay that has ended is none. */
	f.damped_until_ns = NOW;
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_ATTEMPT);
}

static void test_damped_blocking_waits_within_its_own_timeout(void)
{
	static const char *const env[] = { NULL };
	struct target_addr t = inet("10.0.0.5", 25);
	struct before_facts f = facts(true, 800, 0);
	struct config cfg;
	uint64_t until = 0;

	parse(&cfg, env);
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 800 * MS);
	/* The program's send timeout bounds the connect, the wait in it too. */
	f.sndtimeo_ms = 300;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 300 * MS);
	f.sndtimeo_ms = 800;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 800 * MS);
	f.sndtimeo_ms = UINT64_MAX / 2; /* no overflow */
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 800 * MS);
}

/*
 * A full server's line: a connect joins it when others wait in it or it
 * would wait anyway: until its delay's end if one is to come, else half the
 * cap to the cap by the draw; a blocking one within its own send timeout.
 */
static void test_full_server_line(void)
{
	static const char *const env[] = { "BACKOFF_CAP=2s", NULL };
	struct target_addr t = inet("127.0.0.1", 6379);
	struct before_facts f = facts(true, 0, 0);
	struct config cfg;
	uint64_t until = 0;

	parse(&cfg, env);
	f.full_line = 0; /* full, nobody in line, no delay: attempt */
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
	f.full_line = 3;
	f.draw = 0;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 1000 * MS);
	f.draw = 1000;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 2000 * MS);
	/* A delay to wait: in line until its end (the schedule), then the line is looked at. */
	f.full_line = 0;
	f.draw = 0;
	f.damped_until_ns = NOW + 300 * MS;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 300 * MS);
	f.damped_until_ns = NOW + 1500 * MS;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 1500 * MS);
	/* The program's send timeout bounds the line too. */
	f.sndtimeo_ms = 400;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_WAIT);
	CHECK_U64(until, NOW + 400 * MS);
	/* An event loop's connect joins it too where its driver looks for a place freed.
	 */
	f = facts(false, 300, 0);
	f.full_line = 3;
	f.sndtimeo_ms = 100;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_LATER);
	CHECK_U64(until, NOW + 300 * MS); /* its driver does not look: the delay alone */
	f.looks = true;
	f.damped_until_ns = 0;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_LATER);
	CHECK_U64(until, NOW + 1000 * MS);
	f.damped_until_ns = 0;
	f.full_line = 0;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
}

static void test_damped_nonblocking_is_the_event_loops(void)
{
	static const char *const env[] = { NULL };
	static const char *const off[] = { "BACKOFF_NONBLOCK=off", NULL };
	struct target_addr t = inet("127.0.0.1", 8080);
	struct before_facts f = facts(false, 500, 0);
	struct config cfg;
	uint64_t until = 0;

	parse(&cfg, env);
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_LATER);
	CHECK_U64(until, NOW + 500 * MS);
	/* Its own send timeout is no bound of a non-blocking connect. */
	f.sndtimeo_ms = 100;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_LATER);
	CHECK_U64(until, NOW + 500 * MS);
	/* BACKOFF_NONBLOCK=off: not ours; a prober's finding still stands. */
	parse(&cfg, off);
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
	f.down_err = ECONNREFUSED;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_LEFT);
}

static void test_damping_is_for_tcp_connects_to_targets(void)
{
	static const char *const env[] = { NULL };
	static const char *const excluded[] = { "BACKOFF_TARGETS=!*:8080", NULL };
	static const char *const unshared[] = { "BACKOFF_SHARED=off", NULL };
	static const char *const off[] = { "BACKOFF=off", NULL };
	struct target_addr t = inet("127.0.0.1", 8080), u = unix_path("/run/x.sock");
	struct before_facts f = facts(true, 500, 0);
	struct config cfg;
	uint64_t until = 0;

	parse(&cfg, env);
	f.type = SOCK_DGRAM;
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
	f.type = SOCK_STREAM;
	CHECK_U64(before_decide(&cfg, &u, &f, &until), BEFORE_ATTEMPT);
	parse(&cfg, excluded);
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
	parse(&cfg, unshared);
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
	parse(&cfg, off);
	CHECK_U64(before_decide(&cfg, &t, &f, &until), BEFORE_ATTEMPT);
}

static void test_a_fresh_finding_leaves_a_local_stream_attempt(void)
{
	static const char *const env[] = { NULL };
	static const char *const no_look[] = { "BACKOFF_LOCAL_PROBE=off", NULL };
	struct target_addr lo = inet("127.0.0.1", 4711), far = inet("192.0.2.1", 4711),
			   u = unix_path("/run/x.sock");
	struct before_facts f = facts(false, 0, ECONNREFUSED);
	struct config cfg;
	uint64_t until = 0;

	parse(&cfg, env);
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_LEFT);
	CHECK_U64(before_decide(&cfg, &u, &f, &until), BEFORE_LEFT);
	f.blocking = true;
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_LEFT);
	/* A remote destination has no prober; a datagram connect is made. */
	CHECK_U64(before_decide(&cfg, &far, &f, &until), BEFORE_ATTEMPT);
	f.type = SOCK_DGRAM;
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_ATTEMPT);
	f.type = SOCK_STREAM;
	parse(&cfg, no_look);
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_ATTEMPT);
}

static void test_the_delay_comes_before_the_finding(void)
{
	static const char *const env[] = { NULL };
	struct target_addr lo = inet("127.0.0.1", 4711);
	struct before_facts f = facts(true, 200, ECONNREFUSED);
	struct config cfg;
	uint64_t until = 0;

	parse(&cfg, env);
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_WAIT);
	f.blocking = false;
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_LATER);
	/* Past its delay (waited, or not the event loop's): asked again, the finding stands. */
	f.damped_until_ns = 0;
	CHECK_U64(before_decide(&cfg, &lo, &f, &until), BEFORE_LEFT);
}

static void test_first_bound(void)
{
	static const char *const env[] = { NULL };
	static const char *const one_s[] = { "BACKOFF_ATTEMPT_TIMEOUT=1s", NULL };
	static const char *const no_retry[] = { "BACKOFF_RETRIES=0", NULL };
	static const char *const excluded[] = { "BACKOFF_TARGETS=!*:80", NULL };
	static const char *const inf[] = { "BACKOFF_ATTEMPT_TIMEOUT=inf", NULL };
	static const char *const both_inf[] = { "BACKOFF_ATTEMPT_TIMEOUT=inf",
						"BACKOFF_TIMEOUT=inf", NULL };
	struct target_addr lo = inet("127.0.0.1", 80), far = inet("192.0.2.1", 80),
			   u = unix_path("/run/x.sock");
	struct config cfg;

	parse(&cfg, env);
	CHECK_U64(before_bound_ms(&cfg, &far), 5000);
	CHECK_U64(before_bound_ms(&cfg, &lo), CONFIG_LOCAL_ATTEMPT_MS);
	CHECK_U64(before_bound_ms(&cfg, &u), CONFIG_INFINITE);
	parse(&cfg, one_s);
	CHECK_U64(before_bound_ms(&cfg, &far), 1000);
	/* No retry to follow: a loopback attempt is not cut short. */
	parse(&cfg, no_retry);
	CHECK_U64(before_bound_ms(&cfg, &lo), 5000);
	parse(&cfg, excluded);
	CHECK_U64(before_bound_ms(&cfg, &far), CONFIG_INFINITE);
	/* No attempt timeout: the call's budget bounds it. */
	parse(&cfg, inf);
	CHECK_U64(before_bound_ms(&cfg, &far), 60000);
	parse(&cfg, both_inf);
	CHECK_U64(before_bound_ms(&cfg, &far), CONFIG_INFINITE);
}

/*
 * IPv6 alike; a budget of 0 retries nothing, so a loopback attempt is not
 * cut short either; an attempt time shorter than the cap is kept.
 */
static void test_first_bound_v6_and_no_budget(void)
{
	static const char *const env[] = { NULL };
	static const char *const no_budget[] = { "BACKOFF_TIMEOUT=0", NULL };
	static const char *const short_attempt[] = { "BACKOFF_ATTEMPT_TIMEOUT=10ms", NULL };
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_port = htons(80) },
			    far6 = { .sin6_family = AF_INET6, .sin6_port = htons(80) };
	struct target_addr lo, far, lo4 = inet("127.0.0.1", 80);
	struct config cfg;

	CHECK(inet_pton(AF_INET6, "::1", &lo6.sin6_addr) == 1);
	CHECK(inet_pton(AF_INET6, "2001:db8::1", &far6.sin6_addr) == 1);
	CHECK(target_from_sockaddr((const struct sockaddr *)&lo6, sizeof(lo6), &lo));
	CHECK(target_from_sockaddr((const struct sockaddr *)&far6, sizeof(far6), &far));
	parse(&cfg, env);
	CHECK_U64(engine_first_bound_ms(&cfg, &lo), CONFIG_LOCAL_ATTEMPT_MS);
	CHECK_U64(engine_first_bound_ms(&cfg, &far), 5000);
	parse(&cfg, no_budget);
	CHECK_U64(engine_first_bound_ms(&cfg, &lo4), 5000);
	/* An attempt time shorter than the loopback cap: its own. */
	parse(&cfg, short_attempt);
	CHECK_U64(engine_first_bound_ms(&cfg, &lo4), 10);
}

/*
 * The first attempt's bound is an attempt's deadline's, for the program's
 * first attempt alone; a call begun earlier counts from then, one not begun
 * yet has its first attempt planned.
 */
static void test_first_deadline_and_begin(void)
{
	static const char *const env[] = { NULL };
	struct target_addr lo = inet("127.0.0.1", 80), far = inet("192.0.2.1", 80);
	struct retry_progress p;
	struct config cfg;

	parse(&cfg, env);
	engine_begin(&cfg, &p, CONFIG_INFINITE, 1000, 400, NULL);
	CHECK_U64(p.attempt, 1);
	CHECK_U64(p.start_ms, 400);
	CHECK_U64(p.planned_ms, 1000);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, &lo, false, false, 1000),
		  1000 + CONFIG_LOCAL_ATTEMPT_MS);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, &far, false, false, 1000), 6000);
	CHECK_U64(engine_attempt_deadline(&cfg, &p, NULL, false, false, 1000), 6000);
	p.attempt = 2; /* a retry: the attempt's own time */
	CHECK_U64(engine_attempt_deadline(&cfg, &p, &lo, false, false, 1000), 6000);
	engine_begin(&cfg, &p, CONFIG_INFINITE, 1000, 1500, NULL);
	CHECK_U64(p.attempt, 0);
	CHECK_U64(p.start_ms, 1000);
	CHECK_U64(p.planned_ms, 1500);
}

int main(void)
{
	test_nothing_known_attempts_now();
	test_damped_blocking_waits_within_its_own_timeout();
	test_damped_nonblocking_is_the_event_loops();
	test_full_server_line();
	test_damping_is_for_tcp_connects_to_targets();
	test_a_fresh_finding_leaves_a_local_stream_attempt();
	test_the_delay_comes_before_the_finding();
	test_first_bound();
	test_first_bound_v6_and_no_budget();
	test_first_deadline_and_begin();
	return unit_report("before");
}
