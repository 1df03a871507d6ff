/*
 * run_budget.c - holds each run, as a whole, to its memory, disk and CPU
 * budget (run_budget.h).
 *
 * What it does: picks the method at start-up (per-run cgroups where the
 * server has a usable cgroup v2 subtree, else the watchdog), and per run
 * reads the run's usage on a timer of the shared event loop: memory and CPU
 * from the run's cgroup or from /proc (run_usage.h), disk from the run's
 * workdir, its /dev/shm entries and the files its processes hold open after
 * unlinking them (run_disk.c, which also reads it whenever the run writes
 * and keeps RLIMIT_FSIZE at what remains). The first budget passed kills
 * the run (cgroup.kill, then the executor's own process-group kill) and is
 * reported once.
 *
 * A nested run (a function its run called with mcpx.call) has no budget of
 * its own: it joins its outermost caller's. The caller's readings then take
 * in every joined run too: their process groups are read with the caller's
 * (watchdog), or their cgroups live beneath the caller's, where the kernel
 * charges their memory and tasks to the caller's limits and cpu.stat counts
 * them (cgroup); their workdirs count towards the caller's disk. The budget
 * passed ends the caller and every joined run, each told the limit. Which
 * runs are nested under which is not kept here: the readings walk the
 * executor's record (run_link.h), handed to mcpx_run_budget_start, and a
 * joined budget keeps only a reference to the one it joined. A caller
 * whose run is finished while joined runs are still being torn down lives
 * on, without readings, until the last of them is finished: its cgroup
 * can only go once theirs have.
 *
 * This file: the method, chosen at start-up and described for
 * --check-config, with what the server holds for all runs (the cgroup
 * subtree, the container's memory, the worker, the write watcher); and
 * what every reading rests on: the budgets that joined a run's, the memory
 * outside its processes, and the verdict when a budget is passed. It calls
 * none of the budget's other files: a run's budget from start to finish is
 * run_budget_life.c's, the readings of memory and CPU on the loop's timer
 * run_readings.c's, the disk's run_disk.c's.
 *
 * What it does not do: spawn, reap or classify results (the executor), or
 * parse /proc and cgroup files (run_usage.c, run_cgroup.c,
 * container_memory.c).
 */
#include "run_budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container_memory.h"
#include "log.h"
#include "run_cgroup.h"
#include "run_link.h"

#include "run_budget_internal.h"
#include "run_disk_watch.h"

struct mcpx_budget *mcpx_budget_new(void)
{
	struct mcpx_budget *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->container.usage_fd = b->container.limit_fd = b->container.stat_fd = -1;
	(void)mcpx_cgroup_env_init(&b->cg, true);
	b->method = b->cg.usable ? MCPX_BUDGET_CGROUP : MCPX_BUDGET_WATCHDOG;
	if (b->cg.usable)
		mcpx_info("run budget: one cgroup per run under %s (memory.max, pids.max, "
		          "cgroup.kill)",
		          b->cg.root);
	else
		mcpx_info("run budget: watchdog on the event loop (no per-run cgroups: %s)",
		          b->cg.why);
	(void)mcpx_budget_watch_container(b, "/sys/fs/cgroup", "/proc/self/cgroup");
	return b;
}

int mcpx_budget_watch_container(struct mcpx_budget *b, const char *cgroup_root,
                                const char *proc_cgroup_file)
{
	struct mcpx_container_reading r;
	int rc;

	mcpx_container_memory_close(&b->container);
	rc = mcpx_container_memory_open(cgroup_root, proc_cgroup_file, &b->container);
	if (rc < 0)
		return rc;
	if (mcpx_container_memory_read(&b->container, &r) == 0)
		mcpx_info(
		    "run budget: the container's memory is watched (cgroup v%d %s, limit %llu "
		    "MiB): a run is ended within %llu MiB of it",
		    b->container.version, b->container.dir, (unsigned long long)(r.limit >> 20),
		    (unsigned long long)(r.headroom >> 20));
	else
		mcpx_info("run budget: the container's memory is not watched (%s)",
		          b->container.why);
	return 0;
}

