/*
 * tasks.c - the tasks module: its hooks into the protocol core, how a
 * tools/call becomes a task, and each caller's caps.
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
 * The runs themselves are task_runner.c's, the tasks methods
 * task_methods.c's, the storage task_store.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "tasks_internal.h"

/* The shortest ttl kept: a client that asks for less still gets a minute
 * to read what its task did. */
#define TTL_MIN_MS 60000

enum mcpx_task_gen mcpx_task_gen_of(const struct mcpx_call *req)
{
	return mcpx_call_stateless(req) ? MCPX_TASK_V2 : MCPX_TASK_V1;
}

void mcpx_task_store_failed(const char *what, const struct mcpx_task_rec *r, int rc)
{
	mcpx_warn("task %s: could not %s it in the store: %s", r->id, what, strerror(-rc));
}

int64_t mcpx_task_keep_for(const struct mcpx_tasks *t, const struct mcpx_task_rec *r)
{
	int64_t min = (int64_t)t->o.lease_ms * 2;

	/* A finished task is readable for at least a minute, whatever is
	 * left of its ttl. */
	if (mcpx_task_terminal(r->status) && min < TTL_MIN_MS)
		min = TTL_MIN_MS;
	return mcpx_task_keep_ms(r, mcpx_task_now_ms(), min);
}

const char *mcpx_task_error_text(const cJSON *result)
{
	const cJSON *block;

	cJSON_ArrayForEach(block, cJSON_GetObjectItemCaseSensitive(result, "content"))
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(block, "text");

		if (cJSON_IsString(type) && strcmp(type->valuestring, "text") == 0 &&
		    cJSON_IsString(text))
			return text->valuestring;
	}
	return "The tool reported an error";
}

/* ---- caps --------------------------------------------------------------- */

/* Orders finished records oldest first; working ones last. */
static int by_age(const void *a, const void *b)
{
	const struct mcpx_task_rec *x = a, *y = b;
	bool xt = mcpx_task_terminal(x->status), yt = mcpx_task_terminal(y->status);

	if (xt != yt)
		return xt ? -1 : 1;
	return x->updated_ms < y->updated_ms ? -1 : x->updated_ms > y->updated_ms;
}

/* Drops recs[0..n) (finished ones, oldest first): nobody waits for the
 * drops, a failed one only leaves a task to expire with its ttl. */
static void drop_oldest(struct mcpx_tasks *t, const struct mcpx_task_rec *recs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		mcpx_info("task %s of %s dropped to make room (per-caller caps)", recs[i].id,
		          recs[i].owner);
		mcpx_task_drop(t->ts, recs[i].owner, recs[i].id, NULL, NULL);
	}
}

static void counted_cb(void *arg, int rc, const struct mcpx_task_rec *recs, size_t n)
{
	struct task_run *run = arg;
	struct mcpx_tasks *t = run->t;
	struct mcpx_task_rec *sorted;
	size_t finished = 0, excess;

	run->op = NULL;
	/* A store that cannot list cannot keep the task either: the create
	 * that follows reports it. */
	if (rc < 0 || n < t->o.per_caller) {
		mcpx_task_run_room(run, true);
		return;
	}
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted) {
		mcpx_task_run_room(run, true);
		return;
	}
	memcpy(sorted, recs, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), by_age);
	while (finished < n && mcpx_task_terminal(sorted[finished].status))
		finished++;
	excess = n - t->o.per_caller + 1;
	if (finished >= excess)
		drop_oldest(t, sorted, excess);
	free(sorted);
	mcpx_task_run_room(run, finished >= excess);
}

void mcpx_task_caps_check(struct task_run *run)
{
	run->state = RUN_CHECKING;
	run->op = mcpx_task_list(run->t->ts, run->rec.owner, counted_cb, run);
	if (!run->op)
		mcpx_task_run_room(run, true);
}

/* The result cannot be kept at all: the task fails, as the server could
 * not deliver what the call returned. */
static void too_big(struct task_run *run, size_t len)
{
	char msg[300];

	snprintf(msg, sizeof(msg),
	         "Internal error: the task's result is %zu bytes, more than the %llu bytes a "
	         "caller's tasks may keep (MCP_EXEC_TASKS_MAX_MB)",
	         len, (unsigned long long)run->t->o.max_bytes);
	run->rec.status = MCPX_TASK_FAILED;
	run->rec.is_error = false;
	run->rec.error_code = MCPX_RPC_INTERNAL_ERROR;
	mcpx_task_set_message(&run->rec, msg);
	cJSON_Delete(run->outcome);
	run->outcome = NULL;
	free(run->blob);
	run->blob = NULL;
	mcpx_task_run_store(run, NULL, 0);
}

static void sized_cb(void *arg, int rc, const struct mcpx_task_rec *recs, size_t n)
{
	struct task_run *run = arg;
	struct mcpx_task_rec *sorted = NULL;
	uint64_t used = 0, need = run->blob_len, max = run->t->o.max_bytes;
	size_t drop = 0;

	run->op = NULL;
	if (rc == 0 && n && (sorted = malloc(n * sizeof(*sorted)))) {
		memcpy(sorted, recs, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), by_age);
		for (size_t i = 0; i < n; i++)
			if (strcmp(sorted[i].id, run->rec.id) != 0)
				used += sorted[i].result_bytes;
		/* The oldest finished ones go until this result fits. */
		while (used + need > max && drop < n && mcpx_task_terminal(sorted[drop].status)) {
			if (strcmp(sorted[drop].id, run->rec.id) != 0)
				used -= sorted[drop].result_bytes;
			drop++;
		}
		drop_oldest(run->t, sorted, drop);
	}
	free(sorted);
	if (used + need > max) {
		too_big(run, run->blob_len);
		return;
	}
	mcpx_task_run_store(run, run->blob, run->blob_len);
}

void mcpx_task_bytes_check(struct task_run *run)
{
	run->blob = cJSON_PrintUnformatted(run->outcome);
	if (!run->blob) {
		too_big(run, 0);
		return;
	}
	run->blob_len = strlen(run->blob);
	if (run->blob_len > run->t->o.max_bytes) {
		too_big(run, run->blob_len);
		return;
	}
	run->op = mcpx_task_list(run->t->ts, run->rec.owner, sized_cb, run);
	if (!run->op)
		mcpx_task_run_store(run, run->blob, run->blob_len);
}

/* ---- notifications ------------------------------------------------------ */

void mcpx_task_notify_status(struct mcpx_tasks *t, const struct task_run *run)
{
	/* notifications/tasks/status is 2025-11-25's; it goes to the streams
	 * of the session that created the task, when this replica has one. */
	if (run->gen != MCPX_TASK_V1 || !t->core || !run->rec.session[0])
		return;
	mcpx_core_notify_session(t->core, run->rec.session, "notifications/tasks/status",
	                         mcpx_task_wire_task(&run->rec, MCPX_TASK_V1));
}

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
		mcpx_call_error_data(req, MCPX_RPC_INVALID_PARAMS,
		                "Invalid params: task must be an object whose ttl is a number of "
		                "milliseconds",
		                NULL);
		return -1;
	}
	if (!cJSON_IsNumber(ttl) || ttl->valuedouble >= (double)max)
		return max;
	return ttl->valuedouble < TTL_MIN_MS ? TTL_MIN_MS : (int64_t)ttl->valuedouble;
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
