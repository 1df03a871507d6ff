/*
 * run_channel.h - everything a run sends over its channel, routed by op.
 *
 * A run that may reach the server has one end of a socketpair (sandbox.h,
 * MCPX_SANDBOX_CHANNEL_FD); the server end is handed to this module when
 * the run starts. The run sends requests as frames (broker_wire.h), each a
 * JSON object with an "id" (an integer up to 2^53 - 1) and an "op", and
 * gets exactly one answer per id, with the same "id".
 *
 * This module owns the channel on the loop: it reads and frames requests,
 * writes answers, and dispatches each request by its "op" through a table
 * of handlers ({name, handler, per-op limits}): "fetch" (the egress
 * broker, broker.h), "call" and "result" (functions.h), "upstream" and
 * "upstream_tools" (upstream_ops.h). It knows nothing of what they do; an
 * op no handler has is refused here ({"error": "denied", "reason":
 * "bad_request"}).
 *
 * Caps that hold for every op, whoever handles it:
 *  - a request body over MCPX_RUN_CHANNEL_MAX_BODY is dropped and the
 *    request handed over marked oversize (handlers refuse it politely);
 *  - a run that does not read its answers is not read either: once
 *    OUT_MAX_FRAMES answers or OUT_MAX_BYTES (run_channel.c: 64 and
 *    64 KiB) wait unread, the channel is no longer read until they drain,
 *    so the run's own writes block;
 *  - a handler's per-op limits (max_per_run, max_in_flight), when set.
 * A request counts as in flight until its answer has been written to the
 * channel. What the server holds for a run (its buffers, its queued answers
 * and whatever each handler reports with mcpx_run_op_hold) is reported to
 * its starter (who->held) and charged to the run's memory budget.
 *
 * A run is served under the policy version and grant its starter names (a
 * function's run under the function's grant), or, by default, under the
 * exec grant of the policy current when it starts, for the caller's
 * profile.
 */
#ifndef MCPX_RUN_CHANNEL_H
#define MCPX_RUN_CHANNEL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mcpx_loop;
struct mcpx_policy;
struct mcpx_policy_store;
struct mcpx_egress_grant;
struct mcpx_run_channel;
struct mcpx_run_channel_run;
struct mcpx_run_op;

/* Largest request body a run may send (larger ones arrive oversize). */
#define MCPX_RUN_CHANNEL_MAX_BODY (4u << 20)
/* Handlers in the table. */
#define MCPX_RUN_CHANNEL_MAX_OPS 8

/* Starts the module on loop, serving runs under the policy in store (not
 * owned; must outlive it). NULL when out of memory. */
struct mcpx_run_channel *mcpx_run_channel_new(struct mcpx_loop *loop,
                                              struct mcpx_policy_store *store);
/* Ends every run (their ops cancelled) and frees rc. NULL is fine. */
void mcpx_run_channel_free(struct mcpx_run_channel *rc);

/* True when exec runs get a channel now: the current policy grants exec
 * (or a profile's exec) at least one egress rule or upstream, or lets exec
 * code call a function. False for a NULL rc. */
bool mcpx_run_channel_exec_wants(const struct mcpx_run_channel *rc);

/* Who a run is: for audit lines (strings copied, cut to fit), what it may
 * reach, and what a handler needs to know of it. */
struct mcpx_run_who {
	const char *run_id;
	const char *request_id;
	const char *caller;
	/* The caller's profile under the run's policy ("" for none); filled
	 * in by run_start. */
	const char *profile;
	/* The policy version and the grant in it the run is served under (the
	 * module takes its own reference); NULL: the current version and its
	 * exec grant for the caller. */
	struct mcpx_policy *policy;
	const struct mcpx_egress_grant *grant;
	unsigned depth;       /* nesting: 0 for a tools/call's run */
	uint64_t deadline_us; /* when the run's wall clock ends (mcpx_now_us) */
	uint64_t token;       /* a handler's name for the run; 0: none */
	/* Told the bytes the server holds for the run whenever that changes,
	 * so its starter can charge them to the run's memory budget; NULL:
	 * not told. Never called once the run has ended. */
	void (*held)(void *arg, uint64_t bytes);
	void *held_arg;
};

