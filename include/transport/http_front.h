/*
 * http_front.h - the server's HTTP side, wired: the listener's address
 * resolved, the auth tokens (and Kubernetes TokenReview), session ids, the
 * libwebsockets listener, and the MCP transports it routes to (Streamable
 * HTTP at /mcp, legacy SSE at /sse), /readyz and /metrics.
 *
 * app.c starts it before the core (the listener owns the loop the core
 * runs on), attaches the core once it exists, and hands it what only the
 * server knows: whether it takes work now, and its executor's gauges.
 */
#ifndef MCPX_HTTP_FRONT_H
#define MCPX_HTTP_FRONT_H

#include <stdbool.h>
#include <stddef.h>

struct mcpx_auth;
struct mcpx_config;
struct mcpx_core;
struct mcpx_err;
struct mcpx_loop;
struct mcpx_metrics_gauges;
struct mcpx_http_front;

/* Whether a path is one a run could read (the sandbox's judgement), for
 * the secret files the front reads; NULL when no file is hidden from runs. */
typedef bool (*mcpx_may_read_fn)(void *ctx, const char *path);

struct mcpx_http_front_hooks {
	/* Whether the server takes work now; the reason when not. */
	bool (*ready)(void *arg, char *reason, size_t len);
	/* The gauges only the server knows (queue depth, running, draining). */
	void (*gauges)(void *arg, struct mcpx_metrics_gauges *g);
	void *arg;
	/* GET /mcp streams carry notifications/tools/list_changed. */
	bool mcp_stream;
	/* For the tokens file (auth.h); NULL: nothing is hidden from runs. */
	mcpx_may_read_fn may_read;
	void *may_read_ctx;
};

/* Starts the HTTP side for cfg: listens, and refuses a non-loopback
 * listener without a token. Returns 0 with *out, or a sysexits code with
 * the reason logged (*out is then NULL or to be freed). cfg is mutable only
 * so the auth module can take and wipe the token; hooks is copied. */
int mcpx_http_front_new(struct mcpx_http_front **out, struct mcpx_config *cfg,
                        const struct mcpx_http_front_hooks *hooks);
/* The loop the listener runs (the server's loop). */
struct mcpx_loop *mcpx_http_front_loop(struct mcpx_http_front *f);
int mcpx_http_front_port(const struct mcpx_http_front *f);
/* The MCP transports, on core. -ENOMEM, or 0. */
int mcpx_http_front_attach(struct mcpx_http_front *f, struct mcpx_core *core);

/* Draining: new requests are refused (503). */
void mcpx_http_front_drain(struct mcpx_http_front *f);
/* While draining: the SSE streams and the GET /mcp streams end, once their
 * calls are answered. */
void mcpx_http_front_close_idle(struct mcpx_http_front *f);
/* Whether work is still in flight on the HTTP side: a POST awaiting its
 * response, or a connection busy beyond the SSE streams. */
bool mcpx_http_front_busy(const struct mcpx_http_front *f);

/* Teardown in two steps around the core's: the SSE streams go before the
 * core's calls are cancelled (they detach their sinks themselves); the
 * rest after the work is gone, the listener (and the loop) first, then the
 * transports its closing connections reached, sessions and auth. The core
 * goes after both. NULL is fine. */
void mcpx_http_front_close_sse(struct mcpx_http_front *f);
void mcpx_http_front_free(struct mcpx_http_front *f);

/* The tokens as the start reads them: the single one (caller "default")
 * and the named tokens file, which may not lie where runs can read it. */
int mcpx_http_front_open_auth(struct mcpx_config *cfg, mcpx_may_read_fn may_read, void *ctx,
                              struct mcpx_auth **out, struct mcpx_err *err);
/* --check-config's lines about the HTTP side's auth, as the start would
 * judge it (no request is made). 0, or -1 with the failure printed. */
int mcpx_http_front_check_auth(struct mcpx_config *cfg, mcpx_may_read_fn may_read, void *ctx,
                               bool loopback);

#endif