struct mcpx_budget *mcpx_budget_new_cgroup_at(const struct mcpx_cgroup_env *env)
{
	struct mcpx_budget *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->container.usage_fd = b->container.limit_fd = b->container.stat_fd = -1;
	b->cg = *env;
	b->cg.usable = true;
	b->cg.set_up = false; /* the caller's directory: not ours to remove */
	b->method = MCPX_BUDGET_CGROUP;
	return b;
}

void mcpx_budget_free(struct mcpx_budget *b)
{
	if (!b)
		return;
	mcpx_disk_watcher_free(b->watcher);
	mcpx_cgroup_env_free(&b->cg);
	mcpx_container_memory_close(&b->container);
	free(b);
}

void mcpx_budget_use_worker(struct mcpx_budget *b, struct mcpx_offload *worker)
{
	b->worker = worker;
}

enum mcpx_budget_method mcpx_budget_method(const struct mcpx_budget *b)
{
	return b ? b->method : MCPX_BUDGET_WATCHDOG;
}

const char *mcpx_budget_method_name(enum mcpx_budget_method m)
{
	return m == MCPX_BUDGET_CGROUP ? "cgroup" : "watchdog";
}

void mcpx_budget_describe(char *buf, size_t len)
{
	struct mcpx_cgroup_env env;

	(void)mcpx_cgroup_env_init(&env, false);
	if (env.usable)
		snprintf(buf, len, "cgroup (one cgroup v2 per run under %s)", env.root);
	else
		snprintf(buf, len, "watchdog (no per-run cgroups: %s)", env.why);
}

/* ---- what every reading rests on --------------------------------------- */

/* The budgets that joined top's, one after another (*at NULL: the first):
 * those of the runs under it in the executor's relation (run_link.h) that
 * have one. NULL when there are no more, and always once top is finished. */
struct mcpx_run_budget *mcpx_rb_next_joined(const struct mcpx_run_budget *top,
                                            const struct mcpx_run_link **at)
{
	if (!top->link)
		return NULL;
	while ((*at = mcpx_run_link_next(top->link, *at)))
		if ((*at)->budget)
			return (*at)->budget;
	return NULL;
}

/* What the server holds for the run and every run that joined its budget. */
static uint64_t held_total_kb(const struct mcpx_run_budget *rb)
{
	const struct mcpx_run_budget *j;
	uint64_t kb = rb->held_kb;

	for (const struct mcpx_run_link *at = NULL; (j = mcpx_rb_next_joined(rb, &at));)
		kb += j->held_kb;
	return kb;
}

/* Memory of the run no process maps: what the server holds for it and its
 * socket buffers. */
uint64_t mcpx_rb_outside_kb(const struct mcpx_run_budget *rb)
{
	return held_total_kb(rb) + rb->socket_kb;
}

void mcpx_rb_exceed(struct mcpx_run_budget *rb, const char *limit, uint64_t used, uint64_t budget,
                    const char *unit)
{
	struct mcpx_run_budget *j;

	rb->exceeded = limit;
	if (strcmp(limit, "memory") == 0 && held_total_kb(rb))
		mcpx_info("run %d: %llu KiB of its memory are the server's, held for its requests "
		          "and unread answers",
		          (int)rb->pgid, (unsigned long long)held_total_kb(rb));
	if (strcmp(limit, "memory") == 0 && rb->socket_kb)
		mcpx_info("run %d: %llu KiB of its memory are socket buffers", (int)rb->pgid,
		          (unsigned long long)rb->socket_kb);
	mcpx_info("run %d passed its %s budget (%llu %s of %llu%s): ending the whole run",
	          (int)rb->pgid, limit, (unsigned long long)used, unit, (unsigned long long)budget,
	          rb->joined_live ? ", its nested calls included" : "");
	mcpx_run_budget_kill(rb);
	/* The runs that joined its budget end with it, told why. The callbacks
	 * only signal; nothing is freed before the loop turns again. */
	for (const struct mcpx_run_link *at = NULL; (j = mcpx_rb_next_joined(rb, &at));) {
		if (!j->exceeded)
			j->exceeded = limit;
		mcpx_run_budget_kill(j);
		j->fn(j->arg, limit);
	}
	rb->fn(rb->arg, limit);
}

void mcpx_run_budget_kill(struct mcpx_run_budget *rb)
{
	if (rb && rb->has_cgroup)
		(void)mcpx_cgroup_run_kill(&rb->cg);
}
