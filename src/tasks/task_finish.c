/*
 * task_finish.c - the end of a task this replica runs (step 5 of
 * task_runner.c): once its call answered, or a cancel ended it, the run
 * takes its final status from the outcome, checks the owner's byte cap
 * (the oldest finished tasks are dropped until the result fits; a result
 * larger than the whole cap fails the task), writes the outcome (fenced by
 * its lease), then the final record (compare-and-set: a task another
 * replica ended already keeps that end), gives the lease back, answers the
 * local waiters and tells the session's streams. A run whose lease was
 * lost ends here too, writing nothing.
 *
 * It does not start or cancel runs (task_runner.c) and answers no method
 * itself: the waiters are task_waits.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "task_common.h"

/* ---- finishing ---------------------------------------------------------- */

/* The record's final state from the outcome. */
static void final_status(struct task_run *run)
{
	struct mcpx_task_rec *r = &run->rec;
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(run->outcome, "result");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(run->outcome, "error");

	r->updated_ms = mcpx_task_now_ms();
	if (run->cancelled) {
		r->status = MCPX_TASK_CANCELLED;
		mcpx_task_set_message(r, "The task was cancelled by request.");
	} else if (res) {
		r->status = MCPX_TASK_COMPLETED;
		r->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"));
		mcpx_task_set_message(r, r->is_error ? mcpx_task_error_text(res) : "");
	} else {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");

		r->status = MCPX_TASK_FAILED;
		r->error_code = cJSON_IsNumber(code) ? code->valueint : MCPX_RPC_INTERNAL_ERROR;
		mcpx_task_set_message(
		    r, cJSON_IsString(msg) ? msg->valuestring
		                           : "Internal error: the tool's answer could not be read");
	}
}

/* The run is over: waiters answered, status told, lease given back. */
static void run_done(struct task_run *run)
{
	run->state = RUN_DONE;
	mcpx_debug("task %s: %s", run->rec.id, mcpx_task_status_name(run->rec.status));
	mcpx_task_lease_end(run->lease);
	run->lease = NULL;
	mcpx_task_waiters_done(run);
	mcpx_task_notify_status(run->t, run);
	mcpx_task_run_free(run);
}

static void save_final(struct task_run *run);

/* The record changed since this run wrote it: another replica ended the
 * task (it judged this one dead). Terminal states never change: its record
 * stays, this run's outcome is dropped. */
static void reread_cb(void *arg, int rc, const struct mcpx_task_rec *now)
{
	struct task_run *run = arg;

	run->op = NULL;
	if (rc == 0 && mcpx_task_terminal(now->status)) {
		mcpx_warn(
		    "task %s was already %s by another replica; this run's outcome is dropped",
		    run->rec.id, mcpx_task_status_name(now->status));
		run->rec = *now;
		cJSON_Delete(run->outcome);
		run->outcome = NULL;
		run_done(run);
		return;
	}
	if (rc == 0 && !run->saved_again) {
		run->saved_again = true;
		run->rec.version = now->version;
		save_final(run);
		return;
	}
	mcpx_task_store_failed("write the final record of", &run->rec, rc < 0 ? rc : -ESTALE);
	run_done(run);
}

static void saved_cb(void *arg, int rc, const struct mcpx_task_rec *written)
{
	struct task_run *run = arg;

	run->op = NULL;
	if (rc == -ESTALE) {
		run->op = mcpx_task_load(run->t->ts, run->rec.owner, run->rec.id, reread_cb, run);
		if (run->op)
			return;
	}
	if (rc < 0)
		mcpx_task_store_failed("write the final record of", &run->rec, rc);
	else
		run->rec.version = written->version;
	run_done(run);
}

static void save_final(struct task_run *run)
{
	run->op = mcpx_task_save(run->t->ts, &run->rec, mcpx_task_keep_for(run->t, &run->rec),
	                         saved_cb, run);
	if (!run->op)
		saved_cb(run, -ENOMEM, NULL);
}

