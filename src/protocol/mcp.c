/*
 * mcp.c - the transport-agnostic MCP protocol core.
 *
 * It takes one inbound message (or one batch) at a time, checks it against
 * JSON-RPC 2.0 and the MCP lifecycle, and answers through the transport's
 * sink: initialize and version negotiation for the session-based ("legacy")
 * revisions 2024-11-05 .. 2025-11-25, per-request _meta for the stateless
 * 2026-07-28 revision, ping, tools/list, tools/call through the tool registry,
 * logging/setLevel, notifications/cancelled and progress. It owns one
 * struct mcpx_call per tools/call in flight, and one struct listener per
 * stream that takes notifications/tools/list_changed (a transport's
 * session-wide stream, or a 2026-07-28 subscriptions/listen request).
 *
 * It does not read or write file descriptors, know about HTTP status codes
 * (it only reports what it saw in struct mcpx_handle_info), run tools (tool.h)
 * or keep state across HTTP requests: a session is whatever the transport
 * hands in. Spec references are to the MCP specification, by version and page.
 *
 * This file holds the core's life, the versions, the method table and the
 * dispatch of messages, batches and notifications, and the session-based
 * lifecycle's own methods; sending is mcp_send.c's, tools/list and
 * tools/call mcp_tools.c's, listeners mcp_listeners.c's, the 2026-07-28
 * checks mcp_stateless.c's (mcp_core.h).
 */
#include "mcp.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp_core.h"
#include "utf8.h"

/* ---- methods ---------------------------------------------------------- */

/* initialize (legacy lifecycle, <= 2025-11-25 basic/lifecycle). */
static void do_initialize(struct req *r)
{
	struct mcpx_session *s = r->c->session;
	const cJSON *pv = mcpx_mcp_member(r->params, "protocolVersion");
	const char *chosen;
	cJSON *res, *caps;

	/* "The initialize request MUST NOT be part of a JSON-RPC batch"
	 * (2025-03-26 basic/lifecycle). */
	if (r->c->batch) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_REQUEST,
		                     "Invalid Request: initialize must not be part of a batch");
		return;
	}
	if (s->initialized) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INVALID_REQUEST,
		                     "Invalid Request: the session is already initialized");
		return;
	}
	if (!cJSON_IsString(pv)) {
		mcpx_mcp_reply_error(
		    r, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: initialize requires a string protocolVersion");
		return;
	}
	/* "If the server supports the requested protocol version, it MUST
	 * respond with the same version. Otherwise, the server MUST respond
	 * with another protocol version it supports. This SHOULD be the latest
	 * version supported by the server." 2026-07-28 is not negotiated this
	 * way, so a client asking for it gets the latest session-based one. */
	chosen =
	    mcpx_mcp_version_stateful(pv->valuestring) ? pv->valuestring : MCPX_PV_LATEST_STATEFUL;

	res = cJSON_CreateObject();
	caps = mcpx_mcp_capabilities(r->c->core);
	if (caps && !mcpx_mcp_tasks_capability(r, chosen, caps)) {
		cJSON_Delete(caps);
		caps = NULL;
	}
	if (!cJSON_AddStringToObject(res, "protocolVersion", chosen) ||
	    !mcpx_json_add_owned(res, "capabilities", caps) ||
	    !mcpx_json_add_owned(res, "serverInfo", mcpx_mcp_server_info(r->c->core)) ||
	    (r->c->core->instructions &&
	     !cJSON_AddStringToObject(res, "instructions", r->c->core->instructions))) {
		cJSON_Delete(res);
		res = NULL;
	}
	if (res) {
		mcpx_utf8_copy_trunc(s->version, sizeof(s->version), chosen);
		s->initialized = true;
		r->c->info->initialized_now = true;
	}
	mcpx_mcp_reply_result(r, res);
}

static void do_set_level(struct req *r)
{
	enum mcpx_level lvl;

	/* "Invalid log level: -32602" (server/utilities/logging). */
	if (mcpx_mcp_parse_level(mcpx_mcp_member(r->params, "level"), &lvl) < 0) {
		mcpx_mcp_reply_error(
		    r, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: level must be one of debug, info, notice, warning, "
		    "error, critical, alert, emergency");
		return;
	}
	r->c->session->log_level = lvl;
	mcpx_mcp_reply_result(r, cJSON_CreateObject());
}

/* ---- dispatch --------------------------------------------------------- */

/* A request under the session-based lifecycle (<= 2025-11-25). */
/* ping: "Either side can ping", also before initialization
 * (basic/lifecycle). */
static void do_ping(struct req *r)
{
	mcpx_mcp_reply_result(r, cJSON_CreateObject());
}

