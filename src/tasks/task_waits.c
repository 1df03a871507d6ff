/*
 * task_waits.c - a tasks method request being answered (struct task_wait),
 * on any replica: the answers, the reads of the store, the lease check,
 * and the waits of tasks/result and of a 2025-11-25 tasks/cancel.
 *
 * A task this replica runs is answered from its run (its end answers the
 * waits left on it); any other from the store, under the requester's name.
 * A record that says "working" is checked against its lease: when the lease
 * can be taken, the replica that ran the task is gone, and the reader fails
 * the task with a message saying so (terminal states never change
 * afterwards). tasks/result waits until the task ends (its run's end on
 * this replica, else re-reading the store every second); a 2025-11-25
 * tasks/cancel of another replica's task leaves a cancel mark and waits for
 * its runner to confirm.
 *
 * Which method a request is, and whether its task runs here, is
 * task_methods.c's; the runs are task_runner.c's, which this file never
 * calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "task_common.h"

/* How long a 2025-11-25 tasks/cancel waits for another replica's runner to
 * confirm (it looks for the mark every second). */
#define CANCEL_WAIT_US (10u * 1000000u)

static void wait_free(struct task_wait *w);

/* ---- answers ------------------------------------------------------------ */

void mcpx_task_wait_answer(struct task_wait *w, cJSON *result)
{
	struct mcpx_call *req = w->req;

	w->req = NULL;
	if (req)
		mcpx_call_finish(req, result);
	else
		cJSON_Delete(result);
	wait_free(w);
}

void mcpx_task_wait_error(struct task_wait *w, int code, const char *msg)
{
	struct mcpx_call *req = w->req;

	w->req = NULL;
	if (req)
		mcpx_call_error_data(req, code, msg, NULL);
	wait_free(w);
}

void mcpx_task_wait_not_found(struct task_wait *w)
{
	mcpx_task_wait_error(w, MCPX_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
}

void mcpx_task_wait_store_error(struct task_wait *w, int rc)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "Internal error: the task store failed (%s)", strerror(-rc));
	mcpx_task_wait_error(w, MCPX_RPC_INTERNAL_ERROR, msg);
}

cJSON *mcpx_task_ack(void)
{
	return cJSON_CreateObject(); /* the core adds resultType "complete" */
}

void mcpx_task_answer_result(struct mcpx_call *req, const struct mcpx_task_rec *r,
                             const cJSON *outcome)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(outcome, "result");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(outcome, "error");
	cJSON *out, *meta;
	char msg[600];

	if (r->status == MCPX_TASK_COMPLETED && res) {
		out = cJSON_Duplicate(res, true);
		meta = cJSON_GetObjectItemCaseSensitive(out, "_meta");
		if (!meta)
			meta = cJSON_AddObjectToObject(out, "_meta");
		if (!cJSON_IsObject(meta) || !mcpx_json_add_owned(meta, MCPX_TASK_RELATED_META,
		                                                  mcpx_task_wire_related(r->id))) {
			cJSON_Delete(out);
			out = NULL;
		}
		mcpx_call_finish(req, out);
	} else if (r->status == MCPX_TASK_CANCELLED) {
		snprintf(msg, sizeof(msg), "Task cancelled: %s", r->message);
		mcpx_call_error_data(req, MCPX_RPC_TASK_ENDED, msg, NULL);
	} else {
		/* "If the underlying request resulted in a JSON-RPC error,
		 * tasks/result MUST return that same JSON-RPC error." */
		cJSON *e = mcpx_task_wire_error(r, err);
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");

		mcpx_call_error_data(
		    req, cJSON_IsNumber(code) ? code->valueint : MCPX_RPC_INTERNAL_ERROR,
		    cJSON_IsString(m) ? m->valuestring : "Task failed",
		    cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(e, "data"), true));
		cJSON_Delete(e);
	}
}

