/*
 * http_revoke.c - a removed token ends what it opened: the server's auth
 * timer re-reads the token files, ends every dispatched request and stream
 * whose token a reload took away, and reviews a ServiceAccount token again
 * once its cached verdict runs out.
 *
 * Each request keeps which token let it in (http_conn.h: cred, sa_authz);
 * the sweeps walk the open connections in accept order. A token that no
 * longer passes, or now names another ServiceAccount, ends its request
 * (401) or stream as if the client had left; an API server that cannot say
 * leaves it for the next try. This file does not admit requests (the gate,
 * http_dispatch.c) or parse token files (auth_tokens.c).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "http_conn.h"
#include "log.h"
#include "tokenreview.h"

/* c came with a token that has been removed. Its transport lets go first
 * (the on_close hook, as if the client had left: its queued and running
 * calls are cancelled, their runs killed, and its stream is forgotten);
 * then the client learns it: a request still waiting for its answer gets
 * the 401 every failed authentication gets, a stream ends. */
static void end_revoked(struct mcpx_http_conn *c)
{
	void (*fn)(void *) = c->on_close;
	void *arg = c->close_arg;

	mcpx_http_forget(c);
	if (fn)
		fn(arg);
	if (!c->resp.started)
		mcpx_http_text(c, 401, MCPX_HTTP_UNAUTHORIZED, NULL);
	else if (c->resp.sse)
		mcpx_http_sse_end(c);
}

/* Ends every dispatched request and stream whose token a reload took
 * away. Requests still reading their body are refused at dispatch. */
static void revoke_sweep(struct mcpx_http_server *s)
{
	struct mcpx_http_conn *next;
	size_t n = 0;

	s->revocations = mcpx_auth_revocations(s->auth);
	for (struct mcpx_http_conn *c = s->oldest; c; c = next) {
		next = c->newer;
		if (!c->cred || c->phase != PH_DISPATCHED || c->closing || c->destroying ||
		    c->resp.ended || mcpx_auth_cred_live(s->auth, c->cred))
			continue;
		end_revoked(c);
		n++;
	}
	if (n)
		mcpx_warn("auth: ended %zu requests and streams whose token was removed", n);
}

/* After a re-review confirmed a token, or could not decide, the next one
 * waits this long at least: an API server that admits a token past its
 * exp claim (clock skew) must not be asked twice a second. */
#define REREVIEW_MIN_S 10

/* The verdict on a token admitted before: a refusal, or another
 * ServiceAccount's name, ends what it opened, like a removed named token;
 * an API server that cannot say leaves it for the next try. */
static void rereview_done(void *arg, int verdict, const char *caller)
{
	struct mcpx_http_conn *c = arg;

	c->review = NULL;
	c->sa_next_check = time(NULL) + REREVIEW_MIN_S;
	if (verdict == -EACCES || (verdict == 0 && strcmp(caller, c->req.caller) != 0)) {
		mcpx_warn("auth: the token of ServiceAccount %s no longer passes its review: its "
		          "request or stream in flight ends",
		          c->req.caller);
		end_revoked(c);
	}
}

/* While a cached admission lasts, a token is looked up again this often
 * (a hash and a walk of the cache, not a review). */
#define CACHED_RECHECK_S 2

/* ServiceAccount tokens are checked again once their cached verdict runs
 * out (at most 60 s, never past the token's exp claim), for as long as a
 * request or stream they opened lives. A cached verdict answers without
 * asking the API server. */
static void rereview_sweep(struct mcpx_http_server *s, time_t now)
{
	struct mcpx_http_conn *next;
	char caller[MCPX_CALLER_MAX];

	for (struct mcpx_http_conn *c = s->oldest; c; c = next) {
		int rc;

		next = c->newer;
		if (!c->sa_authz || c->review || c->phase != PH_DISPATCHED || c->closing ||
		    c->destroying || c->resp.ended || now < c->sa_next_check)
			continue;
		rc = mcpx_auth_identify(s->auth, NULL, 0, c->sa_authz, c->sa_authz_len, now, caller,
		                        NULL);
		if (rc == -EINPROGRESS) {
			/* Past the limits the next sweep tries again: a token
			 * admitted before is not cut off because strangers
			 * flood the door. */
			if (mcpx_auth_review(s->auth, c->sa_authz, c->sa_authz_len, NULL,
			                     rereview_done, c, &c->review) < 0)
				c->sa_next_check = now + 1;
		} else if (rc < 0 || strcmp(caller, c->req.caller) != 0)
			rereview_done(c, -EACCES, "");
		else
			c->sa_next_check = now + CACHED_RECHECK_S;
	}
}

#define AUTH_POLL_US 500000u

static void auth_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_http_server *s = t->arg;
	time_t now = time(NULL);

	mcpx_auth_poll(s->auth, now);
	if (mcpx_auth_revocations(s->auth) != s->revocations)
		revoke_sweep(s);
	rereview_sweep(s, now);
	mcpx_timer_start(s->loop, &s->auth_timer, AUTH_POLL_US);
}

/* The timer runs from the start with token files, from the first admitted
 * ServiceAccount token otherwise. */
void mcpx_http_auth_timer_arm(struct mcpx_http_server *s)
{
	if (s->auth_timer.armed)
		return;
	s->revocations = mcpx_auth_revocations(s->auth);
	s->auth_timer.fn = auth_timer_cb;
	s->auth_timer.arg = s;
	mcpx_timer_start(s->loop, &s->auth_timer, AUTH_POLL_US);
}
