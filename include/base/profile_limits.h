/*
 * profile_limits.h - the limits a caller's profile sets on its runs.
 *
 * The policy file (policy.h) reads them; the executor (executor.h) applies
 * them. They live here, in neither, so the executor needs no code-mode
 * header. A plain value: nothing to free.
 */
#ifndef MCPX_PROFILE_LIMITS_H
#define MCPX_PROFILE_LIMITS_H

#include <stdbool.h>

/* A profile's limits; 0 means "not set" (the server's own). Each can only
 * lower the server's: what applies is the smaller of the two. */
struct mcpx_profile_limits {
	unsigned timeout_s;       /* a run's wall clock */
	unsigned memory_mb;       /* a run's memory */
	unsigned max_queued;      /* the caller's runs waiting in the queue at once */
	unsigned runs_per_minute; /* the caller's runs started (queued) per minute */
};

/* A profile's word on workspaces (the "workspaces" key of a profile,
 * docs/policy.md): off for its callers, or lower caps; 0 is the server's
 * (MCP_EXEC_WORKSPACE_MAX_MB, MCP_EXEC_WORKSPACES_PER_CALLER). */
struct mcpx_profile_workspaces {
	bool off;
	unsigned max_mb; /* files plus variables of one workspace */
	unsigned max;    /* workspaces the caller may have at once */
};

#endif
