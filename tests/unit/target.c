/* Unit tests of config/target: address normalisation, printing and patterns. */
#include "config/target.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "unit.h"

static struct target_addr v4(const char *ip, uint16_t port)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct target_addr t;

	inet_pton(AF_INET, ip, &in.sin_addr);
	target_from_sockaddr((struct sockaddr *)&in, sizeof(in), &t);
	return t;
}

static struct target_addr v6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct target_addr t;

	inet_pton(AF_INET6, ip, &in6.sin6_addr);
	target_from_sockaddr((struct sockaddr *)&in6, sizeof(in6), &t);
	return t;
}

static struct target_addr unix_path(const char *path, int abstract)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	struct target_addr t;

	memcpy(un.sun_path + (abstract ? 1 : 0), path, n);
	target_from_sockaddr(
		(struct sockaddr *)&un,
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (abstract ? 1 : 1)), &t);
	return t;
}

static const char *fmt(struct target_addr t)
{
	static char buf[TARGET_TEXT_MAX];

	target_format(&t, buf, sizeof(buf));
	return buf;
}

static void test_format(void)
{
	CHECK_STR(fmt(v4("127.0.0.1", 5432)), "127.0.0.1:5432");
	CHECK_STR(fmt(v6("::1", 80)), "[::1]:80");
	CHECK_STR(fmt(v6("::ffff:10.1.2.3", 443)), "10.1.2.3:443");
	CHECK_STR(fmt(unix_path("/run/pg/.s.PGSQL.5432", 0)), "unix:/run/pg/.s.PGSQL.5432");
	CHECK_STR(fmt(unix_path("name", 1)), "unix:@name");
	CHECK_STR(fmt(unix_path("/tmp/a\nb", 0)), "unix:/tmp/a\\x0ab");
}

static void test_from_sockaddr_rejects(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr sa = { .sa_family = AF_PACKET };
	struct target_addr t;

	CHECK(!target_from_sockaddr(NULL, 16, &t));
	CHECK(!target_from_sockaddr((struct sockaddr *)&in, 4, &t));
	CHECK(!target_from_sockaddr(&sa, sizeof(sa), &t));
	CHECK(!target_from_sockaddr((struct sockaddr *)&in, 1, &t));
}

/* target_is_loopback of @ip (IPv4 or IPv6 text), its target made from its socket address. */
static int loopback(const char *ip)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct target_addr t;

	if (inet_pton(AF_INET, ip, &in.sin_addr) == 1)
		CHECK(target_from_sockaddr((struct sockaddr *)&in, sizeof(in), &t));
	else
		CHECK(inet_pton(AF_INET6, ip, &in6.sin6_addr) == 1 &&
		      target_from_sockaddr((struct sockaddr *)&in6, sizeof(in6), &t));
	return target_is_loopback(&t);
}

/* The loopback test of a connect's first attempt: 127/8, ::1 and 127/8 mapped, no other. */
static void test_inet_is_loopback(void)
{
	CHECK(loopback("127.0.0.1"));
	CHECK(loopback("127.9.8.7"));
	CHECK(loopback("::1"));
	CHECK(loopback("::ffff:127.0.0.1"));
	CHECK(!loopback("10.0.0.1"));
	CHECK(!loopback("0.0.0.0"));
	CHECK(!loopback("128.0.0.1"));
	CHECK(!loopback("::"));
	CHECK(!loopback("::2"));
	CHECK(!loopback("1::1"));
	CHECK(!loopback("fe80::1"));
	CHECK(!loopback("::ffff:10.0.0.1"));
	CHECK(!loopback("::127.0.0.1")); /* IPv4-compatible, not mapped */
	CHECK(!loopback("::fffe:127.0.0.1"));
}

static int matches(const char *list, struct target_addr t)
{
	struct target_set set;
	char why[200];

	if (target_parse_list(list, &set, why, sizeof(why)) != 0)
		return -1;
	return target_matches(&set, &t);
}

