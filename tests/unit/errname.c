/* Unit test of sys/errname: the same name as glibc's strerrorname_np for every errno. */
#include "sys/errname.h"

#include <errno.h>
#include <string.h>

#include "unit.h"

int main(void)
{
	int e;

	/* Every number a BACKOFF_ERRORS set can hold, and past it. */
	for (e = -1; e < 256; e++) {
		const char *want = strerrorname_np(e), *got = errname(e);

		if (want && got)
			CHECK_STR(got, want);
		else
			CHECK(want == got);
	}
	CHECK_STR(errname(ECONNREFUSED), "ECONNREFUSED");
	CHECK_STR(errname(EWOULDBLOCK), "EAGAIN");
	return unit_report("errname");
}
