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
 * A run that does not read its answers is not read either: once
 * OUT_MAX_FRAMES answers or OUT_MAX_BYTES (broker.c: 64 and 64 KiB) wait
 * unread, the broker stops reading the channel until they drain, so the
 * run's own writes block; what the server holds for a run (at most
 * max_in_flight transfers, one call and that queue) is reported to its
 * starter (who->held) and charged to the run's memory budget.
 *
 * Reasons a request is denied ("reason"): not_configured, bad_request,
 * bad_url, no_rule, method, header, address, redirect, too_large,
 * request_too_large, in_flight, run_limit.
 *
 * Frames with another "op" go to the handler set with mcpx_broker_set_ops
 * (functions.h: "call" from code calling a function, "result" from a
 * function's run); the broker only frames, counts and cancels them. A run
 * is served under the policy version and grant its starter names (a
 * function's run under the function's grant), or, by default, under the
 * exec grant of the policy current when it starts.
 */
#ifndef MCPX_BROKER_H
#define MCPX_BROKER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct mcpx_loop;
struct mcpx_policy;
struct mcpx_policy_store;
struct mcpx_egress_grant;
struct mcpx_broker;
struct mcpx_broker_run;
struct mcpx_broker_op;

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
 * least one rule, or lets exec code call a function. False for a NULL
 * broker. */
bool mcpx_broker_exec_channel(const struct mcpx_broker *b);

/* Who a run is: for its audit lines (strings copied, cut to fit), what it
 * may reach, and what an op handler needs to know of it. */
struct mcpx_broker_who {
	const char *run_id;
	const char *request_id;
	const char *caller;
	/* The policy version and the grant in it the run is served under (the
	 * broker takes its own reference); NULL: the current version and its
	 * exec grant. */
	struct mcpx_policy *policy;
	const struct mcpx_egress_grant *grant;
	unsigned depth;       /* nesting: 0 for a tools/call's run */
	uint64_t deadline_us; /* when the run's wall clock ends (mcpx_now_us) */
	uint64_t token;       /* the op handler's name for the run; 0: none */
	/* Told the bytes the server holds for the run (its requests, the
	 * responses being collected, the answers it has not read) whenever
	 * that changes, so its starter can charge them to the run's memory
	 * budget; NULL: not told. Never called once the run has ended. */
	void (*held)(void *arg, uint64_t bytes);
	void *held_arg;
};

/* A run starts: the broker takes the server end of its channel (*fd is set
 * to -1) and answers its requests under who's grant (by default the exec
 * grant of the policy current now), which the run keeps until it ends.
 * NULL (and *fd untouched) when out of memory or without a broker. */
struct mcpx_broker_run *mcpx_broker_run_start(struct mcpx_broker *b, int *fd,
                                              const struct mcpx_broker_who *who);

/* The run ended: its requests are cancelled (audited as such), the channel
 * is closed, and r is freed. NULL is fine. */
void mcpx_broker_run_end(struct mcpx_broker_run *r);

/* ---- other operations: a handler outside the broker --------------------- */

struct mcpx_broker_ops {
	/* A frame whose "op" is name (not "fetch") arrived: msg is its JSON
	 * object, body its raw body (both borrowed for the call; oversize when
	 * the body was over MCPX_BROKER_MAX_REQUEST_BODY and dropped). The
	 * handler answers q exactly once, now or later, with
	 * mcpx_broker_op_answer, unless cancel comes first. */
	void (*op)(void *arg, struct mcpx_broker_op *q, const char *name, const cJSON *msg,
	           const char *body, size_t len, bool oversize);
	/* The run ended (or its channel failed) before q was answered: q is
	 * gone and must not be answered. */
	void (*cancel)(void *arg, struct mcpx_broker_op *q);
	/* Optional: the run who describes ended (after its ops were
	 * cancelled); who is not valid afterwards. */
	void (*run_end)(void *arg, const struct mcpx_broker_who *who);
	void *arg;
};

#define MCPX_BROKER_MAX_NAMED_OPS 4

/* Routes frames whose "op" is name (a static string) to ops (copied),
 * ahead of the handler of mcpx_broker_set_ops; a second call for the same
 * name replaces its handler (zeroed ops: none). Returns 0, or -ENOSPC past
 * MCPX_BROKER_MAX_NAMED_OPS names. */
int mcpx_broker_add_op(struct mcpx_broker *b, const char *name, const struct mcpx_broker_ops *ops);

/* Routes every op but "fetch" to ops (copied); without a handler they are
 * refused as bad requests. */
void mcpx_broker_set_ops(struct mcpx_broker *b, const struct mcpx_broker_ops *ops);

/* Who sent q: the who its run started with, with the run's policy and
 * grant filled in. Valid until q is answered or cancelled. */
const struct mcpx_broker_who *mcpx_broker_op_who(const struct mcpx_broker_op *q);

/* How many ops other than fetch q's run has sent, q included. */
unsigned mcpx_broker_op_count(const struct mcpx_broker_op *q);

/* Answers q with msg (taken; its "id" is set here) and body (malloc'd,
 * taken, may be NULL). q is the broker's again afterwards. */
void mcpx_broker_op_answer(struct mcpx_broker_op *q, cJSON *msg, char *body, size_t len);

/* ---- other modules' transfers on the broker's curl multi handle ---------- */

/* A transfer another module (upstream.c) runs on the broker's curl multi
 * handle and the loop that drives it. The owner sets easy (a CURL *,
 * configured, with CURLOPT_PRIVATE left NULL) and done, and keeps x alive
 * until done is called or it removes x. */
struct mcpx_broker_xfer {
	void *easy;
	/* The transfer ended: curl_code is its CURLcode. x is no longer on the
	 * multi handle; the owner cleans up the easy handle. */
	void (*done)(struct mcpx_broker_xfer *x, int curl_code);
	struct mcpx_broker_xfer *next; /* the broker's */
};

/* Starts x. Returns 0 or -ENOMEM / -EIO (curl refused it). */
int mcpx_broker_xfer_add(struct mcpx_broker *b, struct mcpx_broker_xfer *x);
/* Stops x before its end (done is not called). NULL easy is fine. */
void mcpx_broker_xfer_remove(struct mcpx_broker *b, struct mcpx_broker_xfer *x);

#endif
