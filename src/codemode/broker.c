/*
 * broker.c - the egress broker (broker.h): a run's requests, decided against
 * its grant and performed with libcurl's multi interface on the server loop.
 *
 * curl runs on the loop through the shared curl loop (curl_loop.h) the
 * upstream client uses too; its multi handle (and libcurl itself) is made
 * with the first request, which most servers never make. The requests:
 * the "fetch" handler of the run channel's op table (run_channel.h), which
 * owns the channel, frames and caps; each fetch is decided (caps, URL,
 * rule, method, headers, a literal address) before anything leaves the
 * host; an allowed one becomes a locked-down easy handle
 * (egress_handle.h: every connect() target checked, so a name that
 * resolves to a private address, or re-resolves to one, is refused where
 * it matters; no redirect followed by curl; the credential), whose
 * response is capped, and whose redirects are followed here, hop by hop,
 * through the same decision.
 *
 * Nothing a run sends is logged or audited beyond the method, origin and
 * path; the credential lives in the policy and in the one header list built
 * for the transfer, which is wiped before it is freed.
 *
 * Lifetimes: a fetch's state (struct req) is freed when it is answered
 * (the run channel keeps the op until the answer is written) or when its
 * run ends before that (the handler's cancel). A fetch's state, its
 * audit line and its answers are broker_req.c's; this file decides and
 * drives it.
 */
#include "broker.h"
#include "broker_req.h"

#include "curl_lib.h"
#include "curl_loop.h"
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "egress_check.h"
#include "egress_handle.h"
#include "http_field.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "policy.h"
#include "run_channel.h"
#include "utf8.h"

#define RESP_HEADERS_MAX (32u * 1024u)
#define RESP_HEADERS_COUNT 200
#define REQ_HEADERS_MAX 64

static void start_transfer(struct req *q);

/* ---- transfers ------------------------------------------------------------ */

static size_t write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct req *q = arg;
	size_t had = q->resp.alloc;
	int rc = mcpx_buf_add(&q->resp, p, size * n);

	if (rc == -E2BIG)
		q->too_large = true;
	if (q->resp.alloc != had)
		mcpx_brk_req_hold(q);
	return rc < 0 ? 0 : size * n;
}

static cJSON *header_pair(const char *name, size_t nlen, const char *value, size_t vlen)
{
	char *n = mcpx_utf8_sanitize(name, nlen, &nlen),
	     *v = mcpx_utf8_sanitize(value, vlen, &vlen);
	cJSON *pair = NULL;

	if (n && v) {
		for (char *c = n; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		pair = cJSON_CreateArray();
		cJSON_AddItemToArray(pair, cJSON_CreateString(n));
		cJSON_AddItemToArray(pair, cJSON_CreateString(v));
	}
	free(n);
	free(v);
	return pair;
}

static size_t header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct req *q = arg;
	size_t len = size * n, nlen, vlen;
	const char *colon, *name = p, *value;
	cJSON *pair;

	/* Each status line starts a response (a 100 Continue, or a proxy's
	 * CONNECT answer, comes before the real one). */
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		cJSON_Delete(q->resp_headers);
		q->resp_headers = cJSON_CreateArray();
		q->resp_hdr_bytes = q->resp_hdr_count = 0;
		return len;
	}
	colon = memchr(p, ':', len);
	if (!colon || colon == p)
		return len; /* the blank line ending the head, or junk */
	q->resp_hdr_bytes += len;
	if (q->resp_hdr_bytes > RESP_HEADERS_MAX || ++q->resp_hdr_count > RESP_HEADERS_COUNT) {
		q->hdr_too_large = true;
		return 0;
	}
	nlen = (size_t)(colon - p);
	value = colon + 1;
	vlen = len - nlen - 1;
	mcpx_http_chomp(value, &vlen);
	mcpx_http_trim(&name, &nlen);
	mcpx_http_trim(&value, &vlen);
	pair = header_pair(name, nlen, value, vlen);
	if (!pair || !q->resp_headers || !cJSON_AddItemToArray(q->resp_headers, pair)) {
		cJSON_Delete(pair);
		return 0;
	}
	return len;
}

/* The run's headers that may go to this hop, then the broker's own (the
 * credential is egress_handle.c's). */
