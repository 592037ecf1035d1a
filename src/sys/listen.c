/* Listeners looked up in NETLINK_SOCK_DIAG dumps: a query, where a connect would be an attempt. */
#include "sys/listen.h"
#include "sys/kcall.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/*
 * The kernel sizes each part of a dump to the reader's buffer (at most 32 KiB,
 * at first one page or less): 8 KiB holds a part whole.  A dump of thousands
 * of sockets takes a few dozen reads; the bound only stops a kernel that never
 * ends one.
 */
#define REPLY_BYTES 8192
#define RECVS_MAX 4096
#define SEQ 1 /* one request per socket */

/* What a dump, or one of its messages, says about the destination. */
enum found {
	FOUND_NONE,    /* no socket of the destination (a message: not this one) */
	FOUND_LISTEN,  /* its socket, listening */
	FOUND_OTHER,   /* its socket, in another state */
	FOUND_UNKNOWN, /* refused, cut short or malformed */
};

typedef enum found match_fn(const struct nlmsghdr *h, const void *key);

struct inet_key {
	int family;    /* of the destination: AF_INET or AF_INET6 */
	uint16_t port; /* network byte order, as inet_diag reports it */
	unsigned char ip[16];
	bool *full;    /* set when a listener was found whose accept queue is full */
	uint64_t *ino; /* set to the inode of the listener found */
};

struct vfs_key {
	uint32_t dev; /* the kernel's internal dev_t, as unix_diag reports it */
	uint32_t ino; /* the low 32 bits: unix_diag reports no more */
};

static const unsigned char zeros[16];
static const unsigned char v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/*
 * The payload of attribute @type among the @len bytes of attributes at @p:
 * 1 with *@data and *@size when found, 0 when absent, -1 when they do not parse.
 */
static int attr_find(const unsigned char *p, size_t len, unsigned type, const unsigned char **data,
		     size_t *size)
{
	while (len > 0) {
		struct nlattr a;
		size_t step;

		if (len < sizeof(a))
			return -1;
		memcpy(&a, p, sizeof(a));
		if (a.nla_len < sizeof(a) || a.nla_len > len)
			return -1;
		if ((a.nla_type & NLA_TYPE_MASK) == type) {
			*data = p + sizeof(a);
			*size = a.nla_len - sizeof(a);
			return 1;
		}
		step = NLA_ALIGN(a.nla_len);
		if (step >= len)
			return 0;
		p += step;
		len -= step;
	}
	return 0;
}

/* The attributes after the @fixed bytes of a message's own header; false if it is shorter. */
static bool attrs_of(const struct nlmsghdr *h, size_t fixed, const unsigned char **p, size_t *len)
{
	size_t start = NLMSG_HDRLEN + NLMSG_ALIGN(fixed);

	if (h->nlmsg_len < NLMSG_HDRLEN + fixed)
		return false;
	*p = (const unsigned char *)h + start;
	*len = h->nlmsg_len > start ? h->nlmsg_len - start : 0;
	return true;
}

/* A TCP listener: on the port, and on the address or a wildcard that covers it. */
static enum found inet_listener(const struct nlmsghdr *h, const void *key)
{
	const struct inet_key *k = key;
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	const unsigned char *src, *attrs, *v6only;
	size_t len, size;
	int r;

	if (!attrs_of(h, sizeof(*m), &attrs, &len))
		return FOUND_UNKNOWN;
	if (m->idiag_state != TCP_LISTEN || m->id.idiag_sport != k->port)
		return FOUND_NONE;
	/*
	 * A full accept queue drops every SYN (the kernel's sk_acceptq_is_full:
	 * more queued than the backlog): such a listener takes no connect now.
	 */
	if (m->idiag_rqueue > m->idiag_wqueue) {
		*k->full = true;
		return FOUND_NONE; /* another listener of the port may have room */
	}
	src = (const unsigned char *)m->id.idiag_src;
	if (m->idiag_family == AF_INET)
		return k->family == AF_INET &&
				       (memcmp(src, zeros, 4) == 0 || memcmp(src, k->ip, 4) == 0)
			       ? FOUND_LISTEN
			       : FOUND_NONE;
	if (m->idiag_family != AF_INET6)
		return FOUND_UNKNOWN;
	if (k->family == AF_INET6)
		return memcmp(src, zeros, 16) == 0 || memcmp(src, k->ip, 16) == 0 ? FOUND_LISTEN
										  : FOUND_NONE;
	/* An IPv4 destination: a v6 socket on :: or on ::ffff:0.0.0.0 or ::ffff:ADDR. */
	if (memcmp(src, v4_mapped, 12) == 0)
		return memcmp(src + 12, zeros, 4) == 0 || memcmp(src + 12, k->ip, 4) == 0
			       ? FOUND_LISTEN
			       : FOUND_NONE;
	if (memcmp(src, zeros, 16) != 0)
		return FOUND_NONE;
	/* The kernel reports IPV6_V6ONLY with every v6 listener; a kernel without it has none. */
	r = attr_find(attrs, len, INET_DIAG_SKV6ONLY, &v6only, &size);
	if (r < 0 || (r == 1 && size < 1))
		return FOUND_UNKNOWN;
	return r == 1 && v6only[0] ? FOUND_NONE : FOUND_LISTEN;
}

