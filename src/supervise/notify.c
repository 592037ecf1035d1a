/* The pure checks of a notification: lengths, the address bytes, the target filter. */
#include "supervise/notify.h"

#include <sys/socket.h>

#include "drivers/eligible.h"

_Static_assert(NOTIFY_ADDRESS_MAX == sizeof(struct sockaddr_storage), "address buffer size");

size_t notify_address_len(uint64_t len_arg)
{
	if (len_arg < sizeof(sa_family_t) || len_arg > NOTIFY_ADDRESS_MAX)
		return 0;
	return (size_t)len_arg;
}

bool notify_connect_eligible(const struct config *cfg, uint64_t len_arg, const void *bytes,
			     size_t got, struct target_addr *target)
{
	size_t len = notify_address_len(len_arg);

	/* Unreadable memory: the kernel answers EFAULT itself. */
	if (len == 0 || got != len)
		return false;
	return eligible_takes(cfg, bytes, (socklen_t)len, target);
}

bool notify_optlen_fits(uint32_t optlen)
{
	return optlen >= sizeof(int);
}
