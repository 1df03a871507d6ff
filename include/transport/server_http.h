/*
 * server_http.h - the HTTP/1.1 listener (libwebsockets) for every HTTP
 * transport, with the checks that need no MCP knowledge.
 *
 * Every request passes one admission gate (http_admit.h: route, auth,
 * Origin/Host, draining, MCP-Protocol-Version, body framing) before a body
 * byte is read. The server bounds the front door: a deadline for the head
 * (MCP_EXEC_HEADER_TIMEOUT_S) and for the body (MCP_EXEC_BODY_TIMEOUT_S), a
 * cap on open connections (MCP_EXEC_MAX_CONNECTIONS; the oldest connection
 * that has not passed the gate makes room for a new one), one request per
 * connection (pipelined bytes are dropped), and a client that goes away is
 * noticed at once. It answers Expect: 100-continue itself, refuses h2c and
 * WebSocket upgrades, and serves /healthz, /readyz and /metrics. Everything
 * else goes to the handlers. It re-reads the token files twice a second and
 * ends the requests and streams whose token was removed, and reviews a
 * ServiceAccount token again while what it opened lives (auth.h).
 */
#ifndef MCPX_SERVER_HTTP_H
#define MCPX_SERVER_HTTP_H

#include <stdbool.h>

#include "err.h"
#include "http.h"
#include "listen_addr.h"
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
	/* GET /mcp is admitted (to mcp) as a stream of server-initiated
	 * messages; false: 405. */
	bool mcp_stream;
};

/* Listens on addr (resolved from cfg->listen_host) and cfg->listen_port;
 * fails when that cannot be bound. Raises the soft RLIMIT_NOFILE to what
 * MCP_EXEC_MAX_CONNECTIONS needs (two descriptors per connection plus a
 * reserve), or fails when the hard limit is lower. */
int mcpx_http_server_new(struct mcpx_http_server **out, const struct mcpx_config *cfg,
			 const struct mcpx_listen_addr *addr, struct mcpx_auth *auth,
			 const struct mcpx_http_handlers *h, struct mcpx_err *err);
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
