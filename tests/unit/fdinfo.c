/* Unit tests of the fdinfo parser: the kernel's format, and what it must refuse. */
#include "sys/fdinfo.h"

#include <stdbool.h>
#include <string.h>

#include "unit.h"

static const char sample[] =
	"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n"
	"tfd:        7 events:       1c data:                7  pos:0 ino:4b5c "
	"sdev:8\n"
	"tfd:       12 events: 80000004 data: 5eed000000000003  pos:0 ino:4b5d "
	"sdev:8\n";

static bool find(const char *text, int fd, uint32_t *events, uint64_t *data)
{
	return fdinfo_find(text, strlen(text), fd, events, data);
}

int main(void)
{
	uint32_t events = 0;
	uint64_t data = 0;

	CHECK(find(sample, 7, &events, &data));
	CHECK_U64(events, 0x1c);
	CHECK_U64(data, 7);
	CHECK(find(sample, 12, &events, &data));
	CHECK_U64(events, 0x80000004U);
	CHECK_U64(data, 0x5eed000000000003ULL);
	/* Not there, a prefix of another number, negative. */
	CHECK(!find(sample, 1, &events, &data));
	CHECK(!find(sample, 2, &events, &data));
	CHECK(!find(sample, -1, &events, &data));
	/* Malformed: no digits, overflowing numbers, missing fields, cut short. */
	CHECK(!find("tfd: events: 1 data: 1\n", 0, &events, &data));
	CHECK(!find("tfd: 99999999999 events: 1 data: 1\n", 1215752191, &events, &data));
	CHECK(!find("tfd: 3 events: 100000000 data: 1\n", 3, &events, &data));
	CHECK(!find("tfd: 3 events: 1 data: 11112222333344445\n", 3, &events, &data));
	CHECK(!find("tfd: 3 events: 1\n", 3, &events, &data));
	CHECK(!find("tfd: 3 events: 1 data:", 3, &events, &data));
	CHECK(!find("xtfd: 3 events: 1 data: 1\n", 3, &events, &data));
	/* The last line needs no newline; the length bounds the text, not a NUL. */
	CHECK(find("tfd: 3 events: 4 data: 2a", 3, &events, &data));
	CHECK_U64(data, 0x2a);
	CHECK(!fdinfo_find("tfd: 3 events: 4 data: 2a", 10, 3, &events, &data));
	return unit_report("fdinfo");
}
