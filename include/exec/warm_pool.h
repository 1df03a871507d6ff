/*
 * warm_pool.h - the warm environment: the next run's interpreter, prepared
 * before its call arrives, recycled when it waited too long, replaced when
 * it died, and given up after repeated failures.
 *
 * Two ways to prepare it (mcpx_warm_mode_for, docs/architecture.md):
 * - fork-server: a child forked from the current zygote of its kind
 *   (zygote_cycle.h, which renews zygotes over time: a plain one that
 *   preloaded nothing, for code that imports only the standard library,
 *   and a scientific one that preloaded MCP_EXEC_PRELOAD), asked for once a
 *   run has ended and its reply is on its way, beside the run when a call
 *   already waits behind it, or on demand when a run starts with none
 *   ready; so that neither its fork nor its sandbox setup delays a lone
 *   run's result;
 * - after-reap: a fresh warm interpreter (sandbox.h, spawn_warm), started
 *   only once the previous run is gone.
 * The executor owns the run lifecycle (queue, one slot, result) and tells
 * the pool when a run starts and ends; the pool decides everything else.
 * Every wait is a timer or a watch on the shared loop, start-up included:
 * the first zygotes are proven in the background while protocol requests
 * are answered, and runs that find no child of their kind ready and no
 * zygote to ask start cold meanwhile. Not thread-safe.
 */
#ifndef MCPX_WARM_POOL_H
#define MCPX_WARM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "loop.h"
#include "sandbox.h"

struct mcpx_config;
struct mcpx_executor_hooks;
struct mcpx_warm_pool;

/* How the next run's interpreter is prepared (see docs/architecture.md). */
enum mcpx_warm_mode {
	MCPX_WARM_MODE_OFF,        /* every run starts a fresh interpreter cold */
	MCPX_WARM_MODE_FORK,       /* forked from a preloaded zygote (forkserver.h) */
	MCPX_WARM_MODE_AFTER_REAP, /* a fresh interpreter, started once the previous run is gone */
};

/* The kinds of warm child (fork-server mode): a plain one from a zygote
 * that preloaded nothing, for code that imports only the standard library
 * (code_scan.h), and a scientific one from the zygote that preloaded
 * MCP_EXEC_PRELOAD, for the rest. With nothing to preload, or in
 * after-reap mode, there is only the scientific kind. */
enum mcpx_warm_kind {
	MCPX_WARM_PLAIN,
	MCPX_WARM_SCIENTIFIC,
	MCPX_WARM_KINDS,
};

/* The mode the configuration and the kernel's layers give. */
enum mcpx_warm_mode mcpx_warm_mode_for(const struct mcpx_config *cfg,
                                       const struct mcpx_sandbox *sb);
const char *mcpx_warm_mode_name(enum mcpx_warm_mode m);

/* Creates the pool in the mode mcpx_warm_mode_for gives; nothing starts
 * before mcpx_warm_pool_start. In fork-server mode that starts the first
 * zygote and returns at once; its preload and its first child's start-up
 * self-test go on in the background (see mcpx_warm_pool_starting). hooks
 * (may be NULL: no run gets a channel; run_hooks.h) say whether exec's runs
 * get a channel. NULL when out of memory. cfg, sb and hooks must outlive
 * the pool. */
struct mcpx_warm_pool *mcpx_warm_pool_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                          const struct mcpx_sandbox *sb,
                                          const struct mcpx_executor_hooks *hooks);
/* Starts the zygote (fork-server mode) and prepares the first interpreter.
 * Separate from _new: the server's worker threads must all exist first, so
 * that the signal rules the zygote and its runs receive name them
 * (mcpx_sandbox_refresh_signal_rules). */
void mcpx_warm_pool_start(struct mcpx_warm_pool *wp);

/* True while the first zygote (of the kind a run without imports takes) is
 * still preloading or being proven, in fork-server mode, and less than 30 s
 * have passed since the pool was created. Runs do not wait for it: one
 * that finds no child ready starts cold. */
bool mcpx_warm_pool_starting(const struct mcpx_warm_pool *wp);

/* Ends every prepared process and the zygote, then frees wp (NULL is fine). */
void mcpx_warm_pool_free(struct mcpx_warm_pool *wp);

