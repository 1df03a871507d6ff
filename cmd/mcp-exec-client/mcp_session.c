/*
 * mcp_session.c - initialize, tools/call exec and DELETE over Streamable HTTP
 * (see mcp_session.h for the error classes).
 *
 * Every reply goes through the same two checks: the HTTP status first (401,
 * 404, 503 ... mean the same whatever was asked), then the JSON-RPC response
 * with our id, found among whatever messages the reply carried. Messages are
 * built with cJSON; strings that the server fills from a program's output
 * are read with hc_string_bytes so NUL bytes survive.
 *
 * It does not retry a call that reached the tool: running code twice is not
 * something a client may decide on its own. The one retry is after a 404,
 * which means the server never saw the call.
 */
#include "mcp_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

/* Small requests (initialize, setLevel, DELETE) answer at once or not at
 * all; only tools/call waits for a run. */
#define RPC_TIMEOUT_S 30L
/* For --progress: a fixed token, since only one call is in flight per
 * session. */
#define PROGRESS_TOKEN "mcp-exec-client"

void mcp_printable(const char *in, char *out, size_t cap)
{
	size_t o = 0;

	for (; in && *in && o + 1 < cap; in++) {
		unsigned char c = (unsigned char)*in;
		out[o++] = (char)(c < 0x20 || c == 0x7F ? ' ' : c);
	}
	out[o] = '\0';
}

static const char *json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The message of a JSON-RPC error response among the reply's messages (for
 * statuses like 400 that carry one), or NULL. */
static const char *rpc_error_message(const struct hc_reply *rep)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, rep->msgs)
	{
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "error");
		const char *msg = json_str(e, "message");
		if (msg)
			return msg;
	}
	return NULL;
}

/* Maps an HTTP status to an error class. 200 and 202 are fine; what the
 * body means is checked by the caller. */
static int check_status(const struct mcp_session *s, const struct hc_reply *rep, bool sent_session,
                        struct mcpx_err *err)
{
	char detail[200];
	const char *m = rpc_error_message(rep);

	mcp_printable(m ? m : rep->text, detail, sizeof(detail));
	switch (rep->status) {
	case 200:
	case 202:
		break;
	case 401:
		/* The server says no more than "unauthorized"; neither do we,
		 * and the token itself is never shown. */
		return mcpx_err_set(err, EACCES, "authentication failed: check the token");
	case 403:
		return mcpx_err_set(err, EACCES, "the server refused the request (HTTP 403): %s",
		                    detail);
	case 404:
		if (sent_session)
			return mcpx_err_set(err, ENOENT, "the server no longer knows the session");
		return mcpx_err_set(err, EPROTO, "no MCP endpoint at %s (HTTP 404)", s->url);
	case 413:
		return mcpx_err_set(err, E2BIG,
		                    "the request is larger than the server accepts (HTTP 413)");
	case 429:
	case 503:
		return mcpx_err_set(err, EBUSY, "server unavailable (HTTP %ld): %s", rep->status,
		                    detail);
	default:
		return mcpx_err_set(err, EPROTO, "unexpected HTTP status %ld from %s: %s",
		                    rep->status, s->url, detail);
	}
	if (rep->session_id_bad)
		return mcpx_err_set(err, EPROTO, "the server sent an invalid Mcp-Session-Id");
	if (rep->bad_json)
		return mcpx_err_set(err, EPROTO, "the server's reply is not valid JSON");
	return 0;
}

/* Sends one JSON-RPC message. With want_id >= 0, *resp is set to the
 * response with that id (borrowed from rep). */
static int rpc(struct mcp_session *s, const cJSON *msg, long want_id, long timeout_s,
               hc_notify_fn on_notify, void *arg, struct hc_reply *rep, const cJSON **resp,
               struct mcpx_err *err)
{
	struct hc_req req = {0};
	char *body = cJSON_PrintUnformatted(msg);
	const cJSON *m;
	int rc;

	if (!body)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	req.method = "POST";
	req.url = s->url;
	req.body = body;
	req.body_len = strlen(body);
	req.session_id = s->id;
	/* The version header belongs to requests after initialization. */
	req.protocol_version = s->version[0] ? s->version : NULL;
	req.timeout_s = timeout_s;
	req.on_notify = on_notify;
	req.arg = arg;
	rc = hc_request(s->http, &req, rep, err);
	free(body);
	if (rc < 0)
		return rc;
	rc = check_status(s, rep, s->id[0] != '\0', err);
	if (rc < 0 || want_id < 0)
		return rc;
	cJSON_ArrayForEach(m, rep->msgs)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
		if (cJSON_IsNumber(id) && id->valuedouble == (double)want_id) {
			*resp = m;
			return 0;
		}
	}
	return mcpx_err_set(err, EPROTO, "the server's reply has no response to our request");
}