/* The 2026-07-28 tasks/get answer; outcome may be NULL. */
static cJSON *detailed(const struct mcpx_task_rec *r, const cJSON *outcome)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(outcome, "result");
	cJSON *copy = NULL, *d;

	/* The inlined result is what the call would have returned: under
	 * 2026-07-28 every result carries resultType. */
	if (res && (copy = cJSON_Duplicate(res, true)) &&
	    !cJSON_GetObjectItemCaseSensitive(copy, "resultType"))
		cJSON_AddStringToObject(copy, "resultType", "complete");
	if (r->status == MCPX_TASK_COMPLETED && !copy) {
		/* Its outcome is gone (expired first, or unreadable). */
		struct mcpx_task_rec gone = *r;

		gone.status = MCPX_TASK_FAILED;
		gone.error_code = MCPX_RPC_INTERNAL_ERROR;
		mcpx_task_set_message(&gone,
		                      "Internal error: the task's result is no longer stored");
		return mcpx_task_wire_detailed(&gone, NULL, NULL);
	}
	d = mcpx_task_wire_detailed(r, copy, cJSON_GetObjectItemCaseSensitive(outcome, "error"));
	cJSON_Delete(copy);
	return d;
}

/* ---- the wait objects --------------------------------------------------- */

struct task_wait *mcpx_task_wait_new(struct mcpx_tasks *t, struct mcpx_call *req,
                                     const char *method, const char *id)
{
	struct task_wait *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->t = t;
	w->req = req;
	w->gen = mcpx_task_gen_of(req);
	mcpx_utf8_copy_trunc(w->method, sizeof(w->method), method);
	mcpx_utf8_copy_trunc(w->id, sizeof(w->id), id ? id : "");
	mcpx_utf8_copy_trunc(w->owner, sizeof(w->owner), mcpx_call_caller(req));
	w->poll.arg = w;
	w->next = t->waits;
	if (w->next)
		w->next->prev = w;
	t->waits = w;
	return w;
}

static void wait_free(struct task_wait *w)
{
	struct mcpx_tasks *t = w->t;

	if (w->prev)
		w->prev->next = w->next;
	else
		t->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	mcpx_timer_cancel(&w->poll);
	mcpx_task_op_cancel(w->op);
	free(w);
}

static void poll_cb(struct mcpx_timer *tm)
{
	mcpx_task_wait_reload(tm->arg);
}

/* Reads the store again in a second. */
static void wait_later(struct task_wait *w)
{
	w->poll.fn = poll_cb;
	mcpx_timer_start(w->t->o.loop, &w->poll, MCPX_TASK_WAIT_POLL_MS * 1000u);
}

/* ---- the lease check ---------------------------------------------------- */

static void failed_saved_cb(void *arg, int rc, const struct mcpx_task_rec *written)
{
	struct task_wait *w = arg;

	w->op = NULL;
	if (rc == -ESTALE) {
		/* Its runner wrote the record meanwhile: read what it says. */
		mcpx_task_wait_reload(w);
		return;
	}
	if (rc < 0)
		mcpx_task_store_failed("fail", &w->rec, rc);
	else
		w->rec = *written;
	mcpx_task_wait_proceed(w);
}

/* Nobody holds the lease of a task whose record says "working": the replica
 * that ran it is gone. The record is failed, if it is still the one read
 * (compare-and-set: a runner that finished meanwhile wins). */
static void held_cb(void *arg, int rc)
{
	struct task_wait *w = arg;

	w->op = NULL;
	if (rc != -ENOENT) {
		/* 0: its runner is alive. A store error: judge nothing. */
		mcpx_task_wait_proceed(w);
		return;
	}
	mcpx_warn("task %s: nobody holds its lease (the replica running it stopped); failing it",
	          w->rec.id);
	w->rec.status = MCPX_TASK_FAILED;
	w->rec.error_code = MCPX_RPC_INTERNAL_ERROR;
	w->rec.updated_ms = mcpx_task_now_ms();
	mcpx_task_set_message(&w->rec,
	                      "The server running this task stopped before it finished (its lease "
	                      "in the task store lapsed); the run's result is lost. Start the task "
	                      "again.");
	w->op = mcpx_task_save(w->t->ts, &w->rec, mcpx_task_keep_for(w->t, &w->rec),
	                       failed_saved_cb, w);
	if (!w->op)
		failed_saved_cb(w, -ENOMEM, NULL);
}

