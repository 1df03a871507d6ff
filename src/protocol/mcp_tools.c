/*
 * mcp_tools.c - tools/list and tools/call, and the calls they start: the
 * tools a caller may see (its profile's filter), a tool found by name, one
 * struct mcpx_call per tools/call in flight, and the API a tool answers
 * through (tool.h: the result or error, log messages, progress,
 * cancellation).
 *
 * It does not run anything; a tool's call does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp_core.h"
#include "resource.h"
#include "utf8.h"

/* ---- calls ------------------------------------------------------------ */

static void call_unlink(struct mcpx_call *call)
{
	struct mcpx_core *core = call->core;

	if (call->prev)
		call->prev->next = call->next;
	else
		core->calls = call->next;
	if (call->next)
		call->next->prev = call->prev;
	call->prev = call->next = NULL;
	core->ncalls--;
}

static void call_free(struct mcpx_call *call)
{
	cJSON_Delete(call->id);
	cJSON_Delete(call->progress_token);
	free(call);
}

/* Ends a call without a response: the tool is told to stop, the sink learns
 * that the request will stay unanswered (unless the sink itself is gone). */
void mcpx_mcp_call_cancel(struct mcpx_call *call, bool tell_sink)
{
	struct mcpx_sink *sink = call->sink;

	call_unlink(call);
	/* The state guards against a tool that calls mcpx_call_finish from
	 * inside its cancel callback: tool.h forbids it, and we would otherwise
	 * answer a request the client has given up on. */
	call->state = CALL_CANCELLING;
	if (call->tasks)
		call->core->tasks.abandon(call->core->tasks.ctx, call);
	else if (call->tool->cancel)
		call->tool->cancel(call->tool, call);
	if (call->batch) {
		/* The batch's other responses still go out together. */
		call->batch->silent |= !tell_sink;
		call->batch->owed--;
		mcpx_mcp_batch_settle(call->batch);
	} else {
		if (sink->pending > 0)
			sink->pending--;
		if (tell_sink && !sink->gone && sink->unanswered)
			sink->unanswered(sink);
	}
	call_free(call);
}

struct mcpx_call *mcpx_mcp_call_find(struct mcpx_core *core, const char *key, const cJSON *id)
{
	for (struct mcpx_call *call = core->calls; call; call = call->next)
		if (strcmp(call->key, key) == 0 && mcpx_jsonrpc_id_equal(call->id, id))
			return call;
	return NULL;
}

void mcpx_call_finish(struct mcpx_call *call, cJSON *result)
{
	struct mcpx_sink *sink = call->sink;
	cJSON *msg;

	if (call->state == CALL_CANCELLING) {
		cJSON_Delete(result);
		return;
	}
	call_unlink(call);
	if (result && call->stateless && !mcpx_mcp_decorate_stateless(call->core, result)) {
		cJSON_Delete(result);
		result = NULL;
	}
	if (result)
		msg = mcpx_jsonrpc_result(call->id, result);
	else
		msg = mcpx_jsonrpc_error(call->id, MCPX_RPC_INTERNAL_ERROR,
		                         "Internal error: the tool produced no result", NULL);
	mcpx_mcp_emit_response(sink, call->batch, msg);
	call_free(call);
}

void mcpx_call_error_data(struct mcpx_call *call, int code, const char *msg, cJSON *data)
{
	struct mcpx_sink *sink = call->sink;

	if (call->state == CALL_CANCELLING) {
		cJSON_Delete(data);
		return;
	}
	call_unlink(call);
	mcpx_mcp_emit_response(sink, call->batch, mcpx_jsonrpc_error(call->id, code, msg, data));
	call_free(call);
}

void mcpx_call_error(struct mcpx_call *call, int code, const char *msg)
{
	mcpx_call_error_data(call, code, msg, NULL);
}

cJSON *mcpx_text_result(const char *text, bool is_error)
{
	cJSON *res = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(res, "content");
	cJSON *block = cJSON_CreateObject();

	if (!content || !block || !cJSON_AddItemToArray(content, block)) {
		cJSON_Delete(block);
		cJSON_Delete(res);
		return NULL;
	}
	if (!cJSON_AddStringToObject(block, "type", "text") ||
	    !cJSON_AddStringToObject(block, "text", text) ||
	    !cJSON_AddBoolToObject(res, "isError", is_error)) {
		cJSON_Delete(res);
		return NULL;
	}
	return res;
}

