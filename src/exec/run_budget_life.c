/*
 * run_budget_life.c - one run's budget from start to finish (run_budget.h):
 * started with its cgroup (or the watchdog) and the readings' timer,
 * joined by the runs it calls, charged with what the server holds and
 * spends for it, stopped, and finished with its usage and the limit that
 * ended it.
 *
 * A nested run (a function its run called with mcpx.call) joins its
 * outermost caller's budget: its cgroup lives beneath the caller's, or its
 * processes go into the caller's, and its workdir is watched with the
 * caller's. A caller whose run is finished while joined runs are still
 * being torn down lives on, without readings, until the last of them is
 * finished: its cgroup can only go once theirs have.
 *
 * What it does not do: read the run's usage (run_readings.c, run_disk.c),
 * pick the method or decide that a budget was passed (run_budget.c), or
 * spawn and reap (the executor).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "run_budget.h"
#include "run_budget_internal.h"
#include "run_cgroup.h"
#include "run_disk.h"
#include "run_link.h"
#include "run_readings.h"
#include "run_usage.h"

/* The run's cgroup, and everything of the run moved into it: the leader,
 * then any process it started before the move (a cold run's interpreter is
 * already running; a warm one is still waiting for its code). Once the
 * leader is inside, whatever it forks is born inside. */
static void start_cgroup(struct mcpx_run_budget *rb)
{
	struct mcpx_err err = {{0}};
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "run-%lu", ++rb->b->runs);
	rc = mcpx_cgroup_run_create(&rb->b->cg, name, rb->lim.memory_kb * 1024u,
	                            rb->lim.max_procs ? rb->lim.max_procs + 1 : 0, &rb->cg, &err);
	if (!rc)
		rc = mcpx_cgroup_run_add(&rb->cg, rb->pgid);
	if (rc) {
		mcpx_warn("run budget: %s; this run is held to its budget by the watchdog",
		          err.msg[0] ? err.msg : strerror(-rc));
		mcpx_cgroup_run_remove_soon(rb->b->worker, &rb->cg);
		return;
	}
	if (mcpx_usage_procs(rb->pgid, rb->procs) == 0)
		for (size_t i = 0; i < rb->procs->n; i++)
			(void)mcpx_cgroup_run_add(&rb->cg, rb->procs->pid[i]);
	rb->has_cgroup = true;
}

int mcpx_run_budget_start(struct mcpx_budget *b, struct mcpx_loop *loop,
                          const struct mcpx_budget_limits *lim,
                          const struct mcpx_sandbox_proc *proc, uint64_t cpu_base_ms,
                          const struct mcpx_run_link *link, mcpx_budget_exceeded_fn fn, void *arg,
                          struct mcpx_run_budget **out)
{
	struct mcpx_run_budget *rb = calloc(1, sizeof(*rb));

	*out = NULL;
	if (!rb)
		return -ENOMEM;
	rb->procs = calloc(1, sizeof(*rb->procs));
	rb->prev = calloc(1, sizeof(*rb->prev));
	if (!rb->procs || !rb->prev) {
		free(rb->procs);
		free(rb->prev);
		free(rb);
		return -ENOMEM;
	}
	rb->b = b;
	rb->loop = loop;
	rb->lim = *lim;
	rb->pgid = proc->pid;
	rb->uid = proc->run_uid;
	rb->gid = proc->run_gid;
	rb->started = proc->started;
	snprintf(rb->workdir, sizeof(rb->workdir), "%s", proc->workdir);
	rb->cpu_base_ms = cpu_base_ms;
	rb->link = link;
	rb->fn = fn;
	rb->arg = arg;
	rb->cg.dirfd = -1;
	if (b->method == MCPX_BUDGET_CGROUP)
		start_cgroup(rb);
	if (!rb->has_cgroup && lim->max_procs >= MCPX_USAGE_MAX_PROCS && !b->warned_procs) {
		b->warned_procs = true;
		mcpx_warn("run budget: the watchdog follows at most %d processes of a run, and "
		          "MCP_EXEC_MAX_PROCS (%u) allows more: memory and CPU beyond them go "
		          "uncounted",
		          MCPX_USAGE_MAX_PROCS, lim->max_procs);
	}
	rb->timer.fn = mcpx_rb_sample_cb;
	rb->timer.arg = rb;
	mcpx_timer_start(loop, &rb->timer, SAMPLE_MIN_US);
	mcpx_rb_disk_begin(rb);
	*out = rb;
	return 0;
}