static int build_headers(struct req *q, struct curl_slist **out)
{
	const struct mcpx_egress_rule *rule = q->rule;
	const char *cred = rule->has_credential ? rule->cred.header : NULL;
	bool content_type = false;
	struct curl_slist *l = NULL;
	const cJSON *h;
	int rc = 0;

	cJSON_ArrayForEach(h, q->headers)
	{
		const char *name = cJSON_GetArrayItem(h, 0)->valuestring;
		const char *value = cJSON_GetArrayItem(h, 1)->valuestring;

		/* Checked when the request came; a redirect to another origin
		 * or rule drops what that hop must not get. */
		if (mcpx_header_refusal(name, strlen(name), value, strlen(value), cred))
			continue;
		if (q->cross_origin &&
		    (!strcasecmp(name, "authorization") || !strcasecmp(name, "cookie")))
			continue;
		content_type |= !strcasecmp(name, "content-type");
		if ((rc = mcpx_egress_header(&l, name, value)) < 0)
			goto out;
	}
	/* No 100-continue round trip, and no form type curl would invent. */
	if ((rc = mcpx_egress_header(&l, "Expect", "")) < 0 ||
	    (!content_type && (rc = mcpx_egress_header(&l, "Content-Type", "")) < 0))
		goto out;
out:
	if (rc < 0) {
		mcpx_curl_slist_free_all(l);
		l = NULL;
	}
	*out = l;
	return rc;
}

static CURLcode set_method(struct req *q)
{
	CURL *e = q->h.x.easy;
	CURLcode rc = CURLE_OK;

	if (strcmp(q->method, "HEAD") == 0)
		return mcpx_curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	if (q->body || !strcmp(q->method, "POST") || !strcmp(q->method, "PUT") ||
	    !strcmp(q->method, "PATCH")) {
		rc = mcpx_curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
		if (!rc)
			rc = mcpx_curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body ? q->body : "");
		if (!rc && strcmp(q->method, "POST") != 0)
			rc = mcpx_curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
		return rc;
	}
	if (strcmp(q->method, "GET") == 0)
		return mcpx_curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	return mcpx_curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method);
}

static void transfer_done(struct req *q, CURLcode rc);

static void xfer_done(struct mcpx_curl_xfer *x, CURLcode rc)
{
	transfer_done((struct req *)((char *)x - offsetof(struct req, h.x)), rc);
}

/* This hop's transfer, on the shared loop. */
static int open_transfer(struct req *q, long timeout_ms)
{
	const struct mcpx_egress_rule *rule = q->rule;
	struct mcpx_egress_spec spec = {
	    .url = q->url.full,
	    .allow = rule->allow,
	    .n_allow = rule->n_allow,
	    .cred_header = rule->has_credential ? rule->cred.header : NULL,
	    .cred_value = rule->has_credential ? rule->cred.value : NULL,
	    .proxy = q->b->proxy,
	    .ca_file = q->b->ca_file,
	    .timeout_ms = (uint64_t)timeout_ms,
	    .max_bytes = rule->max_response_bytes,
	    .on_body = write_cb,
	    .on_header = header_cb,
	    .arg = q,
	};
	struct curl_slist *hdrs = NULL;

	if (build_headers(q, &hdrs) < 0 || mcpx_egress_handle_open(&q->h, &spec, hdrs) < 0)
		return -ENOMEM;
	q->h.x.done = xfer_done;
	if (set_method(q) != CURLE_OK || mcpx_curl_loop_add(q->b->http, &q->h.x) < 0) {
		mcpx_brk_detach_easy(q);
		return -ENOMEM;
	}
	return 0;
}

static void start_transfer(struct req *q)
{
	uint64_t now = mcpx_now_us();
	long timeout_ms = q->deadline_us > now ? (long)((q->deadline_us - now) / 1000u) : 0;

	q->hop_started_us = now;
	q->refused = MCPX_ADDR_PUBLIC;
	q->too_large = q->hdr_too_large = false;
	q->status = 0;
	mcpx_buf_free(&q->resp);
	mcpx_buf_init(&q->resp, q->rule->max_response_bytes);
	cJSON_Delete(q->resp_headers);
	q->resp_headers = cJSON_CreateArray();
	if (timeout_ms <= 0) {
		mcpx_brk_fail_fetch(q, "timed out before the request could be sent");
		return;
	}
	if (!q->resp_headers || open_transfer(q, timeout_ms) < 0) {
		mcpx_brk_fail_fetch(q, "the server could not start the request (out of memory)");
		return;
	}
	q->bytes_out = q->body_len;
}

/* ---- completing a transfer, redirects ------------------------------------- */