/* The protocol generations a method exists in. */
#define GEN_SESSION 1u   /* the session-based lifecycle, <= 2025-11-25 */
#define GEN_STATELESS 2u /* 2026-07-28: from the request alone */

/*
 * Every method the core answers, and where. ping, logging/setLevel and
 * initialize do not exist in 2026-07-28 (changelog, major changes 2 and 5);
 * server/discover and subscriptions/listen exist only there. A session-based
 * method is served only once the session is initialized unless it says
 * before_init. A new method is one row here.
 */
static const struct method {
	const char *name;
	unsigned gens;
	bool before_init;
	void (*fn)(struct req *r);
} methods[] = {
    {"initialize", GEN_SESSION, true, do_initialize},
    {"ping", GEN_SESSION, true, do_ping},
    {"server/discover", GEN_STATELESS, false, mcpx_mcp_discover},
    {"tools/list", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_tools_list},
    {"tools/call", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_tasks_tools_call},
    {"logging/setLevel", GEN_SESSION, false, do_set_level},
    {"subscriptions/listen", GEN_STATELESS, false, mcpx_mcp_listen},
    {"resources/list", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_resources_list},
    {"resources/read", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_resources_read},
    {"resources/templates/list", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_resources_templates},
    /* MCP tasks (mcp_tasks.c): 2025-11-25's experimental ones and the
     * 2026-07-28 extension's (SEP-2663: no tasks/result, no tasks/list). */
    {"tasks/get", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_tasks_method},
    {"tasks/result", GEN_SESSION, false, mcpx_mcp_tasks_method},
    {"tasks/list", GEN_SESSION, false, mcpx_mcp_tasks_method},
    {"tasks/cancel", GEN_SESSION | GEN_STATELESS, false, mcpx_mcp_tasks_method},
    {"tasks/update", GEN_STATELESS, false, mcpx_mcp_tasks_method},
};

