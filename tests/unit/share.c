/* Unit tests of facts/share's count of event loops' waiters: per process, on a lease. */
#include "facts/share.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "facts/record.h"
#include "sys/clock.h"
#include "unit.h"

#define S 1000000000ULL

static _Alignas(64) unsigned char image[SHARE_FILE_SIZE];

/* The waiters the status reader sees in @s now: the counts whose lease runs. */
static unsigned counted(const struct share_head *h, const struct share_slot *s)
{
	struct share_view v;
	unsigned i, n = 0;

	CHECK(share_view_slot(h, (unsigned)(s - (const struct share_slot *)(h + 1)), clock_now_ns(),
			      &v));
	for (i = 0; i < SHARE_LOOPS; i++) {
		if (v.loop_count[i])
			CHECK_U64(v.loop_pid[i], (uint64_t)getpid());
		n += v.loop_count[i];
	}
	return n;
}

/* The namespace's inode from its link's text, as stat(2) of the link finds it. */
static void test_ns_inode(void)
{
	struct stat st;
	char link[64];
	ssize_t n = readlink("/proc/self/ns/net", link, sizeof(link));

	CHECK(n > 0 && stat("/proc/self/ns/net", &st) == 0);
	if (n > 0)
		CHECK_U64(share_ns_inode(link, (size_t)n), (uint64_t)st.st_ino);
	CHECK_U64(share_ns_inode("net:[4026531840]", 16), 4026531840ULL);
	CHECK_U64(share_ns_inode("net:[4026531840]", 15), 0);
	CHECK_U64(share_ns_inode("net:[]", 6), 0);
	CHECK_U64(share_ns_inode("mnt:[4026531840]", 16), 0);
	CHECK_U64(share_ns_inode("net:[40265x1840]", 16), 0);
	CHECK_U64(share_ns_inode("net:[18446744073709551615]", 26), 18446744073709551615ULL);
	CHECK_U64(share_ns_inode("net:[18446744073709551616]", 26), 0);
	CHECK_U64(share_ns_inode("net:[99999999999999999999]", 26), 0);
}

