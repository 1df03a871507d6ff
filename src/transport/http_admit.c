/*
 * http_admit.c - the admission gate for every HTTP request (http_admit.h).
 *
 * Order of the checks, each answering with the first failure: the head's
 * shape (431 oversized, 400 control characters in a value we read), route
 * and method (404, 405), auth (401, no detail; the operations endpoints are
 * exempt), Origin (403) and, on a loopback listener, Host (403), draining
 * (503), MCP-Protocol-Version on /mcp (400 with a JSON-RPC error, whose id
 * the server fills in from the body: wants_id), then the
 * body's framing: a POST needs a Content-Length (411; chunked bodies are not
 * decoded by libwebsockets 4.1.6) within MCP_EXEC_MAX_BODY_BYTES (413), and
 * other methods carry no body (400). Route and method come before auth so a
 * 404 or 405 costs nothing to compute; they reveal nothing the paths in the
 * documentation do not.
 *
 * This file knows HTTP and MCP's header rules, not libwebsockets: the
 * server fills struct mcpx_http_head from whatever parsed the bytes. It
 * neither reads bodies nor writes responses (mcpx_admit_set_id is handed a
 * refused request's body by the server, to put its id in the error).
 */
#include "http_admit.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "buf.h"
#include "http_field.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "origin.h"

/* Longest Host or Origin value compared; the server reads no longer ones. */
#define NAME_MAX_LEN 512

