/*
 * server_http.c - the libwebsockets 4.1.6 HTTP/1.1 server under every HTTP
 * transport.
 *
 * One vhost, one protocol callback, no mounts: every request arrives at
 * LWS_CALLBACK_HTTP, where it is routed and checked before any body byte is
 * read. A per-request struct mcpx_http_conn carries the parsed request, the
 * body (capped), and the response being written. Transports answer through
 * http.h at any time; this file queues the bytes and writes them from
 * LWS_CALLBACK_HTTP_WRITEABLE in bounded chunks, the only place lws allows it.
 *
 * lws 4.1.6 facts this relies on (see the research notes): custom headers are
 * readable only on HTTP/1 (so h2c upgrades are refused), chunked request
 * bodies are not decoded (so Content-Length is required), and Expect:
 * 100-continue is not answered by lws (so it is answered here).
 */
#include "server_http.h"

#include <errno.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "config.h"
#include "log.h"
#include "loop_lws.h"
#include "metrics.h"
#include "origin.h"

#define WRITE_CHUNK 32768u

struct mcpx_http_server {
	struct lws_context *ctx;
	struct lws_vhost *vhost;
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	struct mcpx_auth *auth;
	struct mcpx_http_handlers h;
	bool draining;
	unsigned busy;
	int port;
};

enum route { R_NONE, R_MCP, R_SSE_OPEN, R_SSE_POST };

struct mcpx_http_conn {
	struct lws *wsi;
	struct mcpx_http_server *srv;
	struct mcpx_http_req req;
	enum route route;
	char *body;
	size_t body_len, body_expected;
	bool dispatched;

	/* Response. */
	bool responding; /* a response was started (headers queued) */
	bool headers_sent;
	bool sse;
	bool ended;
	int status;
	char content_type[64];
	long long content_length;
	char *extra_headers;
	char *out;
	size_t out_len, out_off, out_cap;

	void (*on_close)(void *arg);
	void *close_arg;
	bool counted_busy;
};

/* ---- helpers ---- */

static int copy_hdr(struct lws *wsi, enum lws_token_indexes t, char *buf, size_t len)
{
	int n;
	buf[0] = '\0';
	if (lws_hdr_total_length(wsi, t) <= 0)
		return 0;
	n = lws_hdr_copy(wsi, buf, (int)len, t);
	if (n < 0) {
		buf[0] = '\0';
		return -1; /* longer than we accept */
	}
	return n;
}

static int copy_custom(struct lws *wsi, const char *name, char *buf, size_t len)
{
	int n, nlen = (int)strlen(name);
	buf[0] = '\0';
	n = lws_hdr_custom_length(wsi, name, nlen);
	if (n <= 0)
		return 0;
	if ((size_t)n >= len)
		return -1;
	n = lws_hdr_custom_copy(wsi, buf, (int)len, name, nlen);
	if (n < 0) {
		buf[0] = '\0';
		return -1;
	}
	buf[n] = '\0';
	return n;
}

