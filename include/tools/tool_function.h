/*
 * tool_function.h - the policy's functions as MCP tools, next to exec.
 *
 * tools/list shows each function of the current policy version with its
 * name, title, description, inputSchema and outputSchema (as the policy
 * wrote them). A tools/call of one runs it (functions.h): invalid
 * arguments are a tool error listing each failure with its JSON pointer,
 * and nothing runs; a returned dict becomes structuredContent, any other
 * JSON value {"result": value}, with the same JSON in a text block; an
 * exception is a tool error with its message and traceback. Queue and
 * start are logged and output reported as progress, as for exec, but the
 * progress only counts the bytes the function printed, never quotes them.
 *
 * One tool object serves every function: the core finds it through the
 * provider (mcp.h) by the name the client called, and the call keeps the
 * policy version it started with.
 */
#ifndef MCPX_TOOL_FUNCTION_H
#define MCPX_TOOL_FUNCTION_H

#include "mcp.h"
#include "tool.h"

struct mcpx_functions;
struct mcpx_policy_store;

/* The tool, serving the functions of store's current policy (both must
 * outlive it). Free with mcpx_tool_function_free. */
struct mcpx_tool *mcpx_tool_function_new(struct mcpx_functions *fs,
                                         const struct mcpx_policy_store *store);
void mcpx_tool_function_free(struct mcpx_tool *tool);

/* What the core lists and finds through (valid while the tool lives). */
const struct mcpx_tool_provider *mcpx_tool_function_provider(struct mcpx_tool *tool);

#endif
