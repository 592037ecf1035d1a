/* Parsing an epoll set's fdinfo: bounded, every number checked, lines of any length. */
#include "sys/fdinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/text.h"
#include "sys/kcall.h"

/* A hexadecimal number at *@s of at most 16 digits; false if there is none or it overflows. */
static bool hex(const char **s, const char *end, uint64_t *v)
{
	unsigned digits = 0;

	*v = 0;
	for (; *s < end; (*s)++, digits++) {
		char c = **s;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			break;
		if (digits == 16)
			return false;
		*v = *v << 4 | d;
	}
	return digits > 0;
}

static bool word(const char **s, const char *end, const char *w)
{
	size_t n = strlen(w);

	while (*s < end && **s == ' ')
		(*s)++;
	if ((size_t)(end - *s) < n || memcmp(*s, w, n) != 0)
		return false;
	*s += n;
	while (*s < end && **s == ' ')
		(*s)++;
	return true;
}

static bool parse_line(const char *s, const char *end, int fd, uint32_t *events, uint64_t *data)
{
	uint64_t v = 0, ev;
	unsigned digits = 0;

	if (!word(&s, end, "tfd:"))
		return false;
	for (; s < end && *s >= '0' && *s <= '9'; s++, digits++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > INT32_MAX)
			return false;
	}
	if (digits == 0 || v != (uint64_t)fd || !word(&s, end, "events:") || !hex(&s, end, &ev) ||
	    ev > UINT32_MAX || !word(&s, end, "data:") || !hex(&s, end, data))
		return false;
	*events = (uint32_t)ev;
	return true;
}

bool fdinfo_find(const char *text, size_t len, int fd, uint32_t *events, uint64_t *data)
{
	const char *s = text, *end = text + len;

	if (fd < 0)
		return false;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;

		if (parse_line(s, eol, fd, events, data))
			return true;
		s = nl ? nl + 1 : end;
	}
	return false;
}

int fdinfo_read(int epfd, int fd, uint32_t *events, uint64_t *data)
{
	char path[64], buf[4096];
	size_t keep = 0;
	struct text t;
	int pfd, found = -1, saved = errno;
	ssize_t n;

	text_init(&t, path, sizeof(path));
	text_str(&t, "/proc/self/fdinfo/");
	text_u64(&t, (uint64_t)epfd);
	pfd = kcall_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (pfd < 0)
		goto out;
	found = 0;
	/* Whole lines only: a partial last line is carried to the next read. */
	while (!found && (n = syscall(SYS_read, pfd, buf + keep, sizeof(buf) - keep)) > 0) {
		size_t len = keep + (size_t)n, whole = len;
		const char *last = NULL;

		for (size_t i = len; i > 0; i--)
			if (buf[i - 1] == '\n') {
				last = buf + i;
				break;
			}
		if (last)
			whole = (size_t)(last - buf);
		found = fdinfo_find(buf, whole, fd, events, data);
		keep = len - whole;
		if (keep == sizeof(buf))
			keep = 0; /* a line longer than the buffer holds no registration */
		memmove(buf, buf + whole, keep);
	}
	if (!found && keep > 0)
		found = fdinfo_find(buf, keep, fd, events, data);
	syscall(SYS_close, pfd); /* the system calls: no hook of the library's own */
out:
	errno = saved;
	return found;
}
