/*
 * functions_ops.c - the functions module's run channel ops and the module
 * itself (functions.h): "result", a function's run sending its outcome,
 * and "call", mcpx.call from a run's code (which functions its code may
 * call, how deep, in whose time, with what arguments), added to the run
 * channel's op table with their caps when the module is made.
 *
 * What it does not do: check the arguments or queue the run
 * (functions_start.c), or turn the run into a result (functions.c).
 */
#include "functions.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "functions_internal.h"
#include "functions_start.h"
#include "jsonrpc.h"
#include "loop.h"
#include "metrics.h"
#include "offload.h"
#include "policy.h"
#include "run_channel.h"

/* ---- the broker's ops: "result" from a function's run ----------------- */

static void op_result(struct mcpx_functions *fs, struct mcpx_run_op *q, const cJSON *msg,
                      const char *body, size_t len, bool oversize)
{
	struct mcpx_fn_run *r = mcpx_fn_find_token(fs, mcpx_run_op_who(q)->token);
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(msg, "status");

	if (!r) {
		mcpx_fn_answer_error(q, "denied", "this run is not a function's run");
		return;
	}
	if (r->got_result) {
		mcpx_fn_answer_error(q, "denied", "the result was already sent");
		return;
	}
	if (!cJSON_IsString(status) ||
	    (strcmp(status->valuestring, "ok") != 0 && strcmp(status->valuestring, "error") != 0 &&
	     strcmp(status->valuestring, "bad_result") != 0)) {
		mcpx_fn_answer_error(q, "denied",
		                     "status must be \"ok\", \"error\" or \"bad_result\"");
		return;
	}
	r->status = strdup(status->valuestring);
	r->body = oversize ? NULL : malloc(len ? len : 1);
	if (!r->status || (!oversize && !r->body)) {
		mcpx_fn_answer_error(q, "denied", "the server is out of memory");
		return;
	}
	if (r->body)
		memcpy(r->body, body, len);
	r->body_len = len;
	r->body_too_large = oversize;
	r->got_result = true;
	mcpx_run_op_answer(q, cJSON_CreateObject(), NULL, 0);
}

/* ---- the broker's ops: "call" from code (mcpx.call) --------------------- */

/* One call in flight per calling run: threads of a run wait their turn. */
/* The name a refusal echoes: only one a function could have. */
static void shown_name(const cJSON *name, char *shown, size_t len)
{
	snprintf(shown, len, "%s",
	         !cJSON_IsString(name)             ? "mcpx.call"
	         : strlen(name->valuestring) < len ? name->valuestring
	                                           : "(a long name)");
}

/* The function the caller names, if its code may call it now; else NULL
 * with the reason in msg. How many calls a run makes, and one at a time,
 * are the run channel's caps of the op (call_refused words them). */
static const struct mcpx_function *callee(const struct mcpx_run_who *who, const cJSON *name,
                                          char *msg, size_t msglen)
{
	const struct mcpx_function *fn = NULL;
	char shown[MCPX_FUNCTION_NAME_MAX + 1];

	if (!cJSON_IsString(name)) {
		snprintf(msg, msglen, "mcpx.call needs the name of a function");
		return NULL;
	}
	shown_name(name, shown, sizeof(shown));
	fn = mcpx_policy_function(who->policy, name->valuestring);
	/* A function the caller's profile leaves out does not exist for it,
	 * from its code either. */
	if (fn && !mcpx_policy_tool_allowed(who->policy, who->caller, fn->name))
		fn = NULL;
	if (!fn || !fn->callable_from_exec)
		snprintf(msg, msglen, "no function named \"%s\" may be called from code", shown);
	else if (who->depth + 1 > MCPX_FN_MAX_DEPTH)
		snprintf(msg, msglen, "%s: calls nest at most %d deep", shown, MCPX_FN_MAX_DEPTH);
	else if (mcpx_now_us() >= who->deadline_us)
		snprintf(msg, msglen, "%s: the calling run has no time left", shown);
	else
		return fn;
	return NULL;
}

/* A call past the op's caps (the run channel enforces them): a run waits
 * for one call at a time and makes MCPX_FN_MAX_CALLS in all. */
static void call_refused(void *arg, struct mcpx_run_op *q, const cJSON *msg, const char *reason,
                         unsigned limit)
{
	char shown[MCPX_FUNCTION_NAME_MAX + 1], text[MCPX_FN_MSG_MAX];

	(void)arg;
	shown_name(cJSON_GetObjectItemCaseSensitive(msg, "name"), shown, sizeof(shown));
	if (strcmp(reason, "in_flight") == 0)
		snprintf(text, sizeof(text),
		         "%s: this run already waits for a call (one at a time)", shown);
	else
		snprintf(text, sizeof(text), "%s: this run made its %u calls", shown, limit);
	mcpx_fn_answer_error(q, "tool", text);
}