static void loaded_cb(void *arg, int rc, const struct mcpx_task_rec *r)
{
	struct task_wait *w = arg;

	w->op = NULL;
	if (rc < 0) {
		rc == -ENOENT ? mcpx_task_wait_not_found(w) : mcpx_task_wait_store_error(w, rc);
		return;
	}
	w->rec = *r;
	if (mcpx_task_terminal(r->status)) {
		mcpx_task_wait_proceed(w);
		return;
	}
	w->op = mcpx_task_lease_held(w->t->ts, &w->rec, held_cb, w);
	if (!w->op)
		mcpx_task_wait_proceed(w);
}

void mcpx_task_wait_reload(struct task_wait *w)
{
	w->op = mcpx_task_load(w->t->ts, w->owner, w->id, loaded_cb, w);
	if (!w->op)
		mcpx_task_wait_store_error(w, -ENOMEM);
}

/* ---- the methods once the record is known ------------------------------- */

static void outcome_cb(void *arg, int rc, const char *data, size_t len)
{
	struct task_wait *w = arg;
	cJSON *outcome = NULL;
	const char *why;

	w->op = NULL;
	if (rc == 0)
		outcome = mcpx_jsonrpc_parse(data, len, &why);
	if (strcmp(w->method, "result") == 0) {
		struct mcpx_call *req = w->req;

		w->req = NULL;
		if (req)
			mcpx_task_answer_result(req, &w->rec, outcome);
		cJSON_Delete(outcome);
		wait_free(w);
		return;
	}
	mcpx_task_wait_answer(w, detailed(&w->rec, outcome));
	cJSON_Delete(outcome);
}

/* Reads the outcome of a finished task, then answers. */
static void with_outcome(struct task_wait *w)
{
	if (w->rec.status == MCPX_TASK_CANCELLED || !w->rec.result_bytes) {
		outcome_cb(w, -ENOENT, NULL, 0);
		return;
	}
	w->op = mcpx_task_get_outcome(w->t->ts, &w->rec, outcome_cb, w);
	if (!w->op)
		outcome_cb(w, -ENOMEM, NULL, 0);
}

static void marked_cb(void *arg, int rc)
{
	struct task_wait *w = arg;

	w->op = NULL;
	if (rc < 0) {
		mcpx_task_wait_store_error(w, rc);
		return;
	}
	w->cancel_marked = true;
	if (w->gen == MCPX_TASK_V2) {
		/* Eventually consistent: the runner sees the mark within a
		 * second. */
		mcpx_task_wait_answer(w, mcpx_task_ack());
		return;
	}
	w->deadline_us = mcpx_now_us() + CANCEL_WAIT_US;
	wait_later(w);
}

static void proceed_cancel(struct task_wait *w)
{
	char msg[160];

	if (mcpx_task_terminal(w->rec.status)) {
		if (w->gen == MCPX_TASK_V2) {
			mcpx_task_wait_answer(w, mcpx_task_ack()); /* idempotent */
		} else if (w->cancel_marked && w->rec.status == MCPX_TASK_CANCELLED) {
			mcpx_task_wait_answer(w, mcpx_task_wire_task(&w->rec, MCPX_TASK_V1));
		} else {
			snprintf(msg, sizeof(msg),
			         "Cannot cancel task: already in terminal status '%s'",
			         mcpx_task_wire_status(&w->rec, MCPX_TASK_V1));
			mcpx_task_wait_error(w, MCPX_RPC_INVALID_PARAMS, msg);
		}
		return;
	}
	if (!w->cancel_marked) {
		w->op = mcpx_task_mark_cancel(w->t->ts, &w->rec, marked_cb, w);
		if (!w->op)
			mcpx_task_wait_store_error(w, -ENOMEM);
		return;
	}
	if (mcpx_now_us() > w->deadline_us) {
		mcpx_task_wait_error(
		    w, MCPX_RPC_INTERNAL_ERROR,
		    "Internal error: the server running the task has not confirmed the "
		    "cancellation yet; tasks/get shows when it does");
		return;
	}
	wait_later(w);
}

