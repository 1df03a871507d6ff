/*
 * app_workspaces.h - the server's workspaces for one run of it: the store
 * MCP_EXEC_WORKSPACES names opened on the loop, the exec tool's view of it
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
struct mcpx_sandbox;
struct mcpx_store;
struct mcpx_workspace_resources;

struct mcpx_app_workspaces {
	struct mcpx_store *store; /* NULL: off */
	struct mcpx_workspaces_conf conf;
	struct mcpx_workspace_resources *resources;
};

/* Opens the store (off: nothing, and 0). A store the configuration names
 * that cannot be opened, or one a run could read, stops the server
 * (returns the exit status); the default directory that cannot be made
 * leaves workspaces off, said in the log. */
int mcpx_app_open_workspaces(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                             struct mcpx_loop *loop, const struct mcpx_policy_store *policy,
                             struct mcpx_app_workspaces *w);
/* Frees the resources and the store (its operations must be cancelled by
 * then: the core's calls are). */
void mcpx_app_close_workspaces(struct mcpx_app_workspaces *w);

#endif
