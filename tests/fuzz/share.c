/* libFuzzer target: the shared state file's content, every field hostile, never trusted. */
#include "facts/share.h"
#include "fuzz.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sys/clock.h"
#include "sys/log.h"

/* The library's log, not linked here: the fuzzer checks the state, not the lines. */
void log_notice(enum log_level level, const char *event, const char *message)
{
	(void)level;
	(void)event;
	(void)message;
}

void log_config_problem(const char *variable, const char *value, const char *message)
{
	(void)variable;
	(void)value;
	(void)message;
}

static _Alignas(64) unsigned char image[SHARE_FILE_SIZE];

/* A destination drawn from @b: each family, a few ports and addresses, so that slots collide. */
static void target_of(const uint8_t *b, struct target_addr *t)
{
	static const int families[] = { AF_INET, AF_INET6, AF_UNIX };

	memset(t, 0, sizeof(*t));
	t->family = families[b[0] % 3];
	t->port = (uint16_t)(b[1] % 4);
	t->ip[0] = 127;
	t->ip[15] = b[2] % 4;
	if (t->family == AF_UNIX) {
		t->path_len = 1 + b[2] % 8;
		memset(t->path, 'a' + b[1] % 4, t->path_len);
	}
}

static bool all_zero(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != '\0')
			return false;
	return true;
}

/*
 * What `backoff status` shows of every slot: bounded whatever the bytes, and
 * a destination named only when it is the one its key was made from.
 */
static void check_views(const struct share_head *h, uint64_t now)
{
	unsigned i;

	for (i = 0; i <= SHARE_SLOTS; i++) {
		struct share_view v;
		char text[TARGET_TEXT_MAX];

		if (!share_view_slot(h, i, now, &v))
			continue;
		REQUIRE(i < SHARE_SLOTS);
		REQUIRE(v.state <= SHARE_UP);
		REQUIRE(v.err >= 0 && v.err < CONFIG_ERRNO_MAX);
		REQUIRE(v.since_ns <= now && v.probed_ns <= now);
		REQUIRE(v.prober_tid >= 0 && v.prober_pid >= 0);
		REQUIRE(v.probing || (v.prober_tid == 0 && v.prober_pid == 0));
		/* A namespace only with the destination it hashed with. */
		if (!v.named) {
			REQUIRE(v.netns == 0);
			continue;
		}
		REQUIRE(v.target.family == AF_INET || v.target.family == AF_INET6 ||
			v.target.family == AF_UNIX);
		REQUIRE(v.target.path_len <= TARGET_PATH_MAX);
		/* A unix destination is named by something: not zero bytes, or none. */
		REQUIRE(v.target.family != AF_UNIX || !all_zero(v.target.path, v.target.path_len));
		REQUIRE(target_format(&v.target, text, sizeof(text)) < sizeof(text));
	}
}

/* A slot claimed for @t names @t to the status reader. */
static void check_named(struct share_head *h, struct share_slot *s, const struct target_addr *t)
{
	struct share_view v;
	char want[TARGET_TEXT_MAX], got[TARGET_TEXT_MAX];
	unsigned i = (unsigned)(s - (struct share_slot *)(h + 1));

	REQUIRE(share_view_slot(h, i, clock_now_ns(), &v));
	REQUIRE(v.named);
	target_format(t, want, sizeof(want));
	target_format(&v.target, got, sizeof(got));
	REQUIRE(strcmp(want, got) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct share_head *h = (struct share_head *)image;
	struct config cfg;
	size_t i;

	memset(image, 0, sizeof(image));
	memcpy(image, data, size < sizeof(image) ? size : sizeof(image));
	/* Any bytes, any length: a reason or none, and none only for the exact layout. */
	if (!share_check(image, size))
		REQUIRE(size == SHARE_FILE_SIZE && h->magic == SHARE_MAGIC);
	/*
	 * Then the bytes as the slots of a file whose header is right, repeated
	 * to its end: a slot is 256 bytes, so that an input holds a few.
	 */
	for (i = size; size > 0 && i < sizeof(image); i += i) /* doubling the copy each time */
		memcpy(image + i, image, i < sizeof(image) - i ? i : sizeof(image) - i);
	h->magic = SHARE_MAGIC;
	h->version = SHARE_VERSION;
	h->slots = SHARE_SLOTS;
	h->slot_size = sizeof(struct share_slot);
	REQUIRE(share_check(image, SHARE_FILE_SIZE) == NULL);
	share_use(image);
	memset(&cfg, 0, sizeof(cfg));
	cfg.enabled = cfg.shared = true;
	for (i = 0; i + 4 <= size && i < 4096; i += 4) {
		const uint8_t *b = data + i;
		uint64_t now = clock_now_ns(), age = 0;
		struct target_addr t;
		struct share_slot *s;
		int err, saved;

		target_of(b, &t);
		if (b[3] & 1) {
			bool had = share_find(&t) != NULL;

			s = share_get(&cfg, &t);
			/* Claimed now: its destination was written with it. */
			if (s && !had)
				check_named(h, s, &t);
		} else {
			s = share_find(&t);
		}
		if (!s)
			continue;
		/* A slot is one of the file's, on a slot boundary: never outside the image. */
		REQUIRE((unsigned char *)s >= image + sizeof(struct share_head) &&
			(unsigned char *)s + sizeof(*s) <= image + sizeof(image));
		REQUIRE(((size_t)((unsigned char *)s - image) - sizeof(struct share_head)) %
				sizeof(*s) ==
			0);
		err = share_prober_finding(s, now, &age);
		REQUIRE(err >= 0 && err < CONFIG_ERRNO_MAX);
		REQUIRE(err == 0 || age <= now);
		(void)share_probed_since(s, b[2], now);
		saved = errno = EDOM;
		switch (b[3] >> 1 & 7) {
		case 0:
			share_note(s, 0, now);
			break;
		case 1:
			share_note(s, ECONNREFUSED, now);
			break;
		case 2:
			share_note_looked(s, now);
			break;
		case 3:
			(void)share_lead(s, now, now + 50000000);
			(void)share_lease_end(s);
			break;
		case 4:
			share_leave(s, b[2] & 1); /* and an event loop's waiter uncounted, or not */
			break;
		case 5:
			share_note_saved(s);
			break;
		case 6:
			/* An event loop's waiter counted, renewed or ended, on any word. */
			(void)share_loop_wait(s, (int)(b[2] % 3) - 1, now + b[1] * 100000000ULL);
			break;
		default:
			/* Past its time at once: no wait, whatever the word holds. */
			REQUIRE(share_wait(s, share_seq(s), 0) == 0);
			break;
		}
		REQUIRE(errno == saved);
	}
	check_views(h, clock_now_ns());
	return 0;
}