static bool is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* A URL whose host is an address is judged before any connection. */
static bool literal_refused(struct req *q)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(struct sockaddr_in);
	char host[MCPX_HOST_MAX];
	size_t n = strlen(q->url.host);

	if (!q->url.ip_literal)
		return false;
	memset(&ss, 0, sizeof(ss));
	if (q->url.host[0] == '[' && n > 2) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		memcpy(host, q->url.host + 1, n - 2);
		host[n - 2] = '\0';
		s6->sin6_family = AF_INET6;
		len = sizeof(*s6);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return false;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		if (inet_pton(AF_INET, q->url.host, &s4->sin_addr) != 1)
			return false;
	}
	q->refused = mcpx_addr_check((struct sockaddr *)&ss, len, q->rule->allow, q->rule->n_allow);
	mcpx_addr_text((struct sockaddr *)&ss, len, q->refused_addr, sizeof(q->refused_addr));
	return q->refused != MCPX_ADDR_PUBLIC;
}

static void deny_address(struct req *q)
{
	mcpx_brk_deny(
	    q, "address",
	    "%s://%s:%u is at %s, a %s address that rule %s may not reach (it is not in the "
	    "rule's allow_cidrs)",
	    q->url.scheme, q->url.host, q->url.port, q->refused_addr,
	    mcpx_addr_class_name(q->refused), q->rule->name);
}

static void fail_curl(struct req *q, CURLcode rc)
{
	const char *what =
	    rc == CURLE_OPERATION_TIMEDOUT ? "timed out" : mcpx_curl_easy_strerror(rc);

	mcpx_brk_fail_fetch(q, "%s %s://%s:%u%s failed: %s%s%s", q->method, q->url.scheme,
	                    q->url.host, q->url.port, q->url.path, what, q->h.errbuf[0] ? ": " : "",
	                    q->h.errbuf);
}

/* The method of the next hop (RFC 9110 15.4: 303 turns into GET, and so
 * does a POST answered with 301 or 302, as browsers do). */
static const char *redirect_method(const struct req *q)
{
	if (q->status == 303 && strcmp(q->method, "HEAD") != 0)
		return "GET";
	if ((q->status == 301 || q->status == 302) && strcmp(q->method, "POST") == 0)
		return "GET";
	return q->method;
}

/* Follows a redirect through the same decision as the first request. */
static void follow(struct req *q, const char *location)
{
	const char *reason = NULL, *method = redirect_method(q);
	struct mcpx_url next;
	char why[160];

	mcpx_brk_account(q, NULL, "ok"); /* this hop got its answer */
	q->hop++;
	q->hop_started_us = mcpx_now_us();
	q->status = 0;
	q->bytes_out = 0;
	mcpx_buf_free(&q->resp);
	if (q->hop > MCPX_BROKER_MAX_REDIRECTS) {
		mcpx_brk_deny(q, "redirect", "more than %d redirects", MCPX_BROKER_MAX_REDIRECTS);
		return;
	}
	if (mcpx_url_parse(location, strlen(location), NULL, &next, why, sizeof(why)) < 0) {
		mcpx_brk_deny(q, "redirect", "redirected to a URL the broker refuses: %s", why);
		return;
	}
	q->cross_origin |= strcmp(next.scheme, q->url.scheme) != 0 ||
	                   strcmp(next.host, q->url.host) != 0 || next.port != q->url.port;
	mcpx_url_release(&q->url);
	q->url = next;
	if (method != q->method) {
		snprintf(q->method, sizeof(q->method), "%s", method);
		free(q->body);
		q->body = NULL;
		q->body_len = 0;
	}
	q->rule = mcpx_egress_grant_match(q->who->grant, &q->url, q->method, &reason);
	if (!q->rule) {
		mcpx_brk_deny(q, "redirect", "redirected to %s://%s:%u%s, which %s", q->url.scheme,
		              q->url.host, q->url.port, q->url.path,
		              strcmp(reason, "method") == 0
		                  ? "no egress rule allows with this method"
		                  : "no egress rule of this run allows");
		return;
	}
	if (literal_refused(q)) {
		deny_address(q);
		return;
	}
	start_transfer(q);
}

