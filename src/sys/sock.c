/* Socket facts for the retry decisions, asked only after a failure. */
#include "sys/sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "sys/clock.h"
#include "sys/real.h"

bool sock_is_blocking(int fd)
{
	int flags = real_fcntl(fd, F_GETFL);

	return flags >= 0 && !(flags & O_NONBLOCK);
}

/* Whether @fd is in non-blocking mode (false if fcntl fails). */
static bool is_nonblocking(int fd)
{
	int flags = real_fcntl(fd, F_GETFL);

	return flags >= 0 && (flags & O_NONBLOCK);
}

int sock_type(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return real_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 ? type : -1;
}

bool sock_kind(int fd, int *family, int *type)
{
	socklen_t len = sizeof(*family);

	if (real_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, family, &len) != 0)
		return false;
	*type = sock_type(fd);
	return *type >= 0;
}

bool sock_is_connected(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return real_getpeername(fd, (struct sockaddr *)&ss, &len) == 0;
}

int sock_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	return real_getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : errno;
}

bool sock_is_writable(int fd)
{
	struct pollfd p = { fd, POLLOUT, 0 };

	return real_poll(&p, 1, 0) > 0;
}

/* The timeout @opt (SO_SNDTIMEO, SO_RCVTIMEO) of @fd in ms, UINT64_MAX when unset. */
uint64_t sock_timeo_ms(int fd, int opt)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);

	if (real_getsockopt(fd, SOL_SOCKET, opt, &tv, &len) != 0 ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return UINT64_MAX; /* CONFIG_INFINITE: no timeout */
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

uint64_t sock_sndtimeo_ms(int fd)
{
	return sock_timeo_ms(fd, SO_SNDTIMEO);
}

uint64_t sock_rcvtimeo_ms(int fd)
{
	return sock_timeo_ms(fd, SO_RCVTIMEO);
}

void sock_abort_connect(int fd)
{
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };

	(void)real_connect(fd, &unspec, sizeof(unspec));
	/* Measured: the abort leaves ECONNRESET pending; the program must not read it. */
	(void)sock_error(fd);
}

int sock_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return real_connect(fd, addr, len) == 0 ? 0 : errno;
}

