/*
 * app_tasks.h - the MCP tasks module (tasks.h) of one run of the server, on
 * the store app_store.c opened.
 */
#ifndef MCPX_APP_TASKS_H
#define MCPX_APP_TASKS_H

struct mcpx_config;
struct mcpx_loop;
struct mcpx_store;
struct mcpx_tasks;

/* The tasks module on store, or NULL: MCP_EXEC_TASKS off, no store (both
 * logged), or out of memory (*failed set). */
struct mcpx_tasks *mcpx_app_start_tasks(const struct mcpx_config *cfg, struct mcpx_loop *loop,
                                        struct mcpx_store *store, int *failed);

#endif
