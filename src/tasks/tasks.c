/*
 * tasks.c - the tasks module: its hooks into the protocol core, how a
 * tools/call becomes a task, and what each caller's caps are.
 *
 * A 2025-11-25 session gets the "tasks" capability and asks for a task per
 * call ("task": {ttl}); a 2026-07-28 request that declares the extension
 * lets the server decide, and this server makes a task of a call that is
 * still running after sync_ms (at once for a tool whose task support is
 * "required"). The ttl a client asks for is kept within [1 minute,
 * MCP_EXEC_TASK_TTL_MAX_S], which is also the default. Caps per caller:
 * at most per_caller tasks are kept (the oldest finished ones are dropped
 * to make room; a caller whose kept tasks are all still working gets no
 * new one), and at most max_bytes of stored results (the oldest finished
 * ones are dropped first; a result larger than the whole cap fails its
 * task, as the server cannot keep it).
 *
 * The caps are kept by the runs: the count is task_runner.c's, the bytes
 * task_finish.c's. The runs themselves are task_runner.c's, the tasks
 * methods task_methods.c's, the storage task_store.c's; task_common.h says
 * how the parts call one another.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "task_common.h"
#include "tasks.h"

/* ---- hooks -------------------------------------------------------------- */

static cJSON *hook_capability(void *ctx, const char *caller)
{
	cJSON *caps = cJSON_CreateObject();
	cJSON *req = cJSON_AddObjectToObject(caps, "requests");
	cJSON *tools = req ? cJSON_AddObjectToObject(req, "tools") : NULL;

	(void)ctx;
	/* "Receivers that cannot identify requestors SHOULD NOT declare the
	 * tasks.list capability": an HTTP listener without auth serves every
	 * client as "anonymous". */
	if (!tools || !cJSON_AddObjectToObject(tools, "call") ||
	    !cJSON_AddObjectToObject(caps, "cancel") ||
	    (strcmp(caller, "anonymous") != 0 && !cJSON_AddObjectToObject(caps, "list"))) {
		cJSON_Delete(caps);
		return NULL;
	}
	return caps;
}

static bool hook_extension(void *ctx)
{
	(void)ctx;
	return true;
}

/* The ttl for a 2025-11-25 "task" object; -1 (with an error sent) when it
 * is not one. */
static int64_t ttl_of(struct mcpx_tasks *t, struct mcpx_call *req, const cJSON *task)
{
	const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(task, "ttl");
	int64_t max = (int64_t)t->o.ttl_max_s * 1000;

	if (!task)
		return max;
	if (!cJSON_IsObject(task) || (ttl && !cJSON_IsNull(ttl) && !cJSON_IsNumber(ttl))) {
		mcpx_call_error_data(
		    req, MCPX_RPC_INVALID_PARAMS,
		    "Invalid params: task must be an object whose ttl is a number of "
		    "milliseconds",
		    NULL);
		return -1;
	}
	if (!cJSON_IsNumber(ttl) || ttl->valuedouble >= (double)max)
		return max;
	return ttl->valuedouble < MCPX_TASK_TTL_MIN_MS ? MCPX_TASK_TTL_MIN_MS
	                                               : (int64_t)ttl->valuedouble;
}

static void hook_call(void *ctx, struct mcpx_call *req, const struct mcpx_tool *tool,
                      const cJSON *args, const cJSON *task)
{
	struct mcpx_tasks *t = ctx;
	const char *name = mcpx_call_tool_name(req);
	enum mcpx_task_support sup = mcpx_core_tool_task_support(tool, name);
	enum mcpx_task_gen gen = mcpx_task_gen_of(req);
	int64_t ttl = ttl_of(t, req, gen == MCPX_TASK_V1 ? task : NULL);

	if (ttl < 0)
		return;
	if (gen == MCPX_TASK_V1 && sup == MCPX_TASK_SUPPORT_FORBIDDEN) {
		/* "Servers SHOULD return a -32601 (Method not found) error if a
		 * client attempts to do so" (basic/utilities/tasks). */
		char msg[256];
		char shown[128];

		mcpx_utf8_copy_trunc(shown, sizeof(shown), name);
		snprintf(msg, sizeof(msg),
		         "Method not found: tool %s does not run as a task (its "
		         "execution.taskSupport is forbidden)",
		         shown);
		mcpx_call_error_data(req, MCPX_RPC_METHOD_NOT_FOUND, msg, NULL);
		return;
	}
	mcpx_task_run_start(t, req, gen, tool, name, args, ttl,
	                    sup == MCPX_TASK_SUPPORT_REQUIRED ? 0 : t->o.sync_ms);
}

static void hook_method(void *ctx, struct mcpx_call *req, const char *method, const cJSON *params)
{
	mcpx_task_method(ctx, req, method, params);
}

static void hook_abandon(void *ctx, struct mcpx_call *req)
{
	struct mcpx_tasks *t = ctx;

	if (!mcpx_task_wait_abandon(t, req))
		mcpx_task_run_abandon(t, req);
}

/* ---- the module --------------------------------------------------------- */

struct mcpx_tasks *mcpx_tasks_new(const struct mcpx_tasks_opts *o)
{
	struct mcpx_tasks *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->o = *o;
	mcpx_utf8_copy_trunc(t->replica, sizeof(t->replica), o->replica ? o->replica : "");
	t->o.replica = t->replica;
	if (!t->o.poll_ms)
		t->o.poll_ms = 1000;
	if (!t->o.lease_ms)
		t->o.lease_ms = 15000;
	t->ts = mcpx_task_store_new(o->loop, o->store);
	if (!t->ts) {
		free(t);
		return NULL;
	}
	t->hooks.capability = hook_capability;
	t->hooks.extension = hook_extension;
	t->hooks.call = hook_call;
	t->hooks.method = hook_method;
	t->hooks.abandon = hook_abandon;
	t->hooks.ctx = t;
	return t;
}

const struct mcpx_task_hooks *mcpx_tasks_hooks(struct mcpx_tasks *t)
{
	return &t->hooks;
}

void mcpx_tasks_attach(struct mcpx_tasks *t, struct mcpx_core *core)
{
	t->core = core;
}

void mcpx_tasks_drain(struct mcpx_tasks *t)
{
	t->draining = true;
	mcpx_task_waits_drain(t);
}

size_t mcpx_tasks_busy(const struct mcpx_tasks *t)
{
	return t->nruns;
}

void mcpx_tasks_free(struct mcpx_tasks *t)
{
	if (!t)
		return;
	mcpx_task_waits_free(t);
	mcpx_task_runs_free(t);
	mcpx_task_store_free(t->ts);
	free(t);
}
