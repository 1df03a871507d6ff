/*
 * tool_exec.h - the `exec` tool: the mcp-exec (Go) contract on top of the
 * executor.
 *
 * Its arguments are exec_args.h's, its result exec_result.h's (both
 * included here, so a user of the tool needs this header alone), its Tool
 * object exec_describe.h's. A non-zero exit or a timeout is a normal
 * result; only invalid input and infrastructure failures are tool errors.
 */
#ifndef MCPX_TOOL_EXEC_H
#define MCPX_TOOL_EXEC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "exec_args.h"
#include "exec_result.h"
#include "executor.h"
#include "tool.h"

struct mcpx_config;

/* The tool, bound to an executor; freed with mcpx_tool_exec_free. langs
 * (not owned, outlives the tool; NULL: python alone) are the languages its
 * schema offers and its description names. */
struct mcpx_tool *mcpx_tool_exec_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                     const struct mcpx_languages *langs);
void mcpx_tool_exec_free(struct mcpx_tool *tool);

/* The policy whose exec grant the description names (mcpx.fetch and the
 * URLs it reaches); NULL, the default, for none. Not owned. */
struct mcpx_policy_store;
void mcpx_tool_exec_set_policy(struct mcpx_tool *tool, const struct mcpx_policy_store *policy);

/* fn(arg, g) gives the lines naming the upstream MCP servers exec code
 * under grant g may call (a malloc'd string the tool frees, or NULL for
 * none); the description then says how to call and discover their tools.
 * g is the caller's profile's exec grant, or the top-level one. */
struct mcpx_egress_grant;
void mcpx_tool_exec_set_upstreams(struct mcpx_tool *tool,
                                  char *(*fn)(void *arg, const struct mcpx_egress_grant *g),
                                  void *arg);

/* The server's workspaces (exec_workspace.h; not owned, outlives the
 * tool; NULL or a NULL store: off, the default): the inputSchema and the
 * description gain the workspace arguments. Returns 0, or -EINVAL when the
 * schema would not compile (a bug). */
struct mcpx_workspaces_conf;
int mcpx_tool_exec_set_workspaces(struct mcpx_tool *tool, const struct mcpx_workspaces_conf *ws);

#endif
