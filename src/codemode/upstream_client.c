/*
 * upstream_client.c - one JSON-RPC message to an upstream MCP server over
 * Streamable HTTP (upstream_client.h), as a transfer on the broker's curl
 * multi handle.
 *
 * The answer to a POST is either one JSON body (Content-Type
 * application/json) or an event stream (text/event-stream) whose "data"
 * fields carry JSON-RPC messages: notifications and requests of the
 * server first, then the response to our id. upstream_reader.h reads it
 * as it arrives, the same whatever the chunks, so the transfer ends as
 * soon as the response is in, whether or not the server closes the stream
 * then. A notifications/tools/list_changed seen on the way is reported to
 * the caller; other messages of the server (progress, logging, requests
 * such as sampling, which this client does not offer) are skipped.
 *
 * Safety is the broker's: every address curl connects to passes
 * mcpx_addr_check with the upstream's allow_cidrs (a name that resolves to
 * a private address is refused where it matters); redirects are not
 * followed; no proxy and no .netrc from the environment; TLS is verified;
 * a connection to a private address is never reused (the connection cache
 * is the broker's, and a fetch to the same host must pass its own check);
 * the answer is capped at max_bytes. The credential exists in one header
 * list per transfer, wiped before it is freed, and in no message.
 */
#include "upstream_client.h"

#include "curl_lib.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "broker.h"
#include "config.h"
#include "crypto.h"
#include "upstream_reader.h"

#define CONNECT_TIMEOUT_MS 10000L

_Static_assert(MCPX_UPC_SESSION_MAX == MCPX_UPR_SESSION_MAX, "one session id size");

struct mcpx_upc_req {
	struct mcpx_broker_xfer x; /* first: the broker hands it back */
	struct mcpx_broker *b;
	mcpx_upc_done_fn done;
	void *arg;
	const struct mcpx_cidr *allow;
	size_t n_allow;
	char *body;
	struct curl_slist *hdrs;
	char errbuf[CURL_ERROR_SIZE];
	struct mcpx_upc_result res;
	enum mcpx_addr_class refused;
	char refused_addr[64];
	bool sent_session;
	struct mcpx_upr rd; /* the answer, as it arrives */
};

static void req_free(struct mcpx_upc_req *r)
{
	if (r->x.easy)
		mcpx_curl_easy_cleanup(r->x.easy);
	for (struct curl_slist *l = r->hdrs; l; l = l->next)
		mcpx_wipe(l->data, strlen(l->data));
	mcpx_curl_slist_free_all(r->hdrs);
	free(r->body);
	cJSON_Delete(r->res.response);
	mcpx_upr_free(&r->rd);
	free(r);
}

static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct mcpx_upc_req *r = arg;
	enum mcpx_addr_class cls;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	cls = mcpx_addr_check(&a->addr, a->addrlen, r->allow, r->n_allow);
	if (cls != MCPX_ADDR_PUBLIC) {
		r->refused = cls;
		mcpx_addr_text(&a->addr, a->addrlen, r->refused_addr, sizeof(r->refused_addr));
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Once the response is in (or a cap passed), the transfer is cut here. */
static size_t write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct mcpx_upc_req *r = arg;

	return mcpx_upr_body(&r->rd, p, size * nmemb) ? size * nmemb : 0;
}

static size_t header_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct mcpx_upc_req *r = arg;

	mcpx_upr_header(&r->rd, p, size * nmemb);
	return size * nmemb;
}

static int add_header(struct mcpx_upc_req *r, const char *name, const char *value)
{
	char line[16600];
	struct curl_slist *l;

	snprintf(line, sizeof(line), "%s: %s", name, value);
	l = mcpx_curl_slist_append(r->hdrs, line);
	mcpx_wipe(line, sizeof(line));
	if (!l)
		return -ENOMEM;
	r->hdrs = l;
	return 0;
}

static int build_headers(struct mcpx_upc_req *r, const struct mcpx_upc_target *t)
{
	if (!r->body) {
		if (add_header(r, "Accept", "text/event-stream") < 0)
			return -ENOMEM;
	} else if (add_header(r, "Accept", "application/json, text/event-stream") < 0 ||
	           add_header(r, "Content-Type", "application/json") < 0 ||
	           add_header(r, "Expect", "") < 0)
		return -ENOMEM;
	if (t->protocol_version && add_header(r, "MCP-Protocol-Version", t->protocol_version) < 0)
		return -ENOMEM;
	if (t->session_id && t->session_id[0] && add_header(r, "Mcp-Session-Id", t->session_id) < 0)
		return -ENOMEM;
	if (t->cred_header && add_header(r, t->cred_header, t->cred_value) < 0)
		return -ENOMEM;
	return 0;
}

static CURLcode set_options(struct mcpx_upc_req *r, const struct mcpx_upc_target *t)
{
	CURL *e = r->x.easy;
	/* A listening GET has no end of its own (timeout_ms 0). */
	long timeout_ms = !r->body ? 0L : t->timeout_ms > 0 ? (long)t->timeout_ms : 1L;
	CURLcode rc = CURLE_OK;

#define SET(opt, val)                                                                              \
	do {                                                                                       \
		if (rc == CURLE_OK)                                                                \
			rc = mcpx_curl_easy_setopt(e, opt, val);                                   \
	} while (0)
	SET(CURLOPT_URL, t->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_PROXY, "");
	SET(CURLOPT_NOPROXY, "");
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
	if (t->ca_file)
		SET(CURLOPT_CAINFO, t->ca_file);
	SET(CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_TIMEOUT_MS, timeout_ms);
	SET(CURLOPT_CONNECTTIMEOUT_MS,
	    timeout_ms && timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms : CONNECT_TIMEOUT_MS);
	SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
	SET(CURLOPT_OPENSOCKETDATA, r);
	SET(CURLOPT_WRITEFUNCTION, write_cb);
	SET(CURLOPT_WRITEDATA, r);
	SET(CURLOPT_HEADERFUNCTION, header_cb);
	SET(CURLOPT_HEADERDATA, r);
	SET(CURLOPT_ACCEPT_ENCODING, "");
	SET(CURLOPT_USERAGENT, MCPX_NAME "/" MCPX_VERSION);
	SET(CURLOPT_ERRORBUFFER, r->errbuf);
	SET(CURLOPT_FORBID_REUSE, r->n_allow ? 1L : 0L);
	SET(CURLOPT_HTTPHEADER, r->hdrs);
	if (r->body) {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
		SET(CURLOPT_POSTFIELDS, r->body);
	} else {
		SET(CURLOPT_HTTPGET, 1L);
	}
#undef SET
	return rc;
}

