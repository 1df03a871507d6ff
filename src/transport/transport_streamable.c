/*
 * transport_streamable.c - MCP Streamable HTTP at /mcp.
 *
 * Session-based revisions (2025-03-26, 2025-06-18, 2025-11-25): initialize
 * returns an Mcp-Session-Id that is self-validating (session.h), so any
 * replica verifies it without shared state; a bad, expired or revoked id gets
 * 404 and the client re-initializes. The stateless 2026-07-28 revision needs
 * no session at all: each request names its version in _meta and the
 * MCP-Protocol-Version header.
 *
 * Each POST gets its own sink. A POST with only notifications or responses is
 * answered 202. A request is answered as one JSON object, or as an SSE stream
 * when notifications will flow during it (a tools/call that asked for
 * progress, or a session that set a logging level, or a 2026-07-28
 * subscriptions/listen, whose stream stays open) and the client accepts
 * text/event-stream. MCP-Protocol-Version is checked by the server's gate
 * (http_admit.c).
 *
 * GET /mcp opens a session's stream for server-initiated messages
 * (notifications/tools/list_changed) when the tool list can change (a
 * policy file is configured); otherwise it answers 405: the server then
 * never initiates messages, which the spec allows and SDK clients expect.
 * A GET stream carries a keep-alive comment every 15 s and ends when the
 * server drains.
 */
#include "transport_http.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "session.h"
#include "streamable_headers.h"

#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define KEEPALIVE_US (15u * 1000000u)

struct get_stream;

/* A sanity bound on one POST's collected JSON replies; the executor's caps
 * keep real replies far below it, and the server caps what it sends. */
#define JSON_REPLY_CAP ((size_t)256 << 20)

struct mcpx_streamable {
	struct mcpx_core *core;
	struct mcpx_sessions *sessions;
	struct mcpx_loop *loop;
	size_t open;
	unsigned long seq;
	struct get_stream *streams;
};

/* A GET /mcp stream: one session's server-initiated messages. */
struct get_stream {
	struct mcpx_sink sink; /* first: the core hands it back */
	struct mcpx_streamable *t;
	struct mcpx_http_conn *conn;
	struct get_stream *next;
	struct mcpx_timer keepalive;
	bool ended;
};

struct post {
	struct mcpx_sink sink; /* first: the core hands it back */
	struct mcpx_streamable *t;
	struct mcpx_http_conn *conn;
	bool sse;
	bool handled;   /* mcpx_core_handle returned */
	bool finished;  /* the HTTP response is complete */
	char headers[256];
	struct mcpx_buf json; /* JSON mode: collected response(s) */
	bool json_failed;     /* a reply did not fit: the POST ends with 500 */
	unsigned responses;
	unsigned expected;
};

static void post_free(struct post *p)
{
	mcpx_buf_free(&p->json);
	free(p);
}

static void post_finish(struct post *p)
{
	if (p->finished)
		return;
	p->finished = true;
	p->t->open--;
	if (p->sse) {
		mcpx_http_sse_end(p->conn);
	} else if (p->json_failed) {
		mcpx_http_respond(p->conn, 500, "text/plain", "out of memory\n", 14, NULL);
	} else if (p->json.len) {
		/* One response, or a batch's array (the core builds it). */
		mcpx_http_respond(p->conn, 200, "application/json", p->json.data, p->json.len,
				  p->headers[0] ? p->headers : NULL);
	} else {
		/* Every request was cancelled: nothing to say, but the POST must end. */
		mcpx_http_respond(p->conn, 202, NULL, "", 0, p->headers[0] ? p->headers : NULL);
	}
	mcpx_http_forget(p->conn);
	post_free(p);
}

static void post_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct post *p = (struct post *)sink;

	if (p->finished)
		return;
	if (p->sse) {
		if (response)
			p->responses++;
		mcpx_http_sse_event(p->conn, "message", NULL, json, len);
	} else if (response) {
		/* Notifications have no place in a JSON reply; they are dropped.
		 * One response per POST: a batch's replies come as one array. */
		if (mcpx_buf_add(&p->json, json, len) < 0)
			p->json_failed = true;
		p->responses++;
	}
	if (p->handled && p->sink.pending == 0)
		post_finish(p);
}