int main(void)
{
	struct share_head *h = (struct share_head *)image;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(5432) };
	struct config cfg = { .enabled = true, .shared = true };
	struct target_addr t, empty;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct share_slot *s;
	uint64_t now = clock_now_ns();
	unsigned i;

	test_ns_inode();
	h->magic = SHARE_MAGIC;
	h->version = SHARE_VERSION;
	h->slots = SHARE_SLOTS;
	h->slot_size = sizeof(struct share_slot);
	CHECK(share_check(image, sizeof(image)) == NULL);
	share_use(image);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	CHECK(target_from_sockaddr((const struct sockaddr *)&sin, sizeof(sin), &t));
	s = share_get(&cfg, &t);
	CHECK(s != NULL);
	if (!s)
		return unit_report("share");

	/* Two connects of this process: counted twice, in one word. */
	CHECK(share_loop_wait(s, 1, now + 10 * S));
	CHECK(share_loop_wait(s, 1, now + 2 * S));
	CHECK_U64(counted(h, s), 2);
	/* A renewal with a nearer wake keeps the later lease; an end keeps it too. */
	CHECK(share_loop_wait(s, 0, now + 1 * S));
	CHECK(share_loop_wait(s, -1, 0));
	CHECK_U64(counted(h, s), 1);
	CHECK_U64(atomic_load(&s->loops[0]) & 0xffff, (now / S + 11) & 0xffff);
	/* The last one ends: the word is free. */
	CHECK(!share_loop_wait(s, -1, 0));
	CHECK_U64(counted(h, s), 0);
	CHECK_U64(atomic_load(&s->loops[0]), 0);

	/* A lease that is over counts nothing, and is not renewed: the process exec'd. */
	atomic_store(&s->loops[0], SHARE_LOOP_WORD(getpid(), 3, now / S - 1));
	CHECK_U64(counted(h, s), 0);
	CHECK(!share_loop_wait(s, 0, now + 5 * S));
	CHECK_U64(atomic_load(&s->loops[0]), 0);
	/* A connect whose wait outlived its lease is counted anew at its next wake. */
	{
		struct fate f = { .slot = s, .loop_waiter = true, .stale_ns = S };

		atomic_store(&s->loops[0], SHARE_LOOP_WORD(getpid(), 1, now / S - 1));
		fate_loop_waits(&f, now + 5 * S);
		CHECK(f.loop_waiter);
		CHECK_U64(counted(h, s), 1);
		fate_leave(&f);
		CHECK(!f.loop_waiter);
		CHECK_U64(counted(h, s), 0);
	}
	/* A lease further than the reader believes is none; the library never writes one. */
	atomic_store(&s->loops[0],
		     SHARE_LOOP_WORD(getpid(), 3, now / S + 2 * SHARE_LOOP_LEASE_MAX_S));
	CHECK_U64(counted(h, s), 0);
	CHECK(share_loop_wait(s, 1, now + 10 * SHARE_LOOP_LEASE_MAX_S * S));
	CHECK_U64(counted(h, s), 1);
	CHECK(!share_loop_wait(s, -1, 0));

	/* Another process's running word is left alone; a lapsed one is taken. */
	for (i = 0; i < SHARE_LOOPS; i++)
		atomic_store(&s->loops[i], SHARE_LOOP_WORD(getpid() + 1 + (int)i, 1, now / S + 60));
	CHECK(!share_loop_wait(s, 1, now + S)); /* no room: not counted, nothing to end */
	atomic_store(&s->loops[5], SHARE_LOOP_WORD(getpid() + 6, 1, now / S - 5));
	CHECK(share_loop_wait(s, 1, now + S));
	CHECK_U64(atomic_load(&s->loops[5]) >> 32, (uint64_t)getpid());
	for (i = 0; i < SHARE_LOOPS; i++)
		atomic_store(&s->loops[i], 0);

	/*
	 * A full server: its line is told only while its answer is fresh; a
	 * close of a connection to it frees a place (one waiter woken), to
	 * another destination nothing; the file's mark ends with its time.
	 */
	{
		uint64_t w = 4 * S;
		uint32_t freed;
		struct target_addr other = t;

		other.port = 5433;
		CHECK_U64((uint64_t)(int64_t)share_full_line(s, now, w), (uint64_t)(int64_t)-1);
		share_note_closing(&t, now, w, 8 * w);
		CHECK_U64(share_freed(s), 0);
		share_note_full(s, now, w);
		CHECK_U64(atomic_load(&h->full_until), now + w);
		CHECK(share_any_full());
		CHECK_U64((uint64_t)share_full_line(s, now + w - 1, w), 0);
		CHECK_U64((uint64_t)(int64_t)share_full_line(s, now + w, w), (uint64_t)(int64_t)-1);
		CHECK_U64((uint64_t)(int64_t)share_full_line(s, now - 1, w), (uint64_t)(int64_t)-1);
		share_note_closing(&other, now, w,
				   8 * w); /* another destination's close: nothing */
		CHECK_U64(share_freed(s), 0);
		share_note_closing(&t, now + 1, w, 8 * w);
		CHECK_U64(share_freed(s), 1);
		CHECK_U64(share_freed_ns(s), now + 1);
		/* One place freed, one connect takes it. */
		CHECK(share_full_claim(s, now + 2, S / 10));
		CHECK(!share_full_claim(s, now + 3, S / 10));
		/* A place nobody took in time is nobody's. */
		share_note_closing(&t, now + 4, w, 8 * w);
		CHECK(!share_full_claim(s, now + 4 + S, S / 10));
		CHECK(!share_full_claim(s, now + 5, S / 10));
		CHECK_U64(atomic_load(&s->claimed), 2);
		atomic_store(&s->freed, 1);
		atomic_store(&s->claimed, 1);
		/* Nobody woke it: the line's wait ends at its time, not at once. */
		freed = share_freed(s);
		CHECK_U64((uint64_t)share_full_wait(s, freed, clock_now_ns() + S / 100), 0);
		/* A close since the count was read: this connect's turn. */
		CHECK_U64((uint64_t)share_full_wait(s, freed - 1, clock_now_ns() + S), 1);
		CHECK_U64(atomic_load(&s->queued), 0);
		/* Over: the file's mark is cleared by the next close, which frees nothing. */
		share_note_closing(&t, now + w, w, 8 * w);
		CHECK_U64(atomic_load(&h->full_until), 0);
		CHECK(!share_any_full());
		CHECK_U64(share_freed(s), 1);
		/* A mark set on a longer policy than the closer's stands: its close frees a place.
		 */
		share_note_full(s, now, 3 * w);
		share_note_closing(&t, now + 2 * w, w, 8 * w);
		CHECK_U64(atomic_load(&h->full_until), now + 3 * w);
		CHECK_U64(share_freed(s), 1); /* its answer is older than the closer's window */
		share_note_closing(&t, now + 1, w, 8 * w);
		CHECK_U64(share_freed(s), 2);
		atomic_store(&s->freed, 1);
		/* A hostile end far ahead is no mark either. */
		atomic_store(&h->full_until, now + 100 * w);
		share_note_closing(&t, now, w, 8 * w);
		CHECK_U64(atomic_load(&h->full_until), 0);
		atomic_store(&s->full_ns, 0);
	}

	/* A unix address of zero bytes names nothing: no slot. */
	CHECK(target_from_sockaddr((const struct sockaddr *)&sun, sizeof(sun), &empty));
	CHECK(share_get(&cfg, &empty) == NULL);
	memcpy(sun.sun_path, "\0x", 2);
	CHECK(target_from_sockaddr((const struct sockaddr *)&sun, sizeof(sun), &empty));
	CHECK(share_get(&cfg, &empty) != NULL);
	/* Down, by bucket: a success looks for its slot only where one of its bucket has been down.
	 */
	{
		struct sockaddr_in other = sin;
		struct target_addr t2;

		other.sin_port = htons(5433); /* another bucket */
		CHECK(target_from_sockaddr((const struct sockaddr *)&other, sizeof(other), &t2));
		CHECK(!share_down_for(&t));
		share_note(s, ECONNREFUSED, now);
		CHECK(share_any_down());
		CHECK(share_down_for(&t));
		CHECK(share_down_in(share_bucket_of((const struct sockaddr *)&sin, sizeof(sin))));
		CHECK(!share_down_for(&t2));
		CHECK(!share_down_in(
			share_bucket_of((const struct sockaddr *)&other, sizeof(other))));
		/* Up again: nothing down, nowhere; the bucket's bit stays, the count says none. */
		share_note_up(&t, now + 1);
		CHECK(!share_any_down());
		CHECK(!share_down_for(&t));
		/* Slots down with no bit at all (a build that kept none): every bucket looks. */
		share_note(s, ECONNREFUSED, now + 2);
		atomic_store(&h->down_buckets[0], 0);
		atomic_store(&h->down_buckets[1], 0);
		CHECK(share_down_for(&t2));
		share_note_up(&t2, now + 3);
		CHECK(share_any_down()); /* t2 had no slot down: t's stays down */
		share_note_up(&t, now + 4);
		CHECK(!share_any_down());
	}
	return unit_report("share");
}