/* A joined run's cgroup, beneath its caller's; where that cannot be made,
 * its processes go into the caller's own cgroup, still counted and ended
 * with the caller's (its own kill is then its process group's). Returns 0,
 * or -errno when neither cgroup took its leader: then no reading counts it. */
static int join_cgroup(struct mcpx_run_budget *rb, struct mcpx_run_budget *caller)
{
	struct mcpx_err err = {{0}};
	struct mcpx_run_cgroup *into = &rb->cg;
	struct mcpx_usage_procs *p;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "call-%lu", ++rb->b->runs);
	rc = mcpx_cgroup_run_create_nested(&caller->cg, name, &rb->cg, &err);
	if (!rc)
		rc = mcpx_cgroup_run_add(&rb->cg, rb->pgid);
	if (rc) {
		mcpx_warn("run budget: %s; the nested run joins its caller's cgroup",
		          err.msg[0] ? err.msg : strerror(-rc));
		mcpx_cgroup_run_remove_soon(rb->b->worker, &rb->cg);
		into = &caller->cg;
		rc = mcpx_cgroup_run_add(into, rb->pgid);
		/* A leader that has already exited has nothing left to count. */
		if (rc && rc != -ESRCH)
			return rc;
	} else {
		rb->has_cgroup = true;
	}
	p = calloc(1, sizeof(*p));
	if (p && mcpx_usage_procs(rb->pgid, p) == 0)
		for (size_t i = 0; i < p->n; i++)
			(void)mcpx_cgroup_run_add(into, p->pid[i]);
	free(p);
	return 0;
}

int mcpx_run_budget_join(struct mcpx_run_budget *caller, const struct mcpx_sandbox_proc *proc,
                         mcpx_budget_exceeded_fn fn, void *arg, struct mcpx_run_budget **out)
{
	struct mcpx_run_budget *rb;
	int rc;

	*out = NULL;
	/* Every level of a chain of calls counts against the outermost run. */
	while (caller->top)
		caller = caller->top;
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->b = caller->b;
	rb->loop = caller->loop;
	rb->lim = caller->lim;
	rb->pgid = proc->pid;
	rb->uid = proc->run_uid;
	rb->gid = proc->run_gid;
	rb->started = proc->started;
	snprintf(rb->workdir, sizeof(rb->workdir), "%s", proc->workdir);
	rb->fn = fn;
	rb->arg = arg;
	rb->cg.dirfd = -1;
	if (caller->has_cgroup && (rc = join_cgroup(rb, caller)) < 0) {
		free(rb);
		return rc;
	}
	/* Which run it is nested in is the executor's record (run_link.h);
	 * here only the reference that keeps the caller's budget alive. */
	rb->top = caller;
	caller->joined_live++;
	mcpx_rb_disk_joined(caller, rb);
	*out = rb;
	/* Joined after the budget was passed: it goes at once, as the rest. */
	if (caller->exceeded) {
		rb->exceeded = caller->exceeded;
		mcpx_run_budget_kill(rb);
		fn(arg, caller->exceeded);
	}
	return 0;
}

