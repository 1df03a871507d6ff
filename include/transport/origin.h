/*
 * origin.h - DNS-rebinding protection for the HTTP transports.
 *
 * A browser page on a foreign site can make requests to a loopback server;
 * the Origin header is how the server tells. Loopback origins are always
 * allowed, plus the exact origins in MCP_EXEC_ALLOWED_ORIGINS; requests
 * without Origin (non-browser clients) pass. On a loopback listener the Host
 * header must name a loopback host too, which defeats DNS rebinding.
 */
#ifndef MCPX_ORIGIN_H
#define MCPX_ORIGIN_H

#include <stdbool.h>

/* allowed_csv: comma-separated origins such as "https://app.example.com". */
bool mcpx_origin_allowed(const char *origin, const char *allowed_csv);
/* host: the Host header value (may carry a port). */
bool mcpx_host_allowed(const char *host, bool loopback_listener);

#endif