/* inet_listener, and the inode of the listener it found. */
static enum found inet_match(const struct nlmsghdr *h, const void *key)
{
	const struct inet_key *k = key;
	enum found f = inet_listener(h, key);

	if (f == FOUND_LISTEN)
		*k->ino = ((const struct inet_diag_msg *)NLMSG_DATA(h))->idiag_inode;
	return f;
}

/* A unix socket bound to the file of (dev, ino). */
static enum found vfs_match(const struct nlmsghdr *h, const void *key)
{
	const struct vfs_key *k = key;
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const unsigned char *attrs, *data;
	struct unix_diag_vfs vfs;
	size_t len, size;
	int r;

	if (!attrs_of(h, sizeof(*m), &attrs, &len))
		return FOUND_UNKNOWN;
	r = attr_find(attrs, len, UNIX_DIAG_VFS, &data, &size);
	if (r < 0 || (r == 1 && size < sizeof(vfs)))
		return FOUND_UNKNOWN;
	if (r == 0)
		return FOUND_NONE; /* unnamed or abstract */
	memcpy(&vfs, data, sizeof(vfs));
	if (vfs.udiag_vfs_dev != k->dev || vfs.udiag_vfs_ino != k->ino)
		return FOUND_NONE;
	return m->udiag_state == TCP_LISTEN ? FOUND_LISTEN : FOUND_OTHER;
}

/* A listening unix socket of the abstract name: a NUL, then the name's bytes. */
static enum found name_match(const struct nlmsghdr *h, const void *key)
{
	const struct target_addr *t = key;
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const unsigned char *attrs, *name;
	size_t len, size;
	int r;

	if (!attrs_of(h, sizeof(*m), &attrs, &len))
		return FOUND_UNKNOWN;
	r = attr_find(attrs, len, UNIX_DIAG_NAME, &name, &size);
	if (r < 0)
		return FOUND_UNKNOWN;
	if (r == 0 || m->udiag_state != TCP_LISTEN || size != t->path_len + 1 || name[0] != '\0' ||
	    memcmp(name + 1, t->path, t->path_len) != 0)
		return FOUND_NONE;
	return FOUND_LISTEN;
}

/* NLMSG_DONE carries the dump's error code: a negative one means it was cut short. */
static bool done_whole(const struct nlmsghdr *h)
{
	int err;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(err)))
		return true;
	memcpy(&err, NLMSG_DATA(h), sizeof(err));
	return err >= 0;
}

/* Send the dump request @req on @fd and hand its messages to @match until one decides. */
static enum found dump(int fd, const void *req, size_t req_len, match_fn *match, const void *key)
{
	union {
		struct nlmsghdr h; /* aligns the buffer for the headers in it */
		unsigned char b[REPLY_BYTES];
	} buf;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	unsigned recvs;

	if (syscall(SYS_sendto, fd, req, req_len, 0, &kernel, sizeof(kernel)) != (long)req_len)
		return FOUND_UNKNOWN;
	for (recvs = 0; recvs < RECVS_MAX; recvs++) {
		struct sockaddr_nl from;
		socklen_t from_len = sizeof(from);
		const unsigned char *p = buf.b;
		size_t left;
		/*
		 * The kernel queues the first part of the dump before sendto
		 * returns and each next one before recvfrom returns, so the
		 * queue is never empty mid-dump: MSG_DONTWAIT only keeps a
		 * broken promise from blocking.  MSG_TRUNC returns the whole
		 * length, so that a part cut short by the buffer is seen.
		 */
		long n = syscall(SYS_recvfrom, fd, buf.b, sizeof(buf.b), MSG_DONTWAIT | MSG_TRUNC,
				 &from, &from_len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (size_t)n > sizeof(buf.b) || from_len != sizeof(from) ||
		    from.nl_pid != 0)
			return FOUND_UNKNOWN;
		left = (size_t)n;
		while (left > 0) {
			const struct nlmsghdr *h = (const struct nlmsghdr *)(const void *)p;
			enum found f;
			size_t step;

			if (left < sizeof(*h) || h->nlmsg_len < sizeof(*h) || h->nlmsg_len > left ||
			    h->nlmsg_seq != SEQ)
				return FOUND_UNKNOWN;
			if (h->nlmsg_type == NLMSG_DONE)
				return done_whole(h) ? FOUND_NONE : FOUND_UNKNOWN;
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
				return FOUND_UNKNOWN; /* NLMSG_ERROR: refused */
			f = match(h, key);
			if (f != FOUND_NONE)
				return f;
			step = NLMSG_ALIGN(h->nlmsg_len);
			if (step >= left)
				break;
			p += step;
			left -= step;
		}
	}
	return FOUND_UNKNOWN;
}

