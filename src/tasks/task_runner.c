/*
 * task_runner.c - a task this replica runs (struct task_run).
 *
 * A run is the tools/call itself, detached from its request: the core calls
 * the tool with the run's own sink as the client (mcpx_core_task_call), so
 * the sandbox, budgets, fair queue, drain rules and audit are those of a
 * direct call and the answer that reaches the sink is exactly what the
 * client would have got. The run:
 *   1. checks the owner's caps (a store listing): past per_caller tasks,
 *      the oldest finished ones are dropped; if every kept task is still
 *      working there is no room, and the request is refused (2025-11-25) or
 *      answered directly (2026-07-28: the server decides, so no task);
 *   2. takes the task's lease, then writes its record, so that no replica
 *      ever sees a working record without a lease behind it;
 *   3. answers the request with the CreateTaskResult (a 2026-07-28 call
 *      first runs up to sync_ms: one that ends sooner is answered with its
 *      result and never becomes a task);
 *   4. while the call runs, renews the lease every third of its length and
 *      looks for a cancel mark every second (a tasks/cancel received by
 *      another replica);
 *   5. when the call answers: checks the owner's byte cap, writes the
 *      outcome, then the final record (unless another replica already ended
 *      the task: terminal states never change), gives the lease back, and
 *      answers the local tasks/result waiters (task_finish.c).
 * Steps that follow the core's sink callback run from a zero timer: the
 * sink must not call back into the core.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "task_common.h"

static void run_create(struct task_run *run);
static void run_started(struct task_run *run);

/* ---- the detached call's client ----------------------------------------- */

/* The outcome member of a JSON-RPC response, as {"result": ...} or
 * {"error": ...}; NULL when it is neither (never from our core). */
static cJSON *outcome_of(const char *json, size_t len)
{
	const char *why;
	cJSON *msg = mcpx_jsonrpc_parse(json, len, &why), *out = NULL, *part;

	if (!msg)
		return NULL;
	if ((part = cJSON_DetachItemFromObjectCaseSensitive(msg, "result")) ||
	    (part = cJSON_DetachItemFromObjectCaseSensitive(msg, "error"))) {
		out = cJSON_CreateObject();
		if (!out || !cJSON_AddItemToObject(out, part->string, part)) {
			cJSON_Delete(part);
			cJSON_Delete(out);
			out = NULL;
		}
	}
	cJSON_Delete(msg);
	return out;
}

static void run_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct task_run *run = (struct task_run *)sink;

	/* Progress and log notifications of the run have no client to go to. */
	if (!response || run->answered)
		return;
	run->answered = true;
	run->call = NULL; /* the core frees it once send returns */
	run->outcome = outcome_of(json, len);
	mcpx_timer_start(run->t->o.loop, &run->step, 0);
}

/* ---- answering the request ---------------------------------------------- */

/* Answers req with what a direct call would have got: the outcome. */
static void answer_direct(struct mcpx_call *req, const cJSON *outcome)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(outcome, "result");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(outcome, "error");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");

	if (res) {
		mcpx_call_finish(req, cJSON_Duplicate(res, true));
	} else if (cJSON_IsNumber(code) && cJSON_IsString(msg)) {
		mcpx_call_error_data(
		    req, code->valueint, msg->valuestring,
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(err, "data"), true));
	} else {
		mcpx_call_error_data(req, MCPX_RPC_INTERNAL_ERROR,
		                     "Internal error: the tool's answer could not be read", NULL);
	}
}

static void answer_created(struct task_run *run)
{
	struct mcpx_call *req = run->req;

	run->req = NULL;
	if (!req)
		return;
	mcpx_call_finish(req, mcpx_task_wire_created(&run->rec, run->gen));
}

static void answer_error(struct task_run *run, int code, const char *msg)
{
	struct mcpx_call *req = run->req;

	run->req = NULL;
	if (req)
		mcpx_call_error_data(req, code, msg, NULL);
}

/* ---- starting ----------------------------------------------------------- */

/* Starts the detached call; false when it could not (the tool went away
 * with a policy reload, or out of memory). */
