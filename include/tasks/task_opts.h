/*
 * task_opts.h - what the tasks module is made with (mcpx_tasks_new in
 * tasks.h): its loop, the store, the caps and timings from the
 * configuration.
 *
 * Types only, apart from tasks.h so that the module's parts below tasks.c
 * (which keep a copy of the options) need not include the module's face.
 * It includes nothing of a module.
 */
#ifndef MCPX_TASK_OPTS_H
#define MCPX_TASK_OPTS_H

#include <stdint.h>

struct mcpx_loop;
struct mcpx_store;

struct mcpx_tasks_opts {
	struct mcpx_loop *loop;
	struct mcpx_store *store; /* not owned; outlives the module */
	unsigned ttl_max_s;       /* MCP_EXEC_TASK_TTL_MAX_S: the longest ttl, and the default */
	unsigned per_caller;      /* MCP_EXEC_TASKS_PER_CALLER: tasks kept per caller */
	uint64_t max_bytes;       /* MCP_EXEC_TASKS_MAX_MB in bytes: results kept per caller */
	unsigned lease_ms;        /* how long a runner's lease lasts without renewal */
	unsigned poll_ms;         /* the pollInterval suggested to clients */
	unsigned sync_ms;         /* 2026-07-28: how long a call may run before it becomes a task */
	const char *replica;      /* this replica's name, for leases and logs (copied) */
};

#endif