/* Text we put into JSON must be valid UTF-8; tools normally sanitise, this is
 * the backstop. Returns text itself or a repaired copy in *copy. */
static const char *valid_text(const char *text, char **copy)
{
	*copy = NULL;
	if (!text)
		return "";
	if (mcpx_utf8_valid(text, strlen(text)))
		return text;
	*copy = mcpx_utf8_sanitize(text, strlen(text), NULL);
	return *copy ? *copy : "";
}

void mcpx_call_fail(struct mcpx_call *call, const char *msg)
{
	char *copy;
	cJSON *res = mcpx_text_result(valid_text(msg, &copy), true);

	free(copy);
	mcpx_call_finish(call, res);
}

void mcpx_call_log(struct mcpx_call *call, enum mcpx_level level, const char *msg)
{
	cJSON *params;
	char *copy = NULL;

	/* MCPX_LEVEL_OFF is also what a 2026-07-28 request without
	 * io.modelcontextprotocol/logLevel gets: "the server MUST NOT send any
	 * notifications/message notifications for this request". */
	if (call->state != CALL_RUNNING || call->sink->gone || call->log_level == MCPX_LEVEL_OFF ||
	    level >= MCPX_LEVEL_OFF || level < call->log_level)
		return;
	params = cJSON_CreateObject();
	if (!cJSON_AddStringToObject(params, "level", mcpx_mcp_level_name(level)) ||
	    !cJSON_AddStringToObject(params, "logger", call->name) ||
	    !cJSON_AddStringToObject(params, "data", valid_text(msg, &copy))) {
		cJSON_Delete(params);
		params = NULL;
	}
	free(copy);
	if (params)
		mcpx_mcp_emit(call->sink,
		              mcpx_jsonrpc_notification("notifications/message", params), false);
}

int mcpx_call_has_progress(const struct mcpx_call *call)
{
	return call->progress_token != NULL;
}

void mcpx_call_progress(struct mcpx_call *call, double progress, const char *message)
{
	cJSON *params;
	char *copy = NULL;
	bool ok;

	/* "The progress value MUST increase with each notification"
	 * (basic/utilities/progress); a call that does not grow is dropped
	 * rather than sent out of order. */
	if (!call->progress_token || call->state != CALL_RUNNING || call->sink->gone ||
	    (call->progress_sent && !(progress > call->last_progress)))
		return;
	params = cJSON_CreateObject();
	ok = mcpx_json_add_owned(params, "progressToken",
	                         cJSON_Duplicate(call->progress_token, true)) &&
	     cJSON_AddNumberToObject(params, "progress", progress);
	/* "message" was added to ProgressNotification in 2025-03-26; a
	 * 2024-11-05 client's schema has no such field. */
	if (ok && message && strcmp(call->version, MCPX_PV_2024_11_05) != 0)
		ok = cJSON_AddStringToObject(params, "message", valid_text(message, &copy));
	free(copy);
	if (!ok) {
		cJSON_Delete(params);
		return;
	}
	call->last_progress = progress;
	call->progress_sent = true;
	mcpx_mcp_emit(call->sink, mcpx_jsonrpc_notification("notifications/progress", params),
	              false);
}

const char *mcpx_call_tool_name(const struct mcpx_call *call)
{
	return call->name;
}

const char *mcpx_call_id_text(const struct mcpx_call *call)
{
	return call->id_text;
}

const char *mcpx_call_caller(const struct mcpx_call *call)
{
	return call->caller;
}

const char *mcpx_call_client(const struct mcpx_call *call)
{
	return call->client;
}

const char *mcpx_call_version(const struct mcpx_call *call)
{
	return call->version;
}

void mcpx_call_set_data(struct mcpx_call *call, void *data)
{
	call->data = data;
}

void *mcpx_call_data(const struct mcpx_call *call)
{
	return call->data;
}

bool mcpx_mcp_tool_allowed(const struct mcpx_core *core, const char *caller, const char *name)
{
	return !core->access.allowed || core->access.allowed(core->access.ctx, caller, name);
}

/* Drops from tools the Tool objects caller may not see. */
static void filter_tools(const struct mcpx_core *core, const char *caller, cJSON *tools)
{
	cJSON *t = tools->child;

	while (t) {
		cJSON *next = t->next;
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");

		if (!cJSON_IsString(name) ||
		    !mcpx_mcp_tool_allowed(core, caller, name->valuestring))
			cJSON_Delete(cJSON_DetachItemViaPointer(tools, t));
		t = next;
	}
}

