/*
 * profile_limits.h - the limits a caller's profile sets on its runs.
 *
 * The policy file (policy.h) reads them; the executor (executor.h) applies
 * them. They live here, in neither, so the executor needs no code-mode
 * header. A plain value: nothing to free.
 */
#ifndef MCPX_PROFILE_LIMITS_H
#define MCPX_PROFILE_LIMITS_H

/* A profile's limits; 0 means "not set" (the server's own). Each can only
 * lower the server's: what applies is the smaller of the two. */
struct mcpx_profile_limits {
	unsigned timeout_s;       /* a run's wall clock */
	unsigned memory_mb;       /* a run's memory */
	unsigned max_queued;      /* the caller's runs waiting in the queue at once */
	unsigned runs_per_minute; /* the caller's runs started (queued) per minute */
};

#endif
