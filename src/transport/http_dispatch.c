/*
 * http_dispatch.c - an admitted request handed on by its route: the
 * operations endpoints (/healthz, /readyz, /metrics) answered here, a
 * Bearer token that needs a TokenReview held until its verdict, and
 * everything else given to its transport (Streamable HTTP, SSE) through
 * the server's handlers.
 *
 * server_http.c reads the head, puts it to the gate and collects the body;
 * what happens once a request is complete and allowed in is here, so each
 * route's first step reads in one place. A review that cannot start is
 * answered 429 (a limit, named) or 503, never admitted. This file does not
 * parse heads, judge credentials (auth.c, tokenreview.c) or write bytes to
 * the socket (http_response.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "crypto.h"
#include "http_conn.h"
#include "log.h"
#include "metrics.h"
#include "tokenreview.h"

void mcpx_http_serve_ops(struct mcpx_http_conn *c)
{
	struct mcpx_http_server *s = c->srv;
	char reason[200], body[300];
	size_t len = 0;
	char *text;

	if (c->route == MCPX_ROUTE_HEALTHZ) {
		mcpx_http_respond(c, 200, "application/json", "{\"status\":\"ok\"}", 15, NULL);
	} else if (c->route == MCPX_ROUTE_READYZ) {
		bool ok =
		    !s->draining && (!s->h.ready || s->h.ready(s->h.arg, reason, sizeof(reason)));
		if (s->draining)
			snprintf(reason, sizeof(reason), "draining");
		snprintf(body, sizeof(body),
		         ok ? "{\"status\":\"ready\"}"
		            : "{\"status\":\"not ready\",\"reason\":\"%s\"}",
		         reason);
		mcpx_http_respond(c, ok ? 200 : 503, "application/json", body, strlen(body), NULL);
	} else {
		text = s->h.metrics ? s->h.metrics(s->h.arg, &len) : NULL;
		if (!text) {
			mcpx_http_text(c, 500, "metrics unavailable\n", NULL);
			return;
		}
		mcpx_http_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len,
		                  NULL);
		free(text);
	}
}

static void review_forget(struct mcpx_http_conn *c)
{
	if (c->review_authz) {
		mcpx_wipe(c->review_authz, c->review_authz_len);
		free(c->review_authz);
		c->review_authz = NULL;
	}
}

/* The client left while its token was being reviewed. */
static void review_closed(void *arg)
{
	struct mcpx_http_conn *c = arg;

	mcpx_review_cancel(c->review);
	c->review = NULL;
	review_forget(c);
}

/* The TokenReview's verdict: dispatch as that ServiceAccount, or answer
 * as for any wrong token (401, the same body), or 503 when the API server
 * could not say: an unanswered review never admits. */
static void review_done(void *arg, int verdict, const char *caller)
{
	struct mcpx_http_conn *c = arg;

	c->review = NULL;
	if (verdict == 0) {
		/* Kept to be reviewed again while the request lives. */
		c->sa_authz = c->review_authz;
		c->sa_authz_len = c->review_authz_len;
		c->review_authz = NULL;
		mcpx_http_auth_timer_arm(c->srv);
	}
	review_forget(c);
	mcpx_http_forget(c);
	if (verdict == 0) {
		snprintf(c->req.caller, sizeof(c->req.caller), "%s", caller);
		(void)mcpx_http_dispatch(c, c->review_consumed);
	} else if (verdict == -EACCES) {
		mcpx_http_text(c, 401, MCPX_HTTP_UNAUTHORIZED, NULL);
	} else if (verdict == -ECANCELED) {
		mcpx_http_text(c, 503, "server is shutting down\n", NULL);
	} else {
		mcpx_warn("a request with a ServiceAccount token was refused (503): the API server "
		          "could not review it");
		mcpx_http_text(c, 503, "authentication unavailable: try again later\n",
		               "Retry-After: 5\r\n");
	}
}

/* The answer to a request whose review could not start (auth.h,
 * mcpx_auth_review): past a limit, 429 saying which, so a client knows to
 * slow down; otherwise the server could not ask (503). */
static void review_refused(struct mcpx_http_conn *c, int rc)
{
	if (rc == -EAGAIN)
		mcpx_http_text(c, 429,
		               "too many token reviews from this address: try again later\n",
		               "Retry-After: 1\r\n");
	else if (rc == -EBUSY)
		mcpx_http_text(c, 429, "too many token reviews: try again later\n",
		               "Retry-After: 1\r\n");
	else if (rc == -ENOBUFS)
		mcpx_http_text(c, 429, "too many token reviews in progress: try again later\n",
		               "Retry-After: 1\r\n");
	else
		mcpx_http_text(c, 503, "authentication unavailable: try again later\n",
		               "Retry-After: 5\r\n");
}

/* Starts the review the gate asked for; the request waits, in flight, for
 * review_done. */
static int start_review(struct mcpx_http_conn *c, size_t consumed)
{
	int rc;

	if (mcpx_conn_in_flight(c) < 0) {
		review_forget(c);
		mcpx_http_text(c, 503, "server is out of descriptors\n", "Retry-After: 1\r\n");
		return 0;
	}
	c->review_consumed = consumed;
	/* Busy from here, so a drain waits for the verdict (at most the
	 * review's timeout) and answers it instead of dropping it. */
	c->counted_busy = true;
	c->srv->busy++;
	rc = mcpx_auth_review(c->srv->auth, c->review_authz, c->review_authz_len, c->req.remote,
	                      review_done, c, &c->review);
	if (rc < 0) {
		review_forget(c);
		review_refused(c, rc);
		return 0;
	}
	mcpx_http_on_close(c, review_closed, c);
	return 0;
}

/* Hands the complete request to its transport; consumed is the bytes of
 * head and body, to tell whether the client sent more behind them. */
int mcpx_http_dispatch(struct mcpx_http_conn *c, size_t consumed)
{
	struct mcpx_http_server *s = c->srv;

	if (mcpx_conn_overread(c, consumed)) {
		/* Pipelining: answer this request, drop the rest. Running it
		 * would keep lws spinning on the bytes behind it. */
		mcpx_metrics_http_conn_closed("pipelined");
		mcpx_http_text(c, 400,
		               "pipelined requests are not supported: send one request per "
		               "connection\n",
		               NULL);
		return 0;
	}
	if (c->review_authz)
		return start_review(c, consumed);
	/* Its token was removed while the body was on its way. */
	if (!mcpx_auth_cred_live(s->auth, c->cred)) {
		mcpx_http_text(c, 401, MCPX_HTTP_UNAUTHORIZED, NULL);
		return 0;
	}
	if (c->phase != PH_DISPATCHED && mcpx_conn_in_flight(c) < 0) {
		mcpx_http_text(c, 503, "server is out of descriptors\n", "Retry-After: 1\r\n");
		return 0;
	}
	if (!c->counted_busy) {
		c->counted_busy = true;
		s->busy++;
	}
	c->req.body = mcpx_buf_str(&c->body);
	c->req.body_len = c->body.len;
	if (c->route == MCPX_ROUTE_MCP)
		s->h.mcp(s->h.arg, c, &c->req);
	else if (c->route == MCPX_ROUTE_SSE_OPEN)
		s->h.sse_open(s->h.arg, c, &c->req);
	else
		s->h.sse_post(s->h.arg, c, &c->req);
	return 0;
}
