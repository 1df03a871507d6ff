/*
 * tasks.h - MCP tasks: a tools/call detached from its request, kept in the
 * shared store so that any replica answers for it.
 *
 * Two generations of the protocol (task_hooks.h says how the core hands
 * requests over):
 *   - 2025-11-25 sessions (experimental tasks): the "tasks" capability (list,
 *     cancel, requests.tools.call); a tools/call with "task": {ttl} is
 *     answered at once with a CreateTaskResult; tasks/get, tasks/result
 *     (waits until the task ends, then the call's own result with
 *     _meta["io.modelcontextprotocol/related-task"]), tasks/list,
 *     tasks/cancel; notifications/tasks/status when a task ends, to the
 *     session's own streams.
 *   - 2026-07-28 requests that declare io.modelcontextprotocol/tasks
 *     (SEP-2663): the server decides. A call that has not finished after
 *     sync_ms becomes a task (CreateTaskResult, resultType "task"); one that
 *     finishes sooner is answered as usual. tasks/get inlines the result or
 *     error, tasks/cancel and tasks/update acknowledge; no tasks/result, no
 *     tasks/list.
 *
 * A task's run is the ordinary tools/call path (the same tool, sandbox,
 * budgets, fair queue, drain and audit; the run may last up to the task
 * timeout instead of MCP_EXEC_MAX_TIMEOUT_S), and its outcome is exactly what
 * a direct call returns. The replica that runs it holds a lease in the store
 * and renews it; a task whose lease lapsed (its replica died) is failed by
 * whichever replica reads it next. A cancel on another replica leaves a mark
 * the runner polls every second. Tasks belong to their caller: another
 * caller's id is answered exactly as an unknown one. Each caller keeps at
 * most per_caller tasks and max_bytes of results; the oldest finished tasks
 * make room first.
 */
#ifndef MCPX_TASKS_H
#define MCPX_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "task_hooks.h"
#include "task_opts.h"

struct mcpx_tasks;
struct mcpx_core;

/* The module; the core is attached with mcpx_tasks_attach once it exists.
 * NULL when out of memory. */
struct mcpx_tasks *mcpx_tasks_new(const struct mcpx_tasks_opts *o);
/* The hooks to give the core (mcpx_core_opts.tasks); valid while the
 * module lives. */
const struct mcpx_task_hooks *mcpx_tasks_hooks(struct mcpx_tasks *t);
/* The core that runs the tasks' calls. */
void mcpx_tasks_attach(struct mcpx_tasks *t, struct mcpx_core *core);

/* Draining: tasks/result requests waiting for a task another replica runs
 * are answered with an error saying to ask again (any replica can answer);
 * the runs on this replica go on under the drain rules. */
void mcpx_tasks_drain(struct mcpx_tasks *t);
/* Tasks this replica runs, and store operations in flight: drain waits
 * for them to settle. */
size_t mcpx_tasks_busy(const struct mcpx_tasks *t);

/* Everything pending is abandoned (call after the core is freed). */
void mcpx_tasks_free(struct mcpx_tasks *t);

#endif
