/*
 * server_http.c - the libwebsockets 4.1.6 HTTP/1.1 server under every HTTP
 * transport: the context and listener, the protocol callback, and request
 * intake.
 *
 * One vhost, one protocol callback, no mounts: every request head arrives
 * at LWS_CALLBACK_HTTP, where it is copied out of lws and put to the one
 * admission gate (http_admit.h) before any body byte is read. Admitted
 * requests collect their body in a capped buffer, then go on by their
 * route (http_dispatch.c: the operations endpoints, a TokenReview's wait,
 * the transports). A connection's life (cap, deadlines, head gate,
 * pipelining, client gone) is http_conn.c's; writing responses is
 * http_response.c's. Each request keeps which token let it in, and the
 * auth timer armed here ends what a removed token opened and re-reviews
 * ServiceAccount tokens (http_revoke.c).
 *
 * lws 4.1.6 facts this relies on (see the research notes): custom headers
 * are readable only on HTTP/1 (so h2c and WebSocket upgrades are refused),
 * chunked request bodies are not decoded (so Content-Length is required),
 * Expect: 100-continue is not answered by lws (so it is answered here), and
 * its bind "interface" must be a numeric address (listen_addr.h resolves
 * names first).
 */
#include "server_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "crypto.h"
#include "http_conn.h"
#include "http_field.h"
#include "log.h"
#include "loop_guard.h"
#include "loop_lws.h"
#include "metrics.h"

/* Descriptors beyond two per connection (the socket and the duplicate the
 * server watches): listener, loop, signals, and each run's pipes. */
#define FD_RESERVE 256

/* The header values the server reads, copied out of lws with their true
 * lengths (a NUL inside stays visible to the gate). */
struct head_copy {
	struct mcpx_http_head head;
	char host[512], origin[512], authz[4096], xauth[4096], cl[32], te[64], expect[64];
	char accept[512], ctype[128], sid[160], pv[64], method[128], name[256], leid[128];
};

static int copy_token(struct lws *wsi, enum lws_token_indexes t, char *buf, size_t cap,
                      struct mcpx_http_field *f)
{
	int n = lws_hdr_total_length(wsi, t) > 0 ? lws_hdr_copy(wsi, buf, (int)cap, t) : 0;

	f->p = buf;
	f->len = n > 0 ? (size_t)n : 0;
	return n < 0 ? -1 : 0;
}

static int copy_custom(struct lws *wsi, const char *name, char *buf, size_t cap,
                       struct mcpx_http_field *f)
{
	int nlen = (int)strlen(name), n = lws_hdr_custom_length(wsi, name, nlen);

	f->p = buf;
	f->len = 0;
	if (n <= 0)
		return 0;
	if ((size_t)n >= cap)
		return -1;
	n = lws_hdr_custom_copy(wsi, buf, (int)cap, name, nlen);
	f->len = n > 0 ? (size_t)n : 0;
	return n < 0 ? -1 : 0;
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

static void read_head(struct lws *wsi, const char *path, struct head_copy *hc)
{
	struct mcpx_http_head *h = &hc->head;
	char q[160];
	int bad = 0;

	h->method = get_method(wsi);
	h->path = path ? path : "/";
	bad |= copy_token(wsi, WSI_TOKEN_HOST, hc->host, sizeof(hc->host), &h->host);
	bad |= copy_token(wsi, WSI_TOKEN_ORIGIN, hc->origin, sizeof(hc->origin), &h->origin);
	bad |= copy_token(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, hc->authz, sizeof(hc->authz),
	                  &h->authorization);
	bad |= copy_token(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, hc->cl, sizeof(hc->cl),
	                  &h->content_length);
	bad |= copy_token(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING, hc->te, sizeof(hc->te),
	                  &h->transfer_encoding);
	bad |= copy_token(wsi, WSI_TOKEN_HTTP_EXPECT, hc->expect, sizeof(hc->expect), &h->expect);
	bad |= copy_token(wsi, WSI_TOKEN_HTTP_ACCEPT, hc->accept, sizeof(hc->accept), &h->accept);
	bad |= copy_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, hc->ctype, sizeof(hc->ctype),
	                  &h->content_type);
	bad |= copy_custom(wsi, "x-mcp-auth:", hc->xauth, sizeof(hc->xauth), &h->x_mcp_auth);
	bad |= copy_custom(wsi, "mcp-session-id:", hc->sid, sizeof(hc->sid), &h->session_id);
	bad |=
	    copy_custom(wsi, "mcp-protocol-version:", hc->pv, sizeof(hc->pv), &h->protocol_version);
	bad |= copy_custom(wsi, "mcp-method:", hc->method, sizeof(hc->method), &h->mcp_method);
	bad |= copy_custom(wsi, "mcp-name:", hc->name, sizeof(hc->name), &h->mcp_name);
	bad |= copy_custom(wsi, "last-event-id:", hc->leid, sizeof(hc->leid), &h->last_event_id);
	h->too_large = bad != 0;
	h->session_query = lws_get_urlarg_by_name(wsi, "sessionId=", q, (int)sizeof(q)) ||
	                   lws_get_urlarg_by_name(wsi, "sessionid=", q, (int)sizeof(q));
}