/* A JSON-RPC message; id < 0 makes a notification. Takes ownership of
 * params, also on failure. */
static cJSON *request(long id, const char *method, cJSON *params)
{
	cJSON *m = cJSON_CreateObject();

	if (!m || !cJSON_AddStringToObject(m, "jsonrpc", "2.0") ||
	    (id >= 0 && !cJSON_AddNumberToObject(m, "id", (double)id)) ||
	    !cJSON_AddStringToObject(m, "method", method))
		goto fail;
	if (params && !cJSON_AddItemToObject(m, "params", params))
		goto fail;
	return m;
fail:
	/* Only the success path attaches params, so it is still ours. */
	cJSON_Delete(params);
	cJSON_Delete(m);
	return NULL;
}

/* A protocol version is sent back as a header, so only safe characters. */
static bool version_ok(const char *v)
{
	size_t n = v ? strlen(v) : 0;

	if (n == 0 || n >= sizeof(((struct mcp_session *)0)->version))
		return false;
	return strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-.") == n;
}

/* The initialize request (id), or NULL when out of memory. */
static cJSON *initialize_request(long id)
{
	cJSON *params = cJSON_CreateObject(), *info = cJSON_CreateObject();

	if (!params || !info ||
	    !cJSON_AddStringToObject(params, "protocolVersion", MCP_CLIENT_PROTOCOL) ||
	    !cJSON_AddObjectToObject(params, "capabilities") ||
	    !cJSON_AddStringToObject(info, "name", "mcp-exec-client") ||
	    !cJSON_AddStringToObject(info, "version", MCPX_VERSION) ||
	    !cJSON_AddItemToObject(params, "clientInfo", info)) {
		cJSON_Delete(info);
		cJSON_Delete(params);
		return NULL;
	}
	return request(id, "initialize", params);
}

int mcp_session_open(struct mcp_session *s, struct hc *http, const char *url, struct mcpx_err *err)
{
	struct hc_reply rep = {0};
	const cJSON *resp = NULL, *result;
	cJSON *msg;
	const char *v;
	long id;
	int rc;

	s->http = http;
	s->url = url;
	s->id[0] = '\0';
	s->version[0] = '\0';
	if (s->next_id <= 0)
		s->next_id = 1;
	id = s->next_id++;

	msg = initialize_request(id);
	if (!msg)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	rc = rpc(s, msg, id, RPC_TIMEOUT_S, NULL, NULL, &rep, &resp, err);
	cJSON_Delete(msg);
	if (rc < 0)
		goto out;

	result = cJSON_GetObjectItemCaseSensitive(resp, "result");
	if (!cJSON_IsObject(result)) {
		char detail[200];
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");
		mcp_printable(json_str(e, "message"), detail, sizeof(detail));
		rc = mcpx_err_set(err, EPROTO, "initialize failed: %s",
		                  detail[0] ? detail : "no result");
		goto out;
	}
	v = json_str(result, "protocolVersion");
	if (!version_ok(v)) {
		rc = mcpx_err_set(err, EPROTO,
		                  "initialize: the server sent no usable protocol version");
		goto out;
	}
	snprintf(s->version, sizeof(s->version), "%s", v);
	/* A server may run without sessions; then none is sent back. */
	snprintf(s->id, sizeof(s->id), "%s", rep.session_id);
	hc_reply_free(&rep);

	msg = request(-1, "notifications/initialized", NULL);
	if (!msg)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	rc = rpc(s, msg, -1, RPC_TIMEOUT_S, NULL, NULL, &rep, NULL, err);
	cJSON_Delete(msg);
out:
	hc_reply_free(&rep);
	return rc;
}

int mcp_session_set_log_level(struct mcp_session *s, const char *level, struct mcpx_err *err)
{
	struct hc_reply rep = {0};
	const cJSON *resp = NULL;
	cJSON *params = cJSON_CreateObject(), *msg;
	long id = s->next_id++;
	int rc;

	if (!params || !cJSON_AddStringToObject(params, "level", level)) {
		cJSON_Delete(params);
		return mcpx_err_set(err, ENOMEM, "out of memory");
	}
	msg = request(id, "logging/setLevel", params);
	if (!msg)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	rc = rpc(s, msg, id, RPC_TIMEOUT_S, NULL, NULL, &rep, &resp, err);
	cJSON_Delete(msg);
	if (rc == 0 && !cJSON_GetObjectItemCaseSensitive(resp, "result"))
		rc = mcpx_err_set(err, EPROTO, "the server does not support logging/setLevel");
	hc_reply_free(&rep);
	return rc;
}

