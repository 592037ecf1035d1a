/* BACKOFF_PROTOCOLS: whose "try later" answers the engine recognizes, as bits and names. */
#ifndef BACKOFF_CONFIG_PROTOCOLS_H
#define BACKOFF_CONFIG_PROTOCOLS_H

/*
 * The protocols whose "try later" answers are recognized (BACKOFF_PROTOCOLS),
 * one bit each, in the order of config_protocol_names.
 */
enum ready_protocol {
	READY_POSTGRESQL = 1U << 0, /* 57P03 to the start-up */
	READY_MYSQL = 1U << 1,	    /* an ERR packet in place of the greeting: 1040, 1053 */
	READY_REDIS = 1U << 2,	    /* max number of clients; -LOADING, -BUSY, -MASTERDOWN */
	READY_MEMCACHED = 1U << 3,  /* ERROR Too many open connections */
	READY_NATS = 1U << 4,	    /* INFO, then -ERR 'maximum connections exceeded' */
	READY_SMTP = 1U << 5,	    /* a 421 greeting */
	READY_FTP = 1U << 6,	    /* a 421 greeting */
	READY_MQTT = 1U << 7, /* CONNACK 3 (3.1, 3.1.1), 0x88, 0x89, 0x9F (5) to the CONNECT */
	READY_HTTP = 1U << 8, /* 429, 502, 503, 504 to a GET, HEAD or OPTIONS: off by default */
};

/*
 * The names of the protocols, in the order of their bits, an empty name last;
 * in place rather than pointers (a relocation each at load).
 */
#define CONFIG_PROTOCOL_NAME_SIZE 11 /* postgresql and its NUL */
extern const char config_protocol_names[][CONFIG_PROTOCOL_NAME_SIZE];

/* The default: all of them but HTTP, whose answers come from the application. */
#define READY_PROTOCOLS_ALL 0xFFU

#endif
