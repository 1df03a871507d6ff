/*
 * bash_pool.h - the next bash run, started before its call: a bash that has
 * loaded and initialised inside every layer of the sandbox and waits at a
 * gate in its workdir for its script (sandbox.h, spawn_gated; gate.c says
 * how it is held). It saves a bash call the process start (about 3 ms of
 * this machine's 4 ms `bash -c true`, docs/benchmarks.md).
 *
 * One at most, and only where a prepared process may wait (the executor
 * says where: in fork-server mode beside any run, each run's Landlock
 * domain being scoped from every other process; in after-reap mode only
 * while no run lives, so it is ended before any other run starts). It is
 * prepared once a run has ended and its reply is on its way, and only
 * after a bash call has come: a replica that never runs bash never starts
 * one. A call that finds none
 * ready, or one prepared for another broker channel, starts cold. Not
 * thread-safe; every wait is a timer on the loop.
 */
#ifndef MCPX_BASH_POOL_H
#define MCPX_BASH_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "loop.h"
#include "sandbox.h"

struct mcpx_config;
struct mcpx_executor_hooks;

struct mcpx_bash_pool;

/* NULL when out of memory. hooks (may be NULL) say whether runs get a
 * broker channel; loop, cfg, sb and hooks outlive the pool. */
struct mcpx_bash_pool *mcpx_bash_pool_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                          const struct mcpx_sandbox *sb,
                                          const struct mcpx_executor_hooks *hooks);

/* A bash call starts. allowed: a prepared bash may wait beside runs now
 * (else any is ended and the call starts cold). Returns 1 when the
 * prepared bash took the call (main.sh and fill's files written, lim's
 * limits set, released: *proc is the run's, *cpu_base_ms the CPU it used
 * before), 0 when the call must start cold. */
int mcpx_bash_pool_take(struct mcpx_bash_pool *bp, bool allowed, const struct mcpx_limits *lim,
                        const char *code, size_t code_len, const struct mcpx_workdir_fill *fill,
                        struct mcpx_sandbox_proc *proc, uint64_t *cpu_base_ms);

/* A run ended and its reply is on its way: prepares the next bash if a
 * bash call has come and allowed; ends the waiting one if not allowed. */
void mcpx_bash_pool_run_ended(struct mcpx_bash_pool *bp, bool allowed);

/* Ends the waiting bash, if any (a run it may not wait beside starts);
 * run_ended may prepare another. */
void mcpx_bash_pool_discard(struct mcpx_bash_pool *bp);

/* Ends the waiting bash, if any, and prepares none until a bash call has
 * come again (shutdown). */
void mcpx_bash_pool_stop(struct mcpx_bash_pool *bp);

/* Whether one waits at its gate now (tests, /metrics). */
bool mcpx_bash_pool_ready(const struct mcpx_bash_pool *bp);

/* Stops and frees; NULL is a no-op. */
void mcpx_bash_pool_free(struct mcpx_bash_pool *bp);

#endif
