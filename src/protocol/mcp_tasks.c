/*
 * mcp_tasks.c - the core's side of MCP tasks (task_hooks.h): which requests
 * go to the tasks module, the tasks capability, the detached calls a task
 * runs as, and notifications to a session's streams. It sits above the
 * stateless checks and the tools in the core's one-way order (mcp_core.h):
 * the method table sends tools/call here first, and what is not a task's
 * goes on to mcpx_mcp_tools_call; the extension in server/discover and
 * execution.taskSupport in tools/list are the files below's, read from the
 * core's hooks.
 *
 * Which generation gets what:
 *   - 2025-11-25 sessions: the "tasks" capability the module gives for the
 *     caller, tools/call with "task" handed over, tasks/get, tasks/result,
 *     tasks/list and tasks/cancel. A tool whose support is "required"
 *     called without a task: -32601 ("Servers MUST return a -32601 (Method
 *     not found) error if a client does not attempt to do so").
 *   - 2026-07-28 requests: one whose _meta client capabilities declare the
 *     extension has its tools/call of a tool that may run as a task handed
 *     over, and may use tasks/get, tasks/update and tasks/cancel; one that
 *     does not gets -32021 (Missing Required Client Capability) for those
 *     and for a tool whose support is "required" (SEP-2663).
 *   - Older sessions: nothing changes; a "task" member of tools/call is
 *     ignored, as the spec asks of a server without the capability.
 * It keeps no task state; that is the module's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp_core.h"
#include "task_hooks.h"
#include "utf8.h"

#define TASKS_EXTENSION "io.modelcontextprotocol/tasks"

static bool tasks_on(const struct mcpx_core *core)
{
	return core->tasks.call != NULL;
}

/* A session-based request whose session gets tasks: 2025-11-25, the only
 * session-based version that has them. */
static bool session_tasks(const struct req *r)
{
	return tasks_on(r->c->core) && !r->stateless && strcmp(r->version, MCPX_PV_2025_11_25) == 0;
}

/* A 2026-07-28 request that declared the extension in its _meta client
 * capabilities. */
static bool declared(const struct req *r)
{
	const cJSON *caps = mcpx_mcp_member(r->meta, META_CLIENT_CAPS);
	const cJSON *ext = mcpx_mcp_member(mcpx_mcp_member(caps, "extensions"), TASKS_EXTENSION);

	return r->stateless && cJSON_IsObject(ext);
}

bool mcpx_mcp_tasks_capability(const struct req *r, const char *version, cJSON *caps)
{
	struct mcpx_core *core = r->c->core;

	if (!tasks_on(core) || strcmp(version, MCPX_PV_2025_11_25) != 0)
		return true;
	return mcpx_json_add_owned(caps, "tasks",
	                           core->tasks.capability(core->tasks.ctx, r->c->session->caller));
}

/* -32021 naming the extension (SEP-2575 "Missing Required Capabilities"). */
static void missing_extension(struct req *r, const char *what)
{
	cJSON *data = cJSON_CreateObject();
	cJSON *req = cJSON_AddObjectToObject(data, "requiredCapabilities");
	cJSON *ext = req ? cJSON_AddObjectToObject(req, "extensions") : NULL;
	char msg[200];

	if (!ext || !cJSON_AddObjectToObject(ext, TASKS_EXTENSION)) {
		cJSON_Delete(data);
		data = NULL;
	}
	snprintf(msg, sizeof(msg), "Missing required client capability: %s needs the %s extension",
	         what, TASKS_EXTENSION);
	mcpx_mcp_reply_error_data(r, MCPX_RPC_MISSING_CLIENT_CAPABILITY, msg, data, 0);
}

/* A new call for the tasks module (tool NULL: abandon goes to the module). */
static struct mcpx_call *handed(struct req *r, const char *name)
{
	struct mcpx_call *call = mcpx_mcp_call_new(r, NULL, name, MCPX_LEVEL_OFF);

	if (call)
		call->tasks = true;
	return call;
}

/* Hands a tools/call of tool to the tasks module when it is one for it, or
 * refuses it as the tasks rules say; true when r was answered or handed
 * over. */
static bool route_call(struct req *r, const struct mcpx_tool *tool, const char *name,
                       const cJSON *args)
{
	struct mcpx_core *core = r->c->core;
	enum mcpx_task_support sup = mcpx_core_tool_task_support(tool, name);
	const cJSON *task = mcpx_mcp_member(r->params, "task");
	struct mcpx_call *call;
	char msg[256], shown[128];

	if (session_tasks(r)) {
		if (!task && sup == MCPX_TASK_SUPPORT_REQUIRED) {
			mcpx_utf8_copy_trunc(shown, sizeof(shown), name);
			snprintf(
			    msg, sizeof(msg),
			    "Method not found: tool %s runs only as a task (execution.taskSupport "
			    "\"required\"): call it with \"task\"",
			    shown);
			mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, msg);
			return true;
		}
		if (!task)
			return false;
	} else if (r->stateless && tasks_on(core)) {
		if (!declared(r)) {
			if (sup != MCPX_TASK_SUPPORT_REQUIRED)
				return false;
			mcpx_utf8_copy_trunc(shown, sizeof(shown), name);
			snprintf(msg, sizeof(msg), "tool %s", shown);
			missing_extension(r, msg);
			return true;
		}
		/* The server decides; a tool that never runs as a task is
		 * called as usual. SEP-2663: "servers MUST ignore" a legacy
		 * "task" member. */
		if (sup == MCPX_TASK_SUPPORT_FORBIDDEN)
			return false;
		task = NULL;
	} else {
		return false;
	}
	call = handed(r, name);
	if (!call) {
		mcpx_mcp_reply_result(r, NULL);
		return true;
	}
	core->tasks.call(core->tasks.ctx, call, tool, cJSON_IsNull(args) ? NULL : args, task);
	return true;
}

