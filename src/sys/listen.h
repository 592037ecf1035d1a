/* Whether a local destination has a listener now, asked of the kernel's socket tables. */
#ifndef BACKOFF_SYS_LISTEN_H
#define BACKOFF_SYS_LISTEN_H

#include "sys/addr.h"

/*
 * Whether a socket in LISTEN state in this network namespace would take a
 * connect to @t: 1 yes, 0 no, 2 not now (its queue is full), -1 cannot tell (netlink refused, out
 * of memory, a reply that does not parse).  Makes no connection attempt. errno untouched.
 * Async-signal-safe, no allocation, no locks.
 *
 * TCP: a listener on the port and on the address, on the wildcard of its
 * family, or (for an IPv4 @t) on [::] without IPV6_V6ONLY or on the
 * v4-mapped address; 0.0.0.0 and [::] stand for the loopback address, as in
 * connect(2); only listeners whose accept queue is full: 2 (they drop every
 * SYN until the queue has room).  Unix paths: the socket bound to the file @t names, by
 * device and inode; a missing file or one that is not a socket is 0, but a socket file that no
 * socket of this namespace holds is -1 (stale, or bound in another network namespace, whose
 * listener a connect would still reach). Abstract names: byte for byte, as a connect looks them up.
 */
int listen_probe(const struct target_addr *t);

/*
 * Whether the listener at the other end of TCP socket @fd's connection has
 * accepted it: 1 yes, 0 not yet (it waits in the accept queue), -1 cannot
 * tell (not TCP, not connected, its other end not in this network namespace,
 * netlink refused).  One exact query of the kernel's socket table: an
 * accepted socket has an inode, one in the queue has none.  errno untouched.
 * Async-signal-safe, no allocation, no locks.
 */
int listen_accepted(int fd);

/*
 * The inode of the socket listening for TCP destination @t now, as
 * listen_probe finds it; 0: none, or it cannot tell (a full queue, netlink
 * refused, not TCP).  A listener's inode is its identity: another server on
 * the same port has another.  errno untouched.  Async-signal-safe.
 */
uint64_t listen_inode(const struct target_addr *t);

#endif
