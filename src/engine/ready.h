/*
 * Not ready: a server that listens before it accepts sessions, recognized in
 * the first exchange of a protocol whose start-up has no effect, so that the
 * exchange can be made again on a new connection.  PostgreSQL: its
 * SSLRequest, GSSENCRequest and StartupMessage change nothing on the server,
 * and it answers them with SQLSTATE 57P03 ("the database system is starting
 * up", "... in recovery mode", "... not yet accepting connections") until it
 * accepts sessions, or 53300 ("sorry, too many clients already", pgbouncer's
 * "no more connections allowed") while it is full.  Pure functions of bytes.
 */
#ifndef BACKOFF_ENGINE_READY_H
#define BACKOFF_ENGINE_READY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/protocols.h"

/*
 * Whether the @n bytes at @buf, all that a connection has sent, are a
 * PostgreSQL start-up, whole: an SSLRequest or a GSSENCRequest, a
 * StartupMessage of protocol 3, or the first then the second.
 */
bool ready_startup(const void *buf, size_t n);

/*
 * Whether a connection's first send, of @n bytes of which @head holds the
 * first 8 (or @n if fewer), may open a PostgreSQL start-up (ready_startup
 * then tells): a few loads, for every first send.
 */
bool ready_may_open(const unsigned char head[8], size_t n);

/* What the server's first bytes say of a start-up. */
enum ready_answer {
	READY_ANSWERED, /* an answer: the start-up is the program's from here */
	READY_GOES_ON,	/* 'N' to an SSLRequest or a GSSENCRequest: it goes on in the clear */
	READY_NOT,	/* a refusal for now (SQLSTATE 57P03, 53300...): not ready, try again */
};

/*
 * What the first @n bytes at @buf that the server sent say, @fl_len bytes of
 * the start-up @fl having been sent.
 */
enum ready_answer ready_answer(const void *buf, size_t n, const void *fl, uint32_t fl_len);

/*
 * The SQLSTATE ("57P03", "53300") of the start-up's refusal for now that the
 * @n bytes at @buf begin with, for the log; NULL if they are none.
 */
const char *ready_startup_refusal(const void *buf, size_t n);

/*
 * MQTT: a client's CONNECT asks for a session, and a broker that refuses it
 * with CONNACK "server unavailable" (3.1, 3.1.1: code 3) or, in MQTT 5,
 * "server unavailable", "server busy" or "connection rate exceeded" (0x88,
 * 0x89, 0x9F) closes the connection without a session.  Whether the @n
 * bytes at @buf, all that a connection has sent, are one CONNECT, whole.
 */
bool ready_mqtt_connect(const void *buf, size_t n);

/* Whether a first send of @n bytes, @head its first 8, may be one CONNECT: a few loads. */
bool ready_mqtt_may_open(const unsigned char head[8], size_t n);

/*
 * What the server's first @n bytes at @buf say to the CONNECT @fl (@fl_len
 * bytes, ready_mqtt_connect): READY_NOT for a refusal for now.
 */
enum ready_answer ready_connack(const void *buf, size_t n, const void *fl, uint32_t fl_len);

/*
 * Redis, Valkey: one command (a RESP array of bulk strings) sent whole as a
 * connection's first send, and nothing after it, is refused before it ran
 * when the answer is -LOADING (the data set is loading), -BUSY (a script
 * runs too long) or -MASTERDOWN (a replica without its master): sending it
 * again is safe.  Whether the @n bytes at @buf are one such command, whole.
 */
bool ready_resp_command(const void *buf, size_t n);

/* Whether a first send of @n bytes, @head its first 8, may be one such command: a few loads. */
bool ready_resp_may_open(const unsigned char head[8], size_t n);

/* What the server's first @n bytes at @buf say to one command: READY_NOT for a refusal. */
enum ready_answer ready_resp_answer(const void *buf, size_t n);

