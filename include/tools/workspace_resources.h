/*
 * workspace_resources.h - a caller's workspaces as MCP resources
 * (resource.h): resources/list names each of the caller's workspaces,
 * resources/read gives a workspace's listing or one of its files.
 *
 *   workspace://<name>/         the listing (application/json): its files
 *                               with their sizes, its variables' names
 *   workspace://<name>/<path>   one file, text or base64 blob by content;
 *                               path percent-encoded as RFC 3986 wants
 *
 * Every operation is keyed by the asking call's caller (mcpx_call_caller):
 * a uri naming another caller's workspace names nothing, and reads as not
 * found exactly like one that does not exist. Reads do not renew a
 * workspace's idle TTL; a profile that turns workspaces off lists none.
 *
 * It does not write or delete (exec's workspace and workspace_reset do,
 * exec_workspace.h).
 */
#ifndef MCPX_WORKSPACE_RESOURCES_H
#define MCPX_WORKSPACE_RESOURCES_H

#include <stddef.h>

#include "resource.h"

struct mcpx_policy_store;
struct mcpx_store;
struct mcpx_workspace_resources;

/* store: the workspaces' store (not owned, outlives the provider); policy
 * (may be NULL): whose profiles may turn workspaces off; max_read_bytes:
 * the largest file a read returns. NULL when out of memory. */
struct mcpx_workspace_resources *
mcpx_workspace_resources_new(struct mcpx_store *store, const struct mcpx_policy_store *policy,
                             size_t max_read_bytes);
/* The provider to hand the core (valid while wr lives). */
const struct mcpx_resource_provider *
mcpx_workspace_resources_provider(struct mcpx_workspace_resources *wr);
/* Frees it; its calls must be finished or cancelled by then (the core's
 * are, once it is freed). */
void mcpx_workspace_resources_free(struct mcpx_workspace_resources *wr);

/* The uri of a file of a workspace (path percent-encoded) into out;
 * false when it does not fit. */
bool mcpx_workspace_uri(const char *name, const char *path, char *out, size_t n);

#endif
