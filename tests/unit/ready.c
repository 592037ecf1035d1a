/* Unit tests of core/ready: PostgreSQL's start-up messages and its "not ready" answer. */
#include "core/ready.h"

#include "unit.h"

/* An SSLRequest and a GSSENCRequest: length 8, then the code. */
static const unsigned char ssl[8] = { 0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f };
static const unsigned char gss[8] = { 0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30 };
/* A StartupMessage: length 23, protocol 3.0, user=pg. */
static const unsigned char startup[23] = { 0, 0,   0,	23, 0, 3, 0, 0, 'u', 's', 'e', 'r',
					   0, 'p', 'g', 0,  0, 0, 0, 0, 0,   0,	  0 };

/* The ErrorResponse of a server starting up, as PostgreSQL 15 sends it (its head). */
static const unsigned char not_ready[] = "E\0\0\0\x5fSFATAL\0VFATAL\0C57P03\0"
					 "Mthe database system is starting up\0"
					 "Fpostmaster.c\0L2400\0RProcessStartupPacket\0";
/* pg_hba.conf rejects: an error too, another code. */
static const unsigned char rejected[] = "E\0\0\0\x30SFATAL\0C28000\0Mpg_hba.conf rejects it\0";
/* AuthenticationOk. */
static const unsigned char auth_ok[] = { 'R', 0, 0, 0, 8, 0, 0, 0, 0 };

static void test_startup(void)
{
	unsigned char both[31];

	memcpy(both, ssl, 8);
	memcpy(both + 8, startup, 23);
	CHECK(ready_startup(ssl, 8));
	CHECK(ready_startup(gss, 8));
	CHECK(ready_startup(startup, 23));
	CHECK(ready_startup(both, 31));
	CHECK(!ready_startup(startup, 22)); /* not whole */
	CHECK(!ready_startup(both, 30));    /* not whole */
	CHECK(!ready_startup("GET / HTTP/1.1\r\n", 16));
	CHECK(!ready_startup(ssl, 7));
	CHECK(!ready_startup(NULL, 0));
	CHECK_U64(ready_pause(both, 31), 8);
	CHECK_U64(ready_pause(startup, 23), 0);
	CHECK(ready_may_open(ssl, 8));
	CHECK(!ready_may_open(ssl, 9));
	CHECK(ready_may_open(startup, 23));
	CHECK(!ready_may_open(startup, 24));
	CHECK(!ready_may_open((const unsigned char *)"GET / HT", 16));
}

static void test_answers(void)
{
	unsigned char both[31];

	memcpy(both, ssl, 8);
	memcpy(both + 8, startup, 23);
	/* To an SSLRequest: N goes on in the clear; S (TLS) is an answer. */
	CHECK_U64(ready_answer("N", 1, ssl, 8), READY_GOES_ON);
	CHECK_U64(ready_answer("S", 1, ssl, 8), READY_ANSWERED);
	CHECK_U64(ready_answer("NN", 2, ssl, 8), READY_ANSWERED);
	/* To a StartupMessage: 57P03 is not ready; any other answer is one. */
	CHECK_U64(ready_answer(not_ready, sizeof(not_ready) - 1, both, 31), READY_NOT);
	CHECK_U64(ready_answer(not_ready, sizeof(not_ready) - 1, startup, 23), READY_NOT);
	CHECK_U64(ready_answer(not_ready, 26, startup, 23), READY_NOT);	     /* read to its code */
	CHECK_U64(ready_answer(not_ready, 25, startup, 23), READY_ANSWERED); /* code cut */
	CHECK_U64(ready_answer(rejected, sizeof(rejected) - 1, both, 31), READY_ANSWERED);
	CHECK_U64(ready_answer(auth_ok, sizeof(auth_ok), both, 31), READY_ANSWERED);
	CHECK_U64(ready_answer("N", 1, both, 31), READY_ANSWERED);
	CHECK_U64(ready_answer(NULL, 0, both, 31), READY_ANSWERED);
}

int main(void)
{
	test_startup();
	test_answers();
	return unit_report("ready");
}