/* execution.taskSupport on each Tool object of a 2025-11-25 session's list
 * when the core has tasks (task_hooks.h); a tool of an upstream (the
 * gateway) keeps the execution its upstream listed, or none. Later and
 * earlier versions have no such field. */
static bool tasks_annotate(const struct mcpx_core *core, const char *version, bool stateless,
                           cJSON *tools)
{
	cJSON *t;

	if (!core->tasks.call || stateless || strcmp(version, MCPX_PV_2025_11_25) != 0)
		return true;
	cJSON_ArrayForEach(t, tools)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
		cJSON *exec;

		if (!cJSON_IsString(name) || cJSON_HasObjectItem(t, "execution"))
			continue;
		exec = cJSON_AddObjectToObject(t, "execution");
		if (!exec ||
		    !cJSON_AddStringToObject(
		        exec, "taskSupport",
		        mcpx_task_support_name(mcpx_core_tool_task_support(
		            mcpx_mcp_find_tool(core, name->valuestring), name->valuestring))))
			return false;
	}
	return true;
}

/* The result of tools/list for caller under version: every tool it may
 * see, and for a 2026-07-28 request the cache hints. NULL when out of
 * memory. */
static cJSON *tools_result(const struct mcpx_core *core, const char *caller, const char *version,
                           bool stateless)
{
	bool per_caller = core->access.per_caller && core->access.per_caller(core->access.ctx);
	cJSON *res = cJSON_CreateObject();
	cJSON *tools = cJSON_AddArrayToObject(res, "tools");

	if (!tools)
		goto oom;
	for (size_t i = 0; i < core->ntools; i++) {
		const struct mcpx_tool *tl = core->tools[i];
		cJSON *t = tl->describe_for ? tl->describe_for(tl, caller) : tl->describe(tl);
		if (!t || !cJSON_AddItemToArray(tools, t)) {
			cJSON_Delete(t);
			goto oom;
		}
	}
	if (core->provider.list && core->provider.list(core->provider.ctx, tools) < 0)
		goto oom;
	filter_tools(core, caller, tools);
	if (!tasks_annotate(core, version, stateless, tools))
		goto oom;
	/* With profiles each caller sees its own list: a shared cache must
	 * not hand one caller's list to another. */
	if (stateless &&
	    (!cJSON_AddNumberToObject(res, "ttlMs", CACHE_TTL_MS) ||
	     !cJSON_AddStringToObject(res, "cacheScope", per_caller ? "private" : "public")))
		goto oom;
	return res;
oom:
	cJSON_Delete(res);
	return NULL;
}

/* A tools/list held until the provider is ready: a call of this tool,
 * answered by mcpx_core_tools_ready (or cancelled like any call). */
static void waiting_list_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	(void)tool;
	(void)call;
}

static const struct mcpx_tool waiting_list = {.name = "tools/list", .cancel = waiting_list_cancel};

void mcpx_mcp_tools_list(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	const cJSON *cursor = mcpx_mcp_member(r->params, "cursor");

	/* We never hand out a cursor (one page holds every tool), so any cursor
	 * is one we do not know: "Invalid cursors SHOULD result in an error with
	 * code -32602" (server/utilities/pagination). */
	if (cursor && !cJSON_IsNull(cursor)) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
		return;
	}
	/* The gateway's tools are there from the first list (issue 34 item 7):
	 * while its upstreams have not answered yet, the request waits, as
	 * long as their timeout_s at most. */
	if (core->provider.ready && !core->provider.ready(core->provider.ctx)) {
		if (!mcpx_mcp_call_new(r, &waiting_list, "tools/list", MCPX_LEVEL_OFF))
			mcpx_mcp_reply_result(r, NULL);
		return;
	}
	mcpx_mcp_reply_result(r,
	                      tools_result(core, r->c->session->caller, r->version, r->stateless));
}

void mcpx_core_tools_ready(struct mcpx_core *core)
{
	struct mcpx_call *call;

	if (core->provider.ready && !core->provider.ready(core->provider.ctx))
		return;
	/* From the head each time: answering one may end a sink and with it
	 * other calls. */
	for (;;) {
		for (call = core->calls; call; call = call->next)
			if (call->tool == &waiting_list && call->state == CALL_RUNNING)
				break;
		if (!call)
			return;
		mcpx_call_finish(call,
		                 tools_result(core, call->caller, call->version, call->stateless));
	}
}

