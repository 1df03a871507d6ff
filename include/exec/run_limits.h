/*
 * run_limits.h - the per-process limits of a run (sandbox.h, struct
 * mcpx_limits), computed in one place: for a call's own run (cold, or
 * handed to a prepared runtime, which lowers what it waited with to
 * these), and for a runtime prepared before its call, which waits with the
 * loosest limits a call can get.
 *
 * Nothing here allocates or holds state; the configuration is read only.
 */
#ifndef MCPX_RUN_LIMITS_H
#define MCPX_RUN_LIMITS_H

#include <stdbool.h>

#include "sandbox.h"

struct mcpx_config;

/* A run's CPU seconds: MCP_EXEC_CPU_S, or else its timeout. */
unsigned mcpx_run_cpu_s(const struct mcpx_config *cfg, unsigned timeout_s);

/* The limits of a call's run: its CPU seconds (mcpx_run_cpu_s), its memory
 * (the server's, or its profile's when lower), the server's process, file
 * and open-file limits, and whether it gets a broker channel. */
void mcpx_run_limits(const struct mcpx_config *cfg, unsigned cpu_s, unsigned memory_mb,
                     bool channel, struct mcpx_limits *lim);

/* The limits a runtime prepared before its call waits with: the loosest a
 * call can get (the server's memory, the largest CPU limit a call can
 * have), plus slack_cpu_s of CPU for its own preparation. At the call they
 * are lowered to the call's (a warm interpreter re-bases its CPU limit,
 * the prepared bash's gate sets both: gate.c). */
void mcpx_run_limits_waiting(const struct mcpx_config *cfg, unsigned slack_cpu_s, bool channel,
                             struct mcpx_limits *lim);

#endif
