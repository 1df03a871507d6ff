/*
 * task_wire.h - a task record as each protocol generation puts it on the
 * wire.
 *
 * Two generations, one record (task_record.h):
 *   - 2025-11-25, experimental tasks (basic/utilities/tasks): Task objects
 *     with "ttl" and "pollInterval"; CreateTaskResult wraps the task in
 *     "task"; tasks/result returns the call's own result with
 *     _meta["io.modelcontextprotocol/related-task"]. A tool result with
 *     isError makes the task "failed" ("For tool calls specifically, this
 *     includes cases where the tool call result has isError set to true").
 *   - 2026-07-28, the io.modelcontextprotocol/tasks extension (SEP-2663):
 *     "ttlMs" and "pollIntervalMs"; CreateTaskResult is the task itself with
 *     resultType "task"; tasks/get inlines the final "result" (completed,
 *     isError or not) or "error" (failed: a JSON-RPC error only).
 * This module only builds JSON; it decides nothing about tasks.
 */
#ifndef MCPX_TASK_WIRE_H
#define MCPX_TASK_WIRE_H

#include <cjson/cJSON.h>

#include "task_record.h"

enum mcpx_task_gen {
	MCPX_TASK_V1, /* 2025-11-25 sessions */
	MCPX_TASK_V2, /* the 2026-07-28 extension */
};

#define MCPX_TASK_RELATED_META "io.modelcontextprotocol/related-task"
#define MCPX_TASKS_EXTENSION "io.modelcontextprotocol/tasks"

/* The status r has for a client of generation gen. */
const char *mcpx_task_wire_status(const struct mcpx_task_rec *r, enum mcpx_task_gen gen);

/* The Task object (tasks/get and tasks/cancel results of 2025-11-25, a
 * tasks/list entry, notifications/tasks/status params, the 2026-07-28
 * working or cancelled task); caller frees, NULL when out of memory. */
cJSON *mcpx_task_wire_task(const struct mcpx_task_rec *r, enum mcpx_task_gen gen);

/* CreateTaskResult: {"task": Task} (2025-11-25), or the Task with
 * resultType "task" (2026-07-28). */
cJSON *mcpx_task_wire_created(const struct mcpx_task_rec *r, enum mcpx_task_gen gen);

/* The 2026-07-28 tasks/get result (a DetailedTask): the Task, plus for a
 * completed task "result" (a copy of result) and for a failed one "error"
 * (a copy of error, or one made of the record's code and message when
 * error is NULL). resultType is the caller's to add ("complete"). */
cJSON *mcpx_task_wire_detailed(const struct mcpx_task_rec *r, const cJSON *result,
                               const cJSON *error);

/* {"io.modelcontextprotocol/related-task": {"taskId": id}}'s value. */
cJSON *mcpx_task_wire_related(const char *id);

/* The JSON-RPC error object of a task that ended without a result: error
 * (copied) when the call itself failed, else one made of the record's code
 * and message (a task that could not go on, or was cancelled). */
cJSON *mcpx_task_wire_error(const struct mcpx_task_rec *r, const cJSON *error);

#endif
