/*
 * mcp_send.c - how the MCP core answers: one message printed and sent
 * through its sink, a JSON-RPC batch's responses collected into one array
 * (sent once the last is answered), the sink's pending count kept, errors
 * (and what they tell the transport: a parse error, an HTTP status), and
 * what every 2026-07-28 result carries.
 *
 * It does not decide what to answer; the dispatch and the methods do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp_core.h"

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
void mcpx_mcp_emit(struct mcpx_sink *sink, cJSON *msg, bool response)
{
	struct mcpx_buf out;

	mcpx_buf_init(&out, MCPX_JSONRPC_MAX_MESSAGE);
	if (print_owned(msg, &out) == 0 && !sink->gone)
		sink->send(sink, out.data, out.len, response);
	mcpx_buf_free(&out);
}

struct batch *mcpx_mcp_batch_new(struct mcpx_sink *sink)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (b) {
		b->sink = sink;
		mcpx_buf_init(&b->out, MCPX_JSONRPC_MAX_MESSAGE);
	}
	return b;
}

/* A request of the batch is now owed a response. */
void mcpx_mcp_batch_owe(struct batch *b)
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
void mcpx_mcp_batch_settle(struct batch *b)
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
		mcpx_mcp_emit(
		    sink,
		    mcpx_jsonrpc_error(NULL, MCPX_RPC_INTERNAL_ERROR,
		                       "Internal error: the batch reply could not be built", NULL),
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
	mcpx_mcp_batch_settle(b);
}

/* Sends a response to a request that was counted in sink->pending (or in
 * its batch). */
void mcpx_mcp_emit_response(struct mcpx_sink *sink, struct batch *b, cJSON *msg)
{
	if (b) {
		batch_add(b, msg, true);
		return;
	}
	if (sink->pending > 0)
		sink->pending--;
	mcpx_mcp_emit(sink, msg, true);
}

/* An error for a message that is not a request we counted (parse errors,
 * invalid requests): it does not touch pending. */
void mcpx_mcp_emit_invalid(struct ctx *c, const cJSON *id, int code, const char *msg)
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
	mcpx_mcp_emit(c->sink, err, true);
}

void mcpx_mcp_reply_error_data(struct req *r, int code, const char *msg, cJSON *data,
                               unsigned http_status)
{
	if (!r->c->batch) {
		r->c->info->error_code = code;
		r->c->info->http_status = http_status;
	}
	mcpx_mcp_emit_response(r->c->sink, r->c->batch, mcpx_jsonrpc_error(r->id, code, msg, data));
}

void mcpx_mcp_reply_error(struct req *r, int code, const char *msg)
{
	/* A 2026-07-28 server "MUST respond with 404 Not Found and a JSON-RPC
	 * error with code -32601" for an RPC it does not implement
	 * (transports/streamable-http, "Protocol Version Header"). */
	unsigned status = r->stateless && code == MCPX_RPC_METHOD_NOT_FOUND ? 404 : 0;
	mcpx_mcp_reply_error_data(r, code, msg, NULL, status);
}

cJSON *mcpx_mcp_server_info(const struct mcpx_core *core)
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
bool mcpx_mcp_decorate_stateless(const struct mcpx_core *core, cJSON *result)
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
	return mcpx_json_add_owned(meta, META_SERVER_INFO, mcpx_mcp_server_info(core));
}

/* Sends a result (ownership passes); NULL means we ran out of memory. */
void mcpx_mcp_reply_result(struct req *r, cJSON *result)
{
	if (result && r->stateless && !mcpx_mcp_decorate_stateless(r->c->core, result)) {
		cJSON_Delete(result);
		result = NULL;
	}
	if (!result) {
		mcpx_mcp_reply_error(r, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	mcpx_mcp_emit_response(r->c->sink, r->c->batch, mcpx_jsonrpc_result(r->id, result));
}
