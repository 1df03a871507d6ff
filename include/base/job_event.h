/*
 * job_event.h - what a queued or running job reports before its result.
 *
 * The executor (executor.h) sends these; the tools that run code relay
 * them as MCP logging and progress (tool_progress.h), whether the job is
 * exec's or a function's (functions.h). Here, in neither, so code mode
 * needs no executor header to pass them on. A plain value.
 */
#ifndef MCPX_JOB_EVENT_H
#define MCPX_JOB_EVENT_H

/* Events a caller may want to relay as MCP logging / progress. */
enum mcpx_job_event {
	MCPX_JOB_QUEUED, /* position in *pos */
	MCPX_JOB_STARTED,
	MCPX_JOB_OUTPUT, /* new output arrived (progress); bytes so far in *pos */
};

#endif