/* A trimmed header value into a C string field of the request. */
static void set_field(char *dst, size_t cap, struct mcpx_http_field f)
{
	mcpx_http_trim(&f.p, &f.len);
	snprintf(dst, cap, "%.*s", (int)f.len, f.len ? f.p : "");
}

static void fill_request(struct mcpx_http_conn *c, const struct head_copy *hc)
{
	const struct mcpx_http_head *h = &hc->head;
	struct mcpx_http_req *r = &c->req;
	char q[sizeof(r->session_query) + 16];
	const char *v;

	r->method = h->method;
	snprintf(r->path, sizeof(r->path), "%s", h->path);
	set_field(r->host, sizeof(r->host), h->host);
	set_field(r->origin, sizeof(r->origin), h->origin);
	set_field(r->accept, sizeof(r->accept), h->accept);
	set_field(r->content_type, sizeof(r->content_type), h->content_type);
	set_field(r->session_id, sizeof(r->session_id), h->session_id);
	set_field(r->protocol_version, sizeof(r->protocol_version), h->protocol_version);
	set_field(r->mcp_method, sizeof(r->mcp_method), h->mcp_method);
	set_field(r->mcp_name, sizeof(r->mcp_name), h->mcp_name);
	set_field(r->last_event_id, sizeof(r->last_event_id), h->last_event_id);
	/* lws returns a pointer just past "name=" inside the buffer. */
	v = lws_get_urlarg_by_name(c->wsi, "sessionId=", q, (int)sizeof(q));
	if (!v)
		v = lws_get_urlarg_by_name(c->wsi, "sessionid=", q, (int)sizeof(q));
	snprintf(r->session_query, sizeof(r->session_query), "%s", v ? v : "");
	lws_get_peer_simple(c->wsi, r->remote, sizeof(r->remote));
}

static int continue_100(struct mcpx_http_conn *c, const struct mcpx_http_field *expect)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	unsigned char buf[LWS_PRE + sizeof(cont)];
	struct mcpx_http_field e = *expect;

	mcpx_http_trim(&e.p, &e.len);
	if (e.len != 12 || strncasecmp(e.p, "100-continue", 12) != 0)
		return 0;
	memcpy(buf + LWS_PRE, cont, sizeof(cont) - 1);
	return lws_write(c->wsi, buf + LWS_PRE, sizeof(cont) - 1, LWS_WRITE_HTTP_HEADERS) < 0 ? -1
	                                                                                      : 0;
}

static void admit(struct mcpx_http_conn *c, const struct head_copy *hc, struct mcpx_admit *v)
{
	const struct mcpx_http_server *s = c->srv;
	struct mcpx_admit_policy p = {
	    .auth = s->auth,
	    .allowed_origins = s->cfg->allowed_origins,
	    .loopback_listener = s->addr.loopback,
	    .sse_mode = s->cfg->transport == MCPX_TRANSPORT_SSE,
	    .mcp_stream = s->h.mcp_stream,
	    .draining = s->draining,
	    .max_body_bytes = s->cfg->max_body_bytes,
	    .now = time(NULL),
	};
	mcpx_http_admit(&hc->head, &p, v);
}

/* LWS_CALLBACK_HTTP: the head is in. Returns the lws callback result.
 * Longer than 60 lines on purpose: every way a head becomes a response
 * (refused after reading the body for its id, refused, an operations
 * endpoint, admitted) is decided here in one place, so the front door and
 * the token's wipe on every path read in one sitting. */
