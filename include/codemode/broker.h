/*
 * broker.h - the egress broker: run code reaches the URLs its policy
 * grants through the server, never with a socket of its own.
 *
 * The broker is the "fetch" handler of the run channel's op table
 * (run_channel.h, which owns the run's channel, its frames and caps). A
 * run asks:
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
 * of the run's fetches in flight and in total, then performs it with
 * libcurl's multi interface on the server's loop, checking every address
 * curl is about to connect to, following redirects itself (each hop
 * re-checked), capping the response, adding the rule's credential. Each
 * request (each hop) writes one audit line and counts in /metrics. When
 * the run ends, its requests are cancelled.
 *
 * Reasons a request is denied ("reason"): not_configured, bad_request,
 * bad_url, no_rule, method, header, address, redirect, too_large,
 * request_too_large, in_flight, run_limit.
 *
 * Each request's easy handle is egress_handle.h's, the one the upstream MCP
 * client uses too, and both run on one shared curl loop (curl_loop.h) that
 * app.c makes.
 */
#ifndef MCPX_BROKER_H
#define MCPX_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct mcpx_curl_loop;
struct mcpx_policy;
struct mcpx_policy_store;
struct mcpx_egress_grant;
struct mcpx_broker;
struct mcpx_run_channel;

/* Redirects followed for one request. */
#define MCPX_BROKER_MAX_REDIRECTS 5

struct mcpx_broker_opts {
	const char *proxy;   /* MCP_EXEC_EGRESS_PROXY, or NULL/"" for none */
	const char *ca_file; /* MCP_EXEC_EGRESS_CA_FILE, or NULL/"" for the system's */
};

/* Starts the broker, its fetches on the shared transport http (curl_loop.h,
 * on the server's loop), serving the policy in store (neither owned; both
 * must outlive the broker). Returns 0 or -errno with err. */
int mcpx_broker_new(struct mcpx_curl_loop *http, struct mcpx_policy_store *store,
                    const struct mcpx_broker_opts *o, struct mcpx_broker **out,
                    struct mcpx_err *err);
/* Frees the broker; the run channel it serves is freed first. NULL is
 * fine. */
void mcpx_broker_free(struct mcpx_broker *b);

/* Registers the broker as the "fetch" handler of rc's op table. The
 * broker must outlive rc's runs (free rc first). Returns 0 or -ENOSPC. */
int mcpx_broker_serve(struct mcpx_broker *b, struct mcpx_run_channel *rc);

#endif
