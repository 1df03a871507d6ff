/*
 * mcp_stateless.c - the 2026-07-28 protocol generation: a request served from
 * itself alone, its _meta (protocol version, client capabilities, log level)
 * and the transport's headers checked in the order the spec ranks their
 * errors, UnsupportedProtocolVersionError, and its own methods:
 * server/discover and subscriptions/listen.
 *
 * Which method it then runs is the method table's (mcp.c).
 */
#include <string.h>

#include "jsonrpc.h"
#include "mcp_core.h"

/* server/discover (2026-07-28 server/discover). */
void mcpx_mcp_discover(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	const char *const *all;
	int n = (int)mcpx_versions(&all);
	cJSON *res = cJSON_CreateObject();
	cJSON *versions = cJSON_CreateStringArray(all, n), *caps;

	if (!mcpx_json_add_owned(res, "supportedVersions", versions))
		goto oom;
	caps = mcpx_mcp_capabilities(core);
	if (caps && !mcpx_mcp_tasks_extension(core, caps)) {
		cJSON_Delete(caps);
		caps = NULL;
	}
	if (!mcpx_json_add_owned(res, "capabilities", caps) ||
	    (core->instructions &&
	     !cJSON_AddStringToObject(res, "instructions", core->instructions)) ||
	    !cJSON_AddNumberToObject(res, "ttlMs", CACHE_TTL_MS) ||
	    !cJSON_AddStringToObject(res, "cacheScope", "public"))
		goto oom;
	mcpx_mcp_reply_result(r, res);
	return;
oom:
	cJSON_Delete(res);
	mcpx_mcp_reply_result(r, NULL);
}

/* ---- 2026-07-28 requests ------------------------------------------------- */

void mcpx_mcp_reply_unsupported_version(struct req *r, const char *requested)
{
	/* UnsupportedProtocolVersionError (schema; basic/versioning "Protocol
	 * Version Negotiation"): code -32022, data {supported, requested}; on
	 * HTTP "the response status code MUST be 400 Bad Request". */
	const char *const *all;
	int n = (int)mcpx_versions(&all);
	cJSON *data = cJSON_CreateObject();
	cJSON *sup = cJSON_CreateStringArray(all, n);

	if (!mcpx_json_add_owned(data, "supported", sup)) {
		cJSON_Delete(data);
		data = NULL;
	} else if (!cJSON_AddStringToObject(data, "requested", requested)) {
		cJSON_Delete(data);
		data = NULL;
	}
	mcpx_mcp_reply_error_data(r, MCPX_RPC_UNSUPPORTED_PROTOCOL_VERSION,
	                          "Unsupported protocol version", data, 400);
}

/* The rest of a 2026-07-28 request's _meta: the client's capabilities and
 * an optional log level (into *lvl). Replies and returns true when invalid. */
static bool stateless_meta_invalid(struct req *r, enum mcpx_level *lvl)
{
	const cJSON *level = mcpx_mcp_member(r->meta, META_LOG_LEVEL);

	if (!cJSON_IsObject(mcpx_mcp_member(r->meta, META_CLIENT_CAPS))) {
		mcpx_mcp_reply_error_data(
		    r, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: _meta io.modelcontextprotocol/clientCapabilities "
		    "(an object) is required",
		    NULL, 400);
		return true;
	}
	/* "If the io.modelcontextprotocol/logLevel value ... is not a recognized
	 * log level, the server SHOULD reject that request" with -32602
	 * (server/utilities/logging, "Error Handling"). */
	if (level && mcpx_mcp_parse_level(level, lvl) < 0) {
		mcpx_mcp_reply_error_data(
		    r, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: _meta io.modelcontextprotocol/logLevel is not a "
		    "log level",
		    NULL, 400);
		return true;
	}
	return false;
}

/* A request that declared a 2026-07-28 protocol version (or is
 * server/discover): validated and served statelessly, from the request
 * alone ("Servers MUST NOT rely on prior requests over the same connection",
 * basic/index "Statelessness"): its _meta and the transport's headers
 * checked. Returns MCPX_MCP_SERVE with the request's version and log level
 * set, MCPX_MCP_ANSWERED once it has replied with an error, or
 * MCPX_MCP_LEGACY when the request belongs to a legacy session after all. */
enum mcpx_mcp_verdict mcpx_mcp_stateless_check(struct req *r)
{
	const cJSON *pv = mcpx_mcp_member(r->meta, META_PROTOCOL_VERSION);
	const struct mcpx_req_headers *h = r->c->hdr;
	const char *mismatch;