static int out_append(struct mcpx_http_conn *c, const char *p, size_t n)
{
	if (c->out_len + n > c->out_cap) {
		size_t ncap = c->out_cap ? c->out_cap : 4096;
		while (ncap < c->out_len + n)
			ncap *= 2;
		char *nb = realloc(c->out, ncap);
		if (!nb)
			return -ENOMEM;
		c->out = nb;
		c->out_cap = ncap;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return 0;
}

static void conn_free(struct mcpx_http_conn *c)
{
	if (c->counted_busy)
		c->srv->busy--;
	free(c->body);
	free(c->out);
	free(c->extra_headers);
	free(c);
}

static void start_response(struct mcpx_http_conn *c, int status, const char *ctype,
			   long long content_length, const char *extra, bool sse)
{
	if (c->responding)
		return;
	c->responding = true;
	c->status = status;
	snprintf(c->content_type, sizeof(c->content_type), "%s", ctype ? ctype : "");
	c->content_length = content_length;
	c->sse = sse;
	c->extra_headers = extra ? strdup(extra) : NULL;
	mcpx_metrics_http_response(status);
	lws_callback_on_writable(c->wsi);
}

/* ---- the http.h API for transports ---- */

void mcpx_http_respond(struct mcpx_http_conn *c, int status, const char *content_type,
		       const char *body, size_t len, const char *extra_headers)
{
	if (!c || c->responding)
		return;
	if (len && out_append(c, body, len) < 0)
		len = 0, status = 500;
	start_response(c, status, content_type, (long long)len, extra_headers, false);
	c->ended = true;
}

void mcpx_http_sse_begin(struct mcpx_http_conn *c, const char *extra_headers)
{
	if (!c || c->responding)
		return;
	start_response(c, 200, "text/event-stream", -1, extra_headers, true);
}

void mcpx_http_sse_event(struct mcpx_http_conn *c, const char *event, const char *id,
			 const char *data, size_t len)
{
	char line[300];
	size_t i = 0;

	if (!c || !c->sse || c->ended)
		return;
	if (event) {
		snprintf(line, sizeof(line), "event: %s\n", event);
		out_append(c, line, strlen(line));
	}
	if (id) {
		snprintf(line, sizeof(line), "id: %s\n", id);
		out_append(c, line, strlen(line));
	}
	/* Each line of data becomes its own data: field. */
	do {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : len - i;
		out_append(c, "data: ", 6);
		out_append(c, data + i, n);
		out_append(c, "\n", 1);
		i += n + (nl ? 1 : 0);
	} while (i < len);
	out_append(c, "\n", 1);
	lws_callback_on_writable(c->wsi);
}

void mcpx_http_sse_comment(struct mcpx_http_conn *c, const char *text)
{
	if (!c || !c->sse || c->ended)
		return;
	out_append(c, ": ", 2);
	out_append(c, text, strlen(text));
	out_append(c, "\n\n", 2);
	lws_callback_on_writable(c->wsi);
}

void mcpx_http_sse_end(struct mcpx_http_conn *c)
{
	if (!c || c->ended)
		return;
	c->ended = true;
	lws_callback_on_writable(c->wsi);
}

void mcpx_http_on_close(struct mcpx_http_conn *c, void (*fn)(void *arg), void *arg)
{
	c->on_close = fn;
	c->close_arg = arg;
}

void mcpx_http_forget(struct mcpx_http_conn *c)
{
	if (c) {
		c->on_close = NULL;
		c->close_arg = NULL;
	}
}

/* ---- writing ---- */

static int write_headers(struct mcpx_http_conn *c)
{
	unsigned char buf[LWS_PRE + 4096], *start = buf + LWS_PRE, *p = start,
					   *end = buf + sizeof(buf) - 1;
	const char *h = c->extra_headers;

	if (lws_add_http_common_headers(c->wsi, (unsigned)c->status,
					c->content_type[0] ? c->content_type : NULL,
					c->content_length < 0 ? LWS_ILLEGAL_HTTP_CONTENT_LEN
							      : (lws_filepos_t)c->content_length,
					&p, end))
		return -1;
	if (c->sse) {
		if (lws_add_http_header_by_name(c->wsi, (const unsigned char *)"cache-control:",
						(const unsigned char *)"no-cache", 8, &p, end) ||
		    lws_add_http_header_by_name(c->wsi, (const unsigned char *)"x-accel-buffering:",
						(const unsigned char *)"no", 2, &p, end))
			return -1;
	}
	/* extra headers: "Name: value\r\n" lines; lws wants "name:" lower-case. */
	while (h && *h) {
		const char *colon = strchr(h, ':'), *eol = strstr(h, "\r\n");
		char name[64];
		size_t nlen;
		if (!colon || !eol || colon > eol)
			break;
		nlen = (size_t)(colon - h);
		if (nlen + 2 > sizeof(name))
			break;
		for (size_t i = 0; i < nlen; i++)
			name[i] = (char)((h[i] >= 'A' && h[i] <= 'Z') ? h[i] + 32 : h[i]);
		name[nlen] = ':';
		name[nlen + 1] = '\0';
		const char *v = colon + 1;
		while (*v == ' ')
			v++;
		if (lws_add_http_header_by_name(c->wsi, (const unsigned char *)name,
						(const unsigned char *)v, (int)(eol - v), &p, end))
			return -1;
		h = eol + 2;
	}
	if (lws_finalize_write_http_header(c->wsi, start, &p, end))
		return -1;
	c->headers_sent = true;
	if (c->sse)
		lws_http_mark_sse(c->wsi);
	return 0;
}

/* Returns -1 to close the connection, 0 to keep it. */
static int on_writeable(struct mcpx_http_conn *c)
{
	unsigned char buf[LWS_PRE + WRITE_CHUNK];

	if (!c->responding)
		return 0;
	if (!c->headers_sent) {
		if (write_headers(c) < 0)
			return -1;
		if (c->out_off < c->out_len || !c->ended || c->sse) {
			lws_callback_on_writable(c->wsi);
			return 0;
		}
	}
	if (c->out_off < c->out_len) {
		size_t n = c->out_len - c->out_off;
		bool last;
		if (n > WRITE_CHUNK)
			n = WRITE_CHUNK;
		last = c->ended && !c->sse && c->out_off + n == c->out_len;
		memcpy(buf + LWS_PRE, c->out + c->out_off, n);
		if (lws_write(c->wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) <
		    (int)n)
			return -1;
		c->out_off += n;
		if (c->out_off == c->out_len)
			c->out_off = c->out_len = 0;
		if (!last) {
			lws_callback_on_writable(c->wsi);
			return 0;
		}
	}
	if (!c->ended)
		return 0;
	if (c->sse)
		return -1; /* a stream without Content-Length ends by closing */
	/* Response complete: keep-alive for the next request. */
	c->on_close = NULL;
	lws_set_opaque_user_data(c->wsi, NULL);
	{
		struct lws *wsi = c->wsi;
		conn_free(c);
		if (lws_http_transaction_completed(wsi))
			return -1;
	}
	return 0;
}

/* ---- request intake ---- */

static void simple(struct mcpx_http_conn *c, int status, const char *body, const char *extra)
{
	mcpx_http_respond(c, status, "text/plain; charset=utf-8", body, strlen(body), extra);
}

static enum mcpx_http_method get_method(struct lws *wsi)
{
	if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI))
		return MCPX_HTTP_GET;
	if (lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI))
		return MCPX_HTTP_POST;
	if (lws_hdr_total_length(wsi, WSI_TOKEN_DELETE_URI))
		return MCPX_HTTP_DELETE;
	return MCPX_HTTP_OTHER;
}

