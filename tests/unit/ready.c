/* Unit tests of engine/ready: PostgreSQL's start-up messages and its "not ready" answer. */
#include "engine/ready.h"

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
/* A server at max_connections, as PostgreSQL 15 sends it (its head). */
static const unsigned char too_many[] = "E\0\0\0\x5bSFATAL\0VFATAL\0C53300\0"
					"Msorry, too many clients already\0";
/* An error whose code field is not five bytes: no refusal for now. */
static const unsigned char odd_code[] = "E\0\0\0\x14SFATAL\0C5330\0Mx\0";
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
	/* 53300, too many connections: a refusal for now too; the log names each. */
	CHECK_U64(ready_answer(too_many, sizeof(too_many) - 1, startup, 23), READY_NOT);
	CHECK_STR(ready_startup_refusal(too_many, sizeof(too_many) - 1), "53300");
	CHECK_STR(ready_startup_refusal(not_ready, sizeof(not_ready) - 1), "57P03");
	CHECK(ready_startup_refusal(rejected, sizeof(rejected) - 1) == NULL);
	CHECK(ready_startup_refusal(odd_code, sizeof(odd_code) - 1) == NULL);
	CHECK(ready_startup_refusal(auth_ok, sizeof(auth_ok)) == NULL);
	CHECK(ready_startup_refusal(NULL, 0) == NULL);
	CHECK_U64(ready_answer(auth_ok, sizeof(auth_ok), both, 31), READY_ANSWERED);
	CHECK_U64(ready_answer("N", 1, both, 31), READY_ANSWERED);
	CHECK_U64(ready_answer(NULL, 0, both, 31), READY_ANSWERED);
}

