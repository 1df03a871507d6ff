/*
 * tool.h - the tool registry interface between the protocol core and tools.
 *
 * The core owns a `struct mcpx_call` for every tools/call in flight. A tool's
 * `call` either finishes it at once (argument errors) or later (after the
 * executor ran the code), always through mcpx_call_finish(); after `cancel`
 * the tool must not finish it. Results are CallToolResult objects in cJSON.
 */
#ifndef MCPX_TOOL_H
#define MCPX_TOOL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp_types.h"

struct mcpx_call;

/* A tool's execution.taskSupport (2025-11-25 server/tools): whether a
 * tools/call of it may run as a task (task_hooks.h). */
enum mcpx_task_support {
	MCPX_TASK_SUPPORT_FORBIDDEN,
	MCPX_TASK_SUPPORT_OPTIONAL,
	MCPX_TASK_SUPPORT_REQUIRED,
};

struct mcpx_tool {
	const char *name;
	/* Returns the Tool object for tools/list (caller frees). */
	cJSON *(*describe)(const struct mcpx_tool *tool);
	/* Starts a call; args may be NULL (no "arguments"). */
	void (*call)(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args);
	/* The client cancelled or went away. */
	void (*cancel)(const struct mcpx_tool *tool, struct mcpx_call *call);
	void *ctx;
	/* Optional: the Tool object as caller (caller.h) sees it, for a tool
	 * whose description depends on who asks (exec under a profile); when
	 * set, tools/list uses it instead of describe. */
	cJSON *(*describe_for)(const struct mcpx_tool *tool, const char *caller);
	/* Optional: whether the tool serving name may run as a task
	 * (task_hooks.h); without it, it may not. */
	enum mcpx_task_support (*task_support)(const struct mcpx_tool *tool, const char *name);
};

/* Finishes the call with a CallToolResult (ownership passes to the core). */
void mcpx_call_finish(struct mcpx_call *call, cJSON *result);
/* A CallToolResult with one text block (caller owns it); NULL when out of
 * memory. */
cJSON *mcpx_text_result(const char *text, bool is_error);

/* Convenience: a tool error result {isError:true, content:[text msg]}. */
void mcpx_call_fail(struct mcpx_call *call, const char *msg);

/* notifications/message for this call's client, if its level passes. */
void mcpx_call_log(struct mcpx_call *call, enum mcpx_level level, const char *msg);
/* notifications/progress, when the request carried a progressToken;
 * progress must grow between calls. */
void mcpx_call_progress(struct mcpx_call *call, double progress, const char *message);
int mcpx_call_has_progress(const struct mcpx_call *call);

/* The tool name the client called (a provider's tool serves many names). */
const char *mcpx_call_tool_name(const struct mcpx_call *call);

/* The request id rendered as text, and the caller identity (for audit). */
const char *mcpx_call_id_text(const struct mcpx_call *call);
const char *mcpx_call_caller(const struct mcpx_call *call);
/* The transport's description of the client (a session's hash and remote
 * address, "stdio"), for the audit log beside the caller. */
const char *mcpx_call_client(const struct mcpx_call *call);
/* The session's protocol version (input validation rules differ by version). */
const char *mcpx_call_version(const struct mcpx_call *call);

/* The task this call runs for (task_hooks.h), or NULL for a direct call:
 * a task's run may last up to MCP_EXEC_TASK_MAX_TIMEOUT_S, and its audit
 * line names the task. */
const char *mcpx_call_task_id(const struct mcpx_call *call);

/* For the tasks module, which answers requests the core hands it
 * (task_hooks.h): the session key of the request, whether it came as a
 * 2026-07-28 request, and an answer that is a JSON-RPC error (data owned,
 * may be NULL). */
const char *mcpx_call_session(const struct mcpx_call *call);
bool mcpx_call_stateless(const struct mcpx_call *call);
void mcpx_call_error_data(struct mcpx_call *call, int code, const char *msg, cJSON *data);

void mcpx_call_set_data(struct mcpx_call *call, void *data);
void *mcpx_call_data(const struct mcpx_call *call);

#endif
