/*
 * zygote_cycle.h - the fork server's zygotes over time: started, proven,
 * replaced in the background, retired.
 *
 * Forked runs share what their zygote had before it forked: its
 * address-space layout (ASLR is per process, so per zygote) and Python's
 * string-hash seed. A run can learn both and use them against a later run of
 * the same zygote. So a zygote serves a bounded number of runs
 * (MCP_EXEC_WARM_MAX_RUNS) or a bounded time (MCP_EXEC_WARM_MAX_AGE_S):
 * then a successor is started, preloads and runs the start-up self-test
 * probe in a forked child, all in the background while the old zygote still
 * serves; only a proven successor takes over. A zygote that dies is replaced
 * the same way (runs start cold meanwhile). A replaced zygote lives on until
 * every run it forked has been reaped: its children die with it
 * (parent-death signal), so stopping it earlier would kill a run.
 *
 * With a loop (mcpx_zygotes_use_loop) nothing here waits: the zygotes'
 * answers are read by watches. Without one (the unit tests) a take or a
 * reap waits for its answer, bounded. Not thread-safe: the executor's loop
 * drives it. Uses forkserver.h for each zygote and the sandbox's self-test probe.
 */
#ifndef MCPX_ZYGOTE_CYCLE_H
#define MCPX_ZYGOTE_CYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "loop.h"
#include "sandbox.h"

struct mcpx_zygotes;

struct mcpx_zygote_policy {
	unsigned max_runs;   /* runs a zygote serves before it is replaced; 0: no bound */
	uint64_t max_age_us; /* time it serves, from its proof; 0: no bound */
};

/* Starts the first zygote preloading preload (a resolved list,
 * mcpx_preload_list; copied), under lim (see mcpx_forkserver_start).
 * Returns 0 or -errno. */
int mcpx_zygotes_new(const struct mcpx_sandbox *sb, const char *preload,
                     const struct mcpx_limits *lim, const struct mcpx_zygote_policy *pol,
                     struct mcpx_zygotes **out, struct mcpx_err *err);

/* As mcpx_zygotes_new, for one of several sets of zygotes a server keeps
 * (the warm pool's plain and scientific ones): name (copied) marks its log
 * lines, and only the primary set's zygote is the one /metrics names
 * (mcp_exec_zygote_pid). mcpx_zygotes_new is this with no name, primary. */
int mcpx_zygotes_new_named(const struct mcpx_sandbox *sb, const char *preload,
                           const struct mcpx_limits *lim, const struct mcpx_zygote_policy *pol,
                           const char *name, bool primary, struct mcpx_zygotes **out,
                           struct mcpx_err *err);

/* Whether a run executes now (the caller says so at its start and end).
 * A zygote due for renewal is replaced only once no run has executed for
 * a moment (its successor's preload takes the CPUs for a while), or
 * anyway once it has served twice its bound of runs or time. */
void mcpx_zygotes_busy(struct mcpx_zygotes *z, bool busy);

/* Stops every zygote (runs they forked must have been reaped). NULL is fine. */
void mcpx_zygotes_free(struct mcpx_zygotes *z);

/* Does what is due, without blocking: notices a dead zygote, starts a
 * successor when the current one has served its runs or time, advances a
 * successor's preload and proof, switches to a proven one, stops retired
 * zygotes whose runs are all reaped. Returns 1 when a fork can be asked for
 * now, 0 when not yet (no proven zygote: runs start cold), -EPERM when a
 * zygote failed the self-test probe (err says why: fork mode must end), or
 * -EAGAIN after repeated failures to start one (err says why). *next_us is
 * when to call again at the latest (0: only after the next run). */
int mcpx_zygotes_poll(struct mcpx_zygotes *z, uint64_t *next_us, struct mcpx_err *err);

/* Asks the current zygote for the next run's child (mcpx_forkserver_fork).
 * A successor that takes over before the child is taken replaces it with
 * one of its own, so what take returns is always from the newest zygote. */
int mcpx_zygotes_fork(struct mcpx_zygotes *z, const struct mcpx_limits *lim, struct mcpx_err *err);

/* Takes the asked-for child (mcpx_forkserver_take: *setup_failed, may be
 * NULL, says the child failed its sandbox setup) and counts it as a run of
 * its zygote; reaping proc goes through that zygote. */
int mcpx_zygotes_take(struct mcpx_zygotes *z, struct mcpx_sandbox_proc *proc, bool *setup_failed,
                      struct mcpx_err *err);

/* Reads every zygote's answers on loop from now on (forkserver.h,
 * mcpx_forkserver_use_loop): on_answer(arg) is called when the answer to
 * an asked-for fork has come (or none will), and the probe's reap is asked
 * without waiting. Without it (unit tests) answers are waited for. */
void mcpx_zygotes_use_loop(struct mcpx_zygotes *z, struct mcpx_loop *loop,
                           void (*on_answer)(void *arg), void *arg);

/* True unless a fork is asked for whose answer has not come yet (taking
 * the child now would wait for it). */
bool mcpx_zygotes_answered(struct mcpx_zygotes *z);

/* Ends the asked-for child unused, now or once its answer has come
 * (mcpx_forkserver_drop). NULL or none asked: no-op. */
void mcpx_zygotes_drop(struct mcpx_zygotes *z);

/* True while a fork is asked for and not yet taken. */
bool mcpx_zygotes_pending(const struct mcpx_zygotes *z);

/* True when proc was forked by a zygote that has since exited: a SIGKILL
 * of proc then is the zygote's death (the child's parent-death signal), not
 * the program's doing. Call before proc is reaped. */
bool mcpx_zygotes_parent_gone(const struct mcpx_sandbox_proc *proc);

/* The current zygote's pid, 0 when there is none. */
pid_t mcpx_zygotes_pid(const struct mcpx_zygotes *z);

#endif
