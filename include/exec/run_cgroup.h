/*
 * run_cgroup.h - one cgroup v2 per run, where the server was given a cgroup
 * v2 subtree it may write (a delegated cgroup, say a pod with a writable
 * cgroupfs) and that subtree has the memory and pids controllers.
 *
 * At start-up mcpx_cgroup_env_init finds the server's own cgroup
 * (/proc/self/cgroup, line "0::") beneath the cgroup2 mount
 * (/proc/self/mountinfo), checks the controllers and write access, and, when
 * asked to set up, makes the subtree usable: a non-root cgroup may enable
 * controllers for its children only without processes of its own, so the
 * server's processes move into a leaf "mcp-exec-server" first; runs then get
 * cgroups beneath "mcp-exec-<server pid>". Per run: memory.max (the run's
 * budget), memory.swap.max 0, memory.oom.group 1 (an OOM kills the whole run,
 * never the server), pids.max, and cgroup.kill to end every process at once.
 *
 * What it does not do: decide limits, watch anything over time or classify
 * results (run_budget.c), or work with cgroup v1. Not thread-safe; the
 * structs are owned by the caller.
 */
#ifndef MCPX_RUN_CGROUP_H
#define MCPX_RUN_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct mcpx_cgroup_env {
	bool usable;         /* per-run cgroups can be made under root */
	bool set_up;         /* init moved processes / made root (free undoes root) */
	char own[PATH_MAX];  /* the server's cgroup directory, when found */
	char root[PATH_MAX]; /* the parent of per-run cgroups */
	char why[256];       /* when not usable: the reason, for --check-config */
};

/* The server's cgroup v2 directory from the text of /proc/self/cgroup and
 * /proc/self/mountinfo: the cgroup2 mount point joined with the "0::" path
 * (relative to the mount's root). Returns 0, -ENOENT when there is no cgroup
 * v2 membership or mount, -EROFS when that mount is read-only,
 * -ENAMETOOLONG. */
int mcpx_cgroup_locate(const char *cgroup_text, const char *mountinfo_text, char *dir, size_t len);

/* Detects whether per-run cgroups can be used. With setup false nothing is
 * changed (for --check-config); with setup true the subtree is prepared as
 * described above. Always returns 0; env->usable and env->why tell. */
int mcpx_cgroup_env_init(struct mcpx_cgroup_env *env, bool setup);

/* Removes the runs' parent cgroup made by init (it must be empty). */
void mcpx_cgroup_env_free(struct mcpx_cgroup_env *env);

struct mcpx_run_cgroup {
	char path[PATH_MAX];
	int dirfd; /* -1 when none */
};

/* Makes env->root/name with the given limits: memory_bytes 0 and pids_max 0
 * leave those unset (a subtree without the controller). Returns 0 or -errno
 * with err set; on failure nothing is left behind. */
int mcpx_cgroup_run_create(const struct mcpx_cgroup_env *env, const char *name,
                           uint64_t memory_bytes, unsigned pids_max, struct mcpx_run_cgroup *cg,
                           struct mcpx_err *err);

/* Makes parent/name for a nested run (a function its run called with
 * mcpx.call): a cgroup without limits or controllers of its own, so the
 * kernel charges its memory and tasks to parent's memory.max and pids.max,
 * parent's cpu.stat and memory.events count it, and parent's cgroup.kill
 * ends it too, while its own cgroup.kill ends it alone. It must be removed
 * before parent can be. Returns 0 or -errno with err set. */
int mcpx_cgroup_run_create_nested(const struct mcpx_run_cgroup *parent, const char *name,
                                  struct mcpx_run_cgroup *cg, struct mcpx_err *err);

/* Moves pid (the whole process) into the run's cgroup. Returns 0 or -errno
 * (-ESRCH when it is gone). */
int mcpx_cgroup_run_add(struct mcpx_run_cgroup *cg, pid_t pid);

/* SIGKILLs every process in the run's cgroup (cgroup.kill, kernel 5.14+).
 * Returns 0, or -ENOTSUP without cgroup.kill. */
int mcpx_cgroup_run_kill(struct mcpx_run_cgroup *cg);

struct mcpx_cgroup_usage {
	uint64_t memory_bytes;      /* memory.current */
	uint64_t memory_peak_bytes; /* memory.peak (5.19+), else 0 */
	uint64_t oom_kills;         /* memory.events oom_kill */
	uint64_t cpu_usec;          /* cpu.stat usage_usec: every process that ran here */
	bool populated;             /* cgroup.events: a live process is left */
};

/* Reads the run's usage; fields whose file is missing stay 0. Returns 0 or
 * -errno when nothing could be read. */
int mcpx_cgroup_run_usage(const struct mcpx_run_cgroup *cg, struct mcpx_cgroup_usage *u);

/* Fills pids with the processes in the run's cgroup (at most max). Returns
 * how many, or -errno. */
long mcpx_cgroup_run_pids(const struct mcpx_run_cgroup *cg, pid_t *pids, size_t max);

/* Kills what is left and removes the cgroup, waiting (up to 200 ms, in
 * 1 ms steps) for the last processes to leave it: off the loop only
 * (loop_guard.h). Safe on an empty struct. */
void mcpx_cgroup_run_remove(struct mcpx_run_cgroup *cg);

/* The same removal without waiting on the calling thread: one try now,
 * and when something is still inside, the rest on worker (cg is emptied
 * either way; without a worker it waits here). Removals on one worker
 * keep their order, so a nested run's cgroup goes before its caller's. */
struct mcpx_offload;
void mcpx_cgroup_run_remove_soon(struct mcpx_offload *worker, struct mcpx_run_cgroup *cg);

#endif
