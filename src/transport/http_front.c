/*
 * http_front.c - the server's HTTP side, wired (http_front.h): the
 * listener's host resolved once, the auth tokens read (a non-loopback
 * listener without one is refused, fail closed), Kubernetes TokenReview
 * when configured, session ids signed under the token's digest (re-keyed
 * when the token file rotates), the libwebsockets listener, its handlers
 * routed to Streamable HTTP and legacy SSE, /readyz and /metrics.
 *
 * It does not decide readiness or know the executor: the server's hooks
 * say whether it takes work and give its gauges. Nothing here is
 * libwebsockets code; server_http.c is.
 */
#include "http_front.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "auth.h"
#include "config.h"
#include "err.h"
#include "listen_addr.h"
#include "log.h"
#include "metrics.h"
#include "server_http.h"
#include "session.h"
#include "tokenreview.h"
#include "transport_http.h"

struct mcpx_http_front {
	struct mcpx_http_front_hooks hooks;
	struct mcpx_auth *auth;
	struct mcpx_tokenreview *k8s;  /* NULL: no Kubernetes tokens */
	unsigned long auth_generation; /* of the token the session key came from */
	struct mcpx_sessions *sessions;
	struct mcpx_http_server *http;
	struct mcpx_streamable *streamable;
	struct mcpx_sse *sse;
};

/* ---- handlers ---- */

static void h_mcp(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct mcpx_http_front *f = arg;

	/* A rotated token file moves the session key with it (sessions signed
	 * under the old token stop verifying; replicas reading the new token
	 * agree again). The gate has just re-read the file if it changed. */
	if (mcpx_auth_generation(f->auth) != f->auth_generation) {
		f->auth_generation = mcpx_auth_generation(f->auth);
		mcpx_sessions_rekey(f->sessions, mcpx_auth_digest(f->auth));
	}
	mcpx_streamable_handle(f->streamable, c, req);
}

static void h_sse_open(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct mcpx_http_front *f = arg;

	mcpx_sse_open(f->sse, c, req);
}

static void h_sse_post(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct mcpx_http_front *f = arg;

	mcpx_sse_post(f->sse, c, req);
}

static bool h_ready(void *arg, char *reason, size_t len)
{
	struct mcpx_http_front *f = arg;

	return f->hooks.ready(f->hooks.arg, reason, len);
}

static char *h_metrics(void *arg, size_t *len)
{
	struct mcpx_http_front *f = arg;
	struct mcpx_metrics_gauges g;
	char reason[64];

	memset(&g, 0, sizeof(g));
	f->hooks.gauges(f->hooks.arg, &g);
	g.sse_streams = mcpx_sse_streams(f->sse);
	g.active_sessions = mcpx_session_active(f->sessions, time(NULL), 600) + g.sse_streams;
	g.ready = h_ready(f, reason, sizeof(reason));
	return mcpx_metrics_render_scrape(&g, len);
}

/* ---- start ---- */