/* For a run about to start: the prepared interpreter, if one is alive and
 * has a channel exactly when channel says the run needs one (else it
 * is discarded and the run starts cold). In fork-server mode a child is
 * asked for on the spot when none was (forking on demand still beats a
 * cold start). Returns 1 with *proc the process
 * (its ready byte read, or *marker_pending: the ready byte still precedes
 * its output) and *cpu_base_ms the CPU it used before its code (subtracted
 * from the run's); 0 when none is ready (the run starts cold); a negative
 * errno when the prepared child failed its sandbox setup, with the same
 * message in err as a cold spawn's failure ("sandbox setup failed at step
 * <name>: <error>"): the run fails as a cold run would. */
int mcpx_warm_pool_take(struct mcpx_warm_pool *wp, struct mcpx_sandbox_proc *proc, bool channel,
                        bool *marker_pending, uint64_t *cpu_base_ms, struct mcpx_err *err);

/* The kind of child a run of code needs: plain when there is a plain kind,
 * scan is true (the code alone decides: not a function's run, whose source
 * arrives on stdin) and the code imports only the standard library;
 * scientific otherwise. */
enum mcpx_warm_kind mcpx_warm_pool_kind(const struct mcpx_warm_pool *wp, const char *code,
                                        size_t code_len, bool scan);

/* As mcpx_warm_pool_take and _wait, for a child of kind (those two take the
 * plain kind where there is one, as a run without imports would). */
int mcpx_warm_pool_take_kind(struct mcpx_warm_pool *wp, enum mcpx_warm_kind kind,
                             struct mcpx_sandbox_proc *proc, bool channel, bool *marker_pending,
                             uint64_t *cpu_base_ms, struct mcpx_err *err);
bool mcpx_warm_pool_wait_kind(struct mcpx_warm_pool *wp, enum mcpx_warm_kind kind,
                              void (*wake)(void *arg), void *arg);

/* Fork mode, before a run is started: true when the zygote has not yet
 * answered the fork asked for it (a millisecond, usually; asked for here
 * when none was and a zygote of its kind is ready), so that taking the
 * child now would wait for the answer. The zygote's control socket is
 * watched, and wake(arg) is called once, when the answer has come or when
 * none will (a zygote that does not answer within 5 s is given up); start
 * the run then. False when the run can start now: warm, or cold when no
 * zygote of its kind is ready (nothing would come sooner than a cold
 * start). */
bool mcpx_warm_pool_wait(struct mcpx_warm_pool *wp, void (*wake)(void *arg), void *arg);

/* Ends the prepared interpreter, if any (a run it may not wait beside
 * starts: in after-reap mode nothing may be prepared while a run lives);
 * run_ended prepares the next. */
void mcpx_warm_pool_discard(struct mcpx_warm_pool *wp);

/* The sandbox the pool prepares in. */
const struct mcpx_sandbox *mcpx_warm_pool_sandbox(const struct mcpx_warm_pool *wp);

/* A run started (pgrp: its process group, left out of the next process's
 * RLIMIT_NPROC count while it runs; arrived_us: when its call came, on
 * mcpx_now_us's clock). Fork-server mode asks for the next child beside it
 * when its call came back to back with the previous run's end. */
void mcpx_warm_pool_run_started(struct mcpx_warm_pool *wp, pid_t pgrp, uint64_t arrived_us);

/* A call waits in the queue behind the running run. Fork-server mode asks
 * for its child now, beside the run (Landlock keeps them apart), so that it
 * is ready when the run ends. */
void mcpx_warm_pool_call_waiting(struct mcpx_warm_pool *wp);

/* The run's process tree is gone and cleaned up, its reply handed to the
 * transport. The next interpreter is prepared on the loop's next turn (a
 * forked child) or after a short pause (a fresh one: an agent's pause
 * between calls is far longer than that plus the preload). */
void mcpx_warm_pool_run_ended(struct mcpx_warm_pool *wp);

/* Draining: ends what is prepared and prepares nothing from now on. */
void mcpx_warm_pool_stop(struct mcpx_warm_pool *wp);

/* The mode now (it degrades after repeated failures), and whether an
 * interpreter is prepared. */
enum mcpx_warm_mode mcpx_warm_pool_mode(const struct mcpx_warm_pool *wp);
bool mcpx_warm_pool_ready(const struct mcpx_warm_pool *wp);

#endif