void mcpx_run_budget_held(struct mcpx_run_budget *rb, uint64_t bytes)
{
	struct mcpx_run_budget *top;
	uint64_t kb;

	if (!rb)
		return;
	rb->held_kb = (bytes + 1023u) / 1024u;
	top = rb->top ? rb->top : rb;
	if (top->exceeded || top->finished || !top->lim.memory_kb)
		return;
	/* Checked now: the server's memory grows as fast as the run makes it,
	 * not at the pace of readings. */
	kb = top->mem_seen_kb + mcpx_rb_outside_kb(top);
	if (kb > top->lim.memory_kb)
		mcpx_rb_exceed(top, "memory", kb, top->lim.memory_kb, "KiB");
}

void mcpx_run_budget_charge_cpu(struct mcpx_run_budget *rb, uint64_t cpu_us)
{
	struct mcpx_run_budget *top;

	if (!rb)
		return;
	top = rb->top ? rb->top : rb;
	top->charged_us += cpu_us;
	/* The processes' part is the last reading's; the charge is added to
	 * it, as every reading will. */
	top->cpu_seen_ms += cpu_us / 1000u;
	if (!top->exceeded && !top->finished && top->lim.cpu_ms &&
	    top->cpu_seen_ms > top->lim.cpu_ms)
		mcpx_rb_exceed(top, "cpu", top->cpu_seen_ms, top->lim.cpu_ms, "ms");
}

unsigned mcpx_run_budget_readings(const struct mcpx_run_budget *rb, unsigned *quiet)
{
	*quiet = rb ? rb->quiet_total : 0;
	return rb ? rb->readings : 0;
}

void mcpx_run_budget_code_started(struct mcpx_run_budget *rb)
{
	if (rb && rb->timer.armed)
		mcpx_timer_start(rb->loop, &rb->timer, SAMPLE_MIN_US);
}

void mcpx_run_budget_stop(struct mcpx_run_budget *rb)
{
	if (!rb)
		return;
	mcpx_timer_cancel(&rb->timer);
	rb->stopped = true;
}

static void free_run(struct mcpx_run_budget *rb)
{
	mcpx_rb_disk_end(rb);
	if (rb->has_cgroup)
		mcpx_cgroup_run_remove_soon(rb->b->worker, &rb->cg);
	free(rb->procs);
	free(rb->prev);
	free(rb);
}

/* A joined run leaves its caller's budget; a caller already finished goes
 * with its last joined run. The executor takes the run out of its relation
 * (run_link.h) before the caller's next reading. */
static void leave(struct mcpx_run_budget *rb)
{
	struct mcpx_run_budget *caller = rb->top;

	caller->joined_live--;
	/* Its processes are gone from the readings now; under a cgroup the
	 * caller's cpu.stat keeps what its cgroup used. */
	if (!caller->has_cgroup)
		caller->joined_done_ms += rb->cpu_seen_ms;
	if (caller->finished && !caller->joined_live)
		free_run(caller);
}

void mcpx_run_budget_finish(struct mcpx_run_budget *rb, struct mcpx_run_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (!rb)
		return;
	mcpx_timer_cancel(&rb->timer);
	if (rb->has_cgroup) {
		struct mcpx_cgroup_usage cu;

		if (mcpx_cgroup_run_usage(&rb->cg, &cu) == 0) {
			if (cu.oom_kills && !rb->exceeded)
				rb->exceeded = "memory";
			if (cu.cpu_usec / 1000u + rb->charged_us / 1000u > rb->cpu_seen_ms)
				rb->cpu_seen_ms = cu.cpu_usec / 1000u + rb->charged_us / 1000u;
		}
	}
	u->cpu_ms = rb->cpu_seen_ms;
	u->limit = rb->exceeded;
	rb->link = NULL; /* its job may go once this returns */
	if (rb->top) {
		/* Its cgroup goes first: the caller's may go with it (leave). */
		if (rb->has_cgroup)
			mcpx_cgroup_run_remove_soon(rb->b->worker, &rb->cg);
		rb->has_cgroup = false;
		leave(rb);
		free_run(rb);
	} else if (rb->joined_live) {
		/* Joined runs still being torn down: their cgroups lie beneath
		 * this one's, which can only go after them. */
		rb->finished = true;
	} else {
		free_run(rb);
	}
}
