/*
 * app_tasks.c - the store and the tasks module for one run of the server
 * (app_tasks.h).
 *
 * The store's address and password never reach the logs: the store's own
 * messages do not name them (store.h), and neither does anything here.
 * What it does not do: decide anything about tasks (tasks.h) or wire the
 * module into the core (app.c).
 */
#include "app_tasks.h"

#include <sysexits.h>

#include "config.h"
#include "log.h"
#include "store.h"
#include "tasks.h"

/* The hard cap on one blob: a task's result is at most a run's output and
 * out/ files (MCP_EXEC_MAX_OUTPUT_BYTES, MCP_EXEC_MAX_FILES_OUT_BYTES), as
 * JSON, far below it. */
#define STORE_MAX_BLOB_BYTES ((size_t)64 << 20)

int mcpx_app_open_store(const struct mcpx_config *cfg, struct mcpx_loop *loop,
                        struct mcpx_store **out)
{
	struct mcpx_store_config sc = {.max_blob_bytes = STORE_MAX_BLOB_BYTES};
	struct mcpx_err err = {{0}};
	char shown[4400];

	*out = NULL;
	if (cfg->workspaces[0]) {
		if (mcpx_store_spec_parse(cfg->workspaces, &sc.spec, &err) < 0) {
			mcpx_error("MCP_EXEC_WORKSPACES: %s", err.msg);
			return EX_CONFIG;
		}
	} else if (mcpx_store_spec_default(&sc.spec, &err) < 0) {
		mcpx_warn("no store for workspaces and tasks (set MCP_EXEC_WORKSPACES): %s",
		          err.msg);
		return 0;
	}
	if (sc.spec.type == MCPX_STORE_OFF)
		return 0;
	snprintf(sc.spec.password_file, sizeof(sc.spec.password_file), "%s",
	         cfg->workspaces_password_file);
	if (mcpx_store_open(loop, &sc, out, &err) < 0) {
		mcpx_error("the store of workspaces and tasks: %s", err.msg);
		return EX_CONFIG;
	}
	mcpx_store_spec_format(&sc.spec, shown, sizeof(shown));
	mcpx_info("store for workspaces and tasks: %s", shown);
	return 0;
}

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
