/* The error sets: which errnos are retried by default, which never, and the send family's and the
 * resolver's. */
#include "config/config.h"
#include "sys/startup.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const int default_inet_errors[] = { ECONNREFUSED, ETIMEDOUT, ENETUNREACH, EHOSTUNREACH };
static const int default_unix_errors[] = { ENOENT, ECONNREFUSED, EAGAIN };

/* Errors that say the call must not be repeated as it was (see DESIGN section 2). */
static const int never_retried[] = { EINTR,	   EINPROGRESS, EALREADY,   EISCONN,   EACCES,
				     EPERM,	   EINVAL,	EBADF,	    ENOTSOCK,  EFAULT,
				     EAFNOSUPPORT, EPROTOTYPE,	EADDRINUSE, EOPNOTSUPP };

bool config_errset_has(const struct config_errset *set, int err)
{
	if (err <= 0 || err >= CONFIG_ERRNO_MAX)
		return false;
	return (set->bits[err / 64] >> (err % 64)) & 1;
}

void config_errset_put(struct config_errset *set, int err, bool on)
{
	uint64_t bit = 1ULL << (err % 64);

	if (on)
		set->bits[err / 64] |= bit;
	else
		set->bits[err / 64] &= ~bit;
}

/*
 * The set of the @n errors at @errs.  Bits set here, not through
 * config_errset_put: at load, from config_errors_default, that call would
 * fault in a page of code every process otherwise leaves alone.
 */
STARTUP_CODE static void errset_from(struct config_errset *set, const int *errs, size_t n)
{
	size_t i;

	memset(set, 0, sizeof(*set));
	for (i = 0; i < n; i++)
		set->bits[errs[i] / 64] |= 1ULL << (errs[i] % 64);
}

/*
 * Measured on Linux: a connected AF_UNIX datagram socket whose receiver went
 * away fails once with ECONNREFUSED and is disconnected by it, so that a
 * second send fails with ENOTCONN: only a send that names its destination can
 * be repeated.  A connected UDP socket stays connected: ECONNREFUSED reports
 * the ICMP error of an earlier datagram and this one was not sent.
 */
void config_send_errors(int family, int type, bool addressed, struct config_errset *out)
{
	bool any = family == AF_UNSPEC;

	memset(out, 0, sizeof(*out));
	config_errset_put(out, ENOBUFS, true);
	config_errset_put(out, ENOMEM, true);
	if (type != SOCK_DGRAM && !any)
		return;
	if (family == AF_INET || family == AF_INET6 || any) {
		config_errset_put(out, ECONNREFUSED, true);
		config_errset_put(out, ENETUNREACH, true);
		config_errset_put(out, EHOSTUNREACH, true);
		config_errset_put(out, ENETDOWN, true);
	}
	if ((family == AF_UNIX || any) && addressed) {
		config_errset_put(out, ENOENT, true);
		config_errset_put(out, ECONNREFUSED, true);
	}
}

void config_dns_errors(const struct config *cfg, const char *name, struct config_errset *out)
{
	bool named = target_name_matches(&cfg->names, name);

	memset(out, 0, sizeof(*out));
	config_errset_put(out, CONFIG_DNS_AGAIN, true);
	config_errset_put(out, CONFIG_DNS_NONAME, named);
	config_errset_put(out, CONFIG_DNS_NODATA, named);
}

STARTUP_CODE void config_errors_default(struct config_errset *inet, struct config_errset *unix_set)
{
	errset_from(inet, default_inet_errors, N(default_inet_errors));
	errset_from(unix_set, default_unix_errors, N(default_unix_errors));
}

bool config_errno_never_retried(int err)
{
	size_t i;

	for (i = 0; i < N(never_retried); i++)
		if (never_retried[i] == err)
			return true;
	return false;
}
