/*
 * run_sockets.h - kernel memory a run holds in its AF_UNIX sockets.
 *
 * Bytes queued on a socket are kernel memory no process maps: RSS and PSS do
 * not show them, and 32 processes filling socketpair buffers took about
 * 1.1 GB of a host under a 512 MiB budget (issue 21 B). The kernel reports
 * each AF_UNIX socket's buffers through sock_diag (NETLINK_SOCK_DIAG,
 * UNIX_DIAG_MEMINFO, no privilege needed); this module sums them over the
 * sockets the run's processes hold open, so run_budget.c can count them
 * with the run's memory.
 *
 * What it does not see: a socket no process of the run holds any more (sent
 * away in an SCM_RIGHTS message, or closed while its peer is held); pipes.
 * docs/security.md bounds those. Nothing here keeps state between calls;
 * the caller frees nothing.
 */
#ifndef MCPX_RUN_SOCKETS_H
#define MCPX_RUN_SOCKETS_H

#include <stdint.h>

#include "run_usage.h"

/* Socket inodes one reading follows; beyond them sockets go uncounted. */
#define MCPX_SOCKETS_MAX 65536

/* The receive and send buffer memory (sk_rmem_alloc + sk_wmem_alloc, the
 * kernel's own charge, overhead included) of every AF_UNIX socket the
 * processes in p hold open, each socket once, in KiB. For AF_UNIX the bytes
 * a socket sent and its peer has not read yet are charged to the sender, so
 * a run's full socketpairs count whichever end it holds. Returns 0 or
 * -errno (sock_diag unavailable: -ENOENT, -EINVAL or -EPROTONOSUPPORT);
 * *kb is what could be summed. */
int mcpx_usage_socket_kb(const struct mcpx_usage_procs *p, uint64_t *kb);

#endif
