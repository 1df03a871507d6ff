/*
 * app_tasks.h - the shared store (store.h) and the MCP tasks module
 * (tasks.h) of one run of the server: which store the configuration names,
 * opened on the server's loop, and the tasks module on top of it.
 */
#ifndef MCPX_APP_TASKS_H
#define MCPX_APP_TASKS_H

struct mcpx_config;
struct mcpx_loop;
struct mcpx_store;
struct mcpx_tasks;

/* Opens the store MCP_EXEC_WORKSPACES names (the default directory when
 * unset) on loop into *out; *out stays NULL for "off", or when there is no
 * default (not root, neither XDG_STATE_HOME nor HOME set: logged). Returns
 * 0, or the exit status (EX_CONFIG) with the reason logged. */
int mcpx_app_open_store(const struct mcpx_config *cfg, struct mcpx_loop *loop,
                        struct mcpx_store **out);

/* The tasks module on store, or NULL: MCP_EXEC_TASKS off, no store (both
 * logged), or out of memory (*failed set). */
struct mcpx_tasks *mcpx_app_start_tasks(const struct mcpx_config *cfg, struct mcpx_loop *loop,
                                        struct mcpx_store *store, int *failed);

#endif
