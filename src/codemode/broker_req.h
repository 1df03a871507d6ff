/*
 * broker_req.h - what the egress broker's files share (broker.c,
 * broker_req.c): the broker, a fetch's state (struct req) from its frame
 * to its answer, and how a fetch is audited and answered. Not for use
 * outside src/codemode/broker*.c.
 */
#ifndef MCPX_BROKER_REQ_H
#define MCPX_BROKER_REQ_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "egress_check.h"
#include "egress_handle.h"
#include "policy.h"
#include "run_channel.h"

struct mcpx_broker {
	struct mcpx_policy_store *store;
	struct mcpx_curl_loop *http; /* the shared transport (app.c's) */
	char *proxy;                 /* NULL: none */
	char *ca_file;               /* NULL: the system's CAs */
};

struct req;

/* What a run's fetches share: refusals past its cap, not audited one by
 * one, are counted for one warning at its end (the run channel's run data
 * for the fetch handler). */
struct egress_run {
	unsigned unaudited;
};

/* A fetch, from its frame to its answer (its op's data). */
struct req {
	struct mcpx_egress_handle h; /* this hop's transfer; h.x.easy NULL between */
	struct mcpx_broker *b;
	struct mcpx_run_op *op;
	const struct mcpx_run_who *who; /* the run channel's, valid while op is */
	const struct mcpx_egress_rule *rule;
	struct mcpx_url url;
	bool have_url, cross_origin;
	char method[17];
	cJSON *headers; /* the run's own, [[name, value], ...] */
	char *body;
	size_t body_len;
	struct mcpx_buf resp;
	cJSON *resp_headers;
	size_t resp_hdr_bytes;
	unsigned resp_hdr_count, hop;
	long status;
	uint64_t bytes_out, hop_started_us, deadline_us;
	enum mcpx_addr_class refused;
	char refused_addr[64];
	bool too_large, hdr_too_large;
};

/* Ends this hop's transfer (its header list, with the credential, is
 * wiped). */
void mcpx_brk_detach_easy(struct req *q);
/* Frees the fetch's own state: after its answer or when it was cancelled. */
void mcpx_brk_req_free(struct req *q);
/* One audit line and one count for this request (this hop): reason is why
 * it was refused (NULL: allowed), result how an allowed one ended. */
void mcpx_brk_account(struct req *q, const char *reason, const char *result);
/* Charges what the server holds for q to its run (the run channel). */
void mcpx_brk_req_hold(struct req *q);

/* The answers; each is q's last use (q is freed before it returns).
 * Refuses q: audit, metrics, and {"error": "denied", "reason"} to the run. */
void mcpx_brk_deny(struct req *q, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* q was allowed but did not get a response: {"error": "fetch"}. */
void mcpx_brk_fail_fetch(struct req *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The response collected: {status, headers, url} and the body. */
void mcpx_brk_reply_response(struct req *q);

#endif