static int set_sndtimeo(int fd, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	return real_setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int sock_connect_until(int fd, const struct sockaddr *addr, socklen_t len, uint64_t deadline_ms,
		       enum sock_own_timeo known, struct sock_bound *bound)
{
	return sock_connect_from(fd, addr, len, deadline_ms == UINT64_MAX ? 0 : clock_now_ms(),
				 deadline_ms, known, bound);
}

void sock_sndtimeo_none(int fd)
{
	int saved = errno;

	(void)set_sndtimeo(fd, 0);
	errno = saved;
}

/* The program's own send timeout of a socket, to give back. */
struct own_timeo {
	int fd;
	struct timeval tv;
	socklen_t len;
	struct sock_bound *bound; /* told when the bound is set and when it is gone */
};

/* Set the bound @ms on @o's socket: 0 on success, as setsockopt. */
static int set_bound(const struct own_timeo *o, uint64_t ms)
{
	/* Told first: a siglongjmp after the setsockopt must find it said. */
	if (o->bound)
		o->bound->told(o->bound, o->fd, true);
	return set_sndtimeo(o->fd, ms);
}

/* Give @arg's socket its own send timeout back, exactly as it was. */
static void restore_own(void *arg)
{
	const struct own_timeo *o = arg;

	(void)real_setsockopt(o->fd, SOL_SOCKET, SO_SNDTIMEO, &o->tv, o->len);
	if (o->bound)
		o->bound->told(o->bound, o->fd, false);
}

int sock_connect_from(int fd, const struct sockaddr *addr, socklen_t len, uint64_t now,
		      uint64_t deadline_ms, enum sock_own_timeo known, struct sock_bound *bound)
{
	uint64_t left = deadline_ms > now ? deadline_ms - now : 0;
	struct own_timeo own = { fd, { 0, 0 }, sizeof(struct timeval), bound };
	bool restarted = false;
	int err;

	if (deadline_ms == UINT64_MAX || known == SOCK_TIMEO_OWN ||
	    (known == SOCK_TIMEO_ASK &&
	     real_getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &own.tv, &own.len) != 0))
		return sock_connect(fd, addr, len);
	/*
	 * The program bounds its connects with a send timeout of its own: the
	 * kernel answers as without us (EINPROGRESS at its end), and the retry
	 * loop's budget counts it.
	 */
	if (own.tv.tv_sec != 0 || own.tv.tv_usec != 0)
		return sock_connect(fd, addr, len);
	if (left == 0)
		left = 1; /* the budget's end: one attempt still, for an answer that comes at once
			   */
	if (set_bound(&own, left) != 0) {
		restore_own(&own);
		return sock_connect(fd, addr, len);
	}
	/*
	 * connect is a cancellation point: a thread cancelled in it, as one left
	 * by a siglongjmp, leaves the bound told to @bound, whose next hook on the
	 * socket gives its own value back (a cleanup handler here cost every
	 * blocking connect 48 instructions).
	 */
	for (;;) {
		err = sock_connect(fd, addr, len);
		if (err != EINTR || !clock_every_handler_restarts())
			break;
		/* Restarted as the kernel would: the attempt under way is waited for again. */
		now = clock_now_ms();
		if (now >= deadline_ms || set_bound(&own, deadline_ms - now) != 0) {
			err = EALREADY;
			break;
		}
		restarted = true;
	}
	/* The program's own value, exactly as it was. */
	restore_own(&own);
	/*
	 * The socket was non-blocking after all (its mode changed behind the
	 * hooks, through a copy in another process): the kernel's answer, as is.
	 */
	if (err == EINPROGRESS && is_nonblocking(fd))
		return err;
	/* Our timeout ended it: EINPROGRESS (first wait) or EALREADY (a restarted wait). */
	if (err == EINPROGRESS || err == EALREADY) {
		sock_abort_connect(fd);
		return ETIMEDOUT;
	}
	/*
	 * A restarted wait whose attempt was made meanwhile: connected.  A
	 * socket connected before the call keeps the kernel's EISCONN.
	 */
	return err == EISCONN && restarted ? 0 : err;
}

/*
 * The kernel's struct tcp_info (include/uapi/linux/tcp.h) up to the data
 * segment counts (Linux 4.6): its state first, the counts at byte 152, after
 * 8 one-byte fields, 24 u32 and 4 u64 and 4 u32 (libc headers stop before
 * them).
 */
struct kernel_tcp_info {
	uint8_t state;
	uint8_t before[151];
	uint32_t data_segs_in, data_segs_out;
	/* Then (Linux 4.19) after 4 u64 and 2 u32: the bytes sent, retransmissions included. */
	uint8_t between[40];
	uint64_t bytes_sent, bytes_retrans;
};
_Static_assert(offsetof(struct kernel_tcp_info, data_segs_in) == 152, "tcpi_data_segs_in");
_Static_assert(offsetof(struct kernel_tcp_info, bytes_sent) == 200, "tcpi_bytes_sent");
_Static_assert(offsetof(struct kernel_tcp_info, bytes_retrans) == 208, "tcpi_bytes_retrans");

int sock_tcp_state(int fd)
{
	struct kernel_tcp_info ti = { 0 };
	socklen_t len = sizeof(ti.state);

	return real_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && len == sizeof(ti.state)
		       ? ti.state
		       : -1;
}

bool sock_first(int fd, struct sock_first *f)
{
	struct kernel_tcp_info ti = { 0 };
	socklen_t len = sizeof(ti);

	if (real_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct kernel_tcp_info, data_segs_out) + sizeof(ti.data_segs_out))
		return false;
	f->state = ti.state;
	f->segs_in = ti.data_segs_in;
	f->segs_out = ti.data_segs_out;
	f->bytes_out =
		len >= offsetof(struct kernel_tcp_info, bytes_retrans) + sizeof(ti.bytes_retrans)
			? ti.bytes_sent - ti.bytes_retrans
			: UINT64_MAX;
	return true;
}