/* The params of an exec call; NULL when out of memory. */
static cJSON *exec_params(const struct mcp_exec_req *req)
{
	cJSON *params = cJSON_CreateObject(), *args, *meta;

	if (!params || !cJSON_AddStringToObject(params, "name", "exec") ||
	    !(args = cJSON_AddObjectToObject(params, "arguments")) ||
	    !cJSON_AddStringToObject(args, "code", req->code))
		goto oom;
	if (req->timeout_s && !cJSON_AddNumberToObject(args, "timeout_s", req->timeout_s))
		goto oom;
	if (req->language && !cJSON_AddStringToObject(args, "language", req->language))
		goto oom;
	if (req->stdin_data && !cJSON_AddStringToObject(args, "stdin", req->stdin_data))
		goto oom;
	if (req->progress && (!(meta = cJSON_AddObjectToObject(params, "_meta")) ||
	                      !cJSON_AddStringToObject(meta, "progressToken", PROGRESS_TOKEN)))
		goto oom;
	return params;
oom:
	cJSON_Delete(params);
	return NULL;
}

/* Tool errors the user should simply retry later. */
static bool is_transient(const char *text)
{
	return strcasestr(text, "busy") || strcasestr(text, "shutting down");
}

static int tool_error(const char *text, struct mcpx_err *err)
{
	char detail[200];

	mcp_printable(text ? text : "the tool failed without a message", detail, sizeof(detail));
	return mcpx_err_set(err, text && is_transient(text) ? EBUSY : EREMOTEIO, "%s", detail);
}

/* The first text block of a CallToolResult, or NULL. */
static const cJSON *first_text(const cJSON *result)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
	const cJSON *text =
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(content, 0), "text");

	return cJSON_IsString(text) ? text : NULL;
}

/* Sends tools/call with params (taken over) and hands back the
 * CallToolResult, borrowed from rep, once it is known not to be an error. */
static int call_tool(struct mcp_session *s, cJSON *params, long http_timeout_s,
                     hc_notify_fn on_notify, void *arg, struct hc_reply *rep, const cJSON **result,
                     struct mcpx_err *err)
{
	long id = s->next_id++;
	cJSON *msg = request(id, "tools/call", params);
	const cJSON *resp = NULL, *e, *text;
	int rc;

	if (!msg)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	for (int attempt = 0;; attempt++) {
		rc = rpc(s, msg, id, http_timeout_s, on_notify, arg, rep, &resp, err);
		if (rc != -ENOENT || attempt > 0)
			break;
		/* "The client MUST start a new session ... when it receives
		 * HTTP 404 in response to a request containing an
		 * Mcp-Session-Id" (basic/transports, session management). The
		 * server never saw the call, so sending it again is safe. */
		hc_reply_free(rep);
		rc = mcp_session_open(s, s->http, s->url, err);
		if (rc < 0)
			break;
	}
	cJSON_Delete(msg);
	if (rc == -ENOENT)
		return mcpx_err_set(err, EPROTO, "the server forgot the session twice in a row");
	if (rc < 0)
		return rc;

	e = cJSON_GetObjectItemCaseSensitive(resp, "error");
	if (e) /* a JSON-RPC error: unknown tool, malformed request */
		return tool_error(json_str(e, "message"), err);
	*result = cJSON_GetObjectItemCaseSensitive(resp, "result");
	if (!cJSON_IsObject(*result))
		return mcpx_err_set(err, EPROTO, "the tools/call response has no result");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(*result, "isError"))) {
		text = first_text(*result);
		return tool_error(text ? text->valuestring : NULL, err);
	}
	return 0;
}

static int string_field(const cJSON *sc, const char *key, char **out, size_t *len)
{
	int rc = hc_string_bytes(cJSON_GetObjectItemCaseSensitive(sc, key), out, len);

	return rc == -EINVAL ? -EPROTO : rc;
}

/* Copies a short, optional string field (signal, limit); null or absent
 * leaves "". */
static void short_field(const cJSON *sc, const char *key, char *out, size_t cap)
{
	mcp_printable(json_str(sc, key), out, cap);
}