/*
 * HTTP/1.x: a request that asks nothing of the server (GET, HEAD, OPTIONS,
 * with no body and no "Expect: 100-continue"), the connection's first and
 * only send, whole, may be sent again (RFC 9110 9.2.2); a 429, 502, 503 or
 * 504 as its answer means "try later".  Whether the @n bytes at @buf are one
 * such request, whole.
 */
bool ready_http_request(const void *buf, size_t n);

/* Whether a first send of @n bytes, @head its first 8, may be one such request: a few loads. */
bool ready_http_may_open(const unsigned char head[8], size_t n);

/*
 * What the response head at @buf (@n bytes, its first) says: READY_NOT for
 * 429, 502, 503, 504; then *wait_ms is what its Retry-After asks, at the
 * wall clock's @now_s (delay-seconds, or an HTTP-date in any of the three
 * forms of RFC 9110 5.6.7), 0 if none or past.
 */
enum ready_answer ready_http_answer(const void *buf, size_t n, uint64_t now_s, uint64_t *wait_ms);

/* The one-byte answer that lets a start-up go on in the clear (READY_GOES_ON). */
#define READY_GO_ON 'N'

/*
 * Where a replay of the start-up @fl (@fl_len bytes) stops for the server's
 * one-byte answer ('N'): after its SSLRequest or GSSENCRequest; 0 if none.
 */
uint32_t ready_pause(const void *fl, uint32_t fl_len);

/* The first request of a connection that a "try later" answer may refuse. */
enum ready_request {
	READY_REQUEST_NONE,	  /* none of the protocols asked for: its answer is the program's */
	READY_REQUEST_POSTGRESQL, /* ready_startup */
	READY_REQUEST_MQTT,	  /* ready_mqtt_connect */
	READY_REQUEST_REDIS,	  /* ready_resp_command */
	READY_REQUEST_HTTP,	  /* ready_http_request */
};

/*
 * Whether a connection's first send, of @n bytes of which @head holds the
 * first 8, may open a request of one of @protocols (READY_POSTGRESQL and the
 * like): a few loads, for every first send.
 */
bool ready_may_open_any(unsigned protocols, const unsigned char head[8], size_t n);

/* Which request of @protocols the @n bytes at @buf, all a connection has sent, are, whole. */
enum ready_request ready_request(unsigned protocols, const void *buf, size_t n);

/*
 * Whether the request @r changes nothing on the server, whatever it answers
 * (a start-up: PostgreSQL's, MQTT's CONNECT), so that it may be sent again
 * without being recorded in full.
 */
bool ready_request_without_effect(enum ready_request r);

/*
 * Whether the "try later" answer (READY_NOT) at @buf (@n bytes) to the
 * request @r says the server is full, rather than not ready: PostgreSQL's
 * SQLSTATE 53300, an HTTP 503 or 429 that names no time (@wait_ms 0: the
 * server's room, not its state).
 */
bool ready_says_full(enum ready_request r, const void *buf, size_t n, uint64_t wait_ms);

/* What a server's first bytes, sent before the client sent anything, say. */
enum ready_greeting {
	READY_GREETING,	 /* a greeting, or anything else: the connection is the program's */
	READY_REFUSAL,	 /* a refusal for now: connecting again is safe */
	READY_UNDECIDED, /* the start of a refusal: more bytes would tell */
};

/*
 * What the @n bytes at @buf, the first a server sent on a connection to
 * nothing was sent (or nothing it read), say, for the @protocols recognized
 * (READY_PROTOCOLS_ALL and the like); *name: the refusal, as text for the
 * log.  Pure.
 */
enum ready_greeting ready_greeting(const void *buf, size_t n, unsigned protocols,
				   const char **name);

/*
 * Whether the refusal ready_greeting named @name says its server is full
 * (max clients, 1040, a 421...), rather than going away (MySQL's 1053).
 */
bool ready_greeting_full(const char *name);

#endif