static void post_unanswered(struct mcpx_sink *sink)
{
	struct post *p = (struct post *)sink;
	/* A cancelled request never gets a response; the POST must still end. */
	if (p->handled && p->sink.pending == 0)
		post_finish(p);
}

static void post_closed(void *arg)
{
	struct post *p = arg;
	/* The client went away: its calls are cancelled by the core. The
	 * execution slot is the replica's only one, so running on for nobody
	 * would only delay everyone else. */
	p->finished = true;
	p->t->open--;
	mcpx_core_sink_gone(p->t->core, &p->sink);
	post_free(p);
}

static void rpc_error(struct mcpx_http_conn *c, int status, int code, const char *msg)
{
	char body[512];
	int n = snprintf(body, sizeof(body),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
			 code, msg);
	mcpx_http_respond(c, status, "application/json", body, (size_t)n, NULL);
}

static bool accepts(const char *accept, const char *type)
{
	return !accept[0] || strstr(accept, type) || strstr(accept, "*/*");
}

/* Looks at the message without acting on it: its method, whether it is an
 * initialize, and whether it asks for progress or declares 2026-07-28. */
struct peek {
	bool parsed;
	bool batch;
	bool initialize;
	bool tools_call;
	bool progress;
	bool listen; /* a 2026-07-28 subscriptions/listen */
	char method[128];
	char tool_name[256];
	char meta_version[32];
};

static void peek_message(const char *body, size_t len, struct peek *pk)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	const cJSON *msg, *params, *meta, *v;

	memset(pk, 0, sizeof(*pk));
	if (!root)
		return;
	pk->parsed = true;
	pk->batch = cJSON_IsArray(root);
	msg = pk->batch ? cJSON_GetArrayItem(root, 0) : root;
	if (cJSON_IsObject(msg)) {
		v = cJSON_GetObjectItemCaseSensitive(msg, "method");
		if (cJSON_IsString(v))
			snprintf(pk->method, sizeof(pk->method), "%s", v->valuestring);
		params = cJSON_GetObjectItemCaseSensitive(msg, "params");
		meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
		pk->initialize = !pk->batch && !strcmp(pk->method, "initialize");
		pk->tools_call = !strcmp(pk->method, "tools/call");
		pk->listen = !pk->batch && !strcmp(pk->method, "subscriptions/listen");
		pk->progress = cJSON_GetObjectItemCaseSensitive(meta, "progressToken") != NULL;
		v = cJSON_GetObjectItemCaseSensitive(meta, META_PROTOCOL_VERSION);
		if (cJSON_IsString(v))
			snprintf(pk->meta_version, sizeof(pk->meta_version), "%s", v->valuestring);
		v = cJSON_GetObjectItemCaseSensitive(params, "name");
		if (cJSON_IsString(v))
			snprintf(pk->tool_name, sizeof(pk->tool_name), "%s", v->valuestring);
	}
	cJSON_Delete(root);
}

/* Who sent req: its caller, or "anonymous" without auth. */
static const char *req_caller(const struct mcpx_http_req *req)
{
	return req->caller[0] ? req->caller : "anonymous";
}

/* A session id that does not verify for req's caller: 401 as for a wrong
 * token when it is another caller's (no hint that the id is genuine),
 * else 404 so the client re-initializes. Returns false when it answered. */
static bool session_ok(struct mcpx_streamable *t, struct mcpx_http_conn *c,
                       const struct mcpx_http_req *req, time_t now, char version[16])
{
	int rc = mcpx_session_verify_for(t->sessions, req->session_id, strlen(req->session_id),
	                                 req_caller(req), now, version);

	if (rc == -EACCES) {
		mcpx_http_respond(c, 401, "text/plain; charset=utf-8", MCPX_HTTP_UNAUTHORIZED,
		                  strlen(MCPX_HTTP_UNAUTHORIZED), NULL);
		return false;
	}
	if (rc < 0) {
		rpc_error(c, 404, -32001, "Session not found");
		return false;
	}
	return true;
}