static int on_head(struct mcpx_http_conn *c, const char *path)
{
	struct head_copy *hc = calloc(1, sizeof(*hc));
	struct mcpx_admit v;

	/* One request per connection: anything else here is lws parsing
	 * bytes the head gate did not measure. */
	if (!hc || c->phase != PH_PARSING) {
		free(hc);
		return -1;
	}
	mcpx_conn_stop_deadline(c);
	read_head(c->wsi, path, hc);
	admit(c, hc, &v);
	fill_request(c, hc);
	memcpy(c->req.caller, v.caller, sizeof(c->req.caller));
	c->cred = v.cred;
	if (v.review && !v.status) {
		/* Kept (trimmed, as the gate saw it) for the TokenReview. */
		struct mcpx_http_field f = hc->head.authorization;

		mcpx_http_trim(&f.p, &f.len);
		c->review_authz = malloc(f.len + 1);
		if (c->review_authz) {
			memcpy(c->review_authz, f.p, f.len);
			c->review_authz[f.len] = '\0';
			c->review_authz_len = f.len;
		} else {
			v.status = 500;
			v.content_type = "text/plain; charset=utf-8";
			v.extra_headers = NULL;
			v.body_len = (size_t)snprintf(v.body, sizeof(v.body), "out of memory\n");
		}
	}
	/* The token is never kept beyond the check (a Bearer token waiting
	 * for its TokenReview is, above, until the review ends). */
	mcpx_wipe(hc->authz, sizeof(hc->authz));
	mcpx_wipe(hc->xauth, sizeof(hc->xauth));
	c->route = v.route;
	c->body_done = !v.body_follows;
	if (v.status && v.wants_id && v.body_follows &&
	    v.content_length <= c->srv->cfg->max_body_bytes &&
	    (c->refusal = malloc(sizeof(*c->refusal)))) {
		/* The error names the request's id, which is in the body:
		 * read it (within the body limit), then answer. */
		*c->refusal = v;
		c->phase = PH_BODY;
		c->body_expected = v.content_length;
		mcpx_buf_init(&c->body, v.content_length);
		mcpx_conn_start_deadline(c, c->srv->cfg->body_timeout_s);
		if (continue_100(c, &hc->head.expect) < 0) {
			free(hc);
			return -1;
		}
	} else if (v.status) {
		if (!c->body_done)
			mcpx_conn_start_deadline(c, c->srv->cfg->body_timeout_s);
		mcpx_http_respond(c, v.status, v.content_type, v.body, v.body_len, v.extra_headers);
	} else if (v.route == MCPX_ROUTE_HEALTHZ || v.route == MCPX_ROUTE_READYZ ||
	           v.route == MCPX_ROUTE_METRICS) {
		mcpx_http_serve_ops(c);
	} else {
		c->admitted = true;
		if (c->req.method != MCPX_HTTP_POST) {
			free(hc);
			return mcpx_http_dispatch(c, c->head_len);
		}
		/* A POST is dispatched at BODY_COMPLETION, which lws also
		 * delivers for an empty body. */
		c->phase = PH_BODY;
		c->body_expected = v.content_length;
		mcpx_buf_init(&c->body, v.content_length);
		mcpx_conn_start_deadline(c, c->srv->cfg->body_timeout_s);
		if (continue_100(c, &hc->head.expect) < 0) {
			free(hc);
			return -1;
		}
	}
	free(hc);
	return 0;
}

static int on_body(struct mcpx_http_conn *c, const char *in, size_t len)
{
	if (c->phase != PH_BODY || c->resp.started)
		return 0; /* refused, or already answered: the bytes are dropped */
	if (mcpx_buf_add(&c->body, in, len) < 0)
		mcpx_http_text(c, 500, "out of memory\n", NULL);
	return 0;
}

static int on_body_done(struct mcpx_http_conn *c)
{
	if (c->phase == PH_DISPATCHED) {
		/* lws read past the body while the request was in flight:
		 * pipelining, which it would otherwise spin on. Dropped. */
		mcpx_metrics_http_conn_closed("pipelined");
		return -1;
	}
	c->body_done = true;
	if (c->phase == PH_BODY && !c->resp.started && c->refusal) {
		struct mcpx_admit *v = c->refusal;

		mcpx_conn_stop_deadline(c);
		if (c->body.len == c->body_expected)
			mcpx_admit_set_id(v, c->body.data, c->body.len);
		mcpx_http_respond(c, v->status, v->content_type, v->body, v->body_len,
		                  v->extra_headers);
		return 0;
	}
	if (c->phase == PH_BODY && !c->resp.started) {
		mcpx_conn_stop_deadline(c);
		if (c->body.len != c->body_expected) {
			mcpx_http_text(c, 400, "incomplete request body\n", NULL);
			return 0;
		}
		return mcpx_http_dispatch(c, c->head_len + c->body_expected);
	}
	/* Refused earlier and now read whole: close once answered. */
	mcpx_conn_stop_deadline(c);
	return mcpx_conn_response_done(c) ? -1 : 0;
}