void mcpx_mcp_tasks_tools_call(struct req *r)
{
	struct ctx *c = r->c;
	const cJSON *name = mcpx_mcp_member(r->params, "name");
	const cJSON *args = mcpx_mcp_member(r->params, "arguments");
	const struct mcpx_tool *tool = NULL;

	/* A tool that does not exist for the caller is mcpx_mcp_tools_call's
	 * to refuse, as for any call. */
	if (cJSON_IsString(name) && c->core->tasks.call)
		tool = mcpx_core_find_tool(c->core, c->session->caller, name->valuestring);
	if (tool && (mcpx_mcp_id_in_use(r) || route_call(r, tool, name->valuestring, args)))
		return;
	mcpx_mcp_tools_call(r);
}

void mcpx_mcp_tasks_method(struct req *r)
{
	struct mcpx_core *core = r->c->core;
	struct mcpx_call *call;

	if (!tasks_on(core) || (!r->stateless && !session_tasks(r))) {
		mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
		return;
	}
	if (r->stateless && !declared(r)) {
		missing_extension(r, r->method);
		return;
	}
	if (mcpx_mcp_id_in_use(r))
		return;
	call = handed(r, r->method);
	if (!call) {
		mcpx_mcp_reply_result(r, NULL);
		return;
	}
	core->tasks.method(core->tasks.ctx, call, r->method, r->params);
}

struct mcpx_call *mcpx_core_task_call(struct mcpx_core *core, const struct mcpx_tool *tool,
                                      const char *name, const cJSON *args,
                                      const struct mcpx_task_origin *o, struct mcpx_sink *sink)
{
	struct mcpx_call *call = calloc(1, sizeof(*call));

	if (!call || !(call->id = cJSON_CreateString(o->task_id))) {
		free(call);
		return NULL;
	}
	call->core = core;
	call->sink = sink;
	call->tool = tool;
	call->state = CALL_RUNNING;
	call->log_level = MCPX_LEVEL_OFF;
	mcpx_utf8_copy_trunc(call->version, sizeof(call->version), o->version);
	/* A key no client session has: notifications/cancelled cannot reach
	 * a task's run, tasks/cancel does. */
	snprintf(call->key, sizeof(call->key), "task:%s", o->task_id);
	mcpx_utf8_copy_trunc(call->caller, sizeof(call->caller), o->caller);
	mcpx_utf8_copy_trunc(call->client, sizeof(call->client), o->client);
	mcpx_utf8_copy_trunc(call->name, sizeof(call->name), name);
	mcpx_utf8_copy_trunc(call->task_id, sizeof(call->task_id), o->task_id);
	/* The audit line names the request that created the task, and the
	 * task (mcpx_call_task_id). */
	mcpx_utf8_copy_trunc(call->id_text, sizeof(call->id_text),
	                     o->request_id ? o->request_id : o->task_id);
	mcpx_mcp_call_link(call);
	sink->pending++;
	tool->call(tool, call, args);
	return call;
}

const struct mcpx_tool *mcpx_core_find_tool(struct mcpx_core *core, const char *caller,
                                            const char *name)
{
	const struct mcpx_tool *tool = mcpx_mcp_find_tool(core, name);

	return tool && mcpx_mcp_tool_allowed(core, caller, name) ? tool : NULL;
}

void mcpx_core_notify_session(struct mcpx_core *core, const char *key, const char *method,
                              cJSON *params)
{
	for (struct listener *l = core->listeners; l; l = l->next) {
		/* A session-wide stream: stdio's and legacy SSE's carry their
		 * session, a Streamable HTTP GET stream its key. */
		const char *lkey = l->session ? l->session->key : l->key;

		if (l->sub_id || l->sink->gone || (l->session && !l->session->initialized) ||
		    strcmp(lkey, key) != 0)
			continue;
		mcpx_mcp_emit(l->sink,
		              mcpx_jsonrpc_notification(method, cJSON_Duplicate(params, true)),
		              false);
	}
	cJSON_Delete(params);
}

const char *mcpx_call_task_id(const struct mcpx_call *call)
{
	return call->task_id[0] ? call->task_id : NULL;
}

const char *mcpx_call_session(const struct mcpx_call *call)
{
	return call->key;
}

bool mcpx_call_stateless(const struct mcpx_call *call)
{
	return call->stateless;
}
