/*
 * broker_req.c - a fetch of the egress broker (broker_req.h) from its
 * frame to its answer: its state freed with its transfer (the header list
 * with the credential wiped), what it holds charged to its run, one audit
 * line and one count per hop (refusals past the run's cap counted for one
 * warning, not audited one by one), and its answers: denied, failed, or
 * the response.
 *
 * Nothing a run sends is audited beyond the method, origin and path.
 *
 * What it does not do: decide a request or drive its transfer (broker.c).
 */
#include "broker_req.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "loop.h"
#include "metrics.h"
#include "utf8.h"

/* ---- requests: bookkeeping, audit, replies -------------------------------- */

/* Ends this hop's transfer (its header list, with the credential, is
 * wiped). */
void mcpx_brk_detach_easy(struct req *q)
{
	mcpx_egress_handle_close(&q->h, q->b->http);
}

/* Frees the fetch's own state: after its answer (the op is the run
 * channel's again) or when it was cancelled. */
void mcpx_brk_req_free(struct req *q)
{
	mcpx_brk_detach_easy(q);
	if (q->have_url)
		mcpx_url_release(&q->url);
	cJSON_Delete(q->headers);
	cJSON_Delete(q->resp_headers);
	free(q->body);
	mcpx_buf_free(&q->resp);
	free(q);
}

static uint64_t hop_ms(const struct req *q)
{
	return (mcpx_now_us() - q->hop_started_us) / 1000u;
}

/* One audit line and one count for this request (this hop). */
void mcpx_brk_account(struct req *q, const char *reason, const char *result)
{
	const struct mcpx_run_who *w = q->who;
	char origin[MCPX_HOST_MAX + 32];
	struct mcpx_audit_egress a = {0};

	mcpx_metrics_egress(q->rule ? q->rule->name : NULL, reason ? "denied" : result, reason);
	/* Past the run's cap, refusals are counted, not audited one by one:
	 * a loop of requests must not flood the log. */
	if (reason && mcpx_run_op_count(q->op) > w->grant->max_requests + 1) {
		struct egress_run **er = (struct egress_run **)mcpx_run_op_run_data(q->op);

		if (*er || (*er = calloc(1, sizeof(**er))))
			(*er)->unaudited++;
		return;
	}
	if (q->have_url)
		snprintf(origin, sizeof(origin), "%s://%s:%u", q->url.scheme, q->url.host,
		         q->url.port);
	a.run_id = w->run_id;
	a.request_id = w->request_id;
	a.caller = w->caller;
	a.profile = w->profile && w->profile[0] ? w->profile : NULL;
	a.rule = q->rule ? q->rule->name : NULL;
	a.method = q->method[0] ? q->method : NULL;
	a.origin = q->have_url ? origin : NULL;
	a.path = q->have_url ? q->url.path : NULL;
	a.hop = q->hop;
	a.status = (int)q->status;
	a.bytes_out = q->bytes_out;
	a.bytes_in = q->resp.len;
	a.ms = hop_ms(q);
	a.allowed = reason == NULL;
	a.reason = reason;
	a.result = reason ? NULL : result;
	mcpx_audit_egress_log(&a);
}

/* What the server holds for q (a URL is a few KiB): its body and the
 * response collected so far, charged to the run by the run channel. */
void mcpx_brk_req_hold(struct req *q)
{
	mcpx_run_op_hold(q->op, sizeof(*q) + q->body_len + q->resp.alloc + q->resp_hdr_bytes);
}

/* Answers q (its last use: q is freed before this returns). body is taken
 * over. */
static void reply(struct req *q, cJSON *msg, char *body, size_t body_len)
{
	mcpx_run_op_answer(q->op, msg, body, body_len);
	mcpx_brk_req_free(q);
}

/* Messages carry pieces of the run's URL and curl's words, cut to size:
 * kept valid UTF-8, as the run's JSON decoder needs. */
__attribute__((format(printf, 2, 0))) static void add_message(cJSON *m, const char *fmt, va_list ap)
{
	char msg[512], *clean;
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	clean = mcpx_utf8_sanitize(msg, strlen(msg), &n);
	cJSON_AddStringToObject(m, "message", clean ? clean : "(out of memory)");
	free(clean);
}

/* Refuses q: audit, metrics, and {"error": "denied"} to the run. */
__attribute__((format(printf, 3, 4))) void mcpx_brk_deny(struct req *q, const char *reason,
                                                         const char *fmt, ...)
{
	cJSON *m = cJSON_CreateObject();
	va_list ap;

	mcpx_brk_account(q, reason, NULL);
	cJSON_AddStringToObject(m, "error", "denied");
	cJSON_AddStringToObject(m, "reason", reason);
	va_start(ap, fmt);
	add_message(m, fmt, ap);
	va_end(ap);
	reply(q, m, NULL, 0);
}

/* q was allowed but did not get a response: {"error": "fetch"}. */
__attribute__((format(printf, 2, 3))) void mcpx_brk_fail_fetch(struct req *q, const char *fmt, ...)
{
	cJSON *m = cJSON_CreateObject();
	va_list ap;

	mcpx_brk_account(q, NULL, "failed");
	cJSON_AddStringToObject(m, "error", "fetch");
	va_start(ap, fmt);
	add_message(m, fmt, ap);
	va_end(ap);
	reply(q, m, NULL, 0);
}

void mcpx_brk_reply_response(struct req *q)
{
	cJSON *m = cJSON_CreateObject();
	size_t len = 0;
	char *body;

	mcpx_brk_account(q, NULL, "ok");
	cJSON_AddNumberToObject(m, "status", (double)q->status);
	cJSON_AddItemToObject(m, "headers", q->resp_headers);
	q->resp_headers = NULL;
	cJSON_AddStringToObject(m, "url", q->url.full);
	body = mcpx_buf_take(&q->resp, &len);
	reply(q, m, body, len);
}