static void caller_from_session(const char *sid, const char *remote, char *out, size_t len)
{
	char hex[65];
	mcpx_sha256_hex(sid, strlen(sid), hex);
	/* A hash prefix names the session in logs without revealing the id,
	 * which is a bearer credential for the session. */
	snprintf(out, len, "session:%.12s@%s", hex, remote);
}

/* Content-Type, Accept and JSON syntax, before any state is touched.
 * Returns false when it has answered. (MCP-Protocol-Version was checked by
 * the server's gate, http_admit.c.) */
static bool check_post(struct mcpx_http_conn *c, const struct mcpx_http_req *req,
		       struct peek *pk)
{
	if (strncasecmp(req->content_type, "application/json", 16) != 0) {
		rpc_error(c, 415, -32600, "Content-Type must be application/json");
		return false;
	}
	if (!accepts(req->accept, "application/json") && !accepts(req->accept, "text/event-stream")) {
		rpc_error(c, 406, -32600, "Accept must include application/json or text/event-stream");
		return false;
	}
	peek_message(req->body, req->body_len, pk);
	if (!pk->parsed) {
		rpc_error(c, 400, -32700, "Parse error");
		return false;
	}
	/* Its notifications need a stream to travel on. */
	if (pk->listen && !strstr(req->accept, "text/event-stream")) {
		rpc_error(c, 406, -32600, "subscriptions/listen needs Accept: text/event-stream");
		return false;
	}
	return true;
}

/* Which session the POST belongs to: a stateless 2026-07-28 request, an
 * initialize, or a session id that must verify. Returns false when it has
 * answered (400 or 404). */
static bool resolve_session(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			    const struct mcpx_http_req *req, const struct peek *pk,
			    struct mcpx_session *session, bool *stateless, time_t now)
{
	memset(session, 0, sizeof(*session));
	session->log_level = MCPX_LEVEL_OFF;
	*stateless = mcpx_version_stateless(req->protocol_version) ||
		     (!req->protocol_version[0] && mcpx_version_stateless(pk->meta_version));
	if (*stateless) {
		snprintf(session->version, sizeof(session->version), "%.15s",
			 req->protocol_version[0] ? req->protocol_version : pk->meta_version);
		session->allow_stateless = true;
		snprintf(session->key, sizeof(session->key), "stateless:%lu", ++t->seq);
		snprintf(session->client, sizeof(session->client), "stateless@%s", req->remote);
	} else if (pk->initialize) {
		snprintf(session->key, sizeof(session->key), "init:%lu", ++t->seq);
		snprintf(session->client, sizeof(session->client), "init@%s", req->remote);
	} else if (!req->session_id[0]) {
		rpc_error(c, 400, -32600, "Bad Request: Mcp-Session-Id header is required");
		return false;
	} else {
		if (!session_ok(t, c, req, now, session->version))
			return false;
		session->initialized = true;
		session->log_level = (enum mcpx_level)mcpx_session_get_level(
			t->sessions, req->session_id, MCPX_LEVEL_OFF);
		mcpx_session_touch(t->sessions, req->session_id, now);
		snprintf(session->key, sizeof(session->key), "%s", req->session_id);
		caller_from_session(req->session_id, req->remote, session->client,
		                    sizeof(session->client));
	}
	snprintf(session->caller, sizeof(session->caller), "%s", req_caller(req));
	return true;
}

static struct post *post_open(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			      const struct mcpx_http_req *req, const struct peek *pk,
			      const struct mcpx_session *session)
{
	struct post *p = calloc(1, sizeof(*p));

	if (!p) {
		rpc_error(c, 500, -32603, "Internal error");
		return NULL;
	}
	p->t = t;
	p->conn = c;
	p->sink.send = post_send;
	p->sink.unanswered = post_unanswered;
	mcpx_buf_init(&p->json, JSON_REPLY_CAP);
	p->sse = ((pk->tools_call && (pk->progress || session->log_level != MCPX_LEVEL_OFF)) ||
		  pk->listen) &&
		 strstr(req->accept, "text/event-stream");
	t->open++;
	mcpx_http_on_close(c, post_closed, p);
	if (p->sse) {
		/* Headers go first so progress can flow while the code runs. */
		mcpx_http_sse_begin(c, NULL);
	}
	return p;
}

