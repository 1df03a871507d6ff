/*
 * http_conn.h - the HTTP server's connection record, shared by the five
 * files of the server: server_http.c (the lws context and request intake),
 * http_dispatch.c (a complete request handed on by its route),
 * http_revoke.c (what a removed token opened, ended), http_conn.c (a
 * connection's life: cap, deadlines, the head gate, the peer watch) and
 * http_response.c (writing responses). Private to them.
 *
 * One connection carries one request: every response ends with the
 * connection closed (see http_conn.c for why libwebsockets 4.1.6 leaves no
 * safe way to keep it open), so the record is both the connection and the
 * request.
 */
#ifndef MCPX_HTTP_CONN_H
#define MCPX_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "buf.h"
#include "http.h"
#include "http_admit.h"
#include "listen_addr.h"
#include "loop.h"
#include "server_http.h"

struct lws;
struct lws_context;
struct lws_vhost;
struct peer_watch;

/* A request head longer than this is refused (431); lws stores no more. */
#define MCPX_HTTP_HEAD_MAX 16384

enum conn_phase {
	PH_HEAD,       /* waiting for the whole request head to arrive */
	PH_PARSING,    /* the head is in; libwebsockets is parsing it */
	PH_BODY,       /* admitted; reading Content-Length bytes */
	PH_DISPATCHED, /* handed to a transport; the response may take long */
};

struct mcpx_http_server {
	struct lws_context *ctx;
	struct lws_vhost *vhost;
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	struct mcpx_listen_addr addr;
	struct mcpx_auth *auth;
	struct mcpx_http_handlers h;
	bool draining;
	bool shutting_down;                     /* the context is being destroyed */
	unsigned busy;                          /* dispatched requests not yet closed */
	unsigned live;                          /* open connections not being closed */
	unsigned max_conns;                     /* the cap: MCP_EXEC_MAX_CONNECTIONS, or what fits RLIMIT_NOFILE */
	struct mcpx_http_conn *oldest, *newest; /* accept order */
	size_t out_cap;                         /* cap on one response's queued bytes */
	int port;
	/* Re-reads the token files every second, so a removed token ends
	 * what it opened (http_revoke.c, revoke_sweep) without a request. */
	struct mcpx_timer auth_timer;
	unsigned long revocations; /* mcpx_auth_revocations() last swept for */
};

struct mcpx_http_response {
	bool started; /* headers queued */
	bool headers_sent;
	bool sse;
	bool ended;  /* nothing more will be queued */
	bool broken; /* a stream outgrew its cap: close instead of writing */
	int status;
	char content_type[64];
	long long content_length; /* -1: a stream, ended by closing */
	struct mcpx_buf extra;    /* "Name: value\r\n" lines */
	struct mcpx_buf out;      /* queued body bytes */
	size_t out_off;           /* bytes of out already written */
};

struct mcpx_http_conn {
	struct lws *wsi;
	struct mcpx_http_server *srv;
	struct mcpx_http_conn *older, *newer;
	enum conn_phase phase;
	bool admitted;   /* passed the gate for a route that needs it: never evicted */
	bool closing;    /* a close was asked for; WSI_DESTROY follows */
	bool destroying; /* inside WSI_DESTROY */
	bool rx_paused;  /* libwebsockets is not reading the socket */
	bool body_done;  /* no request body bytes remain to be read */
	bool counted_busy;

	struct mcpx_timer deadline; /* head, then body */
	struct peer_watch *peer;    /* a dup of the socket, see http_conn.c */
	size_t head_len;            /* bytes of the request head, found by the head gate */
	size_t discarded;           /* bytes the client sent while its request was in flight */

	struct mcpx_http_req req;
	/* The token the request came with (auth.h, mcpx_auth_cred_live); 0:
	 * none of the server's (auth disabled, a ServiceAccount). */
	unsigned long cred;
	/* A Bearer token awaiting its TokenReview (http_admit.h: review): the
	 * header value, kept (and wiped) until the review ends. */
	char *review_authz;
	size_t review_authz_len, review_consumed;
	struct mcpx_review *review;
	/* An admitted ServiceAccount token, kept (and wiped at the end) while
	 * the request or stream lives, to review it again once its cached
	 * verdict runs out (http_revoke.c, rereview_sweep). */
	char *sa_authz;
	size_t sa_authz_len;
	time_t sa_next_check; /* not before: a re-review just confirmed it */
	enum mcpx_http_route route;
	struct mcpx_buf body;
	size_t body_expected;
	/* A refusal that waits for the body to carry the request's id
	 * (mcpx_admit_set_id); owned, freed by mcpx_conn_destroy. */
	struct mcpx_admit *refusal;

	struct mcpx_http_response resp;
	void (*on_close)(void *arg);
	void *close_arg;
};

/* http_conn.c */
int mcpx_conn_accept(struct mcpx_http_server *s, struct lws *wsi);
void mcpx_conn_destroy(struct mcpx_http_conn *c);
/* Closes the connection now (not from inside its own lws callback: return
 * -1 there instead). reason labels the metrics; NULL for a normal close. */
void mcpx_conn_kill(struct mcpx_http_conn *c, const char *reason);
void mcpx_conn_start_deadline(struct mcpx_http_conn *c, unsigned seconds);
void mcpx_conn_stop_deadline(struct mcpx_http_conn *c);
/* True when the client sent bytes beyond this request before it was read
 * whole (pipelining); consumed: head plus body bytes that belong to it. */
bool mcpx_conn_overread(const struct mcpx_http_conn *c, size_t consumed);
/* In flight: libwebsockets stops reading; the peer watch notices EOF and
 * discards whatever else the client sends. 0 or -errno (no descriptor). */
int mcpx_conn_in_flight(struct mcpx_http_conn *c);
void mcpx_conn_rx(struct mcpx_http_conn *c, bool on);

/* http_response.c */
int mcpx_conn_writeable(struct mcpx_http_conn *c);
/* A text/plain; charset=utf-8 response: body, and extra header lines. */
void mcpx_http_text(struct mcpx_http_conn *c, int status, const char *body, const char *extra);
/* Called when the request body has been read (or discarded) whole: a
 * connection whose response already went out may close now. */
bool mcpx_conn_response_done(const struct mcpx_http_conn *c);

/* http_dispatch.c */
/* /healthz, /readyz or /metrics, by c->route. */
void mcpx_http_serve_ops(struct mcpx_http_conn *c);
/* Hands the complete request to its transport (after its TokenReview, if
 * the gate asked for one); consumed is the bytes of head and body, to tell
 * whether the client sent more behind them. Returns 0. */
int mcpx_http_dispatch(struct mcpx_http_conn *c, size_t consumed);

/* http_revoke.c */
/* Starts the auth timer (token files re-read, revoked tokens' requests
 * ended, ServiceAccount tokens re-reviewed) unless it runs already. */
void mcpx_http_auth_timer_arm(struct mcpx_http_server *s);

#endif
