/*
 * broker.h - the egress broker: run code reaches the URLs its policy
 * grants through the server, never with a socket of its own.
 *
 * A run with egress has one end of a socketpair (sandbox.h,
 * MCPX_SANDBOX_CHANNEL_FD); the server end is handed to the broker when the
 * run starts. The run sends requests as frames (broker_wire.h):
 *
 *   {"id": n, "op": "fetch", "url": "...", "method": "GET",
 *    "headers": [["name", "value"], ...], "timeout": seconds}  + body
 *
 * and gets, for each id, exactly one answer:
 *
 *   {"id": n, "status": 200, "headers": [["name", "value"], ...],
 *    "url": "final URL"}  + response body
 *   {"id": n, "error": "denied", "reason": "no_rule", "message": "..."}
 *   {"id": n, "error": "fetch", "message": "..."}
 *
 * For each request the broker checks the URL against the run's grant
 * (policy.h), the headers against the filter (egress_check.h), the number
 * of requests in flight and in total, then performs it with libcurl's multi
 * interface on the server's loop, checking every address curl is about to
 * connect to, following redirects itself (each hop re-checked), capping the
 * response, adding the rule's credential. Each request (each hop) writes
 * one audit line and counts in /metrics. When the run ends, its requests
 * are cancelled.
 *
 * Reasons a request is denied ("reason"): not_configured, bad_request,
 * bad_url, no_rule, method, header, address, redirect, too_large,
 * request_too_large, in_flight, run_limit.
 */
#ifndef MCPX_BROKER_H
#define MCPX_BROKER_H

#include <stdbool.h>

#include "err.h"

struct mcpx_loop;
struct mcpx_policy_store;
struct mcpx_broker;
struct mcpx_broker_run;

/* Largest request body a run may send (larger ones are refused). */
#define MCPX_BROKER_MAX_REQUEST_BODY (4u << 20)
/* Redirects followed for one request. */
#define MCPX_BROKER_MAX_REDIRECTS 5

struct mcpx_broker_opts {
	const char *proxy;   /* MCP_EXEC_EGRESS_PROXY, or NULL/"" for none */
	const char *ca_file; /* MCP_EXEC_EGRESS_CA_FILE, or NULL/"" for the system's */
};

/* Starts the broker on loop, serving the policy in store (not owned; must
 * outlive the broker). Returns 0 or -errno with err. */
int mcpx_broker_new(struct mcpx_loop *loop, struct mcpx_policy_store *store,
                    const struct mcpx_broker_opts *o, struct mcpx_broker **out,
                    struct mcpx_err *err);
/* Ends every run's requests and frees the broker. NULL is fine. */
void mcpx_broker_free(struct mcpx_broker *b);

/* True when exec runs get a channel now: the current policy grants exec at
 * least one rule. False for a NULL broker. */
bool mcpx_broker_exec_channel(const struct mcpx_broker *b);

/* Who a run is, for its audit lines (copied, cut to fit). */
struct mcpx_broker_who {
	const char *run_id;
	const char *request_id;
	const char *caller;
};

/* A run starts: the broker takes the server end of its channel (*fd is set
 * to -1) and answers its requests under the exec grant of the policy
 * current now, which the run keeps until it ends. NULL (and *fd untouched)
 * when out of memory or without a broker. */
struct mcpx_broker_run *mcpx_broker_run_start(struct mcpx_broker *b, int *fd,
                                              const struct mcpx_broker_who *who);

/* The run ended: its requests are cancelled (audited as such), the channel
 * is closed, and r is freed. NULL is fine. */
void mcpx_broker_run_end(struct mcpx_broker_run *r);

#endif