static bool reserved_path(const char *p)
{
	return !strcmp(p, "/mcp") || !strcmp(p, "/healthz") || !strcmp(p, "/readyz") ||
	       !strcmp(p, "/metrics") || !strcmp(p, "/messages");
}

static void serve_ops(struct mcpx_http_conn *c)
{
	struct mcpx_http_server *s = c->srv;
	char reason[200];

	if (!strcmp(c->req.path, "/healthz")) {
		mcpx_http_respond(c, 200, "application/json", "{\"status\":\"ok\"}", 15, NULL);
	} else if (!strcmp(c->req.path, "/readyz")) {
		char body[300];
		bool ok = !s->draining && (!s->h.ready || s->h.ready(s->h.arg, reason, sizeof(reason)));
		if (s->draining)
			snprintf(reason, sizeof(reason), "draining");
		snprintf(body, sizeof(body), ok ? "{\"status\":\"ready\"}"
						: "{\"status\":\"not ready\",\"reason\":\"%s\"}",
			 reason);
		mcpx_http_respond(c, ok ? 200 : 503, "application/json", body, strlen(body), NULL);
	} else {
		size_t len = 0;
		char *text = s->h.metrics ? s->h.metrics(s->h.arg, &len) : NULL;
		if (!text) {
			simple(c, 500, "metrics unavailable\n", NULL);
			return;
		}
		mcpx_http_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
		free(text);
	}
}