const struct mcpx_tool *mcpx_mcp_find_tool(const struct mcpx_core *core, const char *name)
{
	for (size_t i = 0; i < core->ntools; i++)
		if (strcmp(core->tools[i]->name, name) == 0)
			return core->tools[i];
	return core->provider.find ? core->provider.find(core->provider.ctx, name) : NULL;
}

void mcpx_mcp_call_link(struct mcpx_call *call)
{
	struct mcpx_core *core = call->core;

	call->next = core->calls;
	if (call->next)
		call->next->prev = call;
	core->calls = call;
	core->ncalls++;
}

struct mcpx_call *mcpx_mcp_call_new(struct req *r, const struct mcpx_tool *tool, const char *name,
                                    enum mcpx_level log_level)
{
	struct ctx *c = r->c;
	const cJSON *token = mcpx_mcp_member(r->meta, "progressToken");
	struct mcpx_call *call = calloc(1, sizeof(*call));

	if (!call || !(call->id = cJSON_Duplicate(r->id, true))) {
		free(call);
		return NULL;
	}
	/* "Progress tokens MUST be a string or integer value"; anything else
	 * is ignored, which only means the client gets no progress. */
	if (token && (cJSON_IsString(token) || cJSON_IsNumber(token)) &&
	    !(call->progress_token = cJSON_Duplicate(token, true))) {
		call_free(call);
		return NULL;
	}
	call->core = c->core;
	call->sink = c->sink;
	call->batch = c->batch;
	call->tool = tool;
	call->state = CALL_RUNNING;
	call->log_level = log_level;
	call->stateless = r->stateless;
	mcpx_utf8_copy_trunc(call->version, sizeof(call->version), r->version);
	mcpx_utf8_copy_trunc(call->key, sizeof(call->key), c->session->key);
	mcpx_utf8_copy_trunc(call->caller, sizeof(call->caller), c->session->caller);
	mcpx_utf8_copy_trunc(call->client, sizeof(call->client), c->session->client);
	mcpx_utf8_copy_trunc(call->name, sizeof(call->name), name);
	mcpx_jsonrpc_id_text(r->id, call->id_text, sizeof(call->id_text));
	mcpx_mcp_call_link(call);
	return call;
}

/* An id is unique among a sender's requests in flight (basic/index,
 * "Requests"); a reused one would make cancellation ambiguous. Refuses r
 * when its id is a call's or a subscription's still in flight, and then
 * returns true. */
bool mcpx_mcp_id_in_use(struct req *r)
{
	struct ctx *c = r->c;

	if (!mcpx_mcp_call_find(c->core, c->session->key, r->id) &&
	    !mcpx_mcp_subscription_find(c->core, c->session->key, r->id))
		return false;
	mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_REQUEST,
	                     "Invalid Request: a request with this id is still in progress");
	return true;
}

void mcpx_mcp_tools_call(struct req *r)
{
	struct ctx *c = r->c;
	const cJSON *name = mcpx_mcp_member(r->params, "name");
	const cJSON *args = mcpx_mcp_member(r->params, "arguments");
	const struct mcpx_tool *tool;
	struct mcpx_call *call;

	if (!cJSON_IsString(name)) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_PARAMS,
		                     "Invalid params: tools/call requires a string name");
		return;
	}
	tool = mcpx_mcp_find_tool(c->core, name->valuestring);
	/* A tool the caller's profile leaves out does not exist for it. */
	if (tool && !mcpx_mcp_tool_allowed(c->core, c->session->caller, name->valuestring))
		tool = NULL;
	if (!tool) {
		/* The spec's answer for an unknown tool is a protocol error
		 * (server/tools, "Error Handling": code -32602, "Unknown tool:
		 * invalid_tool_name"), not an isError result as the TypeScript
		 * SDK sends. */
		char msg[192];
		char shown[128];
		mcpx_utf8_copy_trunc(shown, sizeof(shown), name->valuestring);
		snprintf(msg, sizeof(msg), "Unknown tool: %s", shown);
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_PARAMS, msg);
		return;
	}
	if (mcpx_mcp_id_in_use(r))
		return;
	call = mcpx_mcp_call_new(r, tool, name->valuestring, r->log_level);
	if (!call) {
		mcpx_mcp_reply_result(r, NULL);
		return;
	}
	/* The call may finish (and be freed) inside tool->call; nothing here
	 * touches it afterwards. JSON null arguments count as absent. */
	tool->call(tool, call, cJSON_IsNull(args) ? NULL : args);
}