/* The transfer's end, in the caller's words. */
static void classify(struct mcpx_upc_req *r, CURLcode rc)
{
	struct mcpx_upc_result *res = &r->res;
	curl_off_t up = 0;
	const char *why;

	mcpx_curl_easy_getinfo(r->x.easy, CURLINFO_RESPONSE_CODE, &res->status);
	if (mcpx_curl_easy_getinfo(r->x.easy, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK && up >= 0)
		res->bytes_out = (uint64_t)up;
	res->bytes_in = r->rd.received;
	res->list_changed = r->rd.list_changed;
	snprintf(res->session_id, sizeof(res->session_id), "%s", r->rd.session_id);
	/* The stream was cut by us once the response was in. */
	if (r->rd.response && rc == CURLE_WRITE_ERROR && !r->rd.too_large)
		rc = CURLE_OK;
	if (r->rd.too_large) {
		res->kind = MCPX_UPC_TOO_LARGE;
		snprintf(res->msg, sizeof(res->msg), "the answer is larger than %zu bytes",
		         r->rd.max_bytes);
	} else if (r->refused != MCPX_ADDR_PUBLIC && rc == CURLE_COULDNT_CONNECT) {
		res->kind = MCPX_UPC_ADDRESS;
		snprintf(res->msg, sizeof(res->msg),
		         "the upstream's address %s is %s, which its allow_cidrs do not include",
		         r->refused_addr, mcpx_addr_class_name(r->refused));
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		res->kind = MCPX_UPC_TIMEOUT;
		snprintf(res->msg, sizeof(res->msg), "no answer in time");
	} else if (rc != CURLE_OK) {
		res->kind = MCPX_UPC_DOWN;
		snprintf(res->msg, sizeof(res->msg), "%s",
		         r->errbuf[0] ? r->errbuf : mcpx_curl_easy_strerror(rc));
	} else if (res->status == 404 && r->sent_session) {
		/* The spec's signal that the session id is no longer known. */
		res->kind = MCPX_UPC_SESSION_GONE;
		snprintf(res->msg, sizeof(res->msg), "the upstream ended its session");
	} else if (res->status < 200 || res->status > 299) {
		res->kind = MCPX_UPC_HTTP;
		snprintf(res->msg, sizeof(res->msg), "HTTP %ld from the upstream%s", res->status,
		         res->status == 401 || res->status == 403 ? " (check its credential)" : "");
	} else if ((why = mcpx_upr_end(&r->rd))) {
		res->kind = MCPX_UPC_PROTOCOL;
		snprintf(res->msg, sizeof(res->msg), "%s", why);
	} else {
		res->response = r->rd.response;
		r->rd.response = NULL;
	}
}

static void xfer_done(struct mcpx_broker_xfer *x, int curl_code)
{
	struct mcpx_upc_req *r = (struct mcpx_upc_req *)x;

	classify(r, (CURLcode)curl_code);
	r->done(r->arg, &r->res);
	req_free(r);
}

static int start(struct mcpx_broker *b, const struct mcpx_upc_target *t, const char *body,
                 double id, mcpx_upc_done_fn done, mcpx_upc_message_fn on_message, void *arg,
                 struct mcpx_upc_req **out)
{
	struct mcpx_upc_req *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->b = b;
	r->done = done;
	r->arg = arg;
	r->allow = t->allow;
	r->n_allow = t->n_allow;
	r->sent_session = t->session_id && t->session_id[0];
	r->x.done = xfer_done;
	mcpx_upr_init(&r->rd, id, t->max_bytes, on_message, arg);
	if ((body && !(r->body = strdup(body))) || !(r->x.easy = mcpx_curl_easy_init()) ||
	    build_headers(r, t) < 0 || set_options(r, t) != CURLE_OK) {
		req_free(r);
		return -ENOMEM;
	}
	if (mcpx_broker_xfer_add(b, &r->x) < 0) {
		req_free(r);
		return -EIO;
	}
	*out = r;
	return 0;
}

int mcpx_upc_post(struct mcpx_broker *b, const struct mcpx_upc_target *t, const char *body,
                  double id, mcpx_upc_done_fn done, void *arg, struct mcpx_upc_req **out)
{
	return start(b, t, body, id, done, NULL, arg, out);
}

int mcpx_upc_listen(struct mcpx_broker *b, const struct mcpx_upc_target *t,
                    mcpx_upc_message_fn on_message, mcpx_upc_done_fn done, void *arg,
                    struct mcpx_upc_req **out)
{
	return start(b, t, NULL, -1, done, on_message, arg, out);
}

void mcpx_upc_cancel(struct mcpx_upc_req *r)
{
	if (!r)
		return;
	mcpx_broker_xfer_remove(r->b, &r->x);
	req_free(r);
}