static void dispatch(struct mcpx_http_conn *c)
{
	struct mcpx_http_server *s = c->srv;

	c->dispatched = true;
	c->req.body = c->body ? c->body : "";
	c->req.body_len = c->body_len;
	/* From here the response may take as long as the execution does. */
	lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
	if (!c->counted_busy) {
		c->counted_busy = true;
		s->busy++;
	}
	switch (c->route) {
	case R_MCP:
		s->h.mcp(s->h.arg, c, &c->req);
		break;
	case R_SSE_OPEN:
		s->h.sse_open(s->h.arg, c, &c->req);
		break;
	case R_SSE_POST:
		s->h.sse_post(s->h.arg, c, &c->req);
		break;
	default:
		simple(c, 404, "not found\n", NULL);
	}
}

/* Returns 0 to go on (body follows or dispatched), or the lws return value. */
static int on_http(struct mcpx_http_server *s, struct lws *wsi, const char *path)
{
	struct mcpx_http_conn *c = lws_get_opaque_user_data(wsi);
	const struct mcpx_config *cfg = s->cfg;
	char auth[4096], xauth[4096], cl[32], expect[64], te[64];
	bool sse_mode = cfg->transport == MCPX_TRANSPORT_SSE;

	if (c)
		conn_free(c);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->wsi = wsi;
	c->srv = s;
	lws_set_opaque_user_data(wsi, c);

	c->req.method = get_method(wsi);
	snprintf(c->req.path, sizeof(c->req.path), "%s", path ? path : "/");
	if (copy_hdr(wsi, WSI_TOKEN_HOST, c->req.host, sizeof(c->req.host)) < 0 ||
	    copy_hdr(wsi, WSI_TOKEN_ORIGIN, c->req.origin, sizeof(c->req.origin)) < 0 ||
	    copy_hdr(wsi, WSI_TOKEN_HTTP_ACCEPT, c->req.accept, sizeof(c->req.accept)) < 0 ||
	    copy_hdr(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, c->req.content_type,
		     sizeof(c->req.content_type)) < 0 ||
	    copy_custom(wsi, "mcp-session-id:", c->req.session_id, sizeof(c->req.session_id)) < 0 ||
	    copy_custom(wsi, "mcp-protocol-version:", c->req.protocol_version,
			sizeof(c->req.protocol_version)) < 0 ||
	    copy_custom(wsi, "mcp-method:", c->req.mcp_method, sizeof(c->req.mcp_method)) < 0 ||
	    copy_custom(wsi, "mcp-name:", c->req.mcp_name, sizeof(c->req.mcp_name)) < 0 ||
	    copy_custom(wsi, "last-event-id:", c->req.last_event_id,
			sizeof(c->req.last_event_id)) < 0) {
		simple(c, 431, "request header too large\n", NULL);
		return 0;
	}
	{
		/* lws returns a pointer just past "name=" inside the buffer. */
		char q[sizeof(c->req.session_query) + 16];
		const char *v = lws_get_urlarg_by_name(wsi, "sessionId=", q, (int)sizeof(q));
		if (!v)
			v = lws_get_urlarg_by_name(wsi, "sessionid=", q, (int)sizeof(q));
		snprintf(c->req.session_query, sizeof(c->req.session_query), "%s", v ? v : "");
	}
	lws_get_peer_simple(wsi, c->req.remote, sizeof(c->req.remote));

	/* Operations endpoints: no auth, so probes and scrapers need no secret. */
	if (!strcmp(c->req.path, "/healthz") || !strcmp(c->req.path, "/readyz") ||
	    !strcmp(c->req.path, "/metrics")) {
		if (c->req.method != MCPX_HTTP_GET) {
			simple(c, 405, "method not allowed\n", "Allow: GET\r\n");
			return 0;
		}
		serve_ops(c);
		return 0;
	}

	if (!strcmp(c->req.path, "/mcp")) {
		c->route = R_MCP;
		if (c->req.method == MCPX_HTTP_OTHER) {
			simple(c, 405, "method not allowed\n", "Allow: POST, DELETE\r\n");
			return 0;
		}
	} else if (c->req.method == MCPX_HTTP_GET &&
		   (!strcmp(c->req.path, "/sse") || (sse_mode && !reserved_path(c->req.path)))) {
		c->route = R_SSE_OPEN;
	} else if (c->req.method == MCPX_HTTP_POST &&
		   (!strcmp(c->req.path, "/messages") ||
		    (sse_mode && !reserved_path(c->req.path) && c->req.session_query[0]))) {
		c->route = R_SSE_POST;
	} else {
		simple(c, 404, "not found\n", NULL);
		return 0;
	}

	/* Auth before anything else is looked at or read. */
	if (mcpx_auth_enabled(s->auth)) {
		if (copy_hdr(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, auth, sizeof(auth)) < 0)
			auth[0] = '\0';
		if (copy_custom(wsi, "x-mcp-auth:", xauth, sizeof(xauth)) < 0)
			xauth[0] = '\0';
		bool ok = mcpx_auth_check(s->auth, xauth[0] ? xauth : NULL, auth[0] ? auth : NULL,
					  time(NULL));
		memset(auth, 0, sizeof(auth));
		memset(xauth, 0, sizeof(xauth));
		if (!ok) {
			simple(c, 401, "unauthorized\n", NULL);
			return 0;
		}
	}
	if (!mcpx_origin_allowed(c->req.origin, cfg->allowed_origins)) {
		simple(c, 403, "forbidden origin\n", NULL);
		return 0;
	}
	if (!mcpx_host_allowed(c->req.host, cfg->listen_loopback)) {
		simple(c, 403, "forbidden host\n", NULL);
		return 0;
	}
	if (s->draining) {
		simple(c, 503, "server is shutting down\n", "Retry-After: 1\r\n");
		return 0;
	}

	if (c->req.method != MCPX_HTTP_POST) {
		dispatch(c);
		return 0;
	}
	if (copy_hdr(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING, te, sizeof(te)) != 0 ||
	    copy_hdr(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, cl, sizeof(cl)) <= 0) {
		simple(c, 411, "Content-Length required (chunked bodies are not accepted)\n", NULL);
		return 0;
	}
	{
		char *endp;
		unsigned long long n = strtoull(cl, &endp, 10);
		if (*endp || cl[0] == '-') {
			simple(c, 400, "bad Content-Length\n", NULL);
			return 0;
		}
		if (n > cfg->max_body_bytes) {
			simple(c, 413, "request body exceeds MCP_EXEC_MAX_BODY_BYTES\n", NULL);
			return 0;
		}
		c->body_expected = (size_t)n;
		c->body = malloc(c->body_expected + 1);
		if (!c->body)
			return -1;
		c->body[0] = '\0';
	}
	if (copy_hdr(wsi, WSI_TOKEN_HTTP_EXPECT, expect, sizeof(expect)) > 0 &&
	    !strcasecmp(expect, "100-continue")) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		unsigned char buf[LWS_PRE + sizeof(cont)];
		memcpy(buf + LWS_PRE, cont, sizeof(cont) - 1);
		if (lws_write(wsi, buf + LWS_PRE, sizeof(cont) - 1, LWS_WRITE_HTTP_HEADERS) < 0)
			return -1;
	}
	if (c->body_expected == 0)
		dispatch(c);
	return 0;
}