int mcpx_http_front_open_auth(struct mcpx_config *cfg, mcpx_may_read_fn may_read, void *ctx,
                              struct mcpx_auth **out, struct mcpx_err *err)
{
	if (mcpx_auth_new(out, &cfg->auth_token, cfg->auth_token_file, err) < 0)
		return -1;
	if (mcpx_auth_set_tokens_file(*out, cfg->auth_tokens_file, may_read, ctx, err) < 0) {
		mcpx_auth_free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* The options of a TokenReview client as cfg names them. */
static struct mcpx_tokenreview_opts review_opts(const struct mcpx_config *cfg)
{
	return (struct mcpx_tokenreview_opts){.api = cfg->auth_kubernetes_api,
	                                      .token_file = cfg->auth_kubernetes_token_file,
	                                      .ca_file = cfg->auth_kubernetes_ca_file,
	                                      .audience = cfg->auth_audience};
}

/* The tokens, refused without one on a listener others can reach, and the
 * session ids signed under them. */
static int start_auth(struct mcpx_http_front *f, struct mcpx_config *cfg, bool loopback)
{
	struct mcpx_err err = {{0}};

	if (mcpx_http_front_open_auth(cfg, f->hooks.may_read, f->hooks.may_read_ctx, &f->auth,
	                              &err) < 0) {
		mcpx_error("auth: %s", err.msg);
		return EX_CONFIG;
	}
	if (!mcpx_auth_enabled(f->auth) && !cfg->auth_kubernetes && !loopback &&
	    !cfg->insecure_no_auth) {
		mcpx_error("refusing to listen on %s without a token: set MCP_EXEC_AUTH_TOKEN, "
		           "MCP_EXEC_AUTH_TOKEN_FILE, MCP_EXEC_AUTH_TOKENS_FILE or "
		           "MCP_EXEC_AUTH_KUBERNETES, or pass --insecure-no-auth",
		           cfg->addr);
		return EX_CONFIG;
	}
	if (mcpx_auth_tokens_count(f->auth))
		mcpx_info("auth: %zu named tokens from %s", mcpx_auth_tokens_count(f->auth),
		          cfg->auth_tokens_file);
	if (!mcpx_auth_enabled(f->auth) && !cfg->auth_kubernetes)
		mcpx_warn("HTTP without auth (%s)",
		          loopback ? "loopback listener" : "--insecure-no-auth");
	f->auth_generation = mcpx_auth_generation(f->auth);
	f->sessions = mcpx_sessions_new_digest(cfg->session_key, mcpx_auth_digest(f->auth),
	                                       cfg->session_ttl_s);
	if (!f->sessions)
		return EX_OSERR;
	if (!mcpx_sessions_shared_key(f->sessions))
		mcpx_info("session ids are signed with a per-process key: set MCP_EXEC_SESSION_KEY "
		          "or a token so replicas accept each other's sessions");
	return 0;
}

/* Kubernetes ServiceAccount tokens, reviewed on the listener's loop. */
static int start_kubernetes(struct mcpx_http_front *f, const struct mcpx_config *cfg)
{
	struct mcpx_tokenreview_opts ko = review_opts(cfg);
	struct mcpx_err err = {{0}};

	if (!cfg->auth_kubernetes)
		return 0;
	if (mcpx_tokenreview_new(&f->k8s, mcpx_http_server_loop(f->http), &ko, &err) < 0) {
		mcpx_error("auth: %s", err.msg);
		return EX_CONFIG;
	}
	mcpx_auth_set_kubernetes(f->auth, f->k8s);
	mcpx_info("auth: Kubernetes ServiceAccount tokens with audience %s, reviewed at %s",
	          cfg->auth_audience, cfg->auth_kubernetes_api);
	return 0;
}

int mcpx_http_front_new(struct mcpx_http_front **out, struct mcpx_config *cfg,
                        const struct mcpx_http_front_hooks *hooks)
{
	struct mcpx_http_front *f = calloc(1, sizeof(*f));
	struct mcpx_err err = {{0}};
	struct mcpx_http_handlers h;
	struct mcpx_listen_addr addr;
	int rc;

	*out = f;
	if (!f)
		return EX_OSERR;
	f->hooks = *hooks;
	if (mcpx_listen_addr_resolve(cfg->listen_host, &addr, &err) < 0) {
		mcpx_error("%s", err.msg);
		return EX_CONFIG;
	}
	if ((rc = start_auth(f, cfg, addr.loopback)) != 0)
		return rc;
	memset(&h, 0, sizeof(h));
	h.mcp = h_mcp;
	h.sse_open = h_sse_open;
	h.sse_post = h_sse_post;
	h.ready = h_ready;
	h.metrics = h_metrics;
	h.arg = f;
	h.mcp_stream = hooks->mcp_stream;
	if (mcpx_http_server_new(&f->http, cfg, &addr, f->auth, &h, &err) < 0) {
		mcpx_error("http: %s", err.msg);
		return EX_UNAVAILABLE;
	}
	return start_kubernetes(f, cfg);
}

struct mcpx_loop *mcpx_http_front_loop(struct mcpx_http_front *f)
{
	return f && f->http ? mcpx_http_server_loop(f->http) : NULL;
}

int mcpx_http_front_port(const struct mcpx_http_front *f)
{
	return mcpx_http_server_port(f->http);
}

int mcpx_http_front_attach(struct mcpx_http_front *f, struct mcpx_core *core)
{
	struct mcpx_loop *loop = mcpx_http_server_loop(f->http);

	f->streamable = mcpx_streamable_new(core, f->sessions, loop);
	f->sse = mcpx_sse_new(core, loop);
	return f->streamable && f->sse ? 0 : -ENOMEM;
}

/* ---- draining ---- */

void mcpx_http_front_drain(struct mcpx_http_front *f)
{
	mcpx_http_server_drain(f->http);
}

void mcpx_http_front_close_idle(struct mcpx_http_front *f)
{
	if (f->sse)
		mcpx_sse_close_idle(f->sse);
	if (f->streamable)
		mcpx_streamable_close_streams(f->streamable);
}

bool mcpx_http_front_busy(const struct mcpx_http_front *f)
{
	return mcpx_streamable_open(f->streamable) ||
	       mcpx_http_server_busy(f->http) > mcpx_sse_streams(f->sse);
}

/* ---- teardown ---- */

void mcpx_http_front_close_sse(struct mcpx_http_front *f)
{
	if (!f)
		return;
	mcpx_sse_free(f->sse);
	f->sse = NULL;
}

/*
 * The listener owns both the loop and the connections, and lws closes
 * connections only when the whole context is destroyed. A Streamable HTTP
 * POST still attached to its connection then reports its close to the
 * transport and the core, so those two outlive the listener.
 */
void mcpx_http_front_free(struct mcpx_http_front *f)
{
	if (!f)
		return;
	/* Its sockets are on the loop, and requests waiting for a review are
	 * told before their connections go. */
	mcpx_tokenreview_free(f->k8s);
	if (f->http)
		mcpx_http_server_free(f->http);
	mcpx_streamable_free(f->streamable);
	mcpx_sessions_free(f->sessions);
	mcpx_auth_free(f->auth);
	free(f);
}

/* ---- --check-config ---- */

int mcpx_http_front_check_auth(struct mcpx_config *cfg, mcpx_may_read_fn may_read, void *ctx,
                               bool loopback)
{
	struct mcpx_err err = {{0}};
	struct mcpx_auth *auth = NULL;
	struct mcpx_tokenreview_opts ko = review_opts(cfg);
	struct mcpx_tokenreview *tr = NULL;

	if (mcpx_http_front_open_auth(cfg, may_read, ctx, &auth, &err) < 0) {
		printf("auth: FAILED: %s\n", err.msg);
		return -1;
	}
	if (!mcpx_auth_enabled(auth) && !cfg->auth_kubernetes && !loopback &&
	    !cfg->insecure_no_auth) {
		printf("auth: MISSING: a non-loopback listener needs a token (fail closed)\n");
		mcpx_auth_free(auth);
		return -1;
	}
	mcpx_auth_free(auth);
	if (!cfg->auth_kubernetes)
		return 0;
	/* The files a review needs, as the start checks them (no request is
	 * made here). */
	if (mcpx_tokenreview_new(&tr, NULL, &ko, &err) < 0) {
		printf("auth: FAILED: %s\n", err.msg);
		return -1;
	}
	mcpx_tokenreview_free(tr);
	return 0;
}