static void transfer_done(struct req *q, CURLcode rc)
{
	char *location = NULL, *u = NULL;
	curl_off_t up = 0;

	CURL *e = q->h.x.easy;
	bool refused = mcpx_egress_refused(&q->h, rc);

	mcpx_curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &q->status);
	if (mcpx_curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK && up >= 0)
		q->bytes_out = (uint64_t)up;
	/* curl resolves Location against the request's URL; it follows
	 * nothing itself (egress_handle.h). */
	if (rc == CURLE_OK && is_redirect(q->status) &&
	    mcpx_curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &u) == CURLE_OK && u)
		location = strdup(u);
	if (refused) {
		q->refused = q->h.refused;
		snprintf(q->refused_addr, sizeof(q->refused_addr), "%s", q->h.refused_addr);
	}
	mcpx_brk_detach_easy(q);
	if (q->too_large || rc == CURLE_FILESIZE_EXCEEDED)
		mcpx_brk_deny(q, "too_large",
		              "the response is larger than %zu bytes (max_response_bytes of "
		              "rule %s)",
		              q->rule->max_response_bytes, q->rule->name);
	else if (refused)
		deny_address(q);
	else if (q->hdr_too_large)
		mcpx_brk_fail_fetch(q, "the response's headers exceed %u bytes or %u lines",
		                    RESP_HEADERS_MAX, RESP_HEADERS_COUNT);
	else if (rc != CURLE_OK)
		fail_curl(q, rc);
	else if (location)
		follow(q, location);
	else
		mcpx_brk_reply_response(q);
	free(location);
}

/* ---- deciding a request ---------------------------------------------------- */

/* The request's members, by type; false when q was refused. */
static bool read_fields(struct req *q, cJSON *msg, double *timeout)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(msg, "timeout");
	const cJSON *h;

	if (method && (!cJSON_IsString(method) ||
	               !mcpx_method_valid(method->valuestring, strlen(method->valuestring)))) {
		mcpx_brk_deny(q, "bad_request", "the method must be 1..16 upper-case letters");
		return false;
	}
	snprintf(q->method, sizeof(q->method), "%s", method ? method->valuestring : "GET");
	if (t && (!cJSON_IsNumber(t) || !(t->valuedouble > 0))) {
		mcpx_brk_deny(q, "bad_request", "timeout must be a positive number of seconds");
		return false;
	}
	*timeout = t ? t->valuedouble : 0;
	q->headers = cJSON_DetachItemFromObjectCaseSensitive(msg, "headers");
	if (q->headers &&
	    (!cJSON_IsArray(q->headers) || cJSON_GetArraySize(q->headers) > REQ_HEADERS_MAX)) {
		mcpx_brk_deny(q, "bad_request", "headers must be at most %d [name, value] pairs",
		              REQ_HEADERS_MAX);
		return false;
	}
	cJSON_ArrayForEach(h, q->headers)
	{
		if (!cJSON_IsArray(h) || cJSON_GetArraySize(h) != 2 ||
		    !cJSON_IsString(cJSON_GetArrayItem(h, 0)) ||
		    !cJSON_IsString(cJSON_GetArrayItem(h, 1))) {
			mcpx_brk_deny(q, "bad_request",
			              "each header must be a [name, value] pair of strings");
			return false;
		}
	}
	return true;
}

static bool headers_refused(struct req *q)
{
	const char *cred = q->rule->has_credential ? q->rule->cred.header : NULL;
	const cJSON *h;

	cJSON_ArrayForEach(h, q->headers)
	{
		const char *name = cJSON_GetArrayItem(h, 0)->valuestring;
		const char *value = cJSON_GetArrayItem(h, 1)->valuestring;
		const char *why =
		    mcpx_header_refusal(name, strlen(name), value, strlen(value), cred);

		if (why) {
			mcpx_brk_deny(q, "header", "header %s refused: %s",
			              mcpx_shown_name(name, 64), why);
			return true;
		}
	}
	return false;
}

/* The request against the run's caps and grant; false when it was refused.
 * The URL is read first so that every audit line says where it went. */
static bool allowed(struct req *q, cJSON *msg, const cJSON *url, bool oversize, double *timeout)
{
	const struct mcpx_egress_grant *g = q->who->grant;
	const char *reason = NULL;
	char why[160];

	if (!read_fields(q, msg, timeout))
		return false;
	if (!cJSON_IsString(url)) {
		mcpx_brk_deny(q, "bad_request", "url must be a string");
		return false;
	}
	if (mcpx_url_parse(url->valuestring, strlen(url->valuestring), NULL, &q->url, why,
	                   sizeof(why)) < 0) {
		mcpx_brk_deny(q, "bad_url", "%s", why);
		return false;
	}
	q->have_url = true;
	if (mcpx_run_op_count(q->op) > g->max_requests)
		mcpx_brk_deny(q, "run_limit", "this run made its %u requests (max_requests)",
		              g->max_requests);
	else if (mcpx_run_op_in_flight(q->op) > g->max_in_flight)
		mcpx_brk_deny(q, "in_flight",
		              "%u requests of this run are already in flight (max_in_flight)",
		              g->max_in_flight);
	else if (!g->n_rules)
		mcpx_brk_deny(q, "not_configured", "no egress is configured for this run");
	else if (oversize)
		mcpx_brk_deny(q, "request_too_large", "the request body is larger than %u bytes",
		              MCPX_RUN_CHANNEL_MAX_BODY);
	else if (!(q->rule = mcpx_egress_grant_match(g, &q->url, q->method, &reason)))
		mcpx_brk_deny(q, reason, "no egress rule of this run allows %s%s%s://%s:%u%s",
		              strcmp(reason, "method") == 0 ? q->method : "",
		              strcmp(reason, "method") == 0 ? " on " : "", q->url.scheme,
		              q->url.host, q->url.port, q->url.path);
	else if (headers_refused(q))
		return false;
	else if (literal_refused(q))
		deny_address(q);
	else
		return true;
	return false;
}

