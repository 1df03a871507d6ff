/*
 * listen_addr.h - turns the host part of MCP_EXEC_ADDR into the address the
 * HTTP listener binds, and says whether that address is loopback.
 *
 * libwebsockets binds only numeric addresses or interface names; a host
 * name such as "localhost" would be taken for a missing interface and the
 * server would run with nothing listening. So names are resolved here, once,
 * at start-up, and the loopback decision (which relaxes the fail-closed auth
 * rule and turns on the Host check) is made on the address actually bound,
 * never on the spelling of the name.
 */
#ifndef MCPX_LISTEN_ADDR_H
#define MCPX_LISTEN_ADDR_H

#include <stdbool.h>

#include "err.h"

struct mcpx_listen_addr {
	char numeric[64]; /* the address to bind; "" means every IPv4 interface */
	bool ipv6;
	bool loopback;
};

/* host: "0.0.0.0" (every interface), a numeric IPv4 or IPv6 address, or a
 * name. A name resolving to several addresses binds the first IPv4 one
 * (else the first IPv6 one). Returns 0, or -EINVAL with a message naming
 * MCP_EXEC_ADDR when the name does not resolve. */
int mcpx_listen_addr_resolve(const char *host, struct mcpx_listen_addr *out, struct mcpx_err *err);

#endif