	r->stateless = true;
	r->c->info->stateless = true;
	r->log_level = MCPX_LEVEL_OFF;

	/* "A request missing any required field is malformed; the server MUST
	 * reject it with JSON-RPC error code -32602 ... On HTTP, the response
	 * status MUST be 400" (basic/index, per-request protocol fields). */
	if (!cJSON_IsString(pv)) {
		mcpx_mcp_reply_error_data(
		    r, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: _meta io.modelcontextprotocol/protocolVersion "
		    "(a string) is required",
		    NULL, 400);
		return MCPX_MCP_ANSWERED;
	}
	/* A session-based version in _meta makes this a legacy request with
	 * extra metadata (served by the session, or told to initialize first),
	 * unless the HTTP header says it is a 2026-07-28 one. */
	if (mcpx_mcp_version_stateful(pv->valuestring) &&
	    !(h && h->protocol_version && mcpx_version_stateless(h->protocol_version))) {
		r->stateless = false;
		r->c->info->stateless = false;
		return MCPX_MCP_LEGACY;
	}
	if (r->c->batch) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_REQUEST,
		                     "Invalid Request: protocol version 2026-07-28 has no batches");
		return MCPX_MCP_ANSWERED;
	}
	/* The transport's headers against the body (streamable_headers.c). */
	if (h && h->mismatch &&
	    (mismatch = h->mismatch(h, pv->valuestring, r->method, r->params))) {
		mcpx_mcp_reply_error_data(r, MCPX_RPC_HEADER_MISMATCH, mismatch, NULL, 400);
		return MCPX_MCP_ANSWERED;
	}
	/* "If the server does not implement the requested version ... it MUST
	 * respond with an UnsupportedProtocolVersionError" (basic/versioning). */
	if (!mcpx_version_supported(pv->valuestring) || !mcpx_version_stateless(pv->valuestring)) {
		mcpx_mcp_reply_unsupported_version(r, pv->valuestring);
		return MCPX_MCP_ANSWERED;
	}
	r->version = pv->valuestring;
	if (stateless_meta_invalid(r, &r->log_level))
		return MCPX_MCP_ANSWERED;
	return MCPX_MCP_SERVE;
}

/* subscriptions/listen (2026-07-28 basic/patterns/subscriptions): the
 * acknowledgement names the subset of the filter this server honours
 * (toolsListChanged, when its tool list can change), then the request
 * stays open until it ends. */
void mcpx_mcp_listen(struct req *r)
{
	struct ctx *c = r->c;
	const cJSON *filter = mcpx_mcp_member(r->params, "notifications");
	const cJSON *tools = mcpx_mcp_member(filter, "toolsListChanged");
	struct listener *l;
	cJSON *params, *ack;

	if (!cJSON_IsObject(filter) || (tools && !cJSON_IsBool(tools))) {
		mcpx_mcp_reply_error(
		    r, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: subscriptions/listen needs a notifications object "
		    "(toolsListChanged a boolean)");
		return;
	}
	if (mcpx_mcp_id_in_use(r))
		return;
	l = mcpx_mcp_listener_add(c->core, c->sink);
	if (!l || !(l->sub_id = cJSON_Duplicate(r->id, true))) {
		if (l) {
			mcpx_mcp_listener_unlink(c->core, l);
			mcpx_mcp_listener_free(l);
		}
		mcpx_mcp_reply_result(r, NULL);
		return;
	}
	mcpx_utf8_copy_trunc(l->key, sizeof(l->key), c->session->key);
	l->tools = cJSON_IsTrue(tools) && c->core->tools_list_changed;
	/* The request's pending unit is now the subscription's. */
	params = cJSON_CreateObject();
	ack = cJSON_AddObjectToObject(params, "notifications");
	if (!ack || (l->tools && !cJSON_AddTrueToObject(ack, "toolsListChanged")) ||
	    !mcpx_json_add_owned(params, "_meta", mcpx_mcp_subscription_meta(l))) {
		cJSON_Delete(params);
		mcpx_mcp_listener_unlink(c->core, l);
		mcpx_mcp_listener_free(l);
		mcpx_mcp_reply_error(r, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	mcpx_mcp_emit(c->sink,
	              mcpx_jsonrpc_notification("notifications/subscriptions/acknowledged", params),
	              false);
}
