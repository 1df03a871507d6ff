/*
 * functions_start.c - a callable function's call starting (functions.h):
 * a tools/call's (mcpx_fn_start) or an mcpx.call's arguments checked
 * against the function's input schema on the offload worker, never on the
 * loop, then the call queued under its caller's limits or refused in
 * words; and a call cancelled.
 *
 * What it does not do: build or end the run (functions.c), or read the
 * run channel's ops (functions_ops.c).
 */
#include "functions_start.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "executor.h"
#include "functions_internal.h"
#include "loop.h"
#include "metrics.h"
#include "offload.h"
#include "policy.h"
#include "run_channel.h"

/* The function's timeout, as the server's limits allow: a task's run may
 * last up to MCP_EXEC_TASK_MAX_TIMEOUT_S. */
static unsigned timeout_for(const struct mcpx_config *cfg, const struct mcpx_function *fn,
                            bool task)
{
	unsigned t = fn->timeout_s ? fn->timeout_s : cfg->default_timeout_s;
	unsigned max = cfg->max_timeout_s;

	if (task && cfg->task_max_timeout_s > max)
		max = cfg->task_max_timeout_s;
	if (t > max)
		t = max;
	return t ? t : 1;
}

/* Arguments against the input schema: 0, or -EINVAL with every failure and
 * its pointer in msg. Runs on the offload worker (validation costs up to
 * MCPX_SCHEMA_CPU_LIMIT_MS of CPU, which must not stall the loop); the
 * compiled schema is read-only and safe there. */
static int validate_args(const struct mcpx_function *fn, const cJSON *args, char *msg,
                         size_t msglen)
{
	struct mcpx_schema_errors errs;
	int rc = mcpx_schema_validate(fn->input, args, &errs);

	if (rc == 0)
		return 0;
	if (rc == -ENOMEM && errs.count == 0) {
		snprintf(msg, msglen, "internal error: out of memory validating the arguments");
		return -ENOMEM;
	}
	mcpx_schema_errors_format(&errs, "invalid arguments", msg, msglen);
	return -EINVAL;
}

static const char *refusal_outcome(int rc)
{
	return rc == -EINVAL ? "invalid_arguments"
	       : rc == -EBUSY || rc == -ESHUTDOWN || rc == -EUSERS || rc == -EAGAIN ? "busy"
	                                                                            : "failed";
}

/* The executor's refusal, in words for the caller. */
static void refusal_text(const struct mcpx_functions *fs, int rc, char *msg, size_t msglen)
{
	if (rc == -EUSERS || rc == -EAGAIN)
		mcpx_executor_share_text(fs->ex, msg, msglen);
	else if (rc == -EBUSY)
		snprintf(msg, msglen,
		         "server busy: the queue of executions is full (limit %u); try again later",
		         fs->cfg->max_queue);
	else if (rc == -ESHUTDOWN)
		snprintf(msg, msglen, "server is shutting down: not accepting new executions");
	else
		snprintf(msg, msglen, "internal error: could not queue the function's run (%s)",
		         strerror(-rc));
}

/* ---- validating off the loop ---------------------------------------------- */

/* One call's arguments on their way through the offload worker: what the
 * worker reads is this struct's own (a copy of the arguments, a reference
 * to the policy holding the schema), so the call may go away meanwhile. */
struct validation {
	struct mcpx_offload_task task;
	struct mcpx_fn_run *r; /* NULL: the call was cancelled meanwhile */
	struct mcpx_policy *policy;
	const struct mcpx_function *fn;
	cJSON *args;
	int rc;
	char msg[MCPX_FN_MSG_MAX];
	/* A tools/call's, for its audit line and its profile; the task it
	 * runs for, or "". */
	char request_id[129], caller[161], client[161], task_id[40];
};

static void validate_work(struct mcpx_offload_task *t)
{
	struct validation *v = (struct validation *)((char *)t - offsetof(struct validation, task));

	v->rc = validate_args(v->fn, v->args, v->msg, sizeof(v->msg));
}

static void validated(struct mcpx_offload_task *t);

/* Hands r's arguments (taken) to the worker; validated() goes on. */
int mcpx_fn_validate_later(struct mcpx_fn_run *r, cJSON *args)
{
	struct validation *v = calloc(1, sizeof(*v));

	if (!v || !args) {
		free(v);
		cJSON_Delete(args);
		return -ENOMEM;
	}
	v->r = r;
	v->policy = mcpx_policy_ref(r->policy);
	v->fn = r->fn;
	v->args = args;
	v->task.work = validate_work;
	v->task.done = validated;
	r->validating = v;
	mcpx_offload_submit(r->fs->offload, &v->task);
	return 0;
}

/* The end a tools/call and an mcpx.call share once their arguments were
 * checked (v->rc): r's run queued with spec and bind, its timeout the
 * function's but at most max_s (a nested call's: what its caller has left);
 * or the refusal in words in v->msg, counted in the metrics. Returns 0 when
 * r runs (on_job_done ends it), else the refusal: the caller then answers it
 * its own way and frees r. */
static int finish_or_refuse(struct mcpx_fn_run *r, struct validation *v, struct mcpx_job_spec *spec,
                            struct mcpx_job_bind *bind, uint64_t max_s)
{
	int rc = v->rc;