/* Ends the POST at once with status and whatever JSON was collected. */
static void post_answer(struct post *p, int status)
{
	p->finished = true;
	p->t->open--;
	mcpx_http_forget(p->conn);
	if (p->sse)
		mcpx_http_sse_end(p->conn);
	else if (status == 202)
		mcpx_http_respond(p->conn, 202, NULL, "", 0, NULL);
	else
		mcpx_http_respond(p->conn, status, "application/json", mcpx_buf_str(&p->json),
				  p->json.len, NULL);
	post_free(p);
}

/* After the core has seen the message: the session id of a new session,
 * a logging level to remember, and the status rules for what came back. */
static void post_handled(struct post *p, const struct mcpx_http_req *req, const struct peek *pk,
			 const struct mcpx_session *session, const struct mcpx_handle_info *info,
			 bool stateless, time_t now)
{
	struct mcpx_streamable *t = p->t;

	p->handled = true;
	if (info->initialized_now) {
		char sid[MCPX_SESSION_ID_MAX];
		if (mcpx_session_mint_for(t->sessions, session->version, session->caller, now,
		                          sid) == 0) {
			snprintf(p->headers, sizeof(p->headers), "Mcp-Session-Id: %s\r\n", sid);
			mcpx_session_touch(t->sessions, sid, now);
		}
	}
	if (!stateless && !pk->initialize && req->session_id[0] &&
	    !strcmp(pk->method, "logging/setLevel"))
		mcpx_session_set_level(t->sessions, req->session_id, session->log_level);

	if (info->requests == 0 && !info->invalid && !info->parse_error)
		post_answer(p, 202); /* only notifications and responses */
	else if (info->http_status && !p->sse && p->sink.pending == 0)
		post_answer(p, (int)info->http_status); /* 2026-07-28 mandates it */
	else if (info->requests == 0 && !p->sse)
		post_answer(p, 400); /* rejected input: the JSON-RPC error body */
	else if (p->sink.pending == 0)
		post_finish(p);
}

static void handle_post(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			const struct mcpx_http_req *req)
{
	struct mcpx_session session;
	struct mcpx_handle_info info;
	struct peek pk;
	struct post *p;
	bool stateless;
	time_t now = time(NULL);

	if (!check_post(c, req, &pk) ||
	    !resolve_session(t, c, req, &pk, &session, &stateless, now))
		return;
	p = post_open(t, c, req, &pk, &session);
	if (!p)
		return;
	memset(&info, 0, sizeof(info));
	{
		struct mcpx_req_headers hdr;

		mcpx_streamable_headers_init(&hdr, req->protocol_version, req->mcp_method,
		                             req->mcp_name);
		mcpx_core_handle_http(t->core, &session, &p->sink, req->body, req->body_len,
				      stateless ? &hdr : NULL, &info);
	}
	if (p->finished)
		return; /* cannot happen before handled is set, but stay safe */
	post_handled(p, req, &pk, &session, &info, stateless, now);
}

static void handle_delete(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			  const struct mcpx_http_req *req)
{
	char version[16];
	time_t now = time(NULL);

	if (!req->session_id[0]) {
		rpc_error(c, 400, -32600, "Bad Request: Mcp-Session-Id header is required");
		return;
	}
	if (!session_ok(t, c, req, now, version))
		return;
	mcpx_session_revoke(t->sessions, req->session_id, strlen(req->session_id), now);
	mcpx_http_respond(c, 200, NULL, "", 0, NULL);
}

/* ---- GET /mcp: a session's stream of server-initiated messages ---- */

