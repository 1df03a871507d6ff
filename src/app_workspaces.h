/*
 * app_workspaces.h - the server's workspaces for one run of it, on the store
 * the app opened (app_store.c): the exec tool's view of it
 * (exec_workspace.h) and the resources that list and read them
 * (workspace_resources.h).
 *
 * Not for use outside src/app*.c.
 */
#ifndef MCPX_APP_WORKSPACES_H
#define MCPX_APP_WORKSPACES_H

#include "exec_workspace.h"

struct mcpx_config;
struct mcpx_loop;
struct mcpx_policy_store;
struct mcpx_store;
struct mcpx_workspace_resources;

struct mcpx_app_workspaces {
	struct mcpx_workspaces_conf conf; /* conf.store NULL: off */
	struct mcpx_workspace_resources *resources;
};

/* Workspaces on store (NULL: off, and 0). Returns 0 or -ENOMEM. */
int mcpx_app_workspaces_start(const struct mcpx_config *cfg, struct mcpx_store *store,
                              struct mcpx_loop *loop, const struct mcpx_policy_store *policy,
                              struct mcpx_app_workspaces *w);
/* Frees the resources (the store is the app's; the core's calls that used
 * it must be cancelled by then). */
void mcpx_app_workspaces_stop(struct mcpx_app_workspaces *w);

#endif