/* One dump on a netlink socket of its own, closed before returning. */
static enum found query(const void *req, size_t req_len, match_fn *match, const void *key)
{
	/* System calls: libbackoff hooks sendto, recvfrom and close, and would take its own. */
	long fd = syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	enum found f;

	if (fd < 0)
		return FOUND_UNKNOWN;
	f = dump((int)fd, req, req_len, match, key);
	syscall(SYS_close, fd);
	return f;
}

struct inet_req {
	struct nlmsghdr h;
	struct inet_diag_req_v2 r;
	struct nlattr bc_attr;
	struct inet_diag_bc_op bc[4];
};

_Static_assert(sizeof(struct inet_req) == NLMSG_HDRLEN + sizeof(struct inet_diag_req_v2) +
						  sizeof(struct nlattr) +
						  4 * sizeof(struct inet_diag_bc_op),
	       "the request is sent as laid out, with no padding");

/* The header of a dump request of @len bytes, the whole request zeroed first. */
static void dump_head(struct nlmsghdr *h, size_t len)
{
	memset(h, 0, len);
	h->nlmsg_len = (uint32_t)len;
	h->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	h->nlmsg_seq = SEQ;
}

/* The TCP listeners of @family on the destination's port. */
static enum found tcp_dump(int family, const struct inet_key *k)
{
	uint16_t port = ntohs(k->port);
	struct inet_req q;

	dump_head(&q.h, sizeof(q));
	q.r.sdiag_family = (uint8_t)family;
	q.r.sdiag_protocol = IPPROTO_TCP;
	q.r.idiag_states = 1U << TCP_LISTEN;
	/*
	 * A filter run by the kernel keeps the dump to the port: sport >= port,
	 * then sport <= port.  Each op jumps @yes bytes on true and @no bytes on
	 * false; landing on the end accepts, 4 bytes past it rejects.  The port
	 * rides in the @no of the op after each comparison.
	 */
	q.bc_attr.nla_type = INET_DIAG_REQ_BYTECODE;
	q.bc_attr.nla_len = (uint16_t)(sizeof(q.bc_attr) + sizeof(q.bc));
	q.bc[0] = (struct inet_diag_bc_op){ INET_DIAG_BC_S_GE, 8, 16 + 4 };
	q.bc[1].no = port;
	q.bc[2] = (struct inet_diag_bc_op){ INET_DIAG_BC_S_LE, 8, 8 + 4 };
	q.bc[3].no = port;
	return query(&q, sizeof(q), inet_match, k);
}

static int probe_tcp(const struct target_addr *t, uint64_t *ino)
{
	bool full = false;
	struct inet_key k = {
		.family = t->family, .port = htons(t->port), .full = &full, .ino = ino
	};
	size_t n = t->family == AF_INET ? 4 : 16;
	enum found f;

	memcpy(k.ip, t->ip, n);
	/* connect(2) sends 0.0.0.0 and :: to the loopback address. */
	if (memcmp(k.ip, zeros, n) == 0) {
		if (t->family == AF_INET)
			memcpy(k.ip, (const unsigned char[]){ 127, 0, 0, 1 }, 4);
		else
			k.ip[15] = 1;
	}
	f = tcp_dump(t->family, &k);
	if (f == FOUND_NONE && t->family == AF_INET)
		f = tcp_dump(AF_INET6, &k);
	if (f == FOUND_NONE && full)
		return 2;
	return f == FOUND_LISTEN ? 1 : f == FOUND_NONE ? 0 : -1;
}

/*
 * The other end of a connection: accepted (FOUND_LISTEN: it has a file, so
 * an inode), or still in the accept queue (FOUND_OTHER).  An exact lookup
 * that finds no connection falls back to the listener: not an answer.
 */
static enum found child_match(const struct nlmsghdr *h, const void *key)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);

	(void)key;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)) || m->idiag_state == TCP_LISTEN)
		return FOUND_UNKNOWN;
	return m->idiag_inode != 0 ? FOUND_LISTEN : FOUND_OTHER;
}

struct exact_req {
	struct nlmsghdr h;
	struct inet_diag_req_v2 r;
};

