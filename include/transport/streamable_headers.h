/*
 * streamable_headers.h - the Streamable HTTP request headers a 2026-07-28
 * request must agree with its body on (basic/transports/streamable-http,
 * "Server Validation"): MCP-Protocol-Version, Mcp-Method and Mcp-Name,
 * the last one possibly in its =?base64?...?= form.
 *
 * The transport reads the headers; only the core knows, after parsing the
 * body, whether they have to agree with it and in which order that error
 * comes among the others. So the transport fills a struct mcpx_req_headers
 * (mcp.h) with the values and with mcpx_streamable_header_mismatch, and the
 * core calls that at its place. Nothing here allocates beyond the call.
 */
#ifndef MCPX_STREAMABLE_HEADERS_H
#define MCPX_STREAMABLE_HEADERS_H

#include "mcp.h"

/* Fills h: the three values (NULL or empty: the header was absent; the
 * strings stay the caller's and must outlive h), the check below, and
 * whether MCP-Protocol-Version may be echoed in an error. */
void mcpx_streamable_headers_init(struct mcpx_req_headers *h, const char *protocol_version,
                                  const char *method, const char *name);

/* Whether h agrees with a 2026-07-28 request's body: its _meta protocol
 * version, its method and params. Returns the HeaderMismatch message (a
 * static string), or NULL when all agree. */
const char *mcpx_streamable_header_mismatch(const struct mcpx_req_headers *h,
                                            const char *body_version, const char *method,
                                            const cJSON *params);

#endif