static bool is_http_wsi(struct lws *wsi);

static int http_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                      size_t len)
{
	struct mcpx_http_server *s = lws_context_user(lws_get_context(wsi));
	struct mcpx_http_conn *c = lws_get_opaque_user_data(wsi);

	switch (reason) {
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
		return mcpx_conn_accept(s, wsi);
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		/* Custom headers (the auth token) are invisible on h2 streams in
		 * lws 4.1.6, and WebSocket is not an MCP transport. */
		return -1;
	case LWS_CALLBACK_RAW_ADOPT:
		/* A CONNECT request turns the connection into a raw socket in
		 * lws; this server tunnels nothing. */
		return -1;
	case LWS_CALLBACK_HTTP:
		return c ? on_head(c, in) : -1;
	case LWS_CALLBACK_HTTP_BODY:
		return c ? on_body(c, in, len) : 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		return c ? on_body_done(c) : 0;
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return c ? mcpx_conn_writeable(c) : 0;
	case LWS_CALLBACK_CLOSED_HTTP:
		return 0;
	case LWS_CALLBACK_WSI_DESTROY:
		/* Every wsi of the vhost ends here, also the loop's adopted
		 * descriptors, whose opaque data is theirs. */
		if (c && is_http_wsi(wsi))
			mcpx_conn_destroy(c);
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

/* Every HTTP event is a callback of the loop (loop_guard.h): timed, and
 * checked for waits that would block it. */
static int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len)
{
	int r;

	mcpx_loop_guard_begin();
	r = http_event(wsi, reason, user, in, len);
	mcpx_loop_guard_end();
	return r;
}

static bool is_http_wsi(struct lws *wsi)
{
	const struct lws_protocols *p = lws_get_protocol(wsi);
	return p && p->callback == http_callback;
}

static void lws_log_emit(int level, const char *line)
{
	size_t n = strlen(line);
	char buf[512];
	snprintf(buf, sizeof(buf), "%.*s", (int)(n && line[n - 1] == '\n' ? n - 1 : n), line);
	mcpx_log(level == LLL_ERR ? MCPX_LOG_ERROR : MCPX_LOG_WARN, NULL, "lws: %s", buf);
}

/* Two descriptors per connection plus a reserve must fit under the soft
 * RLIMIT_NOFILE before lws sizes its tables from it. Where the hard limit
 * is lower than MCP_EXEC_MAX_CONNECTIONS needs (a container runtime set
 * nofile=1024, say), the cap is lowered to what fits and the log says so:
 * the server still sheds the oldest idle connections at that cap. Below
 * MIN_CONNECTIONS it refuses to start. */
#define MIN_CONNECTIONS 32u
static int raise_nofile(unsigned wanted, unsigned *cap, struct mcpx_err *err)
{
	rlim_t need = (rlim_t)wanted * 2 + FD_RESERVE;
	struct rlimit rl;

	*cap = wanted;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return mcpx_err_set(err, errno, "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	if (rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		rlim_t fit = rl.rlim_max > FD_RESERVE ? (rl.rlim_max - FD_RESERVE) / 2 : 0;

		if (fit < MIN_CONNECTIONS)
			return mcpx_err_set(
			    err, EMFILE,
			    "MCP_EXEC_MAX_CONNECTIONS=%u needs %llu open files, but the hard "
			    "RLIMIT_NOFILE is %llu (room for fewer than %u connections): raise it",
			    wanted, (unsigned long long)need, (unsigned long long)rl.rlim_max,
			    MIN_CONNECTIONS);
		*cap = (unsigned)fit;
		need = fit * 2 + FD_RESERVE;
		mcpx_warn("http: MCP_EXEC_MAX_CONNECTIONS=%u needs %u open files but the hard "
		          "RLIMIT_NOFILE is %llu: at most %u connections are held open",
		          wanted, wanted * 2 + FD_RESERVE, (unsigned long long)rl.rlim_max, *cap);
	}
	rl.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return mcpx_err_set(err, errno, "setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	return 0;
}

/* Binds the listener's address once and lets it go, so the common failures
 * (port in use, not an address of this host) are reported with their errno
 * before lws is asked: lws 4.1.6 only logs them, and leaks on that path. */
static int probe_bind(const struct mcpx_http_server *s, struct mcpx_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, rc = 0;

	memset(&ss, 0, sizeof(ss));
	if (s->addr.ipv6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)s->cfg->listen_port);
		inet_pton(AF_INET6, s->addr.numeric, &in6->sin6_addr);
		len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)s->cfg->listen_port);
		if (s->addr.numeric[0])
			inet_pton(AF_INET, s->addr.numeric, &in->sin_addr);
		len = sizeof(*in);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mcpx_err_set(err, errno, "socket: %s", strerror(errno));
	/* As lws does, so a port in TIME_WAIT is not taken for "in use". */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		rc = mcpx_err_set(err, errno, "could not listen on %s: %s", s->cfg->addr,
		                  strerror(errno));
	close(fd);
	return rc;
}

