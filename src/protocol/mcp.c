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
#include "tool.h"
#include "utf8.h"

/* 2026-07-28 reserved _meta keys (basic/index, "Per-request protocol fields"). */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* Cache hints for tools/list and server/discover (2026-07-28
 * server/utilities/caching: "Servers MUST include caching hints"). The tool
 * list is the same for every caller, hence public; it changes with a
 * restart or a new policy file (which listeners hear of at once: the hint
 * and notifications/tools/list_changed are "complementary"); five minutes
 * bounds how long a client that does not listen keeps an old one. */
#define CACHE_TTL_MS 300000

/* Every version this server speaks, newest first, as listed in
 * server/discover's supportedVersions and UnsupportedProtocolVersionError's
 * data.supported (2026-07-28 basic/versioning). */
static const char *const all_versions[] = {
    MCPX_PV_2026_07_28, MCPX_PV_2025_11_25, MCPX_PV_2025_06_18,
    MCPX_PV_2025_03_26, MCPX_PV_2024_11_05,
};
#define NVERSIONS (sizeof(all_versions) / sizeof(all_versions[0]))

static const char *const level_names[] = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

struct listener;

struct mcpx_core {
	char *server_name;
	char *server_version;
	char *instructions; /* NULL when none */
	struct mcpx_tool **tools;
	size_t ntools;
	struct mcpx_tool_provider provider; /* list == NULL: none */
	struct mcpx_tool_access access;     /* allowed == NULL: every tool */
	bool tools_list_changed;
	struct mcpx_call *calls; /* in flight, newest first */
	size_t ncalls;
	struct listener *listeners;
};

/*
 * A stream that takes notifications/tools/list_changed. A session-wide one
 * (sub_id NULL) belongs to its transport and is told once its session is
 * initialized. A subscription is a 2026-07-28 subscriptions/listen request:
 * it stays unanswered (holding one unit of its sink's pending count, so an
 * HTTP response stream stays open) until the client cancels it, its sink
 * goes, or the server ends it with its completion result.
 */
struct listener {
	struct listener *next;
	struct mcpx_sink *sink;
	const struct mcpx_session *session; /* NULL: initialized from the start */
	cJSON *sub_id;                      /* the request id, or NULL */
	char key[160];                      /* the session key, for cancellation */
	bool tools;                         /* subscribed to toolsListChanged */
};

enum call_state { CALL_RUNNING, CALL_CANCELLING };

struct mcpx_call {
	struct mcpx_core *core;
	struct mcpx_call *prev, *next;
	struct mcpx_sink *sink;
	struct batch *batch; /* the batch the request came in, or NULL */
	const struct mcpx_tool *tool;
	enum call_state state;
	cJSON *id;             /* copy of the request id */
	cJSON *progress_token; /* copy of _meta.progressToken, or NULL */
	double last_progress;
	bool progress_sent;
	enum mcpx_level log_level; /* MCPX_LEVEL_OFF: no notifications/message */
	bool stateless;            /* results carry resultType and _meta */
	char version[16];
	/* Copied from the session: an HTTP session struct lives only as long as
	 * the POST that carried the request, the call may outlive it. */
	char key[160];
	char caller[MCPX_CALLER_MAX];
	char client[160];
	char id_text[128];
	char name[129]; /* the tool name called */
	void *data;
};

/*
 * A JSON-RPC batch being answered (only 2025-03-26 has them). Its responses
 * are collected into one array, sent when the last request in it is
 * answered, tool calls included: "the Server should respond with an Array
 * containing the corresponding Response objects" and none for notifications
 * (JSON-RPC 2.0, section 6). While requests are owed it holds one unit of
 * the sink's pending count, so an HTTP POST stays open exactly as for a
 * single request. Notifications the calls send (progress, log messages) go
 * to the sink at once. Freed once every element has been handled and
 * nothing is owed; a call in flight keeps it alive.
 */
struct batch {
	struct mcpx_sink *sink;
	struct mcpx_buf out; /* "[" and the responses so far, comma-separated */
	unsigned owed;       /* requests of the batch not answered yet */
	bool holds_pending;  /* counted once in sink->pending */
	bool sealed;         /* every element has been handled */
	bool failed;         /* a response could not be added: one error instead */
	bool silent;         /* shutting down: settle without sending anything */
};

static struct listener *subscription_find(struct mcpx_core *core, const char *key, const cJSON *id);

/* Everything about the message being handled. */
struct ctx {
	struct mcpx_core *core;
	struct mcpx_session *session;
	struct mcpx_sink *sink;
	const struct mcpx_req_headers *hdr;
	struct mcpx_handle_info *info;
	struct batch *batch; /* NULL unless the message is a batch */
};

/* One request being answered. */
struct req {
	struct ctx *c;
	const cJSON *id;
	const char *method;
	const cJSON *params; /* object or NULL */
	const cJSON *meta;   /* params._meta object or NULL */
	bool stateless;
	const char *version; /* the version this request is served under */
};