static bool run_call(struct task_run *run, const struct mcpx_tool *tool, const cJSON *args)
{
	struct mcpx_task_origin o = {.task_id = run->rec.id,
	                             .request_id = run->request_id,
	                             .caller = run->rec.owner,
	                             .client = run->client,
	                             .version = run->version};
	struct mcpx_call *c;

	if (!tool)
		tool = mcpx_core_find_tool(run->t->core, run->rec.owner, run->rec.tool);
	if (!tool)
		return false;
	c = mcpx_core_task_call(run->t->core, tool, run->rec.tool, args, &o, &run->sink);
	/* A call that answered at once (its arguments refused) is already
	 * freed: run_send saw it. */
	if (!run->answered)
		run->call = c;
	return c != NULL || run->answered;
}

static void window_cb(struct mcpx_timer *tm)
{
	struct task_run *run = tm->arg;

	if (run->state == RUN_PENDING && !run->answered && !run->direct)
		mcpx_task_caps_check(run);
}

void mcpx_task_run_start(struct mcpx_tasks *t, struct mcpx_call *req, enum mcpx_task_gen gen,
                         const struct mcpx_tool *tool, const char *name, const cJSON *args,
                         int64_t ttl_ms, unsigned sync_ms)
{
	struct task_run *run = mcpx_task_run_new(t, req, gen, name, ttl_ms);

	if (!run) {
		mcpx_call_error_data(req, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory",
		                     NULL);
		return;
	}
	if (gen == MCPX_TASK_V1) {
		/* The run starts once the task exists: keep the arguments. */
		run->args = args ? cJSON_Duplicate(args, true) : NULL;
		if (args && !run->args) {
			answer_error(run, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory");
			mcpx_task_run_free(run);
			return;
		}
		mcpx_task_caps_check(run);
		return;
	}
	/* 2026-07-28: it runs now, and becomes a task if it lasts. */
	run->state = RUN_PENDING;
	if (!run_call(run, tool, args)) {
		answer_error(run, MCPX_RPC_INTERNAL_ERROR,
		             "Internal error: the call could not start");
		mcpx_task_run_free(run);
		return;
	}
	if (!run->answered) {
		run->window.fn = window_cb;
		run->window.arg = run;
		mcpx_timer_start(t->o.loop, &run->window, (uint64_t)sync_ms * 1000u);
	}
}

/* ---- step 1: the owner's count cap -------------------------------------- */

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
	qsort(sorted, n, sizeof(*sorted), mcpx_task_by_age);
	while (finished < n && mcpx_task_terminal(sorted[finished].status))
		finished++;
	excess = n - t->o.per_caller + 1;
	if (finished >= excess)
		mcpx_task_drop_oldest(t, sorted, excess);
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

/* ---- step 2: the lease, then the record --------------------------------- */

/* After the caps check: a task is made (room was found). */
void mcpx_task_run_room(struct task_run *run, bool room)
{
	if (room) {
		run_create(run);
		return;
	}
	if (run->gen == MCPX_TASK_V2) {
		/* No task: the call goes on and answers its request itself. */
		run->direct = true;
		run->state = RUN_PENDING;
		if (run->answered)
			mcpx_timer_start(run->t->o.loop, &run->step, 0);
		return;
	}
	{
		char msg[256];

		snprintf(msg, sizeof(msg),
		         "Too many tasks: %u are still working for this caller "
		         "(MCP_EXEC_TASKS_PER_CALLER); cancel one or wait for one to finish",
		         run->t->o.per_caller);
		answer_error(run, MCPX_RPC_TASK_ENDED, msg);
	}
	mcpx_task_run_free(run);
}

/* The record could not be written: 2025-11-25 gets an error (and the run,
 * if any, is stopped); a 2026-07-28 call goes on without a task. */
static void create_failed(struct task_run *run, int rc)
{
	char msg[256];

	mcpx_task_store_failed("create", &run->rec, rc);
	mcpx_task_lease_end(run->lease);
	run->lease = NULL;
	if (run->gen == MCPX_TASK_V2 && run->req) {
		run->direct = true;
		run->state = RUN_PENDING;
		if (run->answered)
			mcpx_timer_start(run->t->o.loop, &run->step, 0);
		return;
	}
	snprintf(msg, sizeof(msg), "Internal error: the task could not be stored (%s)",
	         strerror(-rc));
	answer_error(run, MCPX_RPC_INTERNAL_ERROR, msg);
	if (run->call)
		mcpx_core_sink_gone(run->t->core, &run->sink);
	mcpx_task_run_free(run);
}

static void created_cb(void *arg, int rc, const struct mcpx_task_rec *written)
{
	struct task_run *run = arg;

	run->op = NULL;
	if (rc < 0) {
		create_failed(run, rc);
		return;
	}
	run->rec.version = written->version;
	run->state = RUN_DETACHED;
	answer_created(run);
	if (run->gen == MCPX_TASK_V1 && !run_call(run, NULL, run->args)) {
		/* The tool is gone (a policy reload removed it): the task ends
		 * as a call of it would now. */
		run->answered = true;
		run->outcome = cJSON_Parse("{\"error\":{\"code\":-32602,\"message\":"
		                           "\"Unknown tool: the tool is no longer available\"}}");
	}
	cJSON_Delete(run->args);
	run->args = NULL;
	run_started(run);
}

static void leased_cb(void *arg, int rc, struct mcpx_store_lease *lease)
{
	struct task_run *run = arg;

	run->op = NULL;
	run->lease = lease;
	if (rc < 0) {
		create_failed(run, rc);
		return;
	}
	run->op = mcpx_task_create(run->t->ts, &run->rec, mcpx_task_keep_for(run->t, &run->rec),
	                           created_cb, run);
	if (!run->op)
		create_failed(run, -ENOMEM);
}

/* The store could not renew the lease (it lapsed, or another replica took
 * it): this replica may have been judged dead. Acted on from the step. */
static void lease_lost_cb(void *arg, struct mcpx_store_lease *l, int reason)
{
	struct task_run *run = arg;

	(void)l;
	(void)reason;
	run->lease_lost = true;
	mcpx_timer_start(run->t->o.loop, &run->step, 0);
}

/* Takes the lease, then writes the record (step 2). */
static void run_create(struct task_run *run)
{
	run->state = RUN_CREATING;
	run->op = mcpx_task_lease_take(run->t->ts, &run->rec, run->t->o.lease_ms, lease_lost_cb,
	                               run, leased_cb, run);
	if (!run->op)
		create_failed(run, -ENOMEM);
}

/* ---- while it runs ------------------------------------------------------ */

static void heartbeat_arm(struct task_run *run)
{
	mcpx_timer_start(run->t->o.loop, &run->heartbeat, MCPX_TASK_CANCEL_POLL_MS * 1000u);
}

static void marked_cb(void *arg, int rc)
{
	struct task_run *run = arg;

	run->op_watch = NULL;
	if (rc == 0 && run->state == RUN_DETACHED && !run->answered) {
		mcpx_info("task %s: cancelled through another replica", run->rec.id);
		mcpx_task_run_cancel(run);
		return;
	}
	if (rc < 0 && rc != -ENOENT)
		mcpx_task_store_failed("read the cancel mark of", &run->rec, rc);
	heartbeat_arm(run);
}

/* Step 4: every second, the cancel mark (the store renews the lease). */
static void heartbeat_cb(struct mcpx_timer *tm)
{
	struct task_run *run = tm->arg;

	if (run->state != RUN_DETACHED || run->op_watch)
		return;
	run->op_watch = mcpx_task_cancel_marked(run->t->ts, &run->rec, marked_cb, run);
	if (!run->op_watch)
		heartbeat_arm(run);
}

/* The task exists and the request has its answer. */
static void run_started(struct task_run *run)
{
	mcpx_debug("task %s: %s started for %s", run->rec.id, run->rec.tool, run->rec.owner);
	if (run->cancel_asked && !run->answered) {
		mcpx_task_run_cancel(run);
		return;
	}
	if (run->answered) {
		mcpx_task_run_finish(run);
		return;
	}
	run->heartbeat.fn = heartbeat_cb;
	run->heartbeat.arg = run;
	heartbeat_arm(run);
}

void mcpx_task_run_cancel(struct task_run *run)
{
	if (run->state == RUN_CREATING) {
		run->cancel_asked = true; /* acted on once the task exists */
		return;
	}
	if (run->state != RUN_DETACHED || run->answered)
		return; /* its outcome is being written: it ends as that */
	run->cancelled = true;
	if (run->call)
		mcpx_core_sink_gone(run->t->core, &run->sink);
	run->call = NULL;
	run->answered = true;
	mcpx_task_run_finish(run);
}

/* ---- the zero-timer step after the call answered ------------------------ */

static void step_cb(struct mcpx_timer *tm)
{
	struct task_run *run = tm->arg;

	if (run->lease_lost && run->state == RUN_DETACHED) {
		mcpx_task_run_lease_lost(run);
		return;
	}
	if (run->state == RUN_PENDING || run->state == RUN_CHECKING) {
		/* Finished before it became a task: the request gets the result. */
		struct mcpx_call *req = run->req;

		run->req = NULL;
		mcpx_task_op_cancel(run->op);
		run->op = NULL;
		if (req && run->outcome)
			answer_direct(req, run->outcome);
		else if (req)
			mcpx_call_error_data(req, MCPX_RPC_INTERNAL_ERROR,
			                     "Internal error: the tool's answer could not be read",
			                     NULL);
		mcpx_task_run_free(run);
	} else if (run->state == RUN_DETACHED) {
		mcpx_task_run_finish(run);
	}
	/* RUN_CREATING: created_cb finishes it once the record exists. */
}

/* ---- the run object ----------------------------------------------------- */

struct task_run *mcpx_task_run_new(struct mcpx_tasks *t, struct mcpx_call *req,
                                   enum mcpx_task_gen gen, const char *name, int64_t ttl_ms)
{
	struct task_run *run = calloc(1, sizeof(*run));
	struct mcpx_task_rec *r;

	if (!run)
		return NULL;
	r = &run->rec;
	if (mcpx_task_id_new(r->id) < 0) {
		free(run);
		return NULL;
	}
	run->t = t;
	run->req = req;
	run->gen = gen;
	run->state = RUN_CHECKING;
	run->sink.send = run_send;
	run->step.fn = step_cb;
	run->step.arg = run;
	mcpx_utf8_copy_trunc(r->owner, sizeof(r->owner), mcpx_call_caller(req));
	mcpx_utf8_copy_trunc(r->tool, sizeof(r->tool), name);
	mcpx_utf8_copy_trunc(r->replica, sizeof(r->replica), t->replica);
	mcpx_utf8_copy_trunc(r->session, sizeof(r->session), mcpx_call_session(req));
	mcpx_utf8_copy_trunc(run->client, sizeof(run->client), mcpx_call_client(req));
	mcpx_utf8_copy_trunc(run->request_id, sizeof(run->request_id), mcpx_call_id_text(req));
	mcpx_utf8_copy_trunc(run->version, sizeof(run->version), mcpx_call_version(req));
	r->status = MCPX_TASK_WORKING;
	r->created_ms = r->updated_ms = mcpx_task_now_ms();
	r->ttl_ms = ttl_ms;
	r->poll_ms = t->o.poll_ms;
	run->next = t->runs;
	if (run->next)
		run->next->prev = run;
	t->runs = run;
	t->nruns++;
	return run;
}

struct task_run *mcpx_task_run_find(struct mcpx_tasks *t, const char *id)
{
	for (struct task_run *run = t->runs; run; run = run->next)
		if (run->state >= RUN_CREATING && strcmp(run->rec.id, id) == 0)
			return run;
	return NULL;
}

void mcpx_task_run_abandon(struct mcpx_tasks *t, struct mcpx_call *req)
{
	for (struct task_run *run = t->runs; run; run = run->next) {
		if (run->req != req)
			continue;
		run->req = NULL;
		/* Not a task yet: it ends like a direct call whose client left. */
		if (run->state == RUN_CHECKING || run->state == RUN_PENDING) {
			if (run->call)
				mcpx_core_sink_gone(t->core, &run->sink);
			run->call = NULL;
			mcpx_task_run_free(run);
		}
		return;
	}
}

void mcpx_task_runs_free(struct mcpx_tasks *t)
{
	while (t->runs) {
		struct task_run *run = t->runs;

		/* The core cancelled the calls (it is freed first); the lease
		 * lapses, and the next replica to read the task fails it. */
		run->call = NULL;
		run->req = NULL;
		mcpx_task_run_free(run);
	}
}
