/* libFuzzer target: the supervisor's hostile inputs, notification arguments and ELF headers. */
#include "sys/elf.h"
#include "fuzz.h"
#include "supervise/notify.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *targets;

static const char *lookup(const char *name, void *ctx)
{
	(void)ctx;
	return strcmp(name, "BACKOFF_TARGETS") == 0 ? targets : NULL;
}

/*
 * The input: 8 bytes of connect's length argument, 1 byte saying how much of
 * the address was readable, a BACKOFF_TARGETS value up to a NUL, then the
 * address bytes as read from the task; the whole input is also an executable
 * the launcher or the supervisor inspects.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg;
	CONFIG_PROBLEMS_ROOM(problems);
	unsigned char addr[NOTIFY_ADDRESS_MAX];
	struct target_addr t;
	const uint8_t *nul;
	uint64_t len_arg;
	size_t len, got, rest;
	char text[512];
	int fd;

	if (size < 9)
		return 0;
	memcpy(&len_arg, data, sizeof(len_arg));
	nul = memchr(data + 9, '\0', size - 9);
	rest = nul ? (size_t)(nul - (data + 9)) : 0;
	if (!nul || rest >= sizeof(text))
		return 0;
	memcpy(text, data + 9, rest + 1);
	targets = text;
	config_parse(lookup, NULL, &cfg, &problems);
	len = notify_address_len(len_arg);
	REQUIRE(len <= NOTIFY_ADDRESS_MAX);
	REQUIRE(len == 0 || len == len_arg);
	rest = size - 9 - strlen(text) - 1;
	got = len ? data[8] % (len + 1) : 0;
	if (got > rest)
		got = rest;
	memset(addr, 0xa5, sizeof(addr));
	memcpy(addr, data + size - rest, got);
	if (notify_connect_eligible(&cfg, len_arg, addr, got, &t)) {
		/* Only a whole, readable address of a handled family is ever retried. */
		REQUIRE(len > 0 && got == len);
		REQUIRE(t.family == AF_INET || t.family == AF_INET6 || t.family == AF_UNIX);
		REQUIRE(target_matches(&cfg.targets, &t));
	}
	REQUIRE(notify_optlen_fits((uint32_t)len_arg) == ((uint32_t)len_arg >= sizeof(int)));

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, data, size) == (ssize_t)size) {
			enum elf_kind kind = elf_inspect_fd(fd);

			REQUIRE(kind >= ELF_KIND_UNKNOWN && kind <= ELF_KIND_ENGINE);
		}
		close(fd);
	}
	return 0;
}