/* The method r names in generation gen, or NULL. */
static const struct method *method_find(const char *name, unsigned gen)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if ((methods[i].gens & gen) && strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

/* A 2026-07-28 request whose _meta has been checked. */
static void handle_stateless_request(struct req *r)
{
	const struct method *m = method_find(r->method, GEN_STATELESS);

	if (m)
		m->fn(r);
	else
		mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
}

/* A request under the session-based lifecycle (<= 2025-11-25). */
static void handle_session_request(struct req *r)
{
	struct mcpx_session *s = r->c->session;
	const struct method *m = method_find(r->method, GEN_SESSION);

	r->log_level = s->log_level;
	if (m && m->before_init) {
		m->fn(r);
		return;
	}
	/* "The client SHOULD NOT send requests other than pings before the
	 * server has responded to the initialize request" (basic/lifecycle). */
	if (!s->initialized) {
		mcpx_mcp_reply_error(
		    r, MCPX_RPC_INVALID_REQUEST,
		    s->allow_stateless
		        ? "Invalid Request: the session is not initialized; send "
		          "initialize first, or use protocol version 2026-07-28 with "
		          "_meta io.modelcontextprotocol/protocolVersion"
		        : "Invalid Request: the session is not initialized; send "
		          "initialize first");
		return;
	}
	if (m)
		m->fn(r);
	else
		mcpx_mcp_reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
}

static void handle_request(struct ctx *c, const cJSON *id, const char *method, const cJSON *params)
{
	struct req r = {.c = c, .id = id, .method = method, .params = params};
	struct mcpx_session *s = c->session;
	const struct mcpx_req_headers *h = c->hdr;
	const cJSON *meta = mcpx_mcp_member(params, "_meta");

	c->info->requests++;
	if (c->batch)
		mcpx_mcp_batch_owe(c->batch);
	else
		c->sink->pending++;
	r.version = s->version;

	if (params && !cJSON_IsObject(params)) {
		mcpx_mcp_reply_error(&r, MCPX_RPC_INVALID_PARAMS,
		                     "Invalid params: params must be an object");
		return;
	}
	if (meta && !cJSON_IsObject(meta)) {
		mcpx_mcp_reply_error(&r, MCPX_RPC_INVALID_PARAMS,
		                     "Invalid params: _meta must be an object");
		return;
	}
	r.meta = meta;

	if (s->allow_stateless &&
	    (mcpx_mcp_member(meta, META_PROTOCOL_VERSION) ||
	     strcmp(method, "server/discover") == 0 ||
	     (h && h->protocol_version && mcpx_version_stateless(h->protocol_version)))) {
		enum mcpx_mcp_verdict v = mcpx_mcp_stateless_check(&r);

		if (v == MCPX_MCP_SERVE)
			handle_stateless_request(&r);
		if (v != MCPX_MCP_LEGACY)
			return;
	}

	/* On HTTP, an MCP-Protocol-Version the server does not speak "MUST"
	 * get 400 (2025-06-18+ transports); the 2026-07-28 error body tells a
	 * modern client which versions to retry with. */
	if (h && h->protocol_version && !mcpx_version_supported(h->protocol_version)) {
		mcpx_mcp_reply_unsupported_version(
		    &r, h->protocol_version_invalid ? "(invalid)" : h->protocol_version);
		return;
	}

	handle_session_request(&r);
}

static void handle_notification(struct ctx *c, const char *method, const cJSON *params)
{
	const cJSON *pv = mcpx_mcp_member(mcpx_mcp_member(params, "_meta"), META_PROTOCOL_VERSION);

	c->info->notifications++;
	if (cJSON_IsString(pv) && mcpx_version_stateless(pv->valuestring))
		c->info->stateless = true;

	/* Notifications are never answered, not even when malformed
	 * ("Invalid cancellation notifications SHOULD be ignored",
	 * basic/utilities/cancellation). */
	if (strcmp(method, "notifications/cancelled") == 0) {
		const cJSON *rid = mcpx_mcp_member(params, "requestId");
		struct mcpx_call *call;
		struct listener *l;

		if (!mcpx_jsonrpc_id_valid(rid))
			return;
		call = mcpx_mcp_call_find(c->core, c->session->key, rid);
		if (call) {
			mcpx_debug("mcp: request %s cancelled by the client", call->id_text);
			mcpx_mcp_call_cancel(call, true);
		} else if ((l = mcpx_mcp_subscription_find(c->core, c->session->key, rid))) {
			/* "send notifications/cancelled referencing the
			 * subscriptions/listen request ID (stdio)". */
			mcpx_mcp_subscription_end(c->core, l, false, true);
		}
	}
	/* notifications/initialized needs no action: a stdio session is usable
	 * once initialize is answered, and HTTP sessions are the transport's.
	 * Anything else is ignored, as JSON-RPC allows for notifications. */
}

static void handle_message(struct ctx *c, const cJSON *msg)
{
	const cJSON *jsonrpc, *method, *id, *params;

	if (!cJSON_IsObject(msg)) {
		mcpx_mcp_emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST,
		                      "Invalid Request: a JSON-RPC message must be an object");
		return;
	}
	jsonrpc = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	params = cJSON_GetObjectItemCaseSensitive(msg, "params");

	if (!cJSON_IsString(jsonrpc) || strcmp(jsonrpc->valuestring, "2.0") != 0) {
		mcpx_mcp_emit_invalid(c, id, MCPX_RPC_INVALID_REQUEST,
		                      "Invalid Request: \"jsonrpc\" must be \"2.0\"");
		return;
	}
	if (!method) {
		/* A response to a request of ours. The server sends none, so
		 * there is nothing to match it with: ignore it. */
		if (id && (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
		           cJSON_GetObjectItemCaseSensitive(msg, "error"))) {
			c->info->responses++;
			return;
		}
		mcpx_mcp_emit_invalid(c, id, MCPX_RPC_INVALID_REQUEST,
		                      "Invalid Request: \"method\" is missing");
		return;
	}
	if (!cJSON_IsString(method)) {
		mcpx_mcp_emit_invalid(c, id, MCPX_RPC_INVALID_REQUEST,
		                      "Invalid Request: \"method\" must be a string");
		return;
	}
	if (!c->info->method[0])
		mcpx_utf8_copy_trunc(c->info->method, sizeof(c->info->method), method->valuestring);
	if (cJSON_IsNull(params))
		params = NULL;

	if (!id) {
		handle_notification(c, method->valuestring, params);
		return;
	}
	/* "Unlike base JSON-RPC, the ID MUST NOT be null" (basic/index). */
	if (!mcpx_jsonrpc_id_valid(id)) {
		mcpx_mcp_emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST,
		                      "Invalid Request: \"id\" must be a string or a number");
		return;
	}
	handle_request(c, id, method->valuestring, params);
}