/* The record is known (and judged against its lease). */
void mcpx_task_wait_proceed(struct task_wait *w)
{
	const char *m = w->method;

	if (strcmp(m, "get") == 0) {
		if (w->gen == MCPX_TASK_V1)
			mcpx_task_wait_answer(w, mcpx_task_wire_task(&w->rec, MCPX_TASK_V1));
		else if (mcpx_task_terminal(w->rec.status))
			with_outcome(w);
		else
			mcpx_task_wait_answer(w, detailed(&w->rec, NULL));
	} else if (strcmp(m, "result") == 0) {
		if (mcpx_task_terminal(w->rec.status))
			with_outcome(w);
		else if (w->t->draining)
			mcpx_task_wait_error(
			    w, MCPX_RPC_INTERNAL_ERROR,
			    "Internal error: this server is shutting down; ask again (any "
			    "server of the deployment can answer for the task)");
		else
			wait_later(w);
	} else if (strcmp(m, "cancel") == 0) {
		proceed_cancel(w);
	} else {
		mcpx_task_wait_answer(
		    w, mcpx_task_ack()); /* update: the task exists and is the caller's */
	}
}

/* ---- tasks this replica runs -------------------------------------------- */

/* Answers w from its run's final record and outcome. */
static void from_run(struct task_wait *w, const struct task_run *run)
{
	w->rec = run->rec;
	w->run = NULL;
	if (strcmp(w->method, "result") == 0) {
		struct mcpx_call *req = w->req;

		w->req = NULL;
		if (req)
			mcpx_task_answer_result(req, &w->rec, run->outcome);
		wait_free(w);
		return;
	}
	if (strcmp(w->method, "get") == 0) {
		mcpx_task_wait_answer(w, w->gen == MCPX_TASK_V1
		                             ? mcpx_task_wire_task(&w->rec, MCPX_TASK_V1)
		                             : detailed(&w->rec, run->outcome));
		return;
	}
	mcpx_task_wait_proceed(
	    w); /* cancel: cancel_marked is set, so a cancelled record is the answer */
}

void mcpx_task_waiters_done(struct task_run *run)
{
	struct task_wait *w = run->t->waits, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->run == run)
			from_run(w, run);
	}
}

void mcpx_task_waiters_orphan(struct task_run *run)
{
	for (struct task_wait *w = run->t->waits; w; w = w->next) {
		if (w->run != run)
			continue;
		w->run = NULL;
		w->rec = run->rec;
		w->deadline_us = mcpx_now_us() + CANCEL_WAIT_US;
		wait_later(w);
	}
}

bool mcpx_task_wait_abandon(struct mcpx_tasks *t, struct mcpx_call *req)
{
	for (struct task_wait *w = t->waits; w; w = w->next) {
		if (w->req == req) {
			w->req = NULL;
			wait_free(w);
			return true;
		}
	}
	return false;
}

void mcpx_task_waits_drain(struct mcpx_tasks *t)
{
	struct task_wait *w = t->waits, *next;

	/* Waits for another replica's task end now; those for a local run
	 * end with it (the run finishes under the drain rules). */
	for (; w; w = next) {
		next = w->next;
		if (!w->run && !w->op && strcmp(w->method, "result") == 0)
			mcpx_task_wait_error(
			    w, MCPX_RPC_INTERNAL_ERROR,
			    "Internal error: this server is shutting down; ask again (any "
			    "server of the deployment can answer for the task)");
	}
}

void mcpx_task_waits_free(struct mcpx_tasks *t)
{
	while (t->waits) {
		t->waits->req = NULL; /* the core, freed first, dropped its requests */
		wait_free(t->waits);
	}
}