static void get_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct get_stream *g = (struct get_stream *)sink;

	(void)response;
	if (!g->ended)
		mcpx_http_sse_event(g->conn, "message", NULL, json, len);
}

static void get_keepalive(struct mcpx_timer *tm)
{
	struct get_stream *g = tm->arg;

	if (g->ended)
		return;
	mcpx_http_sse_comment(g->conn, "keepalive");
	mcpx_timer_start(g->t->loop, &g->keepalive, KEEPALIVE_US);
}

static void get_unlink(struct get_stream *g)
{
	for (struct get_stream **pp = &g->t->streams; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			return;
		}
	}
}

static void get_closed(void *arg)
{
	struct get_stream *g = arg;

	mcpx_timer_cancel(&g->keepalive);
	get_unlink(g);
	mcpx_core_sink_gone(g->t->core, &g->sink);
	free(g);
}

/* The session must be one this server (or a replica) issued; 2026-07-28
 * has no GET stream (subscriptions/listen replaced it). */
static bool get_allowed(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			const struct mcpx_http_req *req)
{
	char version[16];

	if (!mcpx_core_tools_can_change(t->core) || mcpx_version_stateless(req->protocol_version)) {
		mcpx_http_respond(c, 405, "text/plain", "method not allowed\n", 19,
				  "Allow: POST, DELETE\r\n");
		return false;
	}
	if (!strstr(req->accept, "text/event-stream")) {
		rpc_error(c, 406, -32600, "Accept must include text/event-stream");
		return false;
	}
	if (!req->session_id[0]) {
		rpc_error(c, 400, -32600, "Bad Request: Mcp-Session-Id header is required");
		return false;
	}
	return session_ok(t, c, req, time(NULL), version);
}

static void handle_get(struct mcpx_streamable *t, struct mcpx_http_conn *c,
		       const struct mcpx_http_req *req)
{
	struct get_stream *g;

	if (!get_allowed(t, c, req))
		return;
	g = calloc(1, sizeof(*g));
	if (!g || mcpx_core_listen_key(t->core, &g->sink, req->session_id) < 0) {
		free(g);
		rpc_error(c, 500, -32603, "Internal error");
		return;
	}
	g->t = t;
	g->conn = c;
	g->sink.send = get_send;
	g->next = t->streams;
	t->streams = g;
	mcpx_http_on_close(c, get_closed, g);
	mcpx_http_sse_begin(c, NULL);
	g->keepalive.fn = get_keepalive;
	g->keepalive.arg = g;
	mcpx_timer_start(t->loop, &g->keepalive, KEEPALIVE_US);
}

void mcpx_streamable_close_streams(struct mcpx_streamable *t)
{
	for (struct get_stream *g = t->streams; g; g = g->next) {
		if (g->ended)
			continue;
		g->ended = true;
		mcpx_timer_cancel(&g->keepalive);
		mcpx_http_sse_end(g->conn);
	}
}

void mcpx_streamable_handle(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			    const struct mcpx_http_req *req)
{
	/* The server's gate admits only POST, DELETE and, when the tool list
	 * can change, GET to /mcp. */
	if (req->method == MCPX_HTTP_DELETE)
		handle_delete(t, c, req);
	else if (req->method == MCPX_HTTP_GET)
		handle_get(t, c, req);
	else
		handle_post(t, c, req);
}

struct mcpx_streamable *mcpx_streamable_new(struct mcpx_core *core, struct mcpx_sessions *sessions,
					    struct mcpx_loop *loop)
{
	struct mcpx_streamable *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->core = core;
	t->sessions = sessions;
	t->loop = loop;
	return t;
}

void mcpx_streamable_free(struct mcpx_streamable *t)
{
	if (!t)
		return;
	while (t->streams) {
		struct get_stream *g = t->streams;

		t->streams = g->next;
		mcpx_timer_cancel(&g->keepalive);
		mcpx_http_forget(g->conn);
		mcpx_core_sink_gone(t->core, &g->sink);
		free(g);
	}
	free(t);
}

size_t mcpx_streamable_open(const struct mcpx_streamable *t)
{
	return t->open;
}