bool mcpx_http_value_ok(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

static int reject(struct mcpx_admit *out, int status, const char *text, const char *extra)
{
	size_t n = strlen(text);

	out->status = status;
	out->content_type = "text/plain; charset=utf-8";
	out->extra_headers = extra;
	memcpy(out->body, text, n < sizeof(out->body) ? n : sizeof(out->body) - 1);
	out->body_len = n < sizeof(out->body) ? n : sizeof(out->body) - 1;
	return status;
}

static bool is_path(const char *path, const char *want)
{
	return path && strcmp(path, want) == 0;
}

static bool reserved_path(const char *p)
{
	return is_path(p, "/mcp") || is_path(p, "/healthz") || is_path(p, "/readyz") ||
	       is_path(p, "/metrics") || is_path(p, "/messages");
}

/* Picks the route; answers 404/405 itself. Returns out->status. */
static int route(const struct mcpx_http_head *h, const struct mcpx_admit_policy *p,
                 struct mcpx_admit *out)
{
	const char *path = h->path ? h->path : "";
	bool free_path = p->sse_mode && !reserved_path(path);

	if (is_path(path, "/healthz") || is_path(path, "/readyz") || is_path(path, "/metrics")) {
		out->route = is_path(path, "/healthz")  ? MCPX_ROUTE_HEALTHZ
		             : is_path(path, "/readyz") ? MCPX_ROUTE_READYZ
		                                        : MCPX_ROUTE_METRICS;
		if (h->method != MCPX_HTTP_GET)
			return reject(out, 405, "method not allowed\n", "Allow: GET\r\n");
		return 0;
	}
	if (is_path(path, "/mcp")) {
		out->route = MCPX_ROUTE_MCP;
		/* GET opens a stream only for messages the server may initiate
		 * (the tool list can change); otherwise there is none to offer:
		 * 405, as the transport spec allows. */
		if (h->method == MCPX_HTTP_GET && p->mcp_stream)
			return 0;
		if (h->method != MCPX_HTTP_POST && h->method != MCPX_HTTP_DELETE)
			return reject(out, 405, "method not allowed\n",
			              p->mcp_stream ? "Allow: GET, POST, DELETE\r\n"
			                            : "Allow: POST, DELETE\r\n");
		return 0;
	}
	if (h->method == MCPX_HTTP_GET && (is_path(path, "/sse") || free_path)) {
		out->route = MCPX_ROUTE_SSE_OPEN;
		return 0;
	}
	if (h->method == MCPX_HTTP_POST &&
	    (is_path(path, "/messages") || (free_path && h->session_query))) {
		out->route = MCPX_ROUTE_SSE_POST;
		return 0;
	}
	return reject(out, 404, "not found\n", NULL);
}

/* Copies a trimmed value into a C string for the Origin/Host checks. */
static bool to_cstr(struct mcpx_http_field f, char *buf, size_t cap)
{
	if (f.len >= cap)
		return false;
	if (f.len)
		memcpy(buf, f.p, f.len);
	buf[f.len] = '\0';
	return true;
}

static int check_origin_host(const struct mcpx_http_head *h, const struct mcpx_admit_policy *p,
                             struct mcpx_admit *out)
{
	char origin[NAME_MAX_LEN], host[NAME_MAX_LEN];

	if (!to_cstr(h->origin, origin, sizeof(origin)) || !to_cstr(h->host, host, sizeof(host)))
		return reject(out, 431, "request header too large\n", NULL);
	if (!mcpx_origin_allowed(origin, p->allowed_origins ? p->allowed_origins : ""))
		return reject(out, 403, "forbidden origin\n", NULL);
	if (!mcpx_host_allowed(host, p->loopback_listener))
		return reject(out, 403, "forbidden host\n", NULL);
	return 0;
}

/* The 2026-07-28 UnsupportedProtocolVersionError (schema; "Protocol
 * Version Header" in basic/transports/streamable-http): 400, code -32022,
 * data {supported, requested}, so a modern client knows what to retry with. */
static int unsupported_modern(struct mcpx_http_field v, struct mcpx_admit *out)
{
	const char *const *list;
	size_t n = mcpx_versions(&list);
	char requested[64] = "(invalid)";
	cJSON *root = cJSON_CreateObject(), *err, *data;
	bool printable = v.len < sizeof(requested), ok;

	for (size_t i = 0; i < v.len && printable; i++)
		printable = v.p[i] > 0x20 && v.p[i] < 0x7f;
	if (printable)
		snprintf(requested, sizeof(requested), "%.*s", (int)v.len, v.p);
	cJSON_AddStringToObject(root, "jsonrpc", "2.0");
	cJSON_AddNullToObject(root, "id");
	err = cJSON_AddObjectToObject(root, "error");
	cJSON_AddNumberToObject(err, "code", -32022);
	cJSON_AddStringToObject(err, "message", "Unsupported protocol version");
	data = cJSON_AddObjectToObject(err, "data");
	cJSON_AddItemToObject(data, "supported", cJSON_CreateStringArray(list, (int)n));
	cJSON_AddStringToObject(data, "requested", requested);
	/* Any allocation failure above leaves a NULL that cJSON ignores; the
	 * print then fails or lacks a member, and the plain text stands in. */
	ok = root && data && cJSON_PrintPreallocated(root, out->body, (int)sizeof(out->body), 0);
	cJSON_Delete(root);
	if (!ok)
		return reject(out, 400, "unsupported MCP-Protocol-Version\n", NULL);
	out->status = 400;
	out->content_type = "application/json";
	out->body_len = strlen(out->body);
	out->wants_id = true;
	return 400;
}

void mcpx_admit_set_id(struct mcpx_admit *out, const char *body, size_t len)
{
	const char *why;
	cJSON *req = mcpx_jsonrpc_parse(body, len, &why);
	cJSON *res = cJSON_ParseWithLength(out->body, out->body_len);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	struct mcpx_buf b;

	mcpx_buf_init(&b, sizeof(out->body) - 1);
	if (cJSON_IsObject(req) && mcpx_jsonrpc_id_valid(id) && cJSON_IsObject(res) &&
	    cJSON_ReplaceItemInObjectCaseSensitive(res, "id", cJSON_Duplicate(id, true)) &&
	    mcpx_jsonrpc_print(res, &b) == 0) {
		memcpy(out->body, mcpx_buf_str(&b), b.len + 1);
		out->body_len = b.len;
	}
	mcpx_buf_free(&b);
	cJSON_Delete(res);
	cJSON_Delete(req);
}

/* MCP-Protocol-Version on /mcp. A request inside a session (Mcp-Session-Id)
 * follows the session revisions, whose transport says only "400"; anything
 * else can only be a 2026-07-28 request, whose rules name the error body. */
static int check_protocol_header(const struct mcpx_http_head *h, struct mcpx_admit *out)
{
	static const char legacy[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	    "\"message\":\"Bad Request: Unsupported MCP-Protocol-Version\"}}";
	char v[32];

	if (!h->protocol_version.len)
		return 0;
	if (to_cstr(h->protocol_version, v, sizeof(v)) && mcpx_version_supported(v))
		return 0;
	if (!h->session_id.len)
		return unsupported_modern(h->protocol_version, out);
	out->status = 400;
	out->content_type = "application/json";
	memcpy(out->body, legacy, sizeof(legacy));
	out->body_len = sizeof(legacy) - 1;
	out->wants_id = true;
	return 400;
}

/* Reads Content-Length once, so the verdict can say whether a body follows
 * even when the request is refused (the server then reads and drops it,
 * letting the client finish sending and see the answer). -1: malformed. */
static int parse_length(const struct mcpx_http_head *h, struct mcpx_admit *out)
{
	char cl[24], *end;
	unsigned long long n;

	if (!h->content_length.len)
		return 0;
	if (!to_cstr(h->content_length, cl, sizeof(cl)) || cl[0] < '0' || cl[0] > '9')
		return -1;
	errno = 0;
	n = strtoull(cl, &end, 10);
	if (*end || errno || n > SIZE_MAX)
		return -1;
	out->content_length = (size_t)n;
	out->body_follows = h->method == MCPX_HTTP_POST && n > 0 && !h->transfer_encoding.len;
	return 0;
}

/* A POST carries exactly Content-Length bytes; nothing else carries any. */
static int check_framing(const struct mcpx_http_head *h, const struct mcpx_admit_policy *p,
                         bool bad_length, struct mcpx_admit *out)
{
	if (h->transfer_encoding.len)
		return reject(out, 411,
		              "Content-Length required (chunked bodies are not accepted)\n", NULL);
	if (bad_length)
		return reject(out, 400, "bad Content-Length\n", NULL);
	if (h->method != MCPX_HTTP_POST) {
		if (out->content_length)
			return reject(out, 400, "this request takes no body\n", NULL);
		return 0;
	}
	if (!h->content_length.len)
		return reject(out, 411,
		              "Content-Length required (chunked bodies are not accepted)\n", NULL);
	if (out->content_length > p->max_body_bytes)
		return reject(out, 413, "request body exceeds MCP_EXEC_MAX_BODY_BYTES\n", NULL);
	return 0;
}

/* Trims every field and refuses control characters in any of them. */
static bool normalise(const struct mcpx_http_head *in, struct mcpx_http_head *h)
{
	struct mcpx_http_field *f[] = {
	    &h->host,       &h->origin,           &h->authorization,
	    &h->x_mcp_auth, &h->content_length,   &h->transfer_encoding,
	    &h->expect,     &h->accept,           &h->content_type,
	    &h->session_id, &h->protocol_version, &h->mcp_method,
	    &h->mcp_name,   &h->last_event_id,
	};

	*h = *in;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		mcpx_http_trim(&f[i]->p, &f[i]->len);
		if (!mcpx_http_value_ok(f[i]->p, f[i]->len))
			return false;
	}
	return true;
}

int mcpx_http_admit(const struct mcpx_http_head *in, const struct mcpx_admit_policy *p,
                    struct mcpx_admit *out)
{
	struct mcpx_http_head h;
	bool bad_length;

	memset(out, 0, sizeof(*out));
	if (in->too_large)
		return reject(out, 431, "request header too large\n", NULL);
	if (!normalise(in, &h))
		return reject(out, 400, "invalid header value\n", NULL);
	bad_length = parse_length(&h, out) < 0;
	if (route(&h, p, out) || out->route == MCPX_ROUTE_HEALTHZ ||
	    out->route == MCPX_ROUTE_READYZ || out->route == MCPX_ROUTE_METRICS)
		return out->status;
	if (mcpx_auth_enabled(p->auth)) {
		int rc =
		    mcpx_auth_identify(p->auth, h.x_mcp_auth.p, h.x_mcp_auth.len, h.authorization.p,
		                       h.authorization.len, p->now, out->caller, &out->cred);

		if (rc == -EINPROGRESS)
			out->review = true; /* the server asks the API server */
		else if (rc < 0)
			return reject(out, 401, MCPX_HTTP_UNAUTHORIZED, NULL);
		else
			out->authenticated = true;
	}
	if (check_origin_host(&h, p, out))
		return out->status;
	if (p->draining)
		return reject(out, 503, "server is shutting down\n", "Retry-After: 1\r\n");
	if (out->route == MCPX_ROUTE_MCP && check_protocol_header(&h, out))
		return out->status;
	return check_framing(&h, p, bad_length, out);
}