static void test_patterns(void)
{
	struct target_set empty = { 0 };
	struct target_addr pg = v4("127.0.0.1", 5432);

	CHECK(target_matches(&empty, &pg));
	CHECK(matches("127.0.0.1:5432", pg) == 1);
	CHECK(matches("127.0.0.1:5433", pg) == 0);
	CHECK(matches("*:5432", pg) == 1);
	CHECK(matches("*:5432", v6("::1", 5432)) == 1);
	CHECK(matches("*:5432", unix_path("/x", 0)) == 0);
	CHECK(matches("127.0.0.0/8", pg) == 1);
	CHECK(matches("10.0.0.0/8", pg) == 0);
	CHECK(matches("127.0.0.1/32:*", pg) == 1);
	CHECK(matches("0.0.0.0/0", pg) == 1);
	CHECK(matches("[::1]:*", v6("::1", 1)) == 1);
	CHECK(matches("[::1]:*", pg) == 0);
	CHECK(matches("[fd00::/8]:80", v6("fd12::1", 80)) == 1);
	CHECK(matches("[fd00::/8]:80", v6("fe12::1", 80)) == 0);
	CHECK(matches("[::ffff:127.0.0.1]:5432", pg) == 1);
	CHECK(matches("[::ffff:127.0.0.1]:5432", v6("::ffff:127.0.0.1", 5432)) == 1);
	CHECK(matches("unix:/run/*.sock", unix_path("/run/a.sock", 0)) == 1);
	CHECK(matches("unix:/run/*.sock", unix_path("/run/a.socket", 0)) == 0);
	CHECK(matches("unix:/run/?.sock", unix_path("/run/ab.sock", 0)) == 0);
	CHECK(matches("unix:@*", unix_path("abs", 1)) == 1);
	CHECK(matches("unix:*", pg) == 0);
	CHECK(matches("*", unix_path("/x", 0)) == 1);
	/* First match wins; exclusions alone leave the rest eligible. */
	CHECK(matches("!127.0.0.1:5432,*", pg) == 0);
	CHECK(matches("*,!127.0.0.1:5432", pg) == 1);
	CHECK(matches("!*:22", pg) == 1);
	CHECK(matches("!*:22", v4("127.0.0.1", 22)) == 0);
	CHECK(matches("*:6379", pg) == 0);
	CHECK(matches(" 127.0.0.1:5432 , *:1", pg) == 1);
}

static void test_bad_patterns(void)
{
	const char *bad[] = { "",	"localhost:*",	 "::1:80",     "[::1",
			      "[::1]x", "1.2.3.4:99999", "1.2.3.4/33", "[::1/129]:1",
			      "unix:",	"a,,b",		 "!",	       "1.2.3:80",
			      "*:",	"*:-1",		 "[]:80" };
	struct target_set set;
	char why[200];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = target_parse_list(bad[i], &set, why, sizeof(why));

		CHECK(rc == -1);
		if (rc != -1)
			fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
	}
	target_parse_list("localhost:*", &set, why, sizeof(why));
	CHECK(strstr(why, "names are not resolved") != NULL);
	target_parse_list("::1:80", &set, why, sizeof(why));
	CHECK(strstr(why, "brackets") != NULL);
}

static void test_too_many_patterns(void)
{
	char list[64 * 8] = "";
	struct target_set set;
	char why[200];
	int i;

	for (i = 0; i < TARGET_PATTERNS_MAX + 1; i++)
		strcat(list, i ? ",*:1" : "*:1");
	CHECK(target_parse_list(list, &set, why, sizeof(why)) == -1);
	CHECK(strstr(why, "at most") != NULL);
}

