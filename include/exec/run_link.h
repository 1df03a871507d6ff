/*
 * run_link.h - which run called which: the one record of the caller/nested
 * relation between runs.
 *
 * A run that calls a function with mcpx.call starts a nested run beside it.
 * The executor (executor.c) embeds one link in each job, links a nested
 * job to its caller's when it is submitted and unlinks it when the job
 * ends. The run budget (run_budget.c) only reads it: the runs under an
 * outermost run, at any depth, are the ones whose budgets joined its own.
 *
 * No pointer here may outlive what it points at, so whoever ends a run
 * first unlinks it: a nested run that ends leaves its caller's list, and a
 * caller that ends before its nested runs detaches them (the executor hands
 * those already started to its own caller, executor.c: job_unlink). After
 * mcpx_run_link_remove nothing points at the link, and it points at
 * nothing, so its job may be freed.
 *
 * Nothing here allocates; the links live in their jobs, which the executor
 * owns. Not thread-safe: the loop's thread uses it.
 */
#ifndef MCPX_RUN_LINK_H
#define MCPX_RUN_LINK_H

struct mcpx_run_budget;

struct mcpx_run_link {
	struct mcpx_run_link *caller;  /* NULL: an outermost run, or its caller ended */
	struct mcpx_run_link *nested;  /* the first run it called that is still there */
	struct mcpx_run_link *sibling; /* the next run its caller called */
	/* The run's budget (run_budget.h) while it has one: set by the
	 * executor when the budget starts or joins, cleared when it is
	 * finished. A nested run's is the one it joined its caller's with. */
	struct mcpx_run_budget *budget;
};

/* Links l, which has no caller, under caller (first in its list). */
void mcpx_run_link_add(struct mcpx_run_link *caller, struct mcpx_run_link *l);

/* Takes l out of its caller's list (if it has a caller). Its own nested
 * runs stay linked to it: detach them first where l goes away. */
void mcpx_run_link_remove(struct mcpx_run_link *l);

/* The run after at among those under top at any depth, in depth-first
 * order; at NULL: the first. NULL when there are no more. */
struct mcpx_run_link *mcpx_run_link_next(const struct mcpx_run_link *top,
                                         const struct mcpx_run_link *at);

#endif