/* A run starts: the module takes the server end of its channel (*fd is set
 * to -1) and serves its requests under who (copied), until it ends. NULL
 * (and *fd untouched) when out of memory or without rc. */
struct mcpx_run_channel_run *mcpx_run_channel_start(struct mcpx_run_channel *rc, int *fd,
                                                    const struct mcpx_run_who *who);

/* The run ended: its unanswered ops are cancelled (each handler's cancel),
 * each handler's run_end is called, the channel is closed and r is freed.
 * NULL is fine. */
void mcpx_run_channel_end(struct mcpx_run_channel_run *r);

/* ---- the op table ---------------------------------------------------------- */

struct mcpx_run_op_handler {
	const char *name; /* the "op"; a static string */
	/* A frame of this op arrived: msg is its JSON object, body its raw
	 * body (both borrowed for the call; oversize when the body was over
	 * MCPX_RUN_CHANNEL_MAX_BODY and dropped). The handler answers q
	 * exactly once, now or later, with mcpx_run_op_answer, unless cancel
	 * comes first. */
	void (*op)(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
	           const char *body, size_t len, bool oversize);
	/* The run ended (or its channel failed) before q was answered: q is
	 * gone once this returns and must not be answered. */
	void (*cancel)(void *arg, struct mcpx_run_op *q);
	/* Optional: the run who describes ended (after its ops were
	 * cancelled); who is not valid afterwards. run_data is this handler's
	 * slot for the run (mcpx_run_op_run_data), for the handler to free. */
	void (*run_end)(void *arg, const struct mcpx_run_who *who, void *run_data);
	void *arg;
	/* Per-op limits this module enforces before the handler sees a frame
	 * (0: none): frames of this op a run may send in all, and may have in
	 * flight at once. Past one, refuse words the refusal (reason
	 * "run_limit" or "in_flight", limit the number passed) and answers q;
	 * without refuse the run gets {"error": "denied", "reason": ...}.
	 * Caps that depend on the run's grant (max_requests and max_in_flight
	 * of egress, an upstream's max_calls_per_run) are not fixed per op:
	 * the handler checks them, with mcpx_run_op_count and
	 * mcpx_run_op_in_flight. */
	unsigned max_per_run;
	unsigned max_in_flight;
	void (*refuse)(void *arg, struct mcpx_run_op *q, const cJSON *msg, const char *reason,
	               unsigned limit);
};

/* Adds h (copied) to rc's table; a handler of the same name is replaced
 * (h->op NULL: removed, as mcpx_run_channel_remove_op). Returns 0, or
 * -ENOSPC past MCPX_RUN_CHANNEL_MAX_OPS names. */
int mcpx_run_channel_add_op(struct mcpx_run_channel *rc, const struct mcpx_run_op_handler *h);

/* Takes the handler of name out of rc's table (its module is going away):
 * frames of that op are refused as unknown from then on, and nothing of
 * the handler is called again, not even cancel for ops in flight. No-op
 * when there is none. */
void mcpx_run_channel_remove_op(struct mcpx_run_channel *rc, const char *name);

/* Who sent q: the who its run started with, policy, grant and profile
 * filled in. The same pointer for every op of a run; valid until the run's
 * run_end. */
const struct mcpx_run_who *mcpx_run_op_who(const struct mcpx_run_op *q);

/* Frames of q's op its run has sent, q included. */
unsigned mcpx_run_op_count(const struct mcpx_run_op *q);
/* Frames of q's op of its run in flight (not yet answered, or answered
 * and not yet written), q included. */
unsigned mcpx_run_op_in_flight(const struct mcpx_run_op *q);

/* The handler's own pointer for q (NULL until set), and for q's run
 * (handed to run_end). */
void **mcpx_run_op_data(struct mcpx_run_op *q);
void **mcpx_run_op_run_data(struct mcpx_run_op *q);

/* The bytes the handler holds for q now (request body, response so far):
 * charged to the run with the channel's own. */
void mcpx_run_op_hold(struct mcpx_run_op *q, uint64_t bytes);

/* Answers q with msg (taken; its "id" is set here) and body (malloc'd,
 * taken, may be NULL). q belongs to this module again afterwards: the
 * handler must not touch it (it may be freed before this returns). */
void mcpx_run_op_answer(struct mcpx_run_op *q, cJSON *msg, char *body, size_t len);

#endif
