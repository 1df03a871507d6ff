/*
 * server_http.h - the HTTP/1.1 listener (libwebsockets) for every HTTP
 * transport, with the checks that need no MCP knowledge.
 *
 * Before a request body is read the server checks, in order: method and path
 * (404/405), auth (401, no detail; the operations endpoints are exempt),
 * Origin (403) and, on a loopback listener, Host (403), draining (503),
 * Content-Length present (411) and within MCP_EXEC_MAX_BODY_BYTES (413). It
 * answers Expect: 100-continue itself, refuses h2c and WebSocket upgrades,
 * and serves /healthz, /readyz and /metrics. Everything else goes to the
 * handlers.
 */
#ifndef MCPX_SERVER_HTTP_H
#define MCPX_SERVER_HTTP_H

#include <stdbool.h>

#include "err.h"
#include "http.h"
#include "loop.h"

struct mcpx_config;
struct mcpx_auth;
struct mcpx_http_server;

struct mcpx_http_handlers {
	void (*mcp)(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req);
	void (*sse_open)(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req);
	void (*sse_post)(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req);
	/* Readiness: true when ready; otherwise a reason. */
	bool (*ready)(void *arg, char *reason, size_t len);
	/* Prometheus text (malloc'd). */
	char *(*metrics)(void *arg, size_t *len);
	void *arg;
};

int mcpx_http_server_new(struct mcpx_http_server **out, const struct mcpx_config *cfg,
			 struct mcpx_auth *auth, const struct mcpx_http_handlers *h,
			 struct mcpx_err *err);
void mcpx_http_server_free(struct mcpx_http_server *s);

/* The loop sharing the server's lws context (for the executor). */
struct mcpx_loop *mcpx_http_server_loop(struct mcpx_http_server *s);
/* The port actually bound (useful with port 0). */
int mcpx_http_server_port(const struct mcpx_http_server *s);
/* Draining: new MCP requests get 503; existing ones finish. */
void mcpx_http_server_drain(struct mcpx_http_server *s);
/* Open connections still owing a response or holding a stream. */
unsigned mcpx_http_server_busy(const struct mcpx_http_server *s);

#endif
