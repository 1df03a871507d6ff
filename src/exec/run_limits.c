/*
 * run_limits.c - a run's per-process limits, for a call and for a runtime
 * prepared before one (run_limits.h).
 *
 * What it does not do: turn them into rlimits (sandbox.c,
 * mcpx_sandbox_rlimits, and a language's adjustments in language.c), or
 * hold a run as a whole to its budget (run_budget.c).
 */
#include "run_limits.h"

#include <string.h>

#include "config.h"

/* Descriptors a run may hold open. */
#define RUN_OPEN_FILES 256

unsigned mcpx_run_cpu_s(const struct mcpx_config *cfg, unsigned timeout_s)
{
	return cfg->cpu_s ? cfg->cpu_s : timeout_s;
}

void mcpx_run_limits(const struct mcpx_config *cfg, unsigned cpu_s, unsigned memory_mb,
                     bool channel, struct mcpx_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->cpu_s = cpu_s;
	lim->memory_mb = memory_mb;
	lim->max_procs = cfg->max_procs;
	lim->file_mb = mcpx_config_file_mb(cfg);
	lim->open_files = RUN_OPEN_FILES;
	lim->channel = channel;
}

void mcpx_run_limits_waiting(const struct mcpx_config *cfg, unsigned slack_cpu_s, bool channel,
                             struct mcpx_limits *lim)
{
	mcpx_run_limits(cfg, mcpx_run_cpu_s(cfg, cfg->max_timeout_s) + slack_cpu_s, cfg->memory_mb,
	                channel, lim);
}