static void test_same_address(void)
{
	struct target_addr a = v4("127.0.0.1", 80), b = v4("127.0.0.1", 0), c = v4("127.0.0.1", 81);
	struct target_addr m = v6("::ffff:127.0.0.1", 80);

	CHECK(target_same_address(&a, &b));
	CHECK(!target_same_address(&a, &c));
	CHECK(target_same_address(&a, &m));
	CHECK(!target_same_address(&a, &(struct target_addr){ .family = AF_INET6 }));
}

static bool internal(struct target_addr t)
{
	return target_is_libc_internal(&t);
}

/* glibc's nscd socket is never eligible, not even when a pattern names it. */
static void test_libc_internal(void)
{
	struct target_set empty = { 0 };
	struct target_addr nscd = unix_path("/var/run/nscd/socket", 0);

	CHECK(internal(nscd));
	CHECK(internal(unix_path("/run/nscd/socket", 0)));
	CHECK(!target_matches(&empty, &nscd));
	CHECK(matches("unix:/var/run/nscd/*", nscd) == 0);
	CHECK(matches("unix:/run/nscd/socket", unix_path("/run/nscd/socket", 0)) == 0);
	CHECK(!internal(unix_path("/run/nscd/socket", 1)));
	CHECK(!internal(unix_path("/run/nscd/socket2", 0)));
	CHECK(!internal(unix_path("/run/nscd/socke", 0)));
	CHECK(!internal(v4("127.0.0.1", 0)));
	CHECK(matches("unix:/run/nscd/*", unix_path("/run/nscd/other", 0)) == 1);
}

/* Whether @name matches the BACKOFF_NAMES list @list, which must parse. */
static bool name_matches(const char *list, const char *name)
{
	static struct target_names set;
	char why[200];

	CHECK(target_parse_names(list, &set, why, sizeof(why)) == 0);
	return target_name_matches(&set, name);
}

/* A name is retried only when a pattern names it: exactly, or through '*'. */
static void test_name_patterns(void)
{
	CHECK(name_matches("db", "db"));
	CHECK(!name_matches("db", "db2"));
	CHECK(!name_matches("db", "d"));
	CHECK(!name_matches("db", "db.example.com"));
	CHECK(name_matches("*.svc.cluster.local", "pg.ns.svc.cluster.local"));
	CHECK(!name_matches("*.svc.cluster.local", "svc.cluster.local"));
	CHECK(!name_matches("*.svc.cluster.local", "pg.svc.cluster.locals"));
	CHECK(name_matches("postgres-*", "postgres-"));
	CHECK(name_matches("postgres-*", "postgres-replica-1"));
	CHECK(!name_matches("postgres-*", "postgres"));
	CHECK(name_matches("a*b*c", "a.b.c"));
	CHECK(!name_matches("a*b*c", "a.c.b"));
	CHECK(name_matches("*", "anything.at.all"));
	/* The second pattern of a list is read, and spaces around each are dropped. */
	CHECK(name_matches("cache, db ,queue", "db"));
	CHECK(name_matches("cache,db,queue", "queue"));
	CHECK(name_matches("\tdb_1\t,queue", "DB_1"));
	CHECK(!name_matches("cache,db,queue", "web"));
}

/* DNS names are case-insensitive, and a final dot only says the name is absolute. */
static void test_name_case_and_final_dot(void)
{
	CHECK(name_matches("DB.Example.com", "db.example.COM"));
	CHECK(name_matches("db.example.com.", "db.example.com"));
	CHECK(name_matches("db.example.com", "DB.example.com."));
	CHECK(name_matches("Postgres-*", "POSTGRES-1"));
	CHECK(!name_matches("*", ""));
	CHECK(!name_matches("*", "."));
	CHECK(!name_matches("db", NULL));
	CHECK(!name_matches("", "db"));
}

