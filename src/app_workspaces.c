/*
 * app_workspaces.c - the workspaces' store opened for one run of the server
 * (app_workspaces.h).
 *
 * The store is MCP_EXEC_WORKSPACES (store_spec.h), its hard cap the
 * workspace cap plus what the archive's own records add (workspace_pack.h),
 * so a workspace at its cap still fits. A directory store a run could read
 * (beneath the workdir base or a runtime's directories, with Landlock) is
 * refused, as a tokens file there is: workspaces hold every caller's data.
 */
#include "app_workspaces.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "config.h"
#include "log.h"
#include "sandbox.h"
#include "store.h"
#include "workspace_pack.h"
#include "workspace_resources.h"

/* Whether a run could read the store's directory, as named or resolved. */
static bool dir_readable_by_runs(const struct mcpx_sandbox *sb, const char *dir)
{
	char real[PATH_MAX];

	if (!sb->layers.landlock)
		return false; /* then the uid (dropped, or the pod's) is what decides */
	return mcpx_sandbox_run_may_read(sb, dir) ||
	       (realpath(dir, real) && mcpx_sandbox_run_may_read(sb, real));
}

int mcpx_app_open_workspaces(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                             struct mcpx_loop *loop, const struct mcpx_policy_store *policy,
                             struct mcpx_app_workspaces *w)
{
	struct mcpx_store_config sc = {.spec = cfg->workspaces};
	struct mcpx_err err = {{0}};
	size_t max = (size_t)cfg->workspace_max_mb << 20;

	memset(w, 0, sizeof(*w));
	if (cfg->workspaces.type == MCPX_STORE_OFF) {
		if (cfg->workspaces.is_default)
			mcpx_warn("workspaces: off (no state directory for the default store: set "
			          "MCP_EXEC_WORKSPACES)");
		return 0;
	}
	if (cfg->workspaces.type == MCPX_STORE_DIR &&
	    dir_readable_by_runs(sb, cfg->workspaces.dir)) {
		mcpx_error("workspaces: the store's directory lies where runs can read it; put it "
		           "outside MCP_EXEC_WORKDIR_BASE and the runtimes' directories");
		return EX_CONFIG;
	}
	sc.max_blob_bytes = max + MCPX_WSPACK_OVERHEAD(MCPX_WSPACK_FILES_MAX);
	if (mcpx_store_open(loop, &sc, &w->store, &err) < 0) {
		if (cfg->workspaces.is_default) {
			mcpx_warn("workspaces: off (the default store could not be opened: %s)",
			          err.msg);
			return 0;
		}
		mcpx_error("workspaces: %s", err.msg);
		return EX_CONFIG;
	}
	w->resources = mcpx_workspace_resources_new(w->store, policy, cfg->max_files_out_bytes);
	if (!w->resources) {
		mcpx_store_free(w->store);
		w->store = NULL;
		return EX_OSERR;
	}
	w->conf = (struct mcpx_workspaces_conf){
	    .loop = loop,
	    .store = w->store,
	    .max_bytes = max,
	    .ttl_ms = (uint64_t)cfg->workspace_ttl_s * 1000u,
	    .per_caller = cfg->workspaces_per_caller,
	    .wait_ms = cfg->queue_timeout_s * 1000u,
	    .wait_s = cfg->queue_timeout_s,
	    .disk_bytes = (size_t)cfg->max_disk_mb << 20,
	};
	return 0;
}

void mcpx_app_close_workspaces(struct mcpx_app_workspaces *w)
{
	mcpx_workspace_resources_free(w->resources);
	w->resources = NULL;
	mcpx_store_free(w->store);
	w->store = NULL;
}
