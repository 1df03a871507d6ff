/*
 * run_budget.h - a run's budget covers all of its processes and files.
 *
 * rlimits are per process: 64 processes may each use MCP_EXEC_MEMORY_MB, each
 * write files up to MCP_EXEC_MAX_FILE_MB, each burn MCP_EXEC_CPU_S. This
 * module holds the run as a whole to its budget: memory (the sum over its
 * processes), disk (the sum of its files: the workdir, what it put in
 * /dev/shm, files it holds open after unlinking them) and CPU (every process
 * it started). It ends the run when a budget is passed and says which one.
 *
 * Two methods, chosen once at start-up:
 * - cgroup: where the server has a writable cgroup v2 subtree with the
 *   memory and pids controllers (run_cgroup.h), each run gets its own cgroup
 *   (memory.max, memory.swap.max 0, memory.oom.group 1, pids.max); the
 *   kernel enforces memory, cgroup.kill ends the run, cpu.stat counts its
 *   CPU;
 * - watchdog: otherwise, a timer on the event loop sums the run's resident
 *   memory (RSS, confirmed with proportional PSS before a kill) and CPU
 *   every few tens of milliseconds and kills the whole run at the budget.
 * Disk is read the same way under both, on the timer and whenever the run
 * writes, with RLIMIT_FSIZE kept at what remains of it (run_disk.c), and so
 * is the container's own memory (container_memory.h): near its limit the
 * run is ended. RLIMIT_AS stays the first line
 * (sandbox.h): one process still cannot allocate more than the budget.
 *
 * A nested run (a function called from a running run with mcpx.call) has
 * no budget of its own: it joins its caller's (mcpx_run_budget_join), so
 * the caller and every call it makes, at any depth, are held together to
 * the one budget, and passing it ends them all.
 *
 * Not thread-safe: the loop's thread drives it. The executor owns each
 * struct mcpx_run_budget from start to finish.
 */
#ifndef MCPX_RUN_BUDGET_H
#define MCPX_RUN_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "loop.h"
#include "run_link.h"
#include "sandbox.h"

enum mcpx_budget_method { MCPX_BUDGET_WATCHDOG, MCPX_BUDGET_CGROUP };

struct mcpx_budget;     /* the process-wide choice of method */
struct mcpx_run_budget; /* one run */

/* Chooses the method; with a usable cgroup subtree it is prepared now (the
 * server's processes may move into a leaf cgroup). Call before any sandboxed
 * process is started. NULL on allocation failure. */
struct mcpx_budget *mcpx_budget_new(void);
void mcpx_budget_free(struct mcpx_budget *b);

/* Watches the memory of the container found under cgroup_root for the
 * process whose cgroup file is proc_cgroup_file (container_memory.h):
 * every reading of a run then ends the run, with limit "memory", once the
 * container's working set is within the headroom of its limit.
 * mcpx_budget_new calls it with /sys/fs/cgroup and /proc/self/cgroup; the
 * tests point it at a fake directory. Nothing to watch is not an error.
 * Returns 0 or -ENAMETOOLONG. */
int mcpx_budget_watch_container(struct mcpx_budget *b, const char *cgroup_root,
                                const char *proc_cgroup_file);

struct mcpx_cgroup_env;
/* The cgroup method with per-run cgroups under env->root as it is (a
 * directory the caller made and removes), without looking at the server's
 * own cgroup: for tests on a host whose cgroup v2 hierarchy lacks the
 * memory controller (budgets of 0 memory and processes then write no
 * limits). NULL on allocation failure. */
struct mcpx_budget *mcpx_budget_new_cgroup_at(const struct mcpx_cgroup_env *env);

struct mcpx_offload;
/* Walks the runs' file trees (the disk reading) on worker, a thread of the
 * caller's that outlives every run (offload.h), instead of on the loop:
 * the run's size decides what a walk costs. NULL: on the loop again (call
 * it before freeing the worker). A walk under way when its run finishes
 * is dropped when it ends. */
void mcpx_budget_use_worker(struct mcpx_budget *b, struct mcpx_offload *worker);

enum mcpx_budget_method mcpx_budget_method(const struct mcpx_budget *b);
const char *mcpx_budget_method_name(enum mcpx_budget_method m);

/* One line for --check-config: the method start-up would choose and why,
 * found without changing anything. */
void mcpx_budget_describe(char *buf, size_t len);

struct mcpx_budget_limits {
	uint64_t memory_kb; /* the run's resident memory, all processes; 0: none */
	uint64_t disk_kb;   /* the run's files; 0: none */
	uint64_t cpu_ms;    /* the run's CPU, all processes; 0: none */
	unsigned max_procs; /* tasks the run may add (cgroup pids.max) */
};

/* limit is "memory", "disk" or "cpu"; the run is already being killed. */
typedef void (*mcpx_budget_exceeded_fn)(void *arg, const char *limit);