/* The arguments: a JSON object in the body (checked against fn's schema
 * later, off the loop). */
static cJSON *call_args(const struct mcpx_function *fn, const char *body, size_t len, bool oversize,
                        char *msg, size_t msglen)
{
	const char *why;
	/* Parsed as requests are, so a U+0000 in a string reaches the
	 * function exactly (cJSON alone would end the string there). */
	cJSON *args = oversize ? NULL : mcpx_jsonrpc_parse(body, len, &why);

	if (oversize)
		snprintf(msg, msglen, "%s: the arguments are larger than %u bytes", fn->name,
		         MCPX_RUN_CHANNEL_MAX_BODY);
	else if (!cJSON_IsObject(args))
		snprintf(msg, msglen, "%s: the arguments must be a JSON object", fn->name);
	else
		return args;
	mcpx_metrics_tool_call(fn->name, "invalid_arguments");
	cJSON_Delete(args);
	return NULL;
}

static void op_call(struct mcpx_functions *fs, struct mcpx_run_op *q, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	const struct mcpx_run_who *who = mcpx_run_op_who(q);
	const struct mcpx_function *fn;
	char text[MCPX_FN_MSG_MAX];
	struct mcpx_fn_run *r;
	cJSON *args;

	fn = callee(who, cJSON_GetObjectItemCaseSensitive(msg, "name"), text, sizeof(text));
	args = fn ? call_args(fn, body, len, oversize, text, sizeof(text)) : NULL;
	if (!args) {
		mcpx_fn_answer_error(q, "tool", text);
		return;
	}
	r = mcpx_fn_run_new(fs, who->policy, fn, who->depth + 1);
	if (r) {
		/* One call at a time per caller holds from here (caller_busy). */
		r->op = q;
		if (mcpx_fn_validate_later(r, args) == 0)
			return;
		r->op = NULL;
		mcpx_fn_run_free(r);
	} else {
		cJSON_Delete(args);
	}
	mcpx_metrics_tool_call(fn->name, "failed");
	mcpx_fn_answer_error(q, "tool", "internal error: out of memory");
}

/* The op "call": mcpx.call of a function, from a run. */
static void on_call(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	(void)name;
	op_call(arg, q, msg, body, len, oversize);
}

/* The op "result": a function's run sends its outcome. */
static void on_result(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                      const char *body, size_t len, bool oversize)
{
	(void)name;
	op_result(arg, q, msg, body, len, oversize);
}

/* The caller's run ended first: its call goes with it. */
static void on_op_cancel(void *arg, struct mcpx_run_op *q)
{
	struct mcpx_fn_run *r = mcpx_fn_find_op(arg, q);

	if (r) {
		r->op = NULL;
		mcpx_fn_cancel(r);
	}
}

/* ---- the module ------------------------------------------------------------ */

struct mcpx_functions *mcpx_functions_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                          struct mcpx_run_channel *rc, struct mcpx_loop *loop)
{
	struct mcpx_functions *fs = calloc(1, sizeof(*fs));
	/* A run makes MCPX_FN_MAX_CALLS calls, one at a time: the call op's
	 * caps, enforced by the run channel. */
	struct mcpx_run_op_handler ops[] = {
	    {.name = "call",
	     .op = on_call,
	     .cancel = on_op_cancel,
	     .max_per_run = MCPX_FN_MAX_CALLS,
	     .max_in_flight = 1,
	     .refuse = call_refused},
	    {.name = "result", .op = on_result, .cancel = on_op_cancel},
	};

	if (!fs)
		return NULL;
	if (mcpx_offload_new(loop, &fs->offload) < 0) {
		free(fs);
		return NULL;
	}
	fs->cfg = cfg;
	fs->ex = ex;
	fs->rc = rc;
	for (size_t i = 0; rc && i < sizeof(ops) / sizeof(ops[0]); i++) {
		ops[i].arg = fs;
		if (mcpx_run_channel_add_op(rc, &ops[i]) < 0) {
			mcpx_functions_free(fs);
			return NULL;
		}
	}
	return fs;
}

void mcpx_functions_free(struct mcpx_functions *fs)
{
	if (!fs)
		return;
	/* Calls of tools/call were cancelled by the core, nested ones with
	 * their callers' runs; whatever is left goes now. */
	while (fs->runs)
		mcpx_fn_cancel(fs->runs);
	/* Validations still in the worker find their calls gone. */
	mcpx_offload_free(fs->offload);
	if (fs->rc) {
		mcpx_run_channel_remove_op(fs->rc, "call");
		mcpx_run_channel_remove_op(fs->rc, "result");
	}
	free(fs);
}