/* A "fetch" frame (the run channel's op table): decided, then started on
 * the multi handle; answered now when refused. msg is the run's: the
 * headers are taken from it. */
static void on_fetch(void *arg, struct mcpx_run_op *op, const char *name, const cJSON *msg,
                     const char *body, size_t len, bool oversize)
{
	struct req *q = calloc(1, sizeof(*q));
	cJSON *m = (cJSON *)msg;
	double timeout = 0, limit;

	(void)name;
	if (!q) {
		mcpx_run_op_answer(op, NULL, NULL, 0); /* closes the channel */
		return;
	}
	q->b = arg;
	q->op = op;
	q->who = mcpx_run_op_who(op);
	q->hop_started_us = mcpx_now_us();
	*mcpx_run_op_data(op) = q;
	if (!allowed(q, m, cJSON_GetObjectItemCaseSensitive(msg, "url"), oversize, &timeout))
		return;
	limit = q->rule->timeout_s;
	if (timeout > 0 && timeout < limit)
		limit = timeout;
	q->deadline_us = mcpx_now_us() + (uint64_t)(limit * 1e6);
	if (len && !(q->body = malloc(len))) {
		mcpx_brk_fail_fetch(q, "the server could not start the request (out of memory)");
		return;
	}
	if (len)
		memcpy(q->body, body, len);
	q->body_len = len;
	mcpx_brk_req_hold(q);
	start_transfer(q);
}

/* The run ended before q's answer: its transfer stops here. */
static void on_fetch_cancel(void *arg, struct mcpx_run_op *op)
{
	struct req *q = *mcpx_run_op_data(op);

	(void)arg;
	if (!q)
		return;
	if (q->h.x.easy)
		mcpx_brk_account(q, NULL, "cancelled");
	mcpx_brk_req_free(q);
}

static void on_fetch_run_end(void *arg, const struct mcpx_run_who *who, void *run_data)
{
	struct egress_run *er = run_data;

	(void)arg;
	if (er && er->unaudited)
		mcpx_warn(
		    "egress broker: run %s: %u more requests were refused past its max_requests "
		    "(counted in /metrics, not audited one by one)",
		    who->run_id, er->unaudited);
	free(er);
}

int mcpx_broker_serve(struct mcpx_broker *b, struct mcpx_run_channel *rc)
{
	const struct mcpx_run_op_handler h = {.name = "fetch",
	                                      .op = on_fetch,
	                                      .cancel = on_fetch_cancel,
	                                      .run_end = on_fetch_run_end,
	                                      .arg = b};

	return mcpx_run_channel_add_op(rc, &h);
}

/* ---- the broker ------------------------------------------------------------- */

static char *dup_setting(const char *s)
{
	return s && s[0] ? strdup(s) : NULL;
}

int mcpx_broker_new(struct mcpx_curl_loop *http, struct mcpx_policy_store *store,
                    const struct mcpx_broker_opts *o, struct mcpx_broker **out,
                    struct mcpx_err *err)
{
	struct mcpx_broker *b;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b || (o->proxy && o->proxy[0] && !(b->proxy = dup_setting(o->proxy))) ||
	    (o->ca_file && o->ca_file[0] && !(b->ca_file = dup_setting(o->ca_file)))) {
		mcpx_broker_free(b);
		return mcpx_err_set(err, ENOMEM, "egress broker: out of memory");
	}
	b->store = store;
	b->http = http;
	*out = b;
	return 0;
}

void mcpx_broker_free(struct mcpx_broker *b)
{
	if (!b)
		return;
	free(b->proxy);
	free(b->ca_file);
	free(b);
}