static int on_body(struct mcpx_http_conn *c, const char *in, size_t len)
{
	if (!c || c->responding || c->dispatched)
		return 0; /* already answered (or rejected): discard */
	if (c->body_len + len > c->body_expected) {
		simple(c, 413, "request body larger than its Content-Length\n", NULL);
		return 0;
	}
	memcpy(c->body + c->body_len, in, len);
	c->body_len += len;
	c->body[c->body_len] = '\0';
	return 0;
}

static int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
			 size_t len)
{
	struct mcpx_http_server *s = lws_context_user(lws_get_context(wsi));
	struct mcpx_http_conn *c = lws_get_opaque_user_data(wsi);

	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		/* Custom headers (the auth token) are invisible on h2 streams in
		 * lws 4.1.6, and WebSocket is not an MCP transport. */
		return -1;
	case LWS_CALLBACK_HTTP:
		return on_http(s, wsi, in);
	case LWS_CALLBACK_HTTP_BODY:
		return on_body(c, in, len);
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (c && !c->responding && !c->dispatched) {
			if (c->body_len != c->body_expected) {
				simple(c, 400, "incomplete request body\n", NULL);
				return 0;
			}
			dispatch(c);
		}
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (!c)
			return 0;
		return on_writeable(c);
	case LWS_CALLBACK_CLOSED_HTTP:
		if (c) {
			lws_set_opaque_user_data(wsi, NULL);
			if (c->on_close)
				c->on_close(c->close_arg);
			conn_free(c);
		}
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static void lws_log_emit(int level, const char *line)
{
	size_t n = strlen(line);
	char buf[512];
	snprintf(buf, sizeof(buf), "%.*s", (int)(n && line[n - 1] == '\n' ? n - 1 : n), line);
	mcpx_log(level == LLL_ERR ? MCPX_LOG_ERROR : MCPX_LOG_WARN, NULL, "lws: %s", buf);
}

int mcpx_http_server_new(struct mcpx_http_server **out, const struct mcpx_config *cfg,
			 struct mcpx_auth *auth, const struct mcpx_http_handlers *h,
			 struct mcpx_err *err)
{
	static const struct lws_protocols protocols_tmpl[] = {
		{"http", http_callback, 0, 0, 0, NULL, 0},
		{MCPX_FD_PROTOCOL_NAME, NULL, 0, 0, 0, NULL, 0},
		{NULL, NULL, 0, 0, 0, NULL, 0},
	};
	static struct lws_protocols protocols[3];
	struct lws_context_creation_info info;
	struct mcpx_http_server *s = calloc(1, sizeof(*s));

	if (!s)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	memcpy(protocols, protocols_tmpl, sizeof(protocols));
	protocols[1] = mcpx_loop_fd_protocol;
	s->cfg = cfg;
	s->auth = auth;
	s->h = *h;

	lws_set_log_level(LLL_ERR, lws_log_emit);
	memset(&info, 0, sizeof(info));
	info.port = cfg->listen_port;
	info.iface = strcmp(cfg->listen_host, "0.0.0.0") == 0 ? NULL : cfg->listen_host;
	info.protocols = protocols;
	info.user = s;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.max_http_header_data = 16384;
	info.max_http_header_pool = 256;
	info.timeout_secs = 30;
	info.keepalive_timeout = 60;
	info.options = 0;
	if (!strchr(cfg->listen_host, ':'))
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.vhost_name = "default";
	s->ctx = lws_create_context(&info);
	if (!s->ctx) {
		free(s);
		return mcpx_err_set(err, EADDRINUSE, "could not listen on %s (address in use or invalid?)",
				    cfg->addr);
	}
	s->vhost = lws_get_vhost_by_name(s->ctx, "default");
	s->port = s->vhost ? lws_get_vhost_listen_port(s->vhost) : cfg->listen_port;
	if (s->port <= 0) {
		lws_context_destroy(s->ctx);
		free(s);
		return mcpx_err_set(err, EADDRINUSE, "could not listen on %s", cfg->addr);
	}
	s->loop = mcpx_loop_wrap(s->ctx);
	if (!s->loop) {
		lws_context_destroy(s->ctx);
		free(s);
		return mcpx_err_set(err, ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

void mcpx_http_server_free(struct mcpx_http_server *s)
{
	if (!s)
		return;
	lws_context_destroy(s->ctx);
	mcpx_loop_free(s->loop);
	free(s);
}

struct mcpx_loop *mcpx_http_server_loop(struct mcpx_http_server *s)
{
	return s->loop;
}

int mcpx_http_server_port(const struct mcpx_http_server *s)
{
	return s->port;
}

void mcpx_http_server_drain(struct mcpx_http_server *s)
{
	s->draining = true;
}

unsigned mcpx_http_server_busy(const struct mcpx_http_server *s)
{
	return s->busy;
}