/* The longest name DNS allows is matched; a longer one never is. */
static void test_name_lengths(void)
{
	char name[TARGET_NAME_MAX + 3];

	memset(name, 'a', sizeof(name));
	name[TARGET_NAME_MAX] = '\0';
	CHECK(name_matches("a*", name));
	name[TARGET_NAME_MAX] = '.';
	name[TARGET_NAME_MAX + 1] = '\0';
	CHECK(name_matches("a*", name));
	name[TARGET_NAME_MAX] = 'a';
	CHECK(!name_matches("a*", name));
	name[TARGET_NAME_MAX + 1] = 'a';
	name[TARGET_NAME_MAX + 2] = '\0';
	CHECK(!name_matches("a*", name));
}

/* A bad pattern is refused with a reason quoting it, and leaves the list empty. */
static void test_bad_name_patterns(void)
{
	static const char *const bad[] = { ",",	      "db,",	    "db,,x",   ".",
					   "..",      ".db",	    "db..com", "d b",
					   "db:5432", "10.0.0.0/8", "[::1]",   "db?",
					   "!db",     "db\n",	    "db~",     "caf\xc3\xa9",
					   " ",	      "db, \t" };
	static struct target_names set;
	char why[200], long_name[TARGET_NAME_MAX + 2];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set.count = 7;
		CHECK(target_parse_names(bad[i], &set, why, sizeof(why)) == -1);
		CHECK_U64(set.count, 0);
		CHECK(strstr(why, "is not a name pattern") != NULL);
	}
	target_parse_names("db, d b", &set, why, sizeof(why));
	CHECK_STR(why, "\"d b\" is not a name pattern: expected host names with * wildcards, "
		       "such as db, *.svc.cluster.local, postgres-*");
	target_parse_names("db\x01", &set, why, sizeof(why));
	CHECK(strncmp(why, "\"db\\x01\" is", 11) == 0);
	memset(long_name, 'a', sizeof(long_name));
	long_name[TARGET_NAME_MAX + 1] = '\0';
	CHECK(target_parse_names(long_name, &set, why, sizeof(why)) == -1);
	CHECK(strstr(why, "aaa...\" is not") != NULL);
	/* With its final dot, the longest name is still one. */
	long_name[TARGET_NAME_MAX] = '.';
	CHECK(target_parse_names(long_name, &set, why, sizeof(why)) == 0);
	CHECK_U64(set.count, 1);
	CHECK(target_parse_names("", &set, why, sizeof(why)) == 0);
	CHECK_U64(set.count, 0);
}

/* The patterns' bytes are bounded; a list beyond them is refused, not cut. */
static void test_too_many_name_patterns(void)
{
	static char list[TARGET_NAMES_TEXT + 200];
	static struct target_names set;
	char why[200];
	size_t n = 0;

	/* Names of 99 bytes, each taking 100 of the text with its terminator. */
	while (n + 100 < TARGET_NAMES_TEXT) {
		memset(list + n, 'n', 99);
		list[n + 99] = ',';
		n += 100;
	}
	/* Up to the last byte: accepted. */
	memset(list + n, 'n', TARGET_NAMES_TEXT - n - 1);
	list[TARGET_NAMES_TEXT - 1] = '\0';
	CHECK(target_parse_names(list, &set, why, sizeof(why)) == 0);
	CHECK_U64(set.count, TARGET_NAMES_TEXT / 100 + 1);
	list[TARGET_NAMES_TEXT - 1] = 'n';
	list[TARGET_NAMES_TEXT] = '\0';
	CHECK(target_parse_names(list, &set, why, sizeof(why)) == -1);
	CHECK_U64(set.count, 0);
	CHECK_STR(why, "the patterns take more than 2047 bytes");
}

int main(void)
{
	test_format();
	test_from_sockaddr_rejects();
	test_inet_is_loopback();
	test_patterns();
	test_bad_patterns();
	test_too_many_patterns();
	test_same_address();
	test_libc_internal();
	test_name_patterns();
	test_name_case_and_final_dot();
	test_name_lengths();
	test_bad_name_patterns();
	test_too_many_name_patterns();
	return unit_report("target");
}
