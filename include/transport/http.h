/*
 * http.h - the boundary between the libwebsockets HTTP server (server_http.c)
 * and the MCP HTTP transports (transport_streamable.c, transport_sse.c).
 *
 * The server parses a request (method, path, the headers MCP needs, a body
 * capped at MCP_EXEC_MAX_BODY_BYTES), has already answered what needs no MCP
 * knowledge (auth, Origin/Host, size limits, operations endpoints), and hands
 * the rest to a transport as a struct mcpx_http_req plus a connection handle.
 * The transport answers through the functions below, now or later (after an
 * execution finished); the server turns them into lws writes in its
 * writeable callback. A connection carries one request: once its response
 * is written the server closes it. When the client goes away first, the
 * transport's on_close hook runs and the handle must not be used again.
 */
#ifndef MCPX_HTTP_H
#define MCPX_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "caller.h"

/* The one answer to every failed authentication (an unknown token, a
 * session of another caller, a refused ServiceAccount token): the same
 * status and body, so the answer is no oracle. */
#define MCPX_HTTP_UNAUTHORIZED "unauthorized\n"

enum mcpx_http_method { MCPX_HTTP_GET, MCPX_HTTP_POST, MCPX_HTTP_DELETE, MCPX_HTTP_OTHER };

struct mcpx_http_req {
	enum mcpx_http_method method;
	char path[256];
	char session_query[128];   /* sessionId= or sessionid= query value */
	char host[256];
	char origin[512];
	char accept[512];
	char content_type[128];
	char session_id[160];      /* Mcp-Session-Id */
	char protocol_version[32]; /* MCP-Protocol-Version */
	char mcp_method[128];      /* Mcp-Method (2026-07-28) */
	char mcp_name[256];        /* Mcp-Name (2026-07-28) */
	char last_event_id[128];
	char remote[64];           /* peer address, for the audit log */
	char caller[MCPX_CALLER_MAX]; /* who (auth.h); "" when auth is disabled */
	const char *body;          /* NUL-terminated copy; body_len bytes */
	size_t body_len;
};

struct mcpx_http_conn;

/* One response with a body (Content-Length set, keep-alive kept).
 * extra_headers: NULL or "name: value\r\n..." lines. */
void mcpx_http_respond(struct mcpx_http_conn *c, int status, const char *content_type,
		       const char *body, size_t len, const char *extra_headers);

/* Starts a text/event-stream response; events follow with
 * mcpx_http_sse_event and the stream ends with mcpx_http_sse_end. */
void mcpx_http_sse_begin(struct mcpx_http_conn *c, const char *extra_headers);
/* event may be NULL (unnamed); data must not contain "\n\n"... newlines in
 * data are split into several data: lines as SSE requires. */
void mcpx_http_sse_event(struct mcpx_http_conn *c, const char *event, const char *id,
			 const char *data, size_t len);
/* A comment line (": ...") to keep intermediaries from timing the stream out. */
void mcpx_http_sse_comment(struct mcpx_http_conn *c, const char *text);
void mcpx_http_sse_end(struct mcpx_http_conn *c);

/* Registers the hook that runs when the client disconnects before the
 * response ended (or after it, for streams), or when the token the request
 * came with is revoked (removed from the tokens file, or a ServiceAccount
 * token that fails its next review): the server then answers 401 or ends
 * the stream itself. Either way the handle must not be used again. */
void mcpx_http_on_close(struct mcpx_http_conn *c, void (*fn)(void *arg), void *arg);

/* Drops the on_close hook (the transport no longer cares). */
void mcpx_http_forget(struct mcpx_http_conn *c);

#endif
