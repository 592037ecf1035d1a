/* Unit tests of the errors drivers/retry retries for sends and name lookups. */
#include "config/config.h"

#include <errno.h>
#include <sys/socket.h>

#include "unit.h"

static int has(int family, int type, bool addressed, int err)
{
	struct config_errset set;

	config_send_errors(family, type, addressed, &set);
	return config_errset_has(&set, err);
}

static void test_every_socket_retries_buffer_shortage(void)
{
	static const int families[] = { AF_INET, AF_INET6, AF_UNIX };
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };
	unsigned f, t;

	for (f = 0; f < 3; f++) {
		for (t = 0; t < 3; t++) {
			CHECK(has(families[f], types[t], false, ENOBUFS));
			CHECK(has(families[f], types[t], true, ENOMEM));
			CHECK(!has(families[f], types[t], true, EAGAIN));
			CHECK(!has(families[f], types[t], true, EPIPE));
			CHECK(!has(families[f], types[t], true, EINTR));
			CHECK(!has(families[f], types[t], true, EMSGSIZE));
		}
	}
}

static void test_streams_retry_nothing_else(void)
{
	CHECK(!has(AF_INET, SOCK_STREAM, false, ECONNREFUSED));
	CHECK(!has(AF_INET6, SOCK_STREAM, false, ENETUNREACH));
	CHECK(!has(AF_UNIX, SOCK_STREAM, true, ENOENT));
	CHECK(!has(AF_UNIX, SOCK_SEQPACKET, true, ECONNREFUSED));
}

static void test_udp_retries_unreachable_peers(void)
{
	static const int errs[] = { ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN };
	unsigned i;

	for (i = 0; i < 4; i++) {
		CHECK(has(AF_INET, SOCK_DGRAM, false, errs[i]));
		CHECK(has(AF_INET6, SOCK_DGRAM, true, errs[i]));
	}
	CHECK(!has(AF_INET, SOCK_DGRAM, true, ENOENT));
}

static void test_unix_datagrams_retry_a_missing_receiver_when_addressed(void)
{
	CHECK(has(AF_UNIX, SOCK_DGRAM, true, ENOENT));
	CHECK(has(AF_UNIX, SOCK_DGRAM, true, ECONNREFUSED));
	/* Connected: the kernel has disconnected the socket, a second send gets ENOTCONN. */
	CHECK(!has(AF_UNIX, SOCK_DGRAM, false, ECONNREFUSED));
	CHECK(!has(AF_UNIX, SOCK_DGRAM, false, ENOENT));
	CHECK(!has(AF_UNIX, SOCK_DGRAM, true, ENETUNREACH));
}

static void test_any_socket_is_the_union(void)
{
	static const int errs[] = { ENOBUFS,	  ENOMEM,   ECONNREFUSED, ENETUNREACH,
				    EHOSTUNREACH, ENETDOWN, ENOENT };
	unsigned i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		CHECK(has(AF_UNSPEC, 0, true, errs[i]));
	CHECK(!has(AF_UNSPEC, 0, true, EAGAIN));
	CHECK(!has(AF_UNSPEC, 0, true, ETIMEDOUT));
}

static void test_dns_retries_only_temporary_failures(void)
{
	static struct config cfg;
	struct config_errset set;

	config_dns_errors(&cfg, "db", &set);
	CHECK(config_errset_has(&set, CONFIG_DNS_AGAIN));
	CHECK(!config_errset_has(&set, CONFIG_DNS_NONAME));
	CHECK(!config_errset_has(&set, CONFIG_DNS_NODATA));
	CHECK(!config_errset_has(&set, CONFIG_DNS_FAILED));
	CHECK(!config_errset_has(&set, CONFIG_DNS_OK));
}

/* "No such name" is retried for a name BACKOFF_NAMES expects, never for another. */
static void test_dns_retries_missing_names_named(void)
{
	static struct config cfg;
	struct config_errset set;
	char why[200];

	CHECK(target_parse_names("db,*.svc.cluster.local", &cfg.names, why, sizeof(why)) == 0);
	config_dns_errors(&cfg, "db", &set);
	CHECK(config_errset_has(&set, CONFIG_DNS_AGAIN));
	CHECK(config_errset_has(&set, CONFIG_DNS_NONAME));
	CHECK(config_errset_has(&set, CONFIG_DNS_NODATA));
	CHECK(!config_errset_has(&set, CONFIG_DNS_FAILED));
	config_dns_errors(&cfg, "pg.ns.svc.cluster.local", &set);
	CHECK(config_errset_has(&set, CONFIG_DNS_NONAME));
	config_dns_errors(&cfg, "dbb", &set);
	CHECK(config_errset_has(&set, CONFIG_DNS_AGAIN));
	CHECK(!config_errset_has(&set, CONFIG_DNS_NONAME));
	CHECK(!config_errset_has(&set, CONFIG_DNS_NODATA));
	config_dns_errors(&cfg, NULL, &set);
	CHECK(config_errset_has(&set, CONFIG_DNS_AGAIN));
	CHECK(!config_errset_has(&set, CONFIG_DNS_NONAME));
}

int main(void)
{
	test_every_socket_retries_buffer_shortage();
	test_streams_retry_nothing_else();
	test_udp_retries_unreachable_peers();
	test_unix_datagrams_retry_a_missing_receiver_when_addressed();
	test_any_socket_is_the_union();
	test_dns_retries_only_temporary_failures();
	test_dns_retries_missing_names_named();
	return unit_report("retry_errors");
}
