/*
 * mcp_resources.c - resources/list, resources/read and
 * resources/templates/list (server/resources), through the core's resource
 * provider (resource.h).
 *
 * A list or read is a call in flight like a tools/call (mcp_tools.c): it
 * holds its sink and batch until the provider answers, is cancelled with
 * notifications/cancelled or when its client goes, and its id may not be
 * reused meanwhile. The request's params are checked here (a string uri,
 * a cursor we never hand out); what a uri names is the provider's to
 * decide. Without a provider the three methods are unknown ones, as they
 * were before resources existed.
 *
 * It does not know what a resource is (workspace files, in this server:
 * tools/workspace_resources.c).
 */
#include <string.h>

#include "jsonrpc.h"
#include "mcp_core.h"

/* A call for r whose answer comes from the provider; NULL when it was
 * answered here (an id in use, out of memory). */
static struct mcpx_call *resource_call(struct req *r, const char *method)
{
	struct mcpx_call *call;

	if (mcpx_mcp_id_in_use(r))
		return NULL;
	call = mcpx_mcp_call_new(r, &r->c->core->resources_tool, method, r->log_level);
	if (!call)
		mcpx_mcp_reply_result(r, NULL);
	return call;
}

void mcpx_mcp_resources_list(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	const cJSON *cursor = mcpx_mcp_member(r->params, "cursor");
	struct mcpx_call *call;

	if (!core->resources.list) {
		mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
		return;
	}
	/* One page holds them all: any cursor is one we never gave out. */
	if (cursor && !cJSON_IsNull(cursor)) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
		return;
	}
	call = resource_call(r, "resources/list");
	if (call)
		core->resources.list(core->resources.ctx, call, NULL);
}

void mcpx_mcp_resources_read(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	const cJSON *uri = mcpx_mcp_member(r->params, "uri");
	struct mcpx_call *call;

	if (!core->resources.read) {
		mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
		return;
	}
	if (!cJSON_IsString(uri) || mcpx_json_has_nul(uri)) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_PARAMS,
		                     "Invalid params: resources/read requires a string uri");
		return;
	}
	call = resource_call(r, "resources/read");
	if (call)
		core->resources.read(core->resources.ctx, call, uri->valuestring);
}

void mcpx_mcp_resources_templates(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	const cJSON *cursor = mcpx_mcp_member(r->params, "cursor");
	cJSON *res, *t;

	if (!core->resources.templates) {
		mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
		return;
	}
	if (cursor && !cJSON_IsNull(cursor)) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
		return;
	}
	res = cJSON_CreateObject();
	t = core->resources.templates(core->resources.ctx);
	if (!res || !mcpx_json_add_owned(res, "resourceTemplates", t)) {
		cJSON_Delete(res);
		res = NULL;
	}
	mcpx_mcp_reply_result(r, res);
}