static int decode_result(const cJSON *sc, struct mcp_exec_result *res, struct mcpx_err *err)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(sc, "exit_code");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(sc, "duration_ms");
	int rc;

	if (!cJSON_IsNumber(code))
		return mcpx_err_set(err, EPROTO, "the exec result has no exit_code");
	rc = string_field(sc, "stdout", &res->out, &res->out_len);
	if (rc == 0)
		rc = string_field(sc, "stderr", &res->err, &res->err_len);
	if (rc == -ENOMEM)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	if (rc < 0)
		return mcpx_err_set(err, EPROTO, "the exec result has no stdout or stderr");
	res->exit_code = code->valueint;
	res->timed_out = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "timed_out"));
	res->truncated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "truncated"));
	res->duration_ms = cJSON_IsNumber(dur) ? dur->valuedouble : 0;
	short_field(sc, "signal", res->signal_name, sizeof(res->signal_name));
	short_field(sc, "limit", res->limit, sizeof(res->limit));
	return 0;
}

/* Reads the exec tool's CallToolResult into res. */
static int exec_outcome(const cJSON *result, struct mcp_exec_result *res, struct mcpx_err *err)
{
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
	const cJSON *text = first_text(result);
	cJSON *parsed = NULL;
	int rc;

	if (!cJSON_IsObject(sc) && text) {
		/* Servers that predate structuredContent send the same JSON
		 * as text only. */
		char *raw;
		size_t n;
		if (hc_string_bytes(text, &raw, &n) == 0) {
			parsed = hc_json_parse(raw, n);
			free(raw);
		}
		sc = parsed;
	}
	if (!cJSON_IsObject(sc)) {
		cJSON_Delete(parsed);
		return mcpx_err_set(err, EPROTO, "the exec result has no structured content");
	}
	rc = decode_result(sc, res, err);
	cJSON_Delete(parsed);
	return rc;
}

int mcp_session_exec(struct mcp_session *s, const struct mcp_exec_req *req,
                     struct mcp_exec_result *res, struct mcpx_err *err)
{
	struct hc_reply rep = {0};
	const cJSON *result = NULL;
	cJSON *params;
	int rc;

	memset(res, 0, sizeof(*res));
	params = exec_params(req);
	if (!params)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	rc =
	    call_tool(s, params, req->http_timeout_s, req->on_notify, req->arg, &rep, &result, err);
	if (rc == 0)
		rc = exec_outcome(result, res, err);
	hc_reply_free(&rep);
	if (rc < 0)
		mcp_exec_result_free(res);
	return rc;
}

int mcp_session_call_tool(struct mcp_session *s, const char *name, const cJSON *args,
                          long http_timeout_s, char **text, size_t *text_len, struct mcpx_err *err)
{
	struct hc_reply rep = {0};
	const cJSON *result = NULL, *t;
	cJSON *params = cJSON_CreateObject();
	cJSON *copy = args ? cJSON_Duplicate(args, true) : cJSON_CreateObject();
	int rc;

	*text = NULL;
	*text_len = 0;
	if (!params || !copy || !cJSON_AddStringToObject(params, "name", name) ||
	    !cJSON_AddItemToObject(params, "arguments", copy)) {
		/* Adding copy is the last step, so on any failure it is not
		 * part of params yet. */
		cJSON_Delete(params);
		cJSON_Delete(copy);
		return mcpx_err_set(err, ENOMEM, "out of memory");
	}
	rc = call_tool(s, params, http_timeout_s, NULL, NULL, &rep, &result, err);
	if (rc == 0) {
		t = first_text(result);
		rc = t ? hc_string_bytes(t, text, text_len) : 0;
		if (rc == 0 && !t && !(*text = calloc(1, 1)))
			rc = -ENOMEM;
		if (rc < 0)
			rc = mcpx_err_set(err, ENOMEM, "out of memory");
	}
	hc_reply_free(&rep);
	return rc;
}

void mcp_session_close(struct mcp_session *s)
{
	struct hc_reply rep = {0};
	struct hc_req req = {0};
	struct mcpx_err ignored;

	if (!s->http || !s->id[0])
		return;
	req.method = "DELETE";
	req.url = s->url;
	req.session_id = s->id;
	req.protocol_version = s->version;
	req.timeout_s = RPC_TIMEOUT_S;
	hc_request(s->http, &req, &rep, &ignored);
	hc_reply_free(&rep);
	s->id[0] = '\0';
}

void mcp_exec_result_free(struct mcp_exec_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}