bool mcpx_version_supported(const char *v)
{
	if (!v)
		return false;
	for (size_t i = 0; i < NVERSIONS; i++)
		if (strcmp(v, all_versions[i]) == 0)
			return true;
	return false;
}

size_t mcpx_versions(const char *const **list)
{
	*list = all_versions;
	return NVERSIONS;
}

/* True for "YYYY-MM-DD"; protocol versions are dates, which is what makes
 * "2026-07-28 and later" a string comparison. */
static bool is_date(const char *v)
{
	if (strlen(v) != 10 || v[4] != '-' || v[7] != '-')
		return false;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return false;
	return true;
}

bool mcpx_version_stateless(const char *v)
{
	return v && is_date(v) && strcmp(v, MCPX_PV_2026_07_28) >= 0;
}

/* Versions negotiated with initialize. */
static bool version_stateful(const char *v)
{
	return mcpx_version_supported(v) && !mcpx_version_stateless(v);
}

static int parse_level(const cJSON *item, enum mcpx_level *out)
{
	if (!cJSON_IsString(item))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(item->valuestring, level_names[i]) == 0) {
			*out = (enum mcpx_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const cJSON *member(const cJSON *obj, const char *name)
{
	return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

/* ---- sending ---------------------------------------------------------- */

/* Prints msg into out and frees it. Returns 0 or a negative errno (logged:
 * only memory exhaustion or a reply past MCPX_JSONRPC_MAX_MESSAGE). */
static int print_owned(cJSON *msg, struct mcpx_buf *out)
{
	int rc = msg ? mcpx_jsonrpc_print(msg, out) : -ENOMEM;

	cJSON_Delete(msg);
	if (rc < 0)
		mcpx_error("mcp: cannot build a message (%s); dropped",
		           rc == -E2BIG ? "larger than MCPX_JSONRPC_MAX_MESSAGE" : strerror(-rc));
	return rc;
}

/* Prints and sends one message; takes ownership of msg. */
static void emit(struct mcpx_sink *sink, cJSON *msg, bool response)
{
	struct mcpx_buf out;

	mcpx_buf_init(&out, MCPX_JSONRPC_MAX_MESSAGE);
	if (print_owned(msg, &out) == 0 && !sink->gone)
		sink->send(sink, out.data, out.len, response);
	mcpx_buf_free(&out);
}

static struct batch *batch_new(struct mcpx_sink *sink)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (b) {
		b->sink = sink;
		mcpx_buf_init(&b->out, MCPX_JSONRPC_MAX_MESSAGE);
	}
	return b;
}

/* A request of the batch is now owed a response. */
static void batch_owe(struct batch *b)
{
	if (!b->holds_pending) {
		b->holds_pending = true;
		b->sink->pending++;
	}
	b->owed++;
}

/* Sends the array once nothing is owed any more, then frees the batch. A
 * batch whose requests were all cancelled sends nothing and tells the sink
 * it will stay unanswered, like a single cancelled request. */
static void batch_settle(struct batch *b)
{
	struct mcpx_sink *sink = b->sink;

	if (!b->sealed || b->owed)
		return;
	if (b->holds_pending && sink->pending > 0)
		sink->pending--;
	if (b->out.len && !b->failed && mcpx_buf_add(&b->out, "]", 1) < 0)
		b->failed = true;
	if (b->silent || sink->gone)
		; /* nobody to tell */
	else if (b->failed)
		emit(sink, mcpx_jsonrpc_error(NULL, MCPX_RPC_INTERNAL_ERROR,
		                              "Internal error: the batch reply could not be built",
		                              NULL),
		     true);
	else if (b->out.len)
		sink->send(sink, b->out.data, b->out.len, true);
	else if (b->holds_pending && sink->unanswered)
		sink->unanswered(sink);
	mcpx_buf_free(&b->out);
	free(b);
}

/* Adds one response (ownership passes); `owed` when it answers a request
 * counted with batch_owe. */
static void batch_add(struct batch *b, cJSON *msg, bool owed)
{
	if (owed && b->owed > 0)
		b->owed--;
	if (b->failed || mcpx_buf_add(&b->out, b->out.len ? "," : "[", 1) < 0) {
		b->failed = true;
		cJSON_Delete(msg);
	} else if (print_owned(msg, &b->out) < 0) {
		b->failed = true; /* the partial text is never sent */
	}
	batch_settle(b);
}

/* Sends a response to a request that was counted in sink->pending (or in
 * its batch). */
static void emit_response(struct mcpx_sink *sink, struct batch *b, cJSON *msg)
{
	if (b) {
		batch_add(b, msg, true);
		return;
	}
	if (sink->pending > 0)
		sink->pending--;
	emit(sink, msg, true);
}

/* An error for a message that is not a request we counted (parse errors,
 * invalid requests): it does not touch pending. */
static void emit_invalid(struct ctx *c, const cJSON *id, int code, const char *msg)
{
	cJSON *err = mcpx_jsonrpc_error(mcpx_jsonrpc_id_valid(id) ? id : NULL, code, msg, NULL);

	if (code == MCPX_RPC_PARSE_ERROR)
		c->info->parse_error = true;
	else
		c->info->invalid = true;
	if (c->batch) {
		batch_add(c->batch, err, false);
		return;
	}
	c->info->error_code = code;
	emit(c->sink, err, true);
}

static void reply_error_data(struct req *r, int code, const char *msg, cJSON *data,
                             unsigned http_status)
{
	if (!r->c->batch) {
		r->c->info->error_code = code;
		r->c->info->http_status = http_status;
	}
	emit_response(r->c->sink, r->c->batch, mcpx_jsonrpc_error(r->id, code, msg, data));
}

static void reply_error(struct req *r, int code, const char *msg)
{
	/* A 2026-07-28 server "MUST respond with 404 Not Found and a JSON-RPC
	 * error with code -32601" for an RPC it does not implement
	 * (transports/streamable-http, "Protocol Version Header"). */
	unsigned status = r->stateless && code == MCPX_RPC_METHOD_NOT_FOUND ? 404 : 0;
	reply_error_data(r, code, msg, NULL, status);
}

static cJSON *server_info(const struct mcpx_core *core)
{
	cJSON *o = cJSON_CreateObject();
	if (!cJSON_AddStringToObject(o, "name", core->server_name) ||
	    !cJSON_AddStringToObject(o, "version", core->server_version)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/*
 * Adds what every 2026-07-28 result carries: "resultType" (basic/index,
 * "Result Responses": "The result MUST include a resultType field"; our
 * results are all final, so "complete") and _meta serverInfo ("Servers
 * SHOULD include ... io.modelcontextprotocol/serverInfo in every result's
 * _meta"). Returns false when out of memory.
 */
static bool decorate_stateless(const struct mcpx_core *core, cJSON *result)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");

	if (!cJSON_GetObjectItemCaseSensitive(result, "resultType") &&
	    !cJSON_AddStringToObject(result, "resultType", "complete"))
		return false;
	if (!meta) {
		meta = cJSON_AddObjectToObject(result, "_meta");
		if (!meta)
			return false;
	}
	if (!cJSON_IsObject(meta) || cJSON_GetObjectItemCaseSensitive(meta, META_SERVER_INFO))
		return true;
	return mcpx_json_add_owned(meta, META_SERVER_INFO, server_info(core));
}

/* Sends a result (ownership passes); NULL means we ran out of memory. */
static void reply_result(struct req *r, cJSON *result)
{
	if (result && r->stateless && !decorate_stateless(r->c->core, result)) {
		cJSON_Delete(result);
		result = NULL;
	}
	if (!result) {
		reply_error(r, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	emit_response(r->c->sink, r->c->batch, mcpx_jsonrpc_result(r->id, result));
}

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
static void call_cancel(struct mcpx_call *call, bool tell_sink)
{
	struct mcpx_sink *sink = call->sink;

	call_unlink(call);
	/* The state guards against a tool that calls mcpx_call_finish from
	 * inside its cancel callback: tool.h forbids it, and we would otherwise
	 * answer a request the client has given up on. */
	call->state = CALL_CANCELLING;
	if (call->tool->cancel)
		call->tool->cancel(call->tool, call);
	if (call->batch) {
		/* The batch's other responses still go out together. */
		call->batch->silent |= !tell_sink;
		call->batch->owed--;
		batch_settle(call->batch);
	} else {
		if (sink->pending > 0)
			sink->pending--;
		if (tell_sink && !sink->gone && sink->unanswered)
			sink->unanswered(sink);
	}
	call_free(call);
}

static struct mcpx_call *call_find(struct mcpx_core *core, const char *key, const cJSON *id)
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
	if (result && call->stateless && !decorate_stateless(call->core, result)) {
		cJSON_Delete(result);
		result = NULL;
	}
	if (result)
		msg = mcpx_jsonrpc_result(call->id, result);
	else
		msg = mcpx_jsonrpc_error(call->id, MCPX_RPC_INTERNAL_ERROR,
		                         "Internal error: the tool produced no result", NULL);
	emit_response(sink, call->batch, msg);
	call_free(call);
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
	if (!cJSON_AddStringToObject(params, "level", level_names[level]) ||
	    !cJSON_AddStringToObject(params, "logger", call->name) ||
	    !cJSON_AddStringToObject(params, "data", valid_text(msg, &copy))) {
		cJSON_Delete(params);
		params = NULL;
	}
	free(copy);
	if (params)
		emit(call->sink, mcpx_jsonrpc_notification("notifications/message", params), false);
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
	ok = mcpx_json_add_owned(params, "progressToken", cJSON_Duplicate(call->progress_token, true)) &&
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
	emit(call->sink, mcpx_jsonrpc_notification("notifications/progress", params), false);
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

/* ---- methods ---------------------------------------------------------- */

static cJSON *capabilities(const struct mcpx_core *core)
{
	/* listChanged: with a policy file the tools (its functions, exec's
	 * description) change when it does, and listeners are told; without
	 * one the list never changes. logging is declared because tools/call
	 * relays queue and start events as notifications/message ("Servers
	 * that emit log message notifications MUST declare the logging
	 * capability"). */
	cJSON *caps = cJSON_CreateObject();
	cJSON *tools = cJSON_AddObjectToObject(caps, "tools");

	if (!tools || !cJSON_AddBoolToObject(tools, "listChanged", core->tools_list_changed) ||
	    !cJSON_AddObjectToObject(caps, "logging")) {
		cJSON_Delete(caps);
		return NULL;
	}
	return caps;
}

/* initialize (legacy lifecycle, <= 2025-11-25 basic/lifecycle). */
static void do_initialize(struct req *r)
{
	struct mcpx_session *s = r->c->session;
	const cJSON *pv = member(r->params, "protocolVersion");
	const char *chosen;
	cJSON *res;

	/* "The initialize request MUST NOT be part of a JSON-RPC batch"
	 * (2025-03-26 basic/lifecycle). */
	if (r->c->batch) {
		reply_error(r, MCPX_RPC_INVALID_REQUEST,
		            "Invalid Request: initialize must not be part of a batch");
		return;
	}
	if (s->initialized) {
		reply_error(r, MCPX_RPC_INVALID_REQUEST,
		            "Invalid Request: the session is already initialized");
		return;
	}
	if (!cJSON_IsString(pv)) {
		reply_error(r, MCPX_RPC_INVALID_PARAMS,
		            "Invalid params: initialize requires a string protocolVersion");
		return;
	}
	/* "If the server supports the requested protocol version, it MUST
	 * respond with the same version. Otherwise, the server MUST respond
	 * with another protocol version it supports. This SHOULD be the latest
	 * version supported by the server." 2026-07-28 is not negotiated this
	 * way, so a client asking for it gets the latest session-based one. */
	chosen = version_stateful(pv->valuestring) ? pv->valuestring : MCPX_PV_LATEST_STATEFUL;

	res = cJSON_CreateObject();
	if (!cJSON_AddStringToObject(res, "protocolVersion", chosen) ||
	    !mcpx_json_add_owned(res, "capabilities", capabilities(r->c->core)) ||
	    !mcpx_json_add_owned(res, "serverInfo", server_info(r->c->core)) ||
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
	reply_result(r, res);
}

/* server/discover (2026-07-28 server/discover). */
static void do_discover(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	cJSON *res = cJSON_CreateObject();
	cJSON *versions = cJSON_CreateStringArray(all_versions, (int)NVERSIONS);

	if (!mcpx_json_add_owned(res, "supportedVersions", versions))
		goto oom;
	if (!mcpx_json_add_owned(res, "capabilities", capabilities(core)) ||
	    (core->instructions &&
	     !cJSON_AddStringToObject(res, "instructions", core->instructions)) ||
	    !cJSON_AddNumberToObject(res, "ttlMs", CACHE_TTL_MS) ||
	    !cJSON_AddStringToObject(res, "cacheScope", "public"))
		goto oom;
	reply_result(r, res);
	return;
oom:
	cJSON_Delete(res);
	reply_result(r, NULL);
}

static bool tool_allowed(const struct mcpx_core *core, const char *caller, const char *name)
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

		if (!cJSON_IsString(name) || !tool_allowed(core, caller, name->valuestring))
			cJSON_Delete(cJSON_DetachItemViaPointer(tools, t));
		t = next;
	}
}

static void do_tools_list(struct req *r)
{
	const struct mcpx_core *core = r->c->core;
	const cJSON *cursor = member(r->params, "cursor");
	bool per_caller = core->access.per_caller && core->access.per_caller(core->access.ctx);
	cJSON *res, *tools;

	/* We never hand out a cursor (one page holds every tool), so any cursor
	 * is one we do not know: "Invalid cursors SHOULD result in an error with
	 * code -32602" (server/utilities/pagination). */
	if (cursor && !cJSON_IsNull(cursor)) {
		reply_error(r, MCPX_RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
		return;
	}
	res = cJSON_CreateObject();
	tools = cJSON_AddArrayToObject(res, "tools");
	if (!tools)
		goto oom;
	for (size_t i = 0; i < core->ntools; i++) {
		const struct mcpx_tool *tl = core->tools[i];
		cJSON *t = tl->describe_for ? tl->describe_for(tl, r->c->session->caller)
		                            : tl->describe(tl);
		if (!t || !cJSON_AddItemToArray(tools, t)) {
			cJSON_Delete(t);
			goto oom;
		}
	}
	if (core->provider.list && core->provider.list(core->provider.ctx, tools) < 0)
		goto oom;
	filter_tools(core, r->c->session->caller, tools);
	/* With profiles each caller sees its own list: a shared cache must
	 * not hand one caller's list to another. */
	if (r->stateless &&
	    (!cJSON_AddNumberToObject(res, "ttlMs", CACHE_TTL_MS) ||
	     !cJSON_AddStringToObject(res, "cacheScope", per_caller ? "private" : "public")))
		goto oom;
	reply_result(r, res);
	return;
oom:
	cJSON_Delete(res);
	reply_result(r, NULL);
}

static void do_set_level(struct req *r)
{
	enum mcpx_level lvl;

	/* "Invalid log level: -32602" (server/utilities/logging). */
	if (parse_level(member(r->params, "level"), &lvl) < 0) {
		reply_error(r, MCPX_RPC_INVALID_PARAMS,
		            "Invalid params: level must be one of debug, info, notice, warning, "
		            "error, critical, alert, emergency");
		return;
	}
	r->c->session->log_level = lvl;
	reply_result(r, cJSON_CreateObject());
}

static const struct mcpx_tool *find_tool(const struct mcpx_core *core, const char *name)
{
	for (size_t i = 0; i < core->ntools; i++)
		if (strcmp(core->tools[i]->name, name) == 0)
			return core->tools[i];
	return core->provider.find ? core->provider.find(core->provider.ctx, name) : NULL;
}

/* A new call for request r, linked into the core's list; NULL when out of
 * memory. */
static struct mcpx_call *call_new(struct req *r, const struct mcpx_tool *tool, const char *name,
                                  enum mcpx_level log_level)
{
	struct ctx *c = r->c;
	const cJSON *token = member(r->meta, "progressToken");
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

	call->next = c->core->calls;
	if (call->next)
		call->next->prev = call;
	c->core->calls = call;
	c->core->ncalls++;
	return call;
}

static void do_tools_call(struct req *r, enum mcpx_level log_level)
{
	struct ctx *c = r->c;
	const cJSON *name = member(r->params, "name");
	const cJSON *args = member(r->params, "arguments");
	const struct mcpx_tool *tool;
	struct mcpx_call *call;

	if (!cJSON_IsString(name)) {
		reply_error(r, MCPX_RPC_INVALID_PARAMS,
		            "Invalid params: tools/call requires a string name");
		return;
	}
	tool = find_tool(c->core, name->valuestring);
	/* A tool the caller's profile leaves out does not exist for it. */
	if (tool && !tool_allowed(c->core, c->session->caller, name->valuestring))
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
		reply_error(r, MCPX_RPC_INVALID_PARAMS, msg);
		return;
	}
	/* An id is unique among a sender's requests in flight (basic/index,
	 * "Requests"); a reused one would make cancellation ambiguous. */
	if (call_find(c->core, c->session->key, r->id) ||
	    subscription_find(c->core, c->session->key, r->id)) {
		reply_error(r, MCPX_RPC_INVALID_REQUEST,
		            "Invalid Request: a request with this id is still in progress");
		return;
	}
	call = call_new(r, tool, name->valuestring, log_level);
	if (!call) {
		reply_result(r, NULL);
		return;
	}
	/* The call may finish (and be freed) inside tool->call; nothing here
	 * touches it afterwards. JSON null arguments count as absent. */
	tool->call(tool, call, cJSON_IsNull(args) ? NULL : args);
}

/* ---- listeners: notifications/tools/list_changed ----------------------- */

static struct listener *listener_add(struct mcpx_core *core, struct mcpx_sink *sink)
{
	struct listener *l = calloc(1, sizeof(*l));

	if (l) {
		l->sink = sink;
		l->next = core->listeners;
		core->listeners = l;
	}
	return l;
}

static void listener_unlink(struct mcpx_core *core, struct listener *l)
{
	for (struct listener **pp = &core->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			return;
		}
	}
}

static void listener_free(struct listener *l)
{
	cJSON_Delete(l->sub_id);
	free(l);
}

int mcpx_core_listen(struct mcpx_core *core, struct mcpx_sink *sink,
                     const struct mcpx_session *session)
{
	struct listener *l = listener_add(core, sink);

	if (!l)
		return -ENOMEM;
	l->session = session;
	l->tools = true;
	return 0;
}

static struct listener *subscription_find(struct mcpx_core *core, const char *key, const cJSON *id)
{
	for (struct listener *l = core->listeners; l; l = l->next)
		if (l->sub_id && strcmp(l->key, key) == 0 && mcpx_jsonrpc_id_equal(l->sub_id, id))
			return l;
	return NULL;
}

/* _meta naming the subscription, as every message on its stream carries
 * (basic/patterns/subscriptions, "Receiving Notifications"). */
static cJSON *subscription_meta(const struct listener *l)
{
	cJSON *meta = cJSON_CreateObject();

	if (!mcpx_json_add_owned(meta, META_SUBSCRIPTION_ID, cJSON_Duplicate(l->sub_id, true))) {
		cJSON_Delete(meta);
		return NULL;
	}
	return meta;
}

/* Ends a subscription. graceful: with its completion result ("the server
 * SHOULD respond to the original subscriptions/listen request with a
 * completion result before closing the stream"); otherwise it stays
 * unanswered, and the sink hears so when tell_sink. */
static void subscription_end(struct mcpx_core *core, struct listener *l, bool graceful,
                             bool tell_sink)
{
	struct mcpx_sink *sink = l->sink;
	cJSON *res = NULL;

	listener_unlink(core, l);
	if (graceful && !sink->gone) {
		res = cJSON_CreateObject();
		if (!mcpx_json_add_owned(res, "_meta", subscription_meta(l)) ||
		    !decorate_stateless(core, res)) {
			cJSON_Delete(res);
			res = NULL;
		}
	}
	if (res) {
		emit_response(sink, NULL, mcpx_jsonrpc_result(l->sub_id, res));
	} else {
		if (sink->pending > 0)
			sink->pending--;
		if (tell_sink && !sink->gone && sink->unanswered)
			sink->unanswered(sink);
	}
	listener_free(l);
}

void mcpx_core_end_subscriptions(struct mcpx_core *core)
{
	struct listener *l = core->listeners, *next;

	for (; l; l = next) {
		next = l->next;
		if (l->sub_id)
			subscription_end(core, l, true, true);
	}
}

bool mcpx_core_tools_can_change(const struct mcpx_core *core)
{
	return core->tools_list_changed;
}

void mcpx_core_tools_changed(struct mcpx_core *core)
{
	if (!core->tools_list_changed)
		return; /* listChanged false was declared: nobody may hear it */
	for (struct listener *l = core->listeners; l; l = l->next) {
		cJSON *params = NULL;

		/* "The server MUST NOT send notification types the client has
		 * not explicitly requested"; a session hears of it once it is
		 * initialized. */
		if (l->sink->gone || !l->tools || (l->session && !l->session->initialized))
			continue;
		if (l->sub_id) {
			params = cJSON_CreateObject();
			if (!mcpx_json_add_owned(params, "_meta", subscription_meta(l))) {
				cJSON_Delete(params);
				continue;
			}
		}
		emit(l->sink, mcpx_jsonrpc_notification("notifications/tools/list_changed", params),
		     false);
	}
}

/* subscriptions/listen (2026-07-28 basic/patterns/subscriptions): the
 * acknowledgement names the subset of the filter this server honours
 * (toolsListChanged, when its tool list can change), then the request
 * stays open until it ends. */
static void do_listen(struct req *r)
{
	struct ctx *c = r->c;
	const cJSON *filter = member(r->params, "notifications");
	const cJSON *tools = member(filter, "toolsListChanged");
	struct listener *l;
	cJSON *params, *ack;

	if (!cJSON_IsObject(filter) || (tools && !cJSON_IsBool(tools))) {
		reply_error(r, MCPX_RPC_INVALID_PARAMS,
		            "Invalid params: subscriptions/listen needs a notifications object "
		            "(toolsListChanged a boolean)");
		return;
	}
	if (call_find(c->core, c->session->key, r->id) ||
	    subscription_find(c->core, c->session->key, r->id)) {
		reply_error(r, MCPX_RPC_INVALID_REQUEST,
		            "Invalid Request: a request with this id is still in progress");
		return;
	}
	l = listener_add(c->core, c->sink);
	if (!l || !(l->sub_id = cJSON_Duplicate(r->id, true))) {
		if (l) {
			listener_unlink(c->core, l);
			listener_free(l);
		}
		reply_result(r, NULL);
		return;
	}
	mcpx_utf8_copy_trunc(l->key, sizeof(l->key), c->session->key);
	l->tools = cJSON_IsTrue(tools) && c->core->tools_list_changed;
	/* The request's pending unit is now the subscription's. */
	params = cJSON_CreateObject();
	ack = cJSON_AddObjectToObject(params, "notifications");
	if (!ack || (l->tools && !cJSON_AddTrueToObject(ack, "toolsListChanged")) ||
	    !mcpx_json_add_owned(params, "_meta", subscription_meta(l))) {
		cJSON_Delete(params);
		listener_unlink(c->core, l);
		listener_free(l);
		reply_error(r, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	emit(c->sink, mcpx_jsonrpc_notification("notifications/subscriptions/acknowledged", params),
	     false);
}

/* ---- 2026-07-28 requests ------------------------------------------------- */

static void reply_unsupported_version(struct req *r, const char *requested)
{
	/* UnsupportedProtocolVersionError (schema; basic/versioning "Protocol
	 * Version Negotiation"): code -32022, data {supported, requested}; on
	 * HTTP "the response status code MUST be 400 Bad Request". */
	cJSON *data = cJSON_CreateObject();
	cJSON *sup = cJSON_CreateStringArray(all_versions, (int)NVERSIONS);

	if (!mcpx_json_add_owned(data, "supported", sup)) {
		cJSON_Delete(data);
		data = NULL;
	} else if (!cJSON_AddStringToObject(data, "requested", requested)) {
		cJSON_Delete(data);
		data = NULL;
	}
	reply_error_data(r, MCPX_RPC_UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
	                 data, 400);
}

/* The rest of a 2026-07-28 request's _meta: the client's capabilities and
 * an optional log level (into *lvl). Replies and returns true when invalid. */
static bool stateless_meta_invalid(struct req *r, enum mcpx_level *lvl)
{
	const cJSON *level = member(r->meta, META_LOG_LEVEL);

	if (!cJSON_IsObject(member(r->meta, META_CLIENT_CAPS))) {
		reply_error_data(r, MCPX_RPC_INVALID_PARAMS,
		                 "Invalid params: _meta io.modelcontextprotocol/clientCapabilities "
		                 "(an object) is required",
		                 NULL, 400);
		return true;
	}
	/* "If the io.modelcontextprotocol/logLevel value ... is not a recognized
	 * log level, the server SHOULD reject that request" with -32602
	 * (server/utilities/logging, "Error Handling"). */
	if (level && parse_level(level, lvl) < 0) {
		reply_error_data(r, MCPX_RPC_INVALID_PARAMS,
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
 * basic/index "Statelessness"). Returns false when the request turns out to
 * belong to a legacy session after all. */
static bool handle_stateless(struct req *r)
{
	const cJSON *pv = member(r->meta, META_PROTOCOL_VERSION);
	const struct mcpx_req_headers *h = r->c->hdr;
	enum mcpx_level lvl = MCPX_LEVEL_OFF;
	const char *mismatch;

	r->stateless = true;
	r->c->info->stateless = true;

	/* "A request missing any required field is malformed; the server MUST
	 * reject it with JSON-RPC error code -32602 ... On HTTP, the response
	 * status MUST be 400" (basic/index, per-request protocol fields). */
	if (!cJSON_IsString(pv)) {
		reply_error_data(r, MCPX_RPC_INVALID_PARAMS,
		                 "Invalid params: _meta io.modelcontextprotocol/protocolVersion "
		                 "(a string) is required",
		                 NULL, 400);
		return true;
	}
	/* A session-based version in _meta makes this a legacy request with
	 * extra metadata (served by the session, or told to initialize first),
	 * unless the HTTP header says it is a 2026-07-28 one. */
	if (version_stateful(pv->valuestring) &&
	    !(h && h->protocol_version && mcpx_version_stateless(h->protocol_version))) {
		r->stateless = false;
		r->c->info->stateless = false;
		return false;
	}
	if (r->c->batch) {
		reply_error(r, MCPX_RPC_INVALID_REQUEST,
		            "Invalid Request: protocol version 2026-07-28 has no batches");
		return true;
	}
	/* The transport's headers against the body (streamable_headers.c). */
	if (h && h->mismatch &&
	    (mismatch = h->mismatch(h, pv->valuestring, r->method, r->params))) {
		reply_error_data(r, MCPX_RPC_HEADER_MISMATCH, mismatch, NULL, 400);
		return true;
	}
	/* "If the server does not implement the requested version ... it MUST
	 * respond with an UnsupportedProtocolVersionError" (basic/versioning). */
	if (!mcpx_version_supported(pv->valuestring) || !mcpx_version_stateless(pv->valuestring)) {
		reply_unsupported_version(r, pv->valuestring);
		return true;
	}
	r->version = pv->valuestring;
	if (stateless_meta_invalid(r, &lvl))
		return true;

	/* ping, logging/setLevel and initialize do not exist in 2026-07-28
	 * (changelog, major changes 2 and 5). */
	if (strcmp(r->method, "server/discover") == 0)
		do_discover(r);
	else if (strcmp(r->method, "tools/list") == 0)
		do_tools_list(r);
	else if (strcmp(r->method, "tools/call") == 0)
		do_tools_call(r, lvl);
	else if (strcmp(r->method, "subscriptions/listen") == 0)
		do_listen(r);
	else
		reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
	return true;
}

/* ---- dispatch --------------------------------------------------------- */

/* A request under the session-based lifecycle (<= 2025-11-25). */
static void handle_session_request(struct req *r)
{
	struct mcpx_session *s = r->c->session;

	if (strcmp(r->method, "initialize") == 0) {
		do_initialize(r);
		return;
	}
	/* "Either side can ping", also before initialization (basic/lifecycle). */
	if (strcmp(r->method, "ping") == 0) {
		reply_result(r, cJSON_CreateObject());
		return;
	}
	/* "The client SHOULD NOT send requests other than pings before the
	 * server has responded to the initialize request" (basic/lifecycle). */
	if (!s->initialized) {
		reply_error(r, MCPX_RPC_INVALID_REQUEST,
		            s->allow_stateless
		                ? "Invalid Request: the session is not initialized; send "
		                  "initialize first, or use protocol version 2026-07-28 with "
		                  "_meta io.modelcontextprotocol/protocolVersion"
		                : "Invalid Request: the session is not initialized; send "
		                  "initialize first");
		return;
	}
	if (strcmp(r->method, "tools/list") == 0)
		do_tools_list(r);
	else if (strcmp(r->method, "tools/call") == 0)
		do_tools_call(r, s->log_level);
	else if (strcmp(r->method, "logging/setLevel") == 0)
		do_set_level(r);
	else
		reply_error(r, MCPX_RPC_METHOD_NOT_FOUND, "Method not found");
}

static void handle_request(struct ctx *c, const cJSON *id, const char *method, const cJSON *params)
{
	struct req r = {.c = c, .id = id, .method = method, .params = params};
	struct mcpx_session *s = c->session;
	const struct mcpx_req_headers *h = c->hdr;
	const cJSON *meta = member(params, "_meta");

	c->info->requests++;
	if (c->batch)
		batch_owe(c->batch);
	else
		c->sink->pending++;
	r.version = s->version;

	if (params && !cJSON_IsObject(params)) {
		reply_error(&r, MCPX_RPC_INVALID_PARAMS,
		            "Invalid params: params must be an object");
		return;
	}
	if (meta && !cJSON_IsObject(meta)) {
		reply_error(&r, MCPX_RPC_INVALID_PARAMS, "Invalid params: _meta must be an object");
		return;
	}
	r.meta = meta;

	if (s->allow_stateless &&
	    (member(meta, META_PROTOCOL_VERSION) || strcmp(method, "server/discover") == 0 ||
	     (h && h->protocol_version && mcpx_version_stateless(h->protocol_version)))) {
		if (handle_stateless(&r))
			return;
	}

	/* On HTTP, an MCP-Protocol-Version the server does not speak "MUST"
	 * get 400 (2025-06-18+ transports); the 2026-07-28 error body tells a
	 * modern client which versions to retry with. */
	if (h && h->protocol_version && !mcpx_version_supported(h->protocol_version)) {
		reply_unsupported_version(&r, h->protocol_version_invalid ? "(invalid)"
		                                                          : h->protocol_version);
		return;
	}

	handle_session_request(&r);
}

static void handle_notification(struct ctx *c, const char *method, const cJSON *params)
{
	const cJSON *pv = member(member(params, "_meta"), META_PROTOCOL_VERSION);

	c->info->notifications++;
	if (cJSON_IsString(pv) && mcpx_version_stateless(pv->valuestring))
		c->info->stateless = true;

	/* Notifications are never answered, not even when malformed
	 * ("Invalid cancellation notifications SHOULD be ignored",
	 * basic/utilities/cancellation). */
	if (strcmp(method, "notifications/cancelled") == 0) {
		const cJSON *rid = member(params, "requestId");
		struct mcpx_call *call;
		struct listener *l;

		if (!mcpx_jsonrpc_id_valid(rid))
			return;
		call = call_find(c->core, c->session->key, rid);
		if (call) {
			mcpx_debug("mcp: request %s cancelled by the client", call->id_text);
			call_cancel(call, true);
		} else if ((l = subscription_find(c->core, c->session->key, rid))) {
			/* "send notifications/cancelled referencing the
			 * subscriptions/listen request ID (stdio)". */
			subscription_end(c->core, l, false, true);
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
		emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST,
		             "Invalid Request: a JSON-RPC message must be an object");
		return;
	}
	jsonrpc = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	params = cJSON_GetObjectItemCaseSensitive(msg, "params");

	if (!cJSON_IsString(jsonrpc) || strcmp(jsonrpc->valuestring, "2.0") != 0) {
		emit_invalid(c, id, MCPX_RPC_INVALID_REQUEST,
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
		emit_invalid(c, id, MCPX_RPC_INVALID_REQUEST,
		             "Invalid Request: \"method\" is missing");
		return;
	}
	if (!cJSON_IsString(method)) {
		emit_invalid(c, id, MCPX_RPC_INVALID_REQUEST,
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
		emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST,
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
		emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST,
		             "Invalid Request: JSON-RPC batches are only supported with protocol "
		             "version 2025-03-26");
		return;
	}
	/* JSON-RPC 2.0: an empty array gets a single Invalid Request error. */
	if (cJSON_GetArraySize(arr) == 0) {
		emit_invalid(c, NULL, MCPX_RPC_INVALID_REQUEST, "Invalid Request: empty batch");
		return;
	}
	c->batch = batch_new(c->sink);
	if (!c->batch) {
		emit_invalid(c, NULL, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	cJSON_ArrayForEach(el, arr) handle_message(c, el);
	/* Answered now unless a tool call is still running. */
	c->batch->sealed = true;
	batch_settle(c->batch);
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
		emit_invalid(&c, NULL, MCPX_RPC_PARSE_ERROR, why);
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

/* Drops sink's listeners (all of them when sink is NULL), answering
 * nothing. */
static void drop_listeners(struct mcpx_core *core, const struct mcpx_sink *sink)
{
	struct listener *l = core->listeners, *next;

	for (; l; l = next) {
		next = l->next;
		if (sink && l->sink != sink)
			continue;
		listener_unlink(core, l);
		if (l->sub_id && l->sink->pending > 0)
			l->sink->pending--;
		listener_free(l);
	}
}

void mcpx_core_sink_gone(struct mcpx_core *core, struct mcpx_sink *sink)
{
	struct mcpx_call *call = core->calls, *next;

	sink->gone = true;
	drop_listeners(core, sink);
	for (; call; call = next) {
		next = call->next;
		if (call->sink == sink)
			call_cancel(call, false);
	}
	/* A cancel callback can only end its own call, so `next` stays
	 * valid: tools never end other calls. */
}

size_t mcpx_core_inflight(const struct mcpx_core *core)
{
	return core->ncalls;
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
	core->tools_list_changed = opts->tools_list_changed;
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
		call_cancel(core->calls, false);
	drop_listeners(core, NULL);
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
