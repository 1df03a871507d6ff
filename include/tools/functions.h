/*
 * functions.h - running a callable function (policy.h, struct mcpx_function)
 * in the sandbox: from a tools/call (tool_function.c), or from a running
 * run's code with mcpx.call (an op on its run channel, run_channel.h).
 *
 * A call is checked on the host first: its arguments against the
 * function's compiled input schema (jsonschema.h), before any sandbox is
 * prepared, so an invalid call never reaches a run. It then runs as an
 * executor job like exec's (same queue and slot, sandbox, warm path,
 * limits, cancellation, progress): main.py is a fixed line that hands
 * control to the trusted wrapper shipped in the binary
 * (python/mcpx_function.py), and the invocation (the function's source and
 * the validated arguments) arrives on the run's stdin. The wrapper calls
 * handler(args, ctx) and sends the outcome as one "result" op on the run's
 * run channel, not on stdout (which the function's prints share); the
 * server takes the first result of a function's own run only, answers it,
 * and, once the run has ended, checks it (JSON, size, output schema) and
 * turns it into the call's result.
 *
 * The run is served by the broker under the function's own grant (its
 * egress rules, credentials included) and under the policy version the call
 * started with, whatever reloads happen meanwhile.
 *
 * mcpx.call from a run: the caller holds the replica's one execution slot
 * and waits, so the callee cannot queue behind it; it starts at once
 * beside its caller as a nested job (executor.h), under the caller's
 * policy version, with the caller's remaining wall-clock time at most, and
 * is cancelled when the caller's run ends (its op is cancelled with
 * the run). A run has one call in flight at a time and makes at most
 * MCPX_FN_MAX_CALLS (its "call" ops: fetches and upstream calls have caps
 * of their own), and calls nest at most MCPX_FN_MAX_DEPTH deep. The
 * caller gets the callee's structured result or its error text, never its
 * rules or credentials.
 */
#ifndef MCPX_FUNCTIONS_H
#define MCPX_FUNCTIONS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job_event.h"
#include "jsonschema.h"

struct mcpx_config;
struct mcpx_executor;
struct mcpx_job;
struct mcpx_run_channel;
struct mcpx_function;
struct mcpx_policy;
struct mcpx_functions;
struct mcpx_fn_run;

/* exec (or a function's tools/call) is depth 0; each mcpx.call one more. */
#define MCPX_FN_MAX_DEPTH 3
/* Calls one run may make with mcpx.call, in all (each is a run of its own,
 * with an audit line). */
#define MCPX_FN_MAX_CALLS 100
/* Bytes of a failed function's traceback kept (its end). */
#define MCPX_FN_TRACEBACK_MAX (16u * 1024u)
/* Room for a call's refusal: the schema's failures and a heading. */
#define MCPX_FN_MSG_MAX (MCPX_SCHEMA_ERRORS_TEXT + 512)

/* How a call ended. The metric label of each is in parentheses. */
enum mcpx_fn_outcome {
	MCPX_FN_OK,         /* structured holds the structuredContent ("ok") */
	MCPX_FN_RAISED,     /* the function raised: its message and traceback ("raised") */
	MCPX_FN_BAD_RESULT, /* not JSON, too large, or not matching output_schema ("bad_result") */
	MCPX_FN_FAILED,     /* no result: a limit, a crash, the server ("failed") */
};

struct mcpx_fn_result {
	enum mcpx_fn_outcome outcome;
	cJSON *structured; /* MCPX_FN_OK: the receiver takes it */
	const char *text;  /* otherwise: the error, valid during the callback */
};

struct mcpx_fn_callbacks {
	/* Called exactly once, unless the call is cancelled first. */
	void (*done)(void *arg, struct mcpx_fn_result *res);
	/* The job's queue/start/output events (optional; tools/call only). */
	void (*event)(void *arg, enum mcpx_job_event ev, size_t pos);
	void *arg;
};

struct mcpx_fn_call {
	struct mcpx_policy *policy;     /* the version the call runs under (ref taken) */
	const struct mcpx_function *fn; /* inside policy */
	const cJSON *args;              /* NULL reads as {} */
	const char *request_id;         /* for the audit line */
	const char *caller;             /* who (caller.h): its profile's limits apply */
	const char *client;             /* the transport's view, for the audit line */
	const char *task_id;            /* the MCP task it runs for, or NULL (task_hooks.h) */
};

/* Starts on loop's executor and serves the "call" and "result" ops of the
 * run channel rc (which may be NULL: no policy, no functions; else it
 * must outlive the result). Arguments are
 * validated on a worker thread of its own (offload.h), never on loop. */
struct mcpx_loop;

struct mcpx_functions *mcpx_functions_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                          struct mcpx_run_channel *rc, struct mcpx_loop *loop);
/* Cancels every call still running. */
void mcpx_functions_free(struct mcpx_functions *fs);

/* A tools/call of a function: validates the arguments (off the loop) and
 * queues the run. Returns 0 with *out (until done, or mcpx_fn_cancel): a
 * refusal found after this returns (invalid arguments: "invalid arguments:
 * N errors" and one line per failure with its JSON pointer; a full queue;
 * shutting down) comes through done as MCPX_FN_FAILED with its text. Or
 * -ENOMEM with msg set and nothing run. Refusals are counted in /metrics. */
int mcpx_fn_start(struct mcpx_functions *fs, const struct mcpx_fn_call *call,
                  const struct mcpx_fn_callbacks *cb, struct mcpx_fn_run **out, char *msg,
                  size_t msglen);

/* The client cancelled or went away: the run is killed, no callback. */
void mcpx_fn_cancel(struct mcpx_fn_run *r);

/* The running job (for progress output); NULL before it is queued. */
struct mcpx_job *mcpx_fn_job(const struct mcpx_fn_run *r);

#endif
