/*
 * exec_result.h - the `exec` tool's CallToolResult for a finished job.
 *
 * structuredContent {stdout, stderr, exit_code, duration_ms, truncated,
 * timed_out} plus our additive fields (signal, limit, cpu_ms, max_rss_kb,
 * files, files_truncated, and a workspace call's workspace), the same JSON in a text block, and one image or
 * embedded resource block per file returned from out/ (see docs/tool.md).
 * A non-zero exit or a timeout is a normal result; only invalid input and
 * infrastructure failures are tool errors.
 *
 * A new result field is a line in exec_result.c's structured_result and its
 * property in the outputSchema (exec_describe.c's output_schema).
 */
#ifndef MCPX_EXEC_RESULT_H
#define MCPX_EXEC_RESULT_H

#include <cjson/cJSON.h>

#include "executor.h"

/* Builds the CallToolResult for a finished job (caller frees); NULL when
 * out of memory. */
cJSON *mcpx_exec_result(const struct mcpx_job_result *res);

/* Adds a workspace call's structuredContent.workspace (taken on 0) to a
 * finished job's result, and to its text block. -EINVAL: result is a tool
 * error (workspace not taken). */
int mcpx_exec_result_add_workspace(cJSON *result, cJSON *workspace);

#endif
