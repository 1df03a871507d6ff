/*
 * exec_describe.h - the `exec` tool's Tool object: its description (the
 * configured limits, the languages, files, and what the caller's policy
 * lets its code reach), its input and output schemas, its annotations.
 */
#ifndef MCPX_EXEC_DESCRIBE_H
#define MCPX_EXEC_DESCRIBE_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#define MCPX_EXEC_TOOL_NAME "exec"

struct mcpx_config;
struct mcpx_egress_grant;
struct mcpx_languages;
struct mcpx_policy_store;

/* What exec's Tool object is drawn from; nothing in it is owned. */
struct mcpx_exec_about {
	const struct mcpx_config *cfg;
	const struct mcpx_languages *langs;     /* NULL: python alone */
	const struct mcpx_policy_store *policy; /* NULL: no egress */
	/* The lines of the upstreams grant g reaches (malloc'd, freed by the
	 * describer), or NULL; upstreams itself NULL: none. */
	char *(*upstreams)(void *arg, const struct mcpx_egress_grant *g);
	void *upstreams_arg;
	bool workspaces; /* the server keeps workspaces (MCP_EXEC_WORKSPACES is not off) */
};

/* exec's Tool object as caller sees it (NULL: under the top-level exec
 * section, as a caller no profile matches sees it); the caller frees it.
 * NULL when out of memory. */
cJSON *mcpx_exec_describe(const struct mcpx_exec_about *about, const char *caller);

/* The inputSchema exec publishes for cfg and langs (NULL: python alone),
 * with the workspace arguments when workspaces is true; the caller frees
 * it. NULL when out of memory. */
cJSON *mcpx_exec_input_schema(const struct mcpx_config *cfg, const struct mcpx_languages *langs,
                              bool workspaces);

#endif