int listen_accepted(int fd)
{
	struct sockaddr_storage local, peer;
	socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
	struct exact_req q;
	int saved = errno;
	enum found f;

	/* System calls: libbackoff hooks both names. */
	if (syscall(SYS_getsockname, fd, &local, &local_len) != 0 ||
	    syscall(SYS_getpeername, fd, &peer, &peer_len) != 0 ||
	    local.ss_family != peer.ss_family ||
	    (local.ss_family != AF_INET && local.ss_family != AF_INET6)) {
		errno = saved;
		return -1;
	}
	memset(&q, 0, sizeof(q));
	q.h.nlmsg_len = sizeof(q);
	q.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.h.nlmsg_flags = NLM_F_REQUEST;
	q.h.nlmsg_seq = SEQ;
	q.r.sdiag_family = (uint8_t)local.ss_family;
	q.r.sdiag_protocol = IPPROTO_TCP;
	q.r.idiag_states = ~0U;
	/* The listener's side: from the peer's address to ours. */
	if (local.ss_family == AF_INET) {
		const struct sockaddr_in *l = (const void *)&local, *p = (const void *)&peer;

		q.r.id.idiag_sport = p->sin_port;
		q.r.id.idiag_dport = l->sin_port;
		memcpy(q.r.id.idiag_src, &p->sin_addr, 4);
		memcpy(q.r.id.idiag_dst, &l->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *l = (const void *)&local, *p = (const void *)&peer;

		q.r.id.idiag_sport = p->sin6_port;
		q.r.id.idiag_dport = l->sin6_port;
		memcpy(q.r.id.idiag_src, &p->sin6_addr, 16);
		memcpy(q.r.id.idiag_dst, &l->sin6_addr, 16);
	}
	q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	f = query(&q, sizeof(q), child_match, NULL);
	errno = saved;
	return f == FOUND_LISTEN ? 1 : f == FOUND_OTHER ? 0 : -1;
}

struct unix_req {
	struct nlmsghdr h;
	struct unix_diag_req r;
};

/* The unix sockets in @states, with the attributes of @show. */
static enum found unix_dump(uint32_t states, uint32_t show, match_fn *match, const void *key)
{
	struct unix_req q;

	dump_head(&q.h, sizeof(q));
	q.r.sdiag_family = AF_UNIX;
	q.r.udiag_states = states;
	q.r.udiag_show = show;
	return query(&q, sizeof(q), match, key);
}

static int probe_path(const struct target_addr *t)
{
	char path[TARGET_PATH_MAX + 1];
	struct stat st;
	struct vfs_key k;
	enum found f;

	if (t->path_len > TARGET_PATH_MAX)
		return -1; /* defensive: target_from_sockaddr caps it */
	memcpy(path, t->path, t->path_len);
	path[t->path_len] = '\0';
	/* connect(2) follows symbolic links and resolves a relative path from here too. */
	if (kcall_stat(path, &st) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (!S_ISSOCK(st.st_mode))
		return 0;
	/*
	 * unix_diag reports the superblock's dev_t as the kernel holds it,
	 * major << 20 | minor, where stat(2) gives the userspace encoding
	 * (minor's low byte, then major, then minor's high bits).
	 */
	k.dev = (uint32_t)major(st.st_dev) << 20 | (uint32_t)minor(st.st_dev);
	k.ino = (uint32_t)st.st_ino;
	/* TCP_CLOSE too: a socket bound and not listening is a sure no. */
	f = unix_dump(1U << TCP_LISTEN | 1U << TCP_CLOSE, UDIAG_SHOW_VFS, vfs_match, &k);
	/*
	 * FOUND_NONE: the file is stale, or its socket lives in another
	 * network namespace (a container's bind mount), whose listener a
	 * connect reaches all the same.  Nothing here tells them apart.
	 */
	return f == FOUND_LISTEN ? 1 : f == FOUND_OTHER ? 0 : -1;
}

static int probe_abstract(const struct target_addr *t)
{
	enum found f;

	if (t->path_len > TARGET_PATH_MAX)
		return -1; /* defensive: target_from_sockaddr caps it */
	/* Abstract names belong to the network namespace: this dump sees them all. */
	f = unix_dump(1U << TCP_LISTEN, UDIAG_SHOW_NAME, name_match, t);
	return f == FOUND_LISTEN ? 1 : f == FOUND_NONE ? 0 : -1;
}

int listen_probe(const struct target_addr *t)
{
	int saved = errno, ret;
	uint64_t ino;

	switch (t->family) {
	case AF_INET:
	case AF_INET6:
		ret = probe_tcp(t, &ino);
		break;
	case AF_UNIX:
		ret = t->abstract ? probe_abstract(t) : probe_path(t);
		break;
	default:
		ret = -1;
		break;
	}
	errno = saved;
	return ret;
}

uint64_t listen_inode(const struct target_addr *t)
{
	int saved = errno;
	uint64_t ino = 0;

	if ((t->family != AF_INET && t->family != AF_INET6) || probe_tcp(t, &ino) != 1)
		ino = 0;
	errno = saved;
	return ino;
}
