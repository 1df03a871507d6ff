/*
 * app_tasks.c - the tasks module for one run of the server (app_tasks.h),
 * from the configuration, on the store app_store.c opened.
 *
 * What it does not do: decide anything about tasks (tasks.h) or wire the
 * module into the core (app.c).
 */
#include "app_tasks.h"

#include "config.h"
#include "log.h"
#include "store.h"
#include "tasks.h"

struct mcpx_tasks *mcpx_app_start_tasks(const struct mcpx_config *cfg, struct mcpx_loop *loop,
                                        struct mcpx_store *store, int *failed)
{
	struct mcpx_tasks_opts o = {
	    .loop = loop,
	    .store = store,
	    .ttl_max_s = cfg->task_ttl_max_s,
	    .per_caller = cfg->tasks_per_caller,
	    .max_bytes = (uint64_t)cfg->tasks_max_mb << 20,
	    .lease_ms = cfg->task_lease_s * 1000u,
	    .poll_ms = 1000,
	    .sync_ms = cfg->task_sync_ms,
	};
	struct mcpx_tasks *t;

	*failed = 0;
	if (!cfg->tasks)
		return NULL;
	if (!store) {
		mcpx_info("MCP tasks off: they need a store (MCP_EXEC_WORKSPACES)");
		return NULL;
	}
	o.replica = mcpx_store_instance_id(store);
	t = mcpx_tasks_new(&o);
	if (!t)
		*failed = 1;
	return t;
}
