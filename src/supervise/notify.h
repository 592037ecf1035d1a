/* What a connect notification asks, judged from its arguments and the bytes read. */
#ifndef BACKOFF_SUPERVISE_NOTIFY_H
#define BACKOFF_SUPERVISE_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/target.h"

/* Largest address a connect can name: sizeof(struct sockaddr_storage). */
#define NOTIFY_ADDRESS_MAX 128

/*
 * How many bytes of the address a connect with length argument @len_arg
 * names, or 0 when the kernel refuses that length (EINVAL) anyway.  Pure.
 */
size_t notify_address_len(uint64_t len_arg);

/*
 * Whether the connect with length argument @len_arg, whose address read from
 * the task is @bytes (@got bytes: fewer than the length when the memory was
 * unreadable), is one for the supervisor to decide under @cfg (under
 * BACKOFF_RETRIES=0 too: its give-up is said as the preload says it); fills
 * @target if so.  Every other connect is handed back to the kernel.  Pure:
 * the bytes are never trusted.
 */
bool notify_connect_eligible(const struct config *cfg, uint64_t len_arg, const void *bytes,
			     size_t got, struct target_addr *target);

/* Whether a getsockopt(SO_ERROR) whose optlen holds @optlen can take an int. */
bool notify_optlen_fits(uint32_t optlen);

#endif
