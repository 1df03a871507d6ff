/*
 * tool_upstream.h - the gateway: the tools of upstreams with "expose": true
 * listed to MCP clients of this server as "<upstream>.<tool>", and a
 * tools/call of one forwarded to the upstream (upstream.h) under the same
 * policy, limits and audit as a call from a run; the client gets the
 * upstream's CallToolResult unchanged (content blocks, structuredContent,
 * isError). A refused call (not exposed, not allowed, upstream down, too
 * large) or a protocol error is a tool error with the reason.
 *
 * The tool's provider chains another (the functions'): its tools first,
 * then the exposed upstreams' tools of the current policy that are
 * connected.
 */
#ifndef MCPX_TOOL_UPSTREAM_H
#define MCPX_TOOL_UPSTREAM_H

#include "mcp.h"
#include "tool.h"

struct mcpx_upstreams;
struct mcpx_policy_store;

/* The tool over ups and store's current policy (both must outlive it);
 * next (may be NULL; copied) is asked first. Free with
 * mcpx_tool_upstream_free. NULL when out of memory. */
struct mcpx_tool *mcpx_tool_upstream_new(struct mcpx_upstreams *ups,
                                         const struct mcpx_policy_store *store,
                                         const struct mcpx_tool_provider *next);
void mcpx_tool_upstream_free(struct mcpx_tool *tool);

/* What the core lists and finds through (valid while the tool lives). */
const struct mcpx_tool_provider *mcpx_tool_upstream_provider(struct mcpx_tool *tool);

#endif
