/*
 * upstream_ops.h - the run side of the upstreams: the run channel's ops
 * "upstream" (mcpx.call / mcpx.call_raw of "<upstream>.<tool>") and
 * "upstream_tools" (mcpx.tools), with each run's budget of calls.
 * upstream_ops.c describes the frames.
 */
#ifndef MCPX_UPSTREAM_OPS_H
#define MCPX_UPSTREAM_OPS_H

struct mcpx_run_channel;
struct mcpx_upstreams;
struct mcpx_upstream_ops;

/* Registers the ops in rc's op table (both must outlive the result). NULL
 * when out of memory. */
struct mcpx_upstream_ops *mcpx_upstream_ops_new(struct mcpx_run_channel *rc,
                                                struct mcpx_upstreams *ups);
/* Unregisters the ops and cancels the calls in flight. NULL is fine. */
void mcpx_upstream_ops_free(struct mcpx_upstream_ops *o);

#endif
