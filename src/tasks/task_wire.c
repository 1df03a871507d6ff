/*
 * task_wire.c - task records as 2025-11-25 and 2026-07-28 JSON.
 *
 * Field names and shapes follow the 2025-11-25 schema (Task,
 * CreateTaskResult) and SEP-2663 (Task, CreateTaskResult, DetailedTask).
 * Timestamps are ISO 8601 UTC with milliseconds; ttl and poll interval are
 * integer milliseconds. The record's status message goes out as
 * statusMessage when it is not empty.
 */
#include "task_wire.h"

#include "jsonrpc.h"

const char *mcpx_task_wire_status(const struct mcpx_task_rec *r, enum mcpx_task_gen gen)
{
	if (gen == MCPX_TASK_V1 && r->status == MCPX_TASK_COMPLETED && r->is_error)
		return "failed";
	return mcpx_task_status_name(r->status);
}

/* Adds the Task members to o. */
static bool fill(cJSON *o, const struct mcpx_task_rec *r, enum mcpx_task_gen gen)
{
	char created[32], updated[32];

	mcpx_task_iso8601(r->created_ms, created, sizeof(created));
	mcpx_task_iso8601(r->updated_ms, updated, sizeof(updated));
	if (!cJSON_AddStringToObject(o, "taskId", r->id) ||
	    !cJSON_AddStringToObject(o, "status", mcpx_task_wire_status(r, gen)) ||
	    (r->message[0] && !cJSON_AddStringToObject(o, "statusMessage", r->message)) ||
	    !cJSON_AddStringToObject(o, "createdAt", created) ||
	    !cJSON_AddStringToObject(o, "lastUpdatedAt", updated))
		return false;
	if (gen == MCPX_TASK_V1)
		return cJSON_AddNumberToObject(o, "ttl", (double)r->ttl_ms) &&
		       cJSON_AddNumberToObject(o, "pollInterval", r->poll_ms);
	return cJSON_AddNumberToObject(o, "ttlMs", (double)r->ttl_ms) &&
	       cJSON_AddNumberToObject(o, "pollIntervalMs", r->poll_ms);
}

cJSON *mcpx_task_wire_task(const struct mcpx_task_rec *r, enum mcpx_task_gen gen)
{
	cJSON *o = cJSON_CreateObject();

	if (!fill(o, r, gen)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *mcpx_task_wire_created(const struct mcpx_task_rec *r, enum mcpx_task_gen gen)
{
	cJSON *res;

	if (gen == MCPX_TASK_V2) {
		res = mcpx_task_wire_task(r, gen);
		if (res && !cJSON_AddStringToObject(res, "resultType", "task")) {
			cJSON_Delete(res);
			return NULL;
		}
		return res;
	}
	res = cJSON_CreateObject();
	if (!mcpx_json_add_owned(res, "task", mcpx_task_wire_task(r, gen))) {
		cJSON_Delete(res);
		return NULL;
	}
	return res;
}

cJSON *mcpx_task_wire_error(const struct mcpx_task_rec *r, const cJSON *error)
{
	cJSON *e;

	if (error)
		return cJSON_Duplicate(error, true);
	e = cJSON_CreateObject();
	if (!cJSON_AddNumberToObject(e, "code", r->error_code ? r->error_code : -32603) ||
	    !cJSON_AddStringToObject(e, "message", r->message[0] ? r->message : "Task failed")) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

cJSON *mcpx_task_wire_detailed(const struct mcpx_task_rec *r, const cJSON *result,
                               const cJSON *error)
{
	cJSON *o = mcpx_task_wire_task(r, MCPX_TASK_V2);
	bool ok = o != NULL;

	if (ok && r->status == MCPX_TASK_COMPLETED)
		ok = result && mcpx_json_add_owned(o, "result", cJSON_Duplicate(result, true));
	else if (ok && r->status == MCPX_TASK_FAILED)
		ok = mcpx_json_add_owned(o, "error", mcpx_task_wire_error(r, error));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *mcpx_task_wire_related(const char *id)
{
	cJSON *o = cJSON_CreateObject();

	if (!cJSON_AddStringToObject(o, "taskId", id)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
