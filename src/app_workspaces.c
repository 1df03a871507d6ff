/*
 * app_workspaces.c - the workspaces of one run of the server, on the store
 * app_store.c opened (app_workspaces.h): the caps exec's workspace calls
 * keep to, and the provider of the workspaces' resources.
 *
 * The store itself (which one, out of runs' reach, opened on the loop) is
 * app_store.c's; nothing here opens or frees it.
 */
#include "app_workspaces.h"

#include <errno.h>
#include <string.h>

#include "config.h"
#include "workspace_resources.h"

int mcpx_app_workspaces_start(const struct mcpx_config *cfg, struct mcpx_store *store,
                              struct mcpx_loop *loop, const struct mcpx_policy_store *policy,
                              struct mcpx_app_workspaces *w)
{
	memset(w, 0, sizeof(*w));
	if (!store)
		return 0;
	w->resources = mcpx_workspace_resources_new(store, policy, cfg->max_files_out_bytes);
	if (!w->resources)
		return -ENOMEM;
	w->conf = (struct mcpx_workspaces_conf){
	    .loop = loop,
	    .store = store,
	    .max_bytes = (size_t)cfg->workspace_max_mb << 20,
	    .ttl_ms = (uint64_t)cfg->workspace_ttl_s * 1000u,
	    .per_caller = cfg->workspaces_per_caller,
	    .wait_ms = cfg->queue_timeout_s * 1000u,
	    .wait_s = cfg->queue_timeout_s,
	    .disk_bytes = (size_t)cfg->max_disk_mb << 20,
	};
	return 0;
}

void mcpx_app_workspaces_stop(struct mcpx_app_workspaces *w)
{
	mcpx_workspace_resources_free(w->resources);
	memset(w, 0, sizeof(*w));
}
