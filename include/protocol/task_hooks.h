/*
 * task_hooks.h - MCP tasks as the protocol core sees them.
 *
 * The core parses and checks requests; what a task is, where it is kept and
 * who runs it belongs to the tasks module (tasks.h), which implements these
 * hooks. The core hands it:
 *   - a tools/call that may become a task: under 2025-11-25 one whose params
 *     carry "task" (the client asks for a task), under 2026-07-28 one whose
 *     _meta client capabilities declare io.modelcontextprotocol/tasks (the
 *     server decides, SEP-2663);
 *   - the tasks methods of both generations.
 * Both arrive as a struct mcpx_call (tool.h) that the module answers exactly
 * once, with mcpx_call_finish (a result) or mcpx_call_error, unless the
 * core calls abandon first (the client cancelled the request or went
 * away); after abandon the module must not answer it.
 *
 * To run a task the module asks the core for a detached call
 * (mcpx_core_task_call): the ordinary tools/call path through the tool,
 * with the client replaced by a sink the module owns, so the run is
 * exactly what a direct call would be and its result is the CallToolResult
 * a direct call returns.
 */
#ifndef MCPX_TASK_HOOKS_H
#define MCPX_TASK_HOOKS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "tool.h"

/* The core (mcp.h); only its address passes here, so this header stays
 * below the core and includes nothing of it. */
struct mcpx_core;

/* "forbidden", "optional", "required". */
const char *mcpx_task_support_name(enum mcpx_task_support s);

struct mcpx_task_hooks {
	/* The "tasks" capability of a 2025-11-25 initialize result for caller,
	 * or NULL for none (the session then gets no tasks). */
	cJSON *(*capability)(void *ctx, const char *caller);
	/* Whether 2026-07-28 server/discover lists the extension. */
	bool (*extension)(void *ctx);
	/* A tools/call of tool by the name the client called, with its
	 * arguments (NULL: none; valid during the call only) and, under
	 * 2025-11-25, the request's "task" object (NULL under 2026-07-28).
	 * The module answers it: a CreateTaskResult, the call's own result
	 * (2026-07-28, when it finished at once), or an error. */
	void (*call)(void *ctx, struct mcpx_call *call, const struct mcpx_tool *tool,
	             const cJSON *args, const cJSON *task);
	/* tasks/get, tasks/result, tasks/list, tasks/cancel or tasks/update
	 * (params may be NULL; valid during the call only). */
	void (*method)(void *ctx, struct mcpx_call *req, const char *method, const cJSON *params);
	/* The client cancelled req (notifications/cancelled) or went away. */
	void (*abandon)(void *ctx, struct mcpx_call *req);
	void *ctx;
};

/* Who a task's run is for: the task, and the request that created it. */
struct mcpx_task_origin {
	const char *task_id;
	const char *request_id; /* the id of the tools/call that created it, as text */
	const char *caller;     /* its audit line's caller and its share of the queue */
	const char *client;     /* the audit line's view of the client */
	const char *version;    /* the protocol version (argument checks differ by version) */
};

/*
 * Starts the run of a task: tool (found by name under the caller's access,
 * which the module checked) is called with args, as for a tools/call whose
 * client is sink. The response (a JSON-RPC response whose id is the task id)
 * and any notifications reach sink->send; mcpx_core_sink_gone(core, sink)
 * cancels the run. The call counts as in flight for drain. Returns the call
 * (owned by the core until it answers sink), or NULL when out of memory. The
 * tool sees mcpx_call_task_id(call) == o->task_id.
 */
struct mcpx_call *mcpx_core_task_call(struct mcpx_core *core, const struct mcpx_tool *tool,
                                      const char *name, const cJSON *args,
                                      const struct mcpx_task_origin *o, struct mcpx_sink *sink);

/* The tool serving name for caller (NULL: none, or one the caller may not
 * see), as tools/call would find it. */
const struct mcpx_tool *mcpx_core_find_tool(struct mcpx_core *core, const char *caller,
                                            const char *name);

/* A tool's task support for the name it serves (struct mcpx_tool's
 * task_support, or forbidden when it has none). */
enum mcpx_task_support mcpx_core_tool_task_support(const struct mcpx_tool *tool, const char *name);

/* A notification (params owned; may be NULL) to every session-wide stream
 * of session key (2025-11-25 notifications/tasks/status). */
void mcpx_core_notify_session(struct mcpx_core *core, const char *key, const char *method,
                              cJSON *params);

#endif
