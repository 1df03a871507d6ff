/*
 * task_methods.c - tasks/get, tasks/result, tasks/list, tasks/cancel and
 * tasks/update, on any replica.
 *
 * A task this replica runs is answered from its run; any other from the
 * store, under the requester's name: another caller's task is not found,
 * exactly as an id that never existed ("Failed to retrieve task: Task not
 * found", -32602). A record that says "working" is checked against its
 * lease: when the lease can be taken, the replica that ran the task is gone,
 * and the reader fails the task with a message saying so (terminal states
 * never change afterwards).
 *
 *   tasks/get      the Task (2025-11-25), or the DetailedTask with the
 *                  result or error inlined (2026-07-28).
 *   tasks/result   2025-11-25: waits until the task ends (its run's end on
 *                  this replica, else re-reading the store every second),
 *                  then the call's own result with related-task _meta, or
 *                  its JSON-RPC error.
 *   tasks/list     2025-11-25: the caller's tasks, newest first, 50 a page.
 *   tasks/cancel   2025-11-25: the task once cancelled (a finished task:
 *                  -32602); 2026-07-28: an acknowledgement, also for a
 *                  finished task. A task another replica runs gets a cancel
 *                  mark its runner polls for.
 *   tasks/update   2026-07-28: acknowledged (this server never asks a task's
 *                  client for input, so no response is ever outstanding).
 *
 * This file is the entry: which method a request is, and whether its task
 * runs on this replica (a cancel then reaches the run itself), and
 * tasks/list; the answers, the store reads and the waits are
 * task_waits.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "task_common.h"

#define LIST_PAGE 50

/* ---- tasks this replica runs -------------------------------------------- */

/* A method on a task this replica runs (its record is the run's). */
static void local(struct task_wait *w, struct task_run *run)
{
	w->rec = run->rec;
	/* A run writing its outcome has its final status in memory only:
	 * the answer waits for the store to hold it. */
	if (strcmp(w->method, "result") == 0 ||
	    (strcmp(w->method, "get") == 0 && run->state == RUN_FINISHING)) {
		w->run = run;
		return;
	}
	if (strcmp(w->method, "cancel") == 0) {
		w->cancel_marked = true;
		mcpx_task_run_cancel(run);
		if (w->gen == MCPX_TASK_V2) {
			mcpx_task_wait_answer(w, mcpx_task_ack());
			return;
		}
		/* Answered when its record is written (the run may also have
		 * been finishing with another outcome already). */
		w->run = run;
		return;
	}
	mcpx_task_wait_proceed(w); /* get (a running task), update */
}

/* ---- tasks/list --------------------------------------------------------- */

static int newest_first(const void *a, const void *b)
{
	const struct mcpx_task_rec *x = a, *y = b;

	if (x->created_ms != y->created_ms)
		return x->created_ms > y->created_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* Where the page starts: after the cursor's task ("<created_ms>.<id>"),
 * or -1 when the cursor is not one of ours. */
static long page_start(const struct mcpx_task_rec *recs, size_t n, const char *cursor)
{
	long long ms;
	char id[MCPX_TASK_ID_LEN + 2];
	struct mcpx_task_rec key;

	if (!cursor[0])
		return 0;
	if (sscanf(cursor, "%lld.%33s", &ms, id) != 2 || !mcpx_task_id_valid(id))
		return -1;
	memset(&key, 0, sizeof(key));
	key.created_ms = ms;
	memcpy(key.id, id, sizeof(key.id));
	for (size_t i = 0; i < n; i++)
		if (newest_first(&recs[i], &key) > 0)
			return (long)i;
	return (long)n;
}

static void listed_cb(void *arg, int rc, const struct mcpx_task_rec *recs, size_t n)
{
	struct task_wait *w = arg;
	struct mcpx_task_rec *sorted = n ? malloc(n * sizeof(*sorted)) : NULL;
	cJSON *res, *arr;
	long start;
	size_t i;

	w->op = NULL;
	if (rc < 0 || (n && !sorted)) {
		free(sorted);
		mcpx_task_wait_store_error(w, rc < 0 ? rc : -ENOMEM);
		return;
	}
	if (n) {
		memcpy(sorted, recs, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), newest_first);
	}
	start = page_start(sorted, n, w->cursor);
	if (start < 0) {
		free(sorted);
		mcpx_task_wait_error(w, MCPX_RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
		return;
	}
	res = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(res, "tasks");
	for (i = (size_t)start; arr && i < n && i < (size_t)start + LIST_PAGE; i++)
		if (!cJSON_AddItemToArray(arr, mcpx_task_wire_task(&sorted[i], MCPX_TASK_V1)))
			arr = NULL;
	if (arr && i < n) {
		char next[80];

		snprintf(next, sizeof(next), "%lld.%s", (long long)sorted[i - 1].created_ms,
		         sorted[i - 1].id);
		if (!cJSON_AddStringToObject(res, "nextCursor", next))
			arr = NULL;
	}
	free(sorted);
	if (!arr) {
		cJSON_Delete(res);
		res = NULL;
	}
	mcpx_task_wait_answer(w, res);
}

static void do_list(struct task_wait *w, const cJSON *params)
{
	const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");

	if (cursor && !cJSON_IsNull(cursor)) {
		if (!cJSON_IsString(cursor) || strlen(cursor->valuestring) >= sizeof(w->cursor)) {
			mcpx_task_wait_error(w, MCPX_RPC_INVALID_PARAMS,
			                     "Invalid params: unknown cursor");
			return;
		}
		memcpy(w->cursor, cursor->valuestring, strlen(cursor->valuestring) + 1);
	}
	w->op = mcpx_task_list(w->t->ts, w->owner, listed_cb, w);
	if (!w->op)
		mcpx_task_wait_store_error(w, -ENOMEM);
}

/* ---- entry -------------------------------------------------------------- */

void mcpx_task_method(struct mcpx_tasks *t, struct mcpx_call *req, const char *method,
                      const cJSON *params)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(params, "taskId");
	const char *short_name = strncmp(method, "tasks/", 6) == 0 ? method + 6 : method;
	struct task_wait *w;
	struct task_run *run;

	w = mcpx_task_wait_new(t, req, short_name, cJSON_IsString(id) ? id->valuestring : NULL);
	if (!w) {
		mcpx_call_error_data(req, MCPX_RPC_INTERNAL_ERROR, "Internal error: out of memory",
		                     NULL);
		return;
	}
	if (strcmp(short_name, "list") == 0) {
		do_list(w, params);
		return;
	}
	/* "For the tasks/get, tasks/result, and tasks/cancel operations, the
	 * taskId parameter in the request MUST be used as the source of truth";
	 * an id that is not one of ours is not found, like any other. */
	if (!cJSON_IsString(id) || !mcpx_task_id_valid(id->valuestring)) {
		mcpx_task_wait_not_found(w);
		return;
	}
	if (strcmp(short_name, "update") == 0 &&
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(params, "inputResponses"))) {
		mcpx_task_wait_error(w, MCPX_RPC_INVALID_PARAMS,
		                     "Invalid params: tasks/update needs an inputResponses object");
		return;
	}
	run = mcpx_task_run_find(t, w->id);
	if (run && strcmp(run->rec.owner, w->owner) == 0)
		local(w, run);
	else
		mcpx_task_wait_reload(w);
}