static void fill_info(struct lws_context_creation_info *info, struct mcpx_http_server *s,
                      const struct lws_protocols *protocols)
{
	const struct mcpx_config *cfg = s->cfg;
	unsigned longest = cfg->header_timeout_s > cfg->body_timeout_s ? cfg->header_timeout_s
	                                                               : cfg->body_timeout_s;

	memset(info, 0, sizeof(*info));
	info->port = cfg->listen_port;
	info->iface = s->addr.numeric[0] ? s->addr.numeric : NULL;
	info->protocols = protocols;
	info->user = s;
	info->gid = (gid_t)-1;
	info->uid = (uid_t)-1;
	info->max_http_header_data = MCPX_HTTP_HEAD_MAX;
	/* Every open connection holds a header table from accept on; the
	 * cap on connections bounds them, a little slack covers closes. */
	info->max_http_header_pool =
	    (unsigned short)(s->max_conns + 16 > 65535 ? 65535 : s->max_conns + 16);
	/* Our own deadlines (http_conn.c) decide; lws's fire later, as a
	 * backstop only. */
	info->timeout_secs = longest + 5;
	info->timeout_secs_ah_idle = cfg->header_timeout_s + 5;
	info->options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
	if (!s->addr.ipv6)
		info->options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info->vhost_name = "default";
}

static int create_context(struct mcpx_http_server *s, struct mcpx_err *err)
{
	static struct lws_protocols protocols[3];
	struct lws_context_creation_info info;

	protocols[0] = (struct lws_protocols){"http", http_callback, 0, 0, 0, NULL, 0};
	protocols[1] = mcpx_loop_fd_protocol;
	memset(&protocols[2], 0, sizeof(protocols[2]));
	fill_info(&info, s, protocols);
	lws_set_log_level(LLL_ERR, lws_log_emit);
	s->ctx = lws_create_context(&info);
	if (!s->ctx)
		return mcpx_err_set(err, EADDRNOTAVAIL, "could not listen on %s (%s)", s->cfg->addr,
		                    "address in use, or not an address of this host?");
	s->vhost = lws_get_vhost_by_name(s->ctx, "default");
	s->port = s->vhost ? lws_get_vhost_listen_port(s->vhost) : 0;
	if (s->port <= 0)
		return mcpx_err_set(err, EADDRNOTAVAIL, "could not listen on %s", s->cfg->addr);
	return 0;
}

int mcpx_http_server_new(struct mcpx_http_server **out, const struct mcpx_config *cfg,
                         const struct mcpx_listen_addr *addr, struct mcpx_auth *auth,
                         const struct mcpx_http_handlers *h, struct mcpx_err *err)
{
	struct mcpx_http_server *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	s->cfg = cfg;
	s->addr = *addr;
	s->auth = auth;
	s->h = *h;
	/* A reply holds the run's output twice (text and structured), each
	 * escaped at worst six-fold; a stream's queue gets the same bound. */
	s->out_cap = cfg->max_output_bytes * 12 + ((size_t)4 << 20);
	rc = raise_nofile(cfg->max_connections, &s->max_conns, err);
	if (rc == 0)
		rc = probe_bind(s, err);
	if (rc == 0)
		rc = create_context(s, err);
	if (rc == 0 && !(s->loop = mcpx_loop_wrap(s->ctx)))
		rc = mcpx_err_set(err, ENOMEM, "out of memory");
	if (rc == 0 && mcpx_auth_enabled(auth))
		mcpx_http_auth_timer_arm(s);
	if (rc < 0) {
		if (s->ctx)
			lws_context_destroy(s->ctx);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void mcpx_http_server_free(struct mcpx_http_server *s)
{
	if (!s)
		return;
	s->shutting_down = true;
	mcpx_timer_cancel(&s->auth_timer);
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