static void handle_batch(struct ctx *c, const cJSON *arr)
{
	const cJSON *el;
	struct mcpx_session *s = c->session;

	c->info->batch = true;
	/* Batches exist only in 2025-03-26: "Implementations MUST support
	 * receiving JSON-RPC batches" there, and 2025-06-18 removed them. */
	if (!s->initialized || strcmp(s->version, MCPX_PV_2025_03_26) != 0) {
		mcpx_mcp_emit_invalid(
		    c, NULL, MCPX_RPC_INVALID_REQUEST,
		    "Invalid Request: JSON-RPC batches are only supported with protocol "
		    "version 2025-03-26");
		return;
	}
	/* JSON-RPC 2.0: an empty array gets a single Invalid Request error. */
	if (cJSON_GetArraySize(arr) == 0) {
		mcpx_mcp_emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST,
		                      "Invalid Request: empty batch");
		return;
	}
	c->batch = mcpx_mcp_batch_new(c->sink);
	if (!c->batch) {
		mcpx_mcp_emit_invalid(c, NULL, MCPX_RPC_INTERNAL_ERROR,
		                      "Internal error: out of memory");
		return;
	}
	cJSON_ArrayForEach(el, arr) handle_message(c, el);
	/* Answered now unless a tool call is still running. */
	c->batch->sealed = true;
	mcpx_mcp_batch_settle(c->batch);
	c->batch = NULL;
}

void mcpx_core_handle_http(struct mcpx_core *core, struct mcpx_session *session,
                           struct mcpx_sink *sink, const char *msg, size_t len,
                           const struct mcpx_req_headers *hdr, struct mcpx_handle_info *info)
{
	struct ctx c = {.core = core, .session = session, .sink = sink, .hdr = hdr, .info = info};
	const char *why = NULL;
	cJSON *root;

	memset(info, 0, sizeof(*info));
	root = mcpx_jsonrpc_parse(msg, len, &why);
	if (!root) {
		/* The message was unreadable, so the id is unknown: null. */
		mcpx_mcp_emit_invalid(&c, NULL, MCPX_RPC_PARSE_ERROR, why);
		return;
	}
	if (cJSON_IsArray(root))
		handle_batch(&c, root);
	else
		handle_message(&c, root);
	cJSON_Delete(root);
}

void mcpx_core_handle(struct mcpx_core *core, struct mcpx_session *session, struct mcpx_sink *sink,
                      const char *msg, size_t len, struct mcpx_handle_info *info)
{
	mcpx_core_handle_http(core, session, sink, msg, len, NULL, info);
}

void mcpx_core_sink_gone(struct mcpx_core *core, struct mcpx_sink *sink)
{
	struct mcpx_call *call = core->calls, *next;

	sink->gone = true;
	mcpx_mcp_drop_listeners(core, sink);
	/* A cancelled request of the tasks module may end another call (the
	 * run of a task that was still its request's), so the walk starts
	 * over after each cancel. */
	for (; call; call = next) {
		next = call->next;
		if (call->sink == sink) {
			mcpx_mcp_call_cancel(call, false);
			next = core->calls;
		}
	}
}

size_t mcpx_core_inflight(const struct mcpx_core *core)
{
	return core->ncalls;
}

/* A resources/list or resources/read cancelled: the provider is told. */
static void resources_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	const struct mcpx_core *core = tool->ctx;

	if (core->resources.cancel)
		core->resources.cancel(core->resources.ctx, call);
}

struct mcpx_core *mcpx_core_new(const struct mcpx_core_opts *opts)
{
	struct mcpx_core *core = calloc(1, sizeof(*core));

	if (!core)
		return NULL;
	core->server_name = strdup(opts->server_name ? opts->server_name : "mcp-exec");
	core->server_version = strdup(opts->server_version ? opts->server_version : "0");
	if (opts->instructions)
		core->instructions = strdup(opts->instructions);
	if (opts->provider)
		core->provider = *opts->provider;
	if (opts->access)
		core->access = *opts->access;
	if (opts->resources) {
		core->resources = *opts->resources;
		core->resources_tool.name = "resources";
		core->resources_tool.cancel = resources_cancel;
		core->resources_tool.ctx = core;
	}
	core->tools_list_changed = opts->tools_list_changed;
	if (opts->tasks)
		core->tasks = *opts->tasks;
	if (opts->ntools) {
		core->tools = calloc(opts->ntools, sizeof(*core->tools));
		if (core->tools) {
			memcpy(core->tools, opts->tools, opts->ntools * sizeof(*core->tools));
			core->ntools = opts->ntools;
		}
	}
	if (!core->server_name || !core->server_version ||
	    (opts->instructions && !core->instructions) || (opts->ntools && !core->tools)) {
		mcpx_core_free(core);
		return NULL;
	}
	return core;
}

void mcpx_core_cancel_all(struct mcpx_core *core)
{
	/* Told nothing: the sinks are about to go away with the process. */
	while (core->calls)
		mcpx_mcp_call_cancel(core->calls, false);
	mcpx_mcp_drop_listeners(core, NULL);
}

void mcpx_core_free(struct mcpx_core *core)
{
	if (!core)
		return;
	mcpx_core_cancel_all(core);
	free(core->server_name);
	free(core->server_version);
	free(core->instructions);
	free(core->tools);
	free(core);
}