static void outcome_saved_cb(void *arg, int rc)
{
	struct task_run *run = arg;

	run->op = NULL;
	if (rc == -ENOLCK) {
		/* The lease lapsed before the result was written: the task is
		 * not this replica's to end any more. */
		mcpx_task_run_lease_lost(run);
		return;
	}
	if (rc < 0) {
		mcpx_task_store_failed("write the result of", &run->rec, rc);
		run->rec.status = MCPX_TASK_FAILED;
		run->rec.is_error = false;
		run->rec.error_code = MCPX_RPC_INTERNAL_ERROR;
		run->rec.result_bytes = 0;
		mcpx_task_set_message(&run->rec,
		                      "Internal error: the task's result could not be stored");
		cJSON_Delete(run->outcome);
		run->outcome = NULL;
	}
	save_final(run);
}

/* Step 5, after the byte cap: the outcome, then the record. */
void mcpx_task_run_store(struct task_run *run, const char *blob, size_t len)
{
	if (!blob) {
		outcome_saved_cb(run, 0);
		return;
	}
	run->rec.result_bytes = len;
	run->op = mcpx_task_put_outcome(run->t->ts, &run->rec, blob, len,
	                                mcpx_task_keep_for(run->t, &run->rec),
	                                mcpx_task_lease_owner(run->lease), outcome_saved_cb, run);
	if (!run->op)
		outcome_saved_cb(run, -ENOMEM);
}

void mcpx_task_run_finish(struct task_run *run)
{
	run->state = RUN_FINISHING;
	mcpx_timer_cancel(&run->heartbeat);
	mcpx_task_op_cancel(run->op_watch);
	run->op_watch = NULL;
	final_status(run);
	if (!run->outcome || run->cancelled) {
		cJSON_Delete(run->outcome);
		run->outcome = NULL;
		mcpx_task_run_store(run, NULL, 0);
		return;
	}
	mcpx_task_bytes_check(run);
}

/* ---- the byte cap ------------------------------------------------------- */

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
		qsort(sorted, n, sizeof(*sorted), mcpx_task_by_age);
		for (size_t i = 0; i < n; i++)
			if (strcmp(sorted[i].id, run->rec.id) != 0)
				used += sorted[i].result_bytes;
		/* The oldest finished ones go until this result fits. */
		while (used + need > max && drop < n && mcpx_task_terminal(sorted[drop].status)) {
			if (strcmp(sorted[drop].id, run->rec.id) != 0)
				used -= sorted[drop].result_bytes;
			drop++;
		}
		mcpx_task_drop_oldest(run->t, sorted, drop);
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

/* ---- a lost lease ------------------------------------------------------- */

/* The lease was lost: another replica may have failed the task already.
 * The run stops and writes nothing; waiters go back to reading the store. */
void mcpx_task_run_lease_lost(struct task_run *run)
{
	mcpx_warn("task %s: its lease in the task store was lost (renewals failed or another "
	          "replica took it); the run is stopped and its result dropped",
	          run->rec.id);
	if (run->call)
		mcpx_core_sink_gone(run->t->core, &run->sink);
	run->call = NULL;
	mcpx_task_waiters_orphan(run);
	mcpx_task_run_free(run);
}

/* ---- what the end tells ------------------------------------------------- */

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

void mcpx_task_notify_status(struct mcpx_tasks *t, const struct task_run *run)
{
	/* notifications/tasks/status is 2025-11-25's; it goes to the streams
	 * of the session that created the task, when this replica has one. */
	if (run->gen != MCPX_TASK_V1 || !t->core || !run->rec.session[0])
		return;
	mcpx_core_notify_session(t->core, run->rec.session, "notifications/tasks/status",
	                         mcpx_task_wire_task(&run->rec, MCPX_TASK_V1));
}

/* ---- the run object ----------------------------------------------------- */

void mcpx_task_run_free(struct task_run *run)
{
	struct mcpx_tasks *t = run->t;

	if (run->prev)
		run->prev->next = run->next;
	else
		t->runs = run->next;
	if (run->next)
		run->next->prev = run->prev;
	t->nruns--;
	mcpx_timer_cancel(&run->step);
	mcpx_timer_cancel(&run->window);
	mcpx_timer_cancel(&run->heartbeat);
	mcpx_task_op_cancel(run->op);
	mcpx_task_op_cancel(run->op_watch);
	mcpx_task_lease_end(run->lease);
	cJSON_Delete(run->outcome);
	cJSON_Delete(run->args);
	free(run->blob);
	free(run);
}
