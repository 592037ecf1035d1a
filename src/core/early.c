/* Early close: the watch on a connection until its first byte, and the look when it ends. */
#include "core/early.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <string.h>

#include "core/decide.h"
#include "core/target.h"
#include "sys/sock.h"

void early_watch_inet(const struct config *cfg, int fd, const struct sockaddr *addr, socklen_t len)
{
	struct fdslot *s;

	if (!cfg->enabled || !cfg->shared)
		return;
	s = fdtable_peek(fd);
	if (!s && !(s = fdtable_get(fd)))
		return;
	/*
	 * A slot of its own, not the managed connect's, so no claim: only a
	 * connect of this fd writes it, and early_seen reads it once the flag
	 * set after it is seen.
	 */
	if (len > sizeof(s->first_addr))
		len = sizeof(s->first_addr);
	memcpy(&s->first_addr, addr, len);
	s->first_len = len;
	fdtable_set_first(s, true);
}

bool early_seen(const struct config *cfg, int fd, ssize_t rc, int err, bool sending,
		struct sockaddr_storage *addr, socklen_t *len)
{
	struct fdslot *s = fdtable_peek(fd);
	struct sock_first f = { .segs_in = 1 };
	struct target_addr t;
	bool again, blocking;

	if (!s || !(atomic_load_explicit(&s->word, memory_order_acquire) & FDS_FIRST))
		return false;
	if (rc < 0 && err != ECONNRESET && err != EPIPE)
		return false; /* EAGAIN, EINTR...: nothing yet */
	if (rc > 0 && sending)
		return false; /* what we sent says nothing of the peer */
	if (rc <= 0) {
		/* An end, or a read of nothing: one look tells which. */
		if (!sock_first(fd, &f)) {
			fdtable_set_first(s, false); /* not TCP: nothing to watch */
			return false;
		}
		if (f.segs_in == 0 && (f.state == TCP_ESTABLISHED || f.state == TCP_SYN_SENT))
			return false; /* still open: a read of nothing */
	}
	*len = s->first_len;
	memcpy(addr, &s->first_addr, *len);
	if (!fdtable_set_first(s, false))
		return false; /* another thread saw it first */
	/* Only a destination of the library's has a streak. */
	if (!target_from_sockaddr((const struct sockaddr *)addr, *len, &t) ||
	    !target_matches(&cfg->targets, &t))
		return false;
	if (f.segs_in != 0) {
		decide_first_byte(cfg, &t);
		return false;
	}
	blocking = sock_is_blocking(fd);
	/* A blocking read with a timeout of its own is not made to wait for a new connection. */
	again = decide_early_close(cfg, &t, f.segs_out != 0 || sending, blocking,
				   blocking && sock_rcvtimeo_ms(fd) != UINT64_MAX);
	if (again)
		sock_abort_connect(fd);
	return again;
}

void early_sent(const struct config *cfg, int fd, int err)
{
	struct sockaddr_storage addr;
	socklen_t len;
	int saved = errno;

	/* Something was being sent: never connected again, only counted. */
	early_seen(cfg, fd, -1, err, true, &addr, &len);
	errno = saved;
}
