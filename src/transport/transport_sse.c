/*
 * transport_sse.c - the legacy HTTP+SSE transport (protocol 2024-11-05).
 *
 * GET /sse opens a stream whose first event, "endpoint", names the URI for
 * the client's POSTs (/messages?sessionId=...); each POST is answered 202 and
 * the JSON-RPC replies travel on the stream. The Go mcp-exec served this on
 * every path with a lower-case ?sessionid=; in `sse` mode the server does the
 * same, so its clients keep working.
 *
 * A legacy session lives in one process, tied to its open stream: this
 * transport is inherently sticky, and behind a Service it needs
 * sessionAffinity (documented in docs/protocol.md). Streamable HTTP at /mcp
 * has no such limit.
 */
#include "transport_http.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"

#define KEEPALIVE_US (15u * 1000000u)

struct stream {
	struct mcpx_sink sink; /* first: the core hands it back */
	struct mcpx_sse *t;
	struct mcpx_http_conn *conn;
	struct stream *next;
	char id[33];
	struct mcpx_session session;
	struct mcpx_timer keepalive;
};

struct mcpx_sse {
	struct mcpx_core *core;
	struct mcpx_loop *loop;
	struct stream *streams;
	size_t count;
};

static void stream_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct stream *s = (struct stream *)sink;
	mcpx_http_sse_event(s->conn, "message", NULL, json, len);
}

static void keepalive_cb(struct mcpx_timer *tm)
{
	struct stream *s = tm->arg;
	mcpx_http_sse_comment(s->conn, "keepalive");
	mcpx_timer_start(s->t->loop, &s->keepalive, KEEPALIVE_US);
}

static void unlink_stream(struct mcpx_sse *t, struct stream *s)
{
	for (struct stream **pp = &t->streams; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			t->count--;
			return;
		}
	}
}

static void stream_closed(void *arg)
{
	struct stream *s = arg;
	mcpx_timer_cancel(&s->keepalive);
	unlink_stream(s->t, s);
	mcpx_core_sink_gone(s->t->core, &s->sink);
	free(s);
}

void mcpx_sse_open(struct mcpx_sse *t, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct stream *s = calloc(1, sizeof(*s));
	unsigned char rnd[16];
	char endpoint[600], hex[65];
	bool go_style = strcmp(req->path, "/sse") != 0;

	if (!s || mcpx_random(rnd, sizeof(rnd)) < 0) {
		free(s);
		mcpx_http_respond(c, 500, "text/plain", "internal error\n", 15, NULL);
		return;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);
	s->t = t;
	s->conn = c;
	s->sink.send = stream_send;
	s->session.log_level = MCPX_LEVEL_OFF;
	snprintf(s->session.key, sizeof(s->session.key), "sse:%s", s->id);
	mcpx_sha256_hex(s->id, strlen(s->id), hex);
	snprintf(s->session.client, sizeof(s->session.client), "sse:%.12s@%s", hex, req->remote);
	/* The stream is its opener's: a POST to it must come from the same
	 * caller (mcpx_sse_post). */
	snprintf(s->session.caller, sizeof(s->session.caller), "%s",
	         req->caller[0] ? req->caller : "anonymous");
	/* The stream is the session's: it also takes the server's own
	 * notifications (the tool list changed) once initialized. */
	if (mcpx_core_listen(t->core, &s->sink, &s->session) < 0) {
		free(s);
		mcpx_http_respond(c, 500, "text/plain", "internal error\n", 15, NULL);
		return;
	}
	s->next = t->streams;
	t->streams = s;
	t->count++;
	mcpx_http_on_close(c, stream_closed, s);

	mcpx_http_sse_begin(c, NULL);
	if (go_style)
		snprintf(endpoint, sizeof(endpoint), "%s?sessionid=%s", req->path, s->id);
	else
		snprintf(endpoint, sizeof(endpoint), "/messages?sessionId=%s", s->id);
	mcpx_http_sse_event(c, "endpoint", NULL, endpoint, strlen(endpoint));
	s->keepalive.fn = keepalive_cb;
	s->keepalive.arg = s;
	mcpx_timer_start(t->loop, &s->keepalive, KEEPALIVE_US);
}

static struct stream *find(struct mcpx_sse *t, const char *id)
{
	for (struct stream *s = t->streams; s; s = s->next)
		if (strlen(id) == strlen(s->id) && mcpx_ct_equal(id, s->id, strlen(id)))
			return s;
	return NULL;
}

void mcpx_sse_post(struct mcpx_sse *t, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct mcpx_handle_info info;
	struct stream *s;
	cJSON *probe;

	if (!req->session_query[0]) {
		mcpx_http_respond(c, 400, "text/plain", "missing sessionId\n", 18, NULL);
		return;
	}
	s = find(t, req->session_query);
	if (!s) {
		mcpx_http_respond(c, 404, "text/plain", "unknown session\n", 16, NULL);
		return;
	}
	/* Another caller's stream: the answer an unknown token gets. */
	if (strcmp(s->session.caller, req->caller[0] ? req->caller : "anonymous") != 0) {
		mcpx_http_respond(c, 401, "text/plain; charset=utf-8", MCPX_HTTP_UNAUTHORIZED,
		                  strlen(MCPX_HTTP_UNAUTHORIZED), NULL);
		return;
	}
	if (strncasecmp(req->content_type, "application/json", 16) != 0) {
		mcpx_http_respond(c, 415, "text/plain", "Content-Type must be application/json\n", 38,
				  NULL);
		return;
	}
	probe = cJSON_ParseWithLength(req->body, req->body_len);
	if (!probe) {
		static const char err[] =
			"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}";
		mcpx_http_respond(c, 400, "application/json", err, sizeof(err) - 1, NULL);
		return;
	}
	cJSON_Delete(probe);
	memset(&info, 0, sizeof(info));
	mcpx_core_handle(t->core, &s->session, &s->sink, req->body, req->body_len, &info);
	mcpx_http_respond(c, 202, "text/plain", "Accepted", 8, NULL);
}

struct mcpx_sse *mcpx_sse_new(struct mcpx_core *core, struct mcpx_loop *loop)
{
	struct mcpx_sse *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->core = core;
	t->loop = loop;
	return t;
}

void mcpx_sse_close_idle(struct mcpx_sse *t)
{
	for (struct stream *s = t->streams; s; s = s->next)
		if (s->sink.pending == 0)
			mcpx_http_sse_end(s->conn);
}

void mcpx_sse_free(struct mcpx_sse *t)
{
	if (!t)
		return;
	while (t->streams) {
		struct stream *s = t->streams;
		t->streams = s->next;
		mcpx_timer_cancel(&s->keepalive);
		mcpx_http_forget(s->conn);
		mcpx_core_sink_gone(t->core, &s->sink);
		free(s);
	}
	free(t);
}

size_t mcpx_sse_streams(const struct mcpx_sse *t)
{
	return t->count;
}