/* Greeting refusals: one row per answer, whole, cut short, and its look-alikes. */
static void test_greetings(void)
{
	static const unsigned char mysql_full[] = {
		0x17, 0, 0, 0, 0xFF, 0x10, 0x04, 'T', 'o', 'o'
	};
	static const unsigned char mysql_down[] = { 0x1d, 0, 0, 0, 0xFF, 0x1d, 0x04 };
	static const unsigned char mysql_denied[] = { 0x1d, 0, 0, 0, 0xFF, 0x15, 0x04 };
	static const unsigned char mysql_greeting[] = { 0x4a, 0, 0, 0, 0x0a, '8', '.' };
	static const struct {
		const char *what;
		const void *bytes;
		size_t n;
		unsigned protocols;
		enum ready_greeting want;
		const char *name;
	} rows[] = {
		{ "redis at maxclients", "-ERR max number of clients reached\r\n", 36,
		  READY_PROTOCOLS_ALL, READY_REFUSAL, "Redis" },
		{ "redis at maxclients, its protocol off", "-ERR max number of clients reached\r\n",
		  36, READY_PROTOCOLS_ALL & ~(unsigned)READY_REDIS, READY_GREETING, NULL },
		{ "redis, one byte read", "-", 1, READY_PROTOCOLS_ALL, READY_UNDECIDED, NULL },
		{ "another redis error", "-ERR unknown command\r\n", 22, READY_PROTOCOLS_ALL,
		  READY_GREETING, NULL },
		{ "memcached at its limit", "ERROR Too many open connections\r\n", 33,
		  READY_PROTOCOLS_ALL, READY_REFUSAL, "memcached" },
		{ "an SMTP 421 greeting", "421 mail.example closing\r\n", 26, READY_SMTP,
		  READY_REFUSAL, "421" },
		{ "an FTP 421 greeting, continued", "421-Too many users\r\n", 21, READY_FTP,
		  READY_REFUSAL, "421" },
		{ "an SMTP 220 greeting", "220 mail.example ESMTP\r\n", 24, READY_PROTOCOLS_ALL,
		  READY_GREETING, NULL },
		{ "a 421 with both off", "421 busy\r\n", 10,
		  READY_PROTOCOLS_ALL & ~(unsigned)(READY_SMTP | READY_FTP), READY_GREETING, NULL },
		{ "mysql: too many connections", mysql_full, sizeof(mysql_full), READY_MYSQL,
		  READY_REFUSAL, "MySQL" },
		{ "mysql: shutting down", mysql_down, sizeof(mysql_down), READY_MYSQL,
		  READY_REFUSAL, "MySQL" },
		{ "mysql: another error", mysql_denied, sizeof(mysql_denied), READY_MYSQL,
		  READY_GREETING, NULL },
		{ "mysql: its greeting", mysql_greeting, sizeof(mysql_greeting), READY_MYSQL,
		  READY_GREETING, NULL },
		{ "mysql: cut before its code", mysql_full, 6, READY_MYSQL, READY_UNDECIDED, NULL },
		{ "mysql: three bytes of length", mysql_full, 3, READY_MYSQL, READY_UNDECIDED,
		  NULL },
		/* A short read of a text greeting: no length of an ERR packet, told at once. */
		{ "three bytes of text", "hi\n", 3, READY_PROTOCOLS_ALL, READY_GREETING, NULL },
		{ "two bytes of an SMTP 220", "22", 2, READY_PROTOCOLS_ALL, READY_GREETING, NULL },
		{ "mysql: a length of 64 KiB or more", "\x17\x00\x01", 3, READY_MYSQL,
		  READY_GREETING, NULL },
		{ "nats at max connections",
		  "INFO {\"server_id\":\"x\"}\r\n-ERR 'maximum "
		  "connections exceeded'\r\n",
		  62, READY_NATS, READY_REFUSAL, "NATS" },
		{ "nats: its INFO alone", "INFO {\"server_id\":\"x\"}\r\n", 24, READY_NATS,
		  READY_UNDECIDED, NULL },
		{ "nats: INFO cut short", "INFO {\"ser", 10, READY_NATS, READY_UNDECIDED, NULL },
		{ "nats: INFO, then something else", "INFO {}\r\nPING\r\n", 15, READY_NATS,
		  READY_GREETING, NULL },
		{ "an SSH banner", "SSH-2.0-OpenSSH_9.2\r\n", 21, READY_PROTOCOLS_ALL,
		  READY_GREETING, NULL },
		{ "nothing", "", 0, READY_PROTOCOLS_ALL, READY_GREETING, NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *name = NULL;
		enum ready_greeting got =
			ready_greeting(rows[i].bytes, rows[i].n, rows[i].protocols, &name);

		CHECK(got == rows[i].want);
		CHECK(rows[i].name ? name && strstr(name, rows[i].name) != NULL : !name);
		/* Every refusal is for want of room, but MySQL's shutting down. */
		CHECK(ready_greeting_full(name) ==
		      (got == READY_REFUSAL && strcmp(rows[i].what, "mysql: shutting down") != 0));
		if (got != rows[i].want)
			fprintf(stderr, "  %s: got %d\n", rows[i].what, (int)got);
	}
	CHECK_STR(config_protocol_names[0], "postgresql");
}

/* MQTT: the CONNECT recorded whole, and the CONNACKs that refuse it for now. */
static void test_mqtt(void)
{
	static const unsigned char v311[] = {
		0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60, 0, 0
	};
	static const unsigned char v5[] = {
		0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 60, 0, 0, 0
	};
	static const unsigned char v31[] = { 0x10, 14,	0, 6, 'M', 'Q', 'I', 's',
					     'd',  'p', 3, 2, 0,   60,	0,   0 };
	static const unsigned char v6[] = { 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 6, 2, 0, 60, 0, 0 };
	static const unsigned char long_len[] = { 0x10, 0x80, 0x01 };

	CHECK(ready_mqtt_connect(v311, sizeof(v311)));
	CHECK(ready_mqtt_connect(v5, sizeof(v5)));
	CHECK(ready_mqtt_connect(v31, sizeof(v31)));
	CHECK(!ready_mqtt_connect(v311, sizeof(v311) - 1)); /* not whole */
	CHECK(!ready_mqtt_connect(v6, sizeof(v6)));	    /* no such level */
	CHECK(!ready_mqtt_connect("GET / HTTP/1.1\r\n", 16));
	CHECK(!ready_mqtt_connect(long_len, sizeof(long_len)));
	CHECK(!ready_mqtt_connect(NULL, 0));
	CHECK(ready_mqtt_may_open(v311, sizeof(v311)));
	CHECK(ready_mqtt_may_open(v31, sizeof(v31)));
	CHECK(!ready_mqtt_may_open(v311, sizeof(v311) + 1));
	CHECK(!ready_mqtt_may_open((const unsigned char *)"\x10\x0c\0\4HTTP", 14));
	/* 3.1 and 3.1.1: code 3 (server unavailable) is for now; 5 (not authorized) is an answer.
	 */
	CHECK_U64(ready_connack("\x20\x02\x00\x03", 4, v311, sizeof(v311)), READY_NOT);
	CHECK_U64(ready_connack("\x20\x02\x00\x03", 4, v31, sizeof(v31)), READY_NOT);
	CHECK_U64(ready_connack("\x20\x02\x00\x05", 4, v311, sizeof(v311)), READY_ANSWERED);
	CHECK_U64(ready_connack("\x20\x02\x00\x00", 4, v311, sizeof(v311)), READY_ANSWERED);
	CHECK_U64(ready_connack("\x20\x02\x00", 3, v311, sizeof(v311)), READY_ANSWERED);
	/* 5: 0x88, 0x89, 0x9F (with properties after them) are for now; 0x87 is an answer. */
	CHECK_U64(ready_connack("\x20\x03\x00\x88\x00", 5, v5, sizeof(v5)), READY_NOT);
	CHECK_U64(ready_connack("\x20\x06\x00\x89\x03\x24\x01\x00", 8, v5, sizeof(v5)), READY_NOT);
	CHECK_U64(ready_connack("\x20\x03\x00\x9f\x00", 5, v5, sizeof(v5)), READY_NOT);
	CHECK_U64(ready_connack("\x20\x03\x00\x87\x00", 5, v5, sizeof(v5)), READY_ANSWERED);
	CHECK_U64(ready_connack("\x20\x03\x00\x03\x00", 5, v5, sizeof(v5)), READY_ANSWERED);
	/* Not a CONNACK, or no CONNECT recorded. */
	CHECK_U64(ready_connack("\x30\x02\x00\x03", 4, v311, sizeof(v311)), READY_ANSWERED);
	CHECK_U64(ready_connack("\x20\x02\x00\x03", 4, "GET / HTTP/1.1\r\n", 16), READY_ANSWERED);
	CHECK_U64(ready_connack(NULL, 0, v311, sizeof(v311)), READY_ANSWERED);
}

/* Redis: one command whole, and the answers that say it did not run. */
static void test_resp(void)
{
	static const char ping[] = "*1\r\n$4\r\nPING\r\n";
	static const char get[] = "*2\r\n$3\r\nGET\r\n$5\r\nkey:1\r\n";
	static const char two[] = "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";

	CHECK(ready_resp_command(ping, sizeof(ping) - 1));
	CHECK(ready_resp_command(get, sizeof(get) - 1));
	CHECK(!ready_resp_command(two, sizeof(two) - 1));   /* a pipeline */
	CHECK(!ready_resp_command(ping, sizeof(ping) - 2)); /* not whole */
	CHECK(!ready_resp_command("PING\r\n", 6));	    /* inline */
	CHECK(!ready_resp_command("*0\r\n", 4));
	CHECK(!ready_resp_command("*1\r\n:4\r\n", 8));
	CHECK(!ready_resp_command("*1\r\n$4\r\nPINGxx", 14));
	CHECK(!ready_resp_command("*1\r\n$x\r\nPING\r\n", 14));
	CHECK(!ready_resp_command("*99999\r\n", 9));
	CHECK(!ready_resp_command("*1\r", 4));
	CHECK(!ready_resp_command(NULL, 0));
	CHECK(ready_resp_may_open((const unsigned char *)ping, sizeof(ping) - 1));
	CHECK(!ready_resp_may_open((const unsigned char *)"GET / HT", 16));
	CHECK(!ready_resp_may_open((const unsigned char *)ping, 4));
	CHECK_U64(ready_resp_answer("-LOADING Redis is loading the dataset in memory\r\n", 49),
		  READY_NOT);
	CHECK_U64(ready_resp_answer("-BUSY Redis is busy\r\n", 22), READY_NOT);
	CHECK_U64(ready_resp_answer("-MASTERDOWN Link with MASTER is down\r\n", 38), READY_NOT);
	CHECK_U64(ready_resp_answer("-ERR unknown command\r\n", 22), READY_ANSWERED);
	CHECK_U64(ready_resp_answer("+PONG\r\n", 7), READY_ANSWERED);
	CHECK_U64(ready_resp_answer("-LOAD", 5), READY_ANSWERED);
	CHECK_U64(ready_resp_answer(NULL, 0), READY_ANSWERED);
}

/* HTTP: the request that may be sent again, and the answers that say "try later". */
static void test_http(void)
{
	static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
	static const char head[] = "HEAD /a HTTP/1.0\r\nContent-Length: 0\r\n\r\n";
	static const char post[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nx=1";
	static const char body[] = "GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\n";
	static const char expect[] = "GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n";
	static const char chunked[] = "GET / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n";
	static const char two[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n\r\n";
	static const char h2[] = "GET / HTTP/2.0\r\nHost: x\r\n\r\n";
	uint64_t wait;

	CHECK(ready_http_request(get, sizeof(get) - 1));
	CHECK(ready_http_request(head, sizeof(head) - 1));
	CHECK(!ready_http_request(post, sizeof(post) - 1));
	CHECK(!ready_http_request(body, sizeof(body) - 1));
	CHECK(!ready_http_request(expect, sizeof(expect) - 1));
	CHECK(!ready_http_request(chunked, sizeof(chunked) - 1));
	CHECK(!ready_http_request(two, sizeof(two) - 1)); /* pipelined */
	CHECK(!ready_http_request(get, sizeof(get) - 3)); /* not whole */
	CHECK(!ready_http_request(h2, sizeof(h2) - 1));
	CHECK(!ready_http_request(NULL, 0));
	CHECK(ready_http_may_open((const unsigned char *)get, sizeof(get) - 1));
	CHECK(!ready_http_may_open((const unsigned char *)post, sizeof(post) - 1));
	/* The answers: 429, 502, 503, 504; Retry-After in seconds or as a date. */
	CHECK_U64(ready_http_answer("HTTP/1.1 503 Busy\r\nRetry-After: 2\r\n\r\n", 38, 0, &wait),
		  READY_NOT);
	CHECK_U64(wait, 2000);
	CHECK_U64(ready_http_answer("HTTP/1.1 429 Slow down\r\nretry-after:120\r\n\r\n", 42, 0,
				    &wait),
		  READY_NOT);
	CHECK_U64(wait, 120000);
	CHECK_U64(ready_http_answer("HTTP/1.0 502 Bad Gateway\r\n\r\n", 28, 0, &wait), READY_NOT);
	CHECK_U64(wait, 0);
	CHECK_U64(ready_http_answer("HTTP/1.1 504 Gateway Time-out\r\n\r\n", 33, 0, &wait),
		  READY_NOT);
	CHECK_U64(ready_http_answer("HTTP/1.1 500 Oops\r\n\r\n", 21, 0, &wait), READY_ANSWERED);
	CHECK_U64(ready_http_answer("HTTP/1.1 200 OK\r\n\r\n", 19, 0, &wait), READY_ANSWERED);
	CHECK_U64(ready_http_answer("HTTP/1.1 5", 10, 0, &wait), READY_ANSWERED);
	CHECK_U64(ready_http_answer("SSH-2.0-x\r\n", 11, 0, &wait), READY_ANSWERED);
	/* 784111777 is Sun, 06 Nov 1994 08:49:37 GMT, in each of the three forms. */
	CHECK_U64(ready_http_answer(
			  "HTTP/1.1 503 x\r\nRetry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n",
			  63, 784111770, &wait),
		  READY_NOT);
	CHECK_U64(wait, 7000);
	CHECK_U64(ready_http_answer(
			  "HTTP/1.1 503 x\r\nRetry-After: Sunday, 06-Nov-94 08:49:37 GMT\r\n\r\n",
			  64, 784111770, &wait),
		  READY_NOT);
	CHECK_U64(wait, 7000);
	CHECK_U64(
		ready_http_answer("HTTP/1.1 503 x\r\nRetry-After: Sun Nov  6 08:49:37 1994\r\n\r\n",
				  57, 784111770, &wait),
		READY_NOT);
	CHECK_U64(wait, 7000);
	/* A date past, or none that parses: no wait of the server's. */
	CHECK_U64(ready_http_answer(
			  "HTTP/1.1 503 x\r\nRetry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n",
			  63, 784111780, &wait),
		  READY_NOT);
	CHECK_U64(wait, 0);
	CHECK_U64(ready_http_answer("HTTP/1.1 503 x\r\nRetry-After: soon\r\n\r\n", 37, 0, &wait),
		  READY_NOT);
	CHECK_U64(wait, 0);
}

/* The driver's one question each: which request, whether it may be one, whether it says full. */
static void test_dispatch(void)
{
	static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char ping[] = "*1\r\n$4\r\nPING\r\n";
	static const char h503[] = "HTTP/1.1 503 Busy\r\n\r\n";
	static const char h502[] = "HTTP/1.1 502 Bad\r\n\r\n";
	static const char h429[] = "HTTP/1.1 429 Slow\r\n\r\n";
	unsigned char head[8];

	CHECK(ready_request(READY_PROTOCOLS_ALL, startup, sizeof(startup)) ==
	      READY_REQUEST_POSTGRESQL);
	CHECK(ready_request(READY_PROTOCOLS_ALL | READY_HTTP, get, sizeof(get) - 1) ==
	      READY_REQUEST_HTTP);
	CHECK(ready_request(READY_PROTOCOLS_ALL, get, sizeof(get) - 1) == READY_REQUEST_NONE);
	CHECK(ready_request(READY_PROTOCOLS_ALL, ping, sizeof(ping) - 1) == READY_REQUEST_REDIS);
	/* Only the protocols asked for. */
	CHECK(ready_request(READY_PROTOCOLS_ALL & ~(unsigned)READY_POSTGRESQL, startup,
			    sizeof(startup)) == READY_REQUEST_NONE);
	CHECK(ready_request(READY_REDIS, get, sizeof(get) - 1) == READY_REQUEST_NONE);
	CHECK(ready_request(READY_PROTOCOLS_ALL, "hello", 5) == READY_REQUEST_NONE);
	CHECK(ready_request_without_effect(READY_REQUEST_POSTGRESQL));
	CHECK(ready_request_without_effect(READY_REQUEST_MQTT));
	CHECK(!ready_request_without_effect(READY_REQUEST_REDIS));
	CHECK(!ready_request_without_effect(READY_REQUEST_HTTP));
	CHECK(!ready_request_without_effect(READY_REQUEST_NONE));
	memcpy(head, get, 8);
	CHECK(ready_may_open_any(READY_PROTOCOLS_ALL | READY_HTTP, head, sizeof(get) - 1));
	CHECK(!ready_may_open_any(READY_PROTOCOLS_ALL & ~(unsigned)READY_HTTP, head,
				  sizeof(get) - 1));
	memcpy(head, startup, 8);
	CHECK(ready_may_open_any(READY_POSTGRESQL, head, sizeof(startup)));
	memcpy(head, "hello wo", 8);
	CHECK(!ready_may_open_any(READY_PROTOCOLS_ALL, head, 8));
	/* Full: 53300, a 503 or 429 naming no time; not 57P03, a 502, or one that names a time. */
	CHECK(ready_says_full(READY_REQUEST_POSTGRESQL, too_many, sizeof(too_many) - 1, 0));
	CHECK(!ready_says_full(READY_REQUEST_POSTGRESQL, not_ready, sizeof(not_ready) - 1, 0));
	CHECK(!ready_says_full(READY_REQUEST_POSTGRESQL, rejected, sizeof(rejected) - 1, 0));
	CHECK(ready_says_full(READY_REQUEST_HTTP, h503, sizeof(h503) - 1, 0));
	CHECK(ready_says_full(READY_REQUEST_HTTP, h429, sizeof(h429) - 1, 0));
	CHECK(!ready_says_full(READY_REQUEST_HTTP, h503, sizeof(h503) - 1, 2000));
	CHECK(!ready_says_full(READY_REQUEST_HTTP, h502, sizeof(h502) - 1, 0));
	CHECK(!ready_says_full(READY_REQUEST_REDIS, too_many, sizeof(too_many) - 1, 0));
}

int main(void)
{
	test_dispatch();
	test_http();
	test_resp();
	test_startup();
	test_answers();
	test_greetings();
	test_mqtt();
	return unit_report("ready");
}