	if (rc == 0) {
		spec->timeout_s = timeout_for(r->fs->cfg, r->fn, spec->task_id != NULL);
		if (max_s < spec->timeout_s)
			spec->timeout_s = (unsigned)max_s;
		rc = mcpx_fn_submit(r, v->args, spec, bind);
		if (rc < 0)
			refusal_text(r->fs, rc, v->msg, sizeof(v->msg));
	}
	if (rc != 0)
		mcpx_metrics_tool_call(r->fn->name, refusal_outcome(rc));
	return rc;
}

/* A tools/call whose arguments were checked: queued, or refused through
 * its done callback (the refusal the synchronous path used to return). */
static void start_validated(struct mcpx_fn_run *r, struct validation *v)
{
	const struct mcpx_profile *pr = mcpx_policy_profile_for(r->policy, v->caller);
	struct mcpx_job_spec spec = {.request_id = v->request_id,
	                             .caller = v->caller,
	                             .client = v->client,
	                             .task_id = v->task_id[0] ? v->task_id : NULL,
	                             .profile = pr ? pr->name : NULL,
	                             .limits = pr ? &pr->limits : NULL};
	struct mcpx_job_bind bind = {0};
	struct mcpx_fn_result res = {.outcome = MCPX_FN_FAILED, .text = v->msg};

	if (finish_or_refuse(r, v, &spec, &bind, UINT64_MAX) == 0)
		return;
	r->cb.done(r->cb.arg, &res);
	mcpx_fn_run_free(r);
}

/* An mcpx.call whose arguments were checked: the CPU the check took is the
 * calling run's (its cpu_ms and budget), then the call is queued or
 * answered with its refusal. */
static void call_validated(struct mcpx_fn_run *r, struct validation *v)
{
	struct mcpx_run_op *q = r->op;
	const struct mcpx_run_who *who = mcpx_run_op_who(q);
	const struct mcpx_profile *pr = mcpx_policy_profile_for(who->policy, who->caller);
	struct mcpx_job_spec spec = {.request_id = who->request_id,
	                             .caller = who->caller,
	                             .profile = pr ? pr->name : NULL,
	                             .limits = pr ? &pr->limits : NULL};
	struct mcpx_job_bind bind = {.nested = true, .parent_run_id = who->run_id};
	uint64_t now = mcpx_now_us();
	uint64_t left_s = 0;

	mcpx_executor_charge_cpu(r->fs->ex, who->run_id, v->task.cpu_us);
	if (now < who->deadline_us) {
		/* The callee ends with its caller at the latest. */
		left_s = (who->deadline_us - now + 999999u) / 1000000u;
	} else if (v->rc == 0) {
		v->rc = -ETIME;
		snprintf(v->msg, sizeof(v->msg), "%s: the calling run has no time left",
		         r->fn->name);
	}
	if (finish_or_refuse(r, v, &spec, &bind, left_s) == 0)
		return;
	r->op = NULL;
	mcpx_fn_run_free(r);
	mcpx_fn_answer_error(q, "tool", v->msg);
}

static void validated(struct mcpx_offload_task *t)
{
	struct validation *v = (struct validation *)((char *)t - offsetof(struct validation, task));
	struct mcpx_fn_run *r = v->r;

	if (r) {
		r->validating = NULL;
		if (t->cancelled) {
			v->rc = -ESHUTDOWN;
			snprintf(v->msg, sizeof(v->msg),
			         "server is shutting down: not accepting new executions");
		}
		if (r->op)
			call_validated(r, v);
		else
			start_validated(r, v);
	}
	cJSON_Delete(v->args);
	mcpx_policy_unref(v->policy);
	free(v);
}

int mcpx_fn_start(struct mcpx_functions *fs, const struct mcpx_fn_call *call,
                  const struct mcpx_fn_callbacks *cb, struct mcpx_fn_run **out, char *msg,
                  size_t msglen)
{
	struct mcpx_fn_run *r = mcpx_fn_run_new(fs, call->policy, call->fn, 0);
	cJSON *args = call->args ? cJSON_Duplicate(call->args, true) : cJSON_CreateObject();

	*out = NULL;
	msg[0] = '\0';
	if (r) {
		r->cb = *cb;
		if (mcpx_fn_validate_later(r, args) == 0) {
			snprintf(r->validating->request_id, sizeof(r->validating->request_id), "%s",
			         call->request_id ? call->request_id : "");
			snprintf(r->validating->caller, sizeof(r->validating->caller), "%s",
			         call->caller ? call->caller : "");
			snprintf(r->validating->client, sizeof(r->validating->client), "%s",
			         call->client ? call->client : "");
			snprintf(r->validating->task_id, sizeof(r->validating->task_id), "%s",
			         call->task_id ? call->task_id : "");
			*out = r;
			return 0;
		}
		args = NULL;
	}
	cJSON_Delete(args);
	snprintf(msg, msglen, "internal error: out of memory");
	mcpx_metrics_tool_call(call->fn->name, "failed");
	if (r)
		mcpx_fn_run_free(r);
	return -ENOMEM;
}

void mcpx_fn_cancel(struct mcpx_fn_run *r)
{
	if (!r)
		return;
	mcpx_metrics_tool_call(r->fn->name, "cancelled");
	if (r->validating)
		r->validating->r = NULL; /* the worker's copy is dropped when done */
	mcpx_executor_cancel(r->fs->ex, r->job);
	mcpx_fn_run_free(r);
}

struct mcpx_job *mcpx_fn_job(const struct mcpx_fn_run *r)
{
	return r ? r->job : NULL;
}