/* Starts holding the run in proc to lim: with the cgroup method, makes its
 * cgroup and moves the leader and every process it already started into it
 * (a warm interpreter before it has the code: nothing escapes); then arms
 * the sampling timer. cpu_base_ms is CPU the leader used before the run's
 * code arrived (a warm interpreter's preload). link is the run's place in
 * the caller's record of which run called which (run_link.h; NULL: it calls
 * none): the runs under it that have a budget there (link->budget) are
 * the ones that joined this one, read with it. It must stay valid until
 * mcpx_run_budget_finish, and each nested run must leave it (its budget
 * field cleared) as soon as its own budget is finished. A cgroup that
 * cannot be made falls back to the watchdog for this run (logged).
 * Returns 0 or -ENOMEM. */
int mcpx_run_budget_start(struct mcpx_budget *b, struct mcpx_loop *loop,
                          const struct mcpx_budget_limits *lim,
                          const struct mcpx_sandbox_proc *proc, uint64_t cpu_base_ms,
                          const struct mcpx_run_link *link, mcpx_budget_exceeded_fn fn, void *arg,
                          struct mcpx_run_budget **out);

/* Holds a nested run in proc to caller's budget instead of one of its own
 * (the caller links the run under its caller's in the record it handed
 * mcpx_run_budget_start, and sets its budget there to *out):
 * from now on the caller's readings count its processes (memory, CPU) and
 * its workdir (disk) together with the caller's, and the first budget
 * passed ends the caller and every joined run, fn being called for each
 * with the limit. A run that joins a joined run joins the outermost caller.
 * With the cgroup method it gets a cgroup beneath the caller's (the kernel
 * charges its memory and tasks to the caller's limits); where that cannot
 * be made, its processes go into the caller's cgroup. Its own readings are
 * none: only mcpx_run_budget_kill and _finish apply to *out. The caller's
 * budget, when finished first, lives on until its last joined run is
 * finished. Returns 0, -ENOMEM, or -errno when neither cgroup would take
 * the run (then nothing would count it). */
int mcpx_run_budget_join(struct mcpx_run_budget *caller, const struct mcpx_sandbox_proc *proc,
                         mcpx_budget_exceeded_fn fn, void *arg, struct mcpx_run_budget **out);

/* Memory the server holds for the run outside its processes (the broker's
 * requests, responses and unread answers: broker.h), now bytes in all.
 * It counts towards the run's memory budget with its processes' memory
 * (for a joined run, towards its caller's): checked now against the last
 * reading and on every reading after. NULL is fine. */
void mcpx_run_budget_held(struct mcpx_run_budget *rb, uint64_t bytes);

/* CPU the server used for the run outside its processes (validating what
 * its code sent): counted towards the CPU budget of the run's outermost
 * caller (the budget it joined) and in that budget's cpu_ms, and checked
 * now. NULL is fine. */
void mcpx_run_budget_charge_cpu(struct mcpx_run_budget *rb, uint64_t cpu_us);

/* Kills every process of the run through its cgroup, when it has one (the
 * caller's own process-group kill still runs). NULL is fine. */
void mcpx_run_budget_kill(struct mcpx_run_budget *rb);

/* A warm interpreter handed over while still entering its sandbox has
 * said ready: its code starts now, and so does the clock of its first
 * reading (a reading while it prepared would find nothing of the run's and
 * only cost the loop). NULL is fine. */
void mcpx_run_budget_code_started(struct mcpx_run_budget *rb);

/* Stops sampling: the leader has exited and the run is being torn down. */
void mcpx_run_budget_stop(struct mcpx_run_budget *rb);

/* The disk budget's last word, before the result is made (run_disk.c): a
 * run that wrote since its last reading, or while one was under way, gets
 * one more, so one that went past its budget and exited first still ends
 * with limit "disk". 0: nothing to wait for (or NULL rb, a joined run, no
 * disk budget, asked before); -EINPROGRESS: fn(arg) follows on the loop,
 * once, unless the budget is finished first. */
int mcpx_run_budget_settle(struct mcpx_run_budget *rb, void (*fn)(void *arg), void *arg);

/* Readings taken so far, and (quiet) how many of them found the run quiet
 * and read neither its disk nor its socket buffers (run_budget_internal.h,
 * QUIET_MAX_PROCS): for tests and benchmarks. NULL rb gives 0. */
unsigned mcpx_run_budget_readings(const struct mcpx_run_budget *rb, unsigned *quiet);

struct mcpx_run_usage {
	uint64_t cpu_ms;   /* the run's CPU as this module saw it (see below) */
	const char *limit; /* the budget that ended the run, or NULL */
};

/* Ends the run's accounting (after the leader was reaped) and frees rb.
 * cpu_ms is the cgroup's count of every process that ran in it, or the
 * largest watchdog reading (which also sees children no one waited for
 * while they lived); the caller takes the larger of it and the reaped
 * processes' rusage. A caller's count includes the runs that joined its
 * budget. An OOM kill inside the run's cgroup is reported as "memory";
 * limit is also set for a joined run ended by its caller's budget. NULL rb
 * gives zeros. */
void mcpx_run_budget_finish(struct mcpx_run_budget *rb, struct mcpx_run_usage *u);

#endif
