/*
 * upstream_client.c - one JSON-RPC message to an upstream MCP server over
 * Streamable HTTP (upstream_client.h), as a transfer on the shared curl
 * loop the broker's fetches run on.
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
 * Safety is the broker's, from the same locked-down handle
 * (egress_handle.h): every address curl connects to passes mcpx_addr_check
 * with the upstream's allow_cidrs (a name that resolves to a private
 * address is refused where it matters); redirects are not followed; no
 * proxy and no .netrc from the environment; TLS is verified; a connection
 * to a private address is never reused (the connection cache is shared
 * with the broker's fetches, and a fetch to the same host must pass its
 * own check); the answer is capped at max_bytes (upstream_reader.h). The
 * credential exists in one header list per transfer, wiped before it is
 * freed, and in no message.
 */
#include "upstream_client.h"

#include "curl_lib.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_handle.h"
#include "upstream_reader.h"

_Static_assert(MCPX_UPC_SESSION_MAX == MCPX_UPR_SESSION_MAX, "one session id size");

struct mcpx_upc_req {
	struct mcpx_egress_handle h; /* first: the loop hands back h.x */
	struct mcpx_curl_loop *http;
	mcpx_upc_done_fn done;
	void *arg;
	char *body;
	struct mcpx_upc_result res;
	bool sent_session;
	struct mcpx_upr rd; /* the answer, as it arrives */
};

static void req_free(struct mcpx_upc_req *r)
{
	mcpx_egress_handle_close(&r->h, r->http);
	free(r->body);
	cJSON_Delete(r->res.response);
	mcpx_upr_free(&r->rd);
	free(r);
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

/* The transport's headers (the credential is egress_handle.c's). */
static int build_headers(const struct mcpx_upc_req *r, const struct mcpx_upc_target *t,
                         struct curl_slist **l)
{
	*l = NULL;
	if (!r->body) {
		if (mcpx_egress_header(l, "Accept", "text/event-stream") < 0)
			goto fail;
	} else if (mcpx_egress_header(l, "Accept", "application/json, text/event-stream") < 0 ||
	           mcpx_egress_header(l, "Content-Type", "application/json") < 0 ||
	           mcpx_egress_header(l, "Expect", "") < 0) {
		goto fail;
	}
	if (t->protocol_version &&
	    mcpx_egress_header(l, "MCP-Protocol-Version", t->protocol_version) < 0)
		goto fail;
	if (t->session_id && t->session_id[0] &&
	    mcpx_egress_header(l, "Mcp-Session-Id", t->session_id) < 0)
		goto fail;
	return 0;
fail:
	mcpx_curl_slist_free_all(*l);
	*l = NULL;
	return -ENOMEM;
}

/* The method and body of this request, on its locked-down handle. */
static CURLcode set_request(struct mcpx_upc_req *r)
{
	CURL *e = r->h.x.easy;
	CURLcode rc;

	if (!r->body)
		return mcpx_curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	rc = mcpx_curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
	return rc == CURLE_OK ? mcpx_curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body) : rc;
}

/* The transfer's end, in the caller's words. */
static void classify(struct mcpx_upc_req *r, CURLcode rc)
{
	struct mcpx_upc_result *res = &r->res;
	curl_off_t up = 0;
	const char *why;

	mcpx_curl_easy_getinfo(r->h.x.easy, CURLINFO_RESPONSE_CODE, &res->status);
	if (mcpx_curl_easy_getinfo(r->h.x.easy, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK && up >= 0)
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
	} else if (mcpx_egress_refused(&r->h, rc)) {
		res->kind = MCPX_UPC_ADDRESS;
		snprintf(res->msg, sizeof(res->msg),
		         "the upstream's address %s is %s, which its allow_cidrs do not include",
		         r->h.refused_addr, mcpx_addr_class_name(r->h.refused));
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		res->kind = MCPX_UPC_TIMEOUT;
		snprintf(res->msg, sizeof(res->msg), "no answer in time");
	} else if (rc != CURLE_OK) {
		res->kind = MCPX_UPC_DOWN;
		snprintf(res->msg, sizeof(res->msg), "%s",
		         r->h.errbuf[0] ? r->h.errbuf : mcpx_curl_easy_strerror(rc));
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

static void xfer_done(struct mcpx_curl_xfer *x, CURLcode rc)
{
	struct mcpx_upc_req *r = (struct mcpx_upc_req *)x;

	classify(r, rc);
	r->done(r->arg, &r->res);
	req_free(r);
}

static int start(struct mcpx_curl_loop *http, const struct mcpx_upc_target *t, const char *body,
                 double id, mcpx_upc_done_fn done, mcpx_upc_message_fn on_message, void *arg,
                 struct mcpx_upc_req **out)
{
	struct mcpx_upc_req *r = calloc(1, sizeof(*r));
	/* A listening GET has no end of its own. */
	struct mcpx_egress_spec spec = {
	    .url = t->url,
	    .allow = t->allow,
	    .n_allow = t->n_allow,
	    .cred_header = t->cred_header,
	    .cred_value = t->cred_value,
	    .ca_file = t->ca_file,
	    .timeout_ms = !body               ? 0
	                  : t->timeout_ms > 0 ? t->timeout_ms
	                                      : 1,
	    .on_body = write_cb,
	    .on_header = header_cb,
	    .arg = r,
	};
	struct curl_slist *hdrs = NULL;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->http = http;
	r->done = done;
	r->arg = arg;
	r->sent_session = t->session_id && t->session_id[0];
	if (on_message)
		mcpx_upr_init(&r->rd, id, t->max_bytes, true, on_message, arg);
	else
		mcpx_upr_init(&r->rd, id, t->max_bytes, false, t->on_message, t->message_arg);
	if ((body && !(r->body = strdup(body))) || build_headers(r, t, &hdrs) < 0 ||
	    mcpx_egress_handle_open(&r->h, &spec, hdrs) < 0 || set_request(r) != CURLE_OK) {
		req_free(r);
		return -ENOMEM;
	}
	r->h.x.done = xfer_done;
	if (mcpx_curl_loop_add(r->http, &r->h.x) < 0) {
		req_free(r);
		return -EIO;
	}
	*out = r;
	return 0;
}

int mcpx_upc_post(struct mcpx_curl_loop *http, const struct mcpx_upc_target *t, const char *body,
                  double id, mcpx_upc_done_fn done, void *arg, struct mcpx_upc_req **out)
{
	return start(http, t, body, id, done, NULL, arg, out);
}

int mcpx_upc_listen(struct mcpx_curl_loop *http, const struct mcpx_upc_target *t,
                    mcpx_upc_message_fn on_message, mcpx_upc_done_fn done, void *arg,
                    struct mcpx_upc_req **out)
{
	return start(http, t, NULL, -1, done, on_message, arg, out);
}

void mcpx_upc_cancel(struct mcpx_upc_req *r)
{
	if (r)
		req_free(r);
}
