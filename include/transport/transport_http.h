/*
 * transport_http.h - MCP over HTTP: Streamable HTTP at /mcp (sessions that
 * any replica can verify, and the stateless 2026-07-28 protocol) and the
 * legacy HTTP+SSE transport (GET /sse + POST /messages), on top of the
 * server in server_http.h. No libwebsockets here: requests and responses go
 * through http.h.
 */
#ifndef MCPX_TRANSPORT_HTTP_H
#define MCPX_TRANSPORT_HTTP_H

#include <stddef.h>

#include "http.h"
#include "mcp_types.h"

struct mcpx_core;
struct mcpx_sessions;
struct mcpx_loop;
struct mcpx_streamable;
struct mcpx_sse;

struct mcpx_streamable *mcpx_streamable_new(struct mcpx_core *core, struct mcpx_sessions *sessions,
					    struct mcpx_loop *loop);
void mcpx_streamable_free(struct mcpx_streamable *t);
void mcpx_streamable_handle(struct mcpx_streamable *t, struct mcpx_http_conn *c,
			    const struct mcpx_http_req *req);
size_t mcpx_streamable_open(const struct mcpx_streamable *t); /* POSTs awaiting a response */
/* Draining: every GET stream ends (the connections then close). */
void mcpx_streamable_close_streams(struct mcpx_streamable *t);

struct mcpx_sse *mcpx_sse_new(struct mcpx_core *core, struct mcpx_loop *loop);
void mcpx_sse_free(struct mcpx_sse *t);
void mcpx_sse_open(struct mcpx_sse *t, struct mcpx_http_conn *c, const struct mcpx_http_req *req);
void mcpx_sse_post(struct mcpx_sse *t, struct mcpx_http_conn *c, const struct mcpx_http_req *req);
size_t mcpx_sse_streams(const struct mcpx_sse *t);
/* Ends every stream (drain, once its calls are answered). */
void mcpx_sse_close_idle(struct mcpx_sse *t);

#endif
