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
 * Readings cost the loop time, so their interval adapts: at least
 * SAMPLE_MIN_US apart, and at least SAMPLE_COST_FACTOR times the server CPU
 * the last reading took (at most a tenth of the server's time), so a run
 * with many processes or files cannot make its own supervision take over
 * the server. The walk of its file trees (workdirs, /dev/shm), whose cost
 * the run decides (28 000 entries stalled the loop for most of a second),
 * runs on a worker thread of the executor's where it has one
 * (mcpx_budget_use_worker), one walk at a time per run and paced the same
 * way by the worker's CPU; each reading checks the last finished walk.
 * A run that grows faster than the
 * interval overshoots by what it can allocate or write in that time; that is
 * what RLIMIT_AS and RLIMIT_FSIZE per process (the first line) and the
 * cgroup's memory.max (where there is one) bound.
 *
 * Each reading also looks at the container's memory (container_memory.h)
 * and ends the run before the container reaches its limit.
 *
 * What it does not do: spawn, reap or classify results (the executor), or
 * parse /proc and cgroup files (run_usage.c, run_cgroup.c,
 * container_memory.c).
 */
#include "run_budget.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "container_memory.h"
#include "log.h"
#include "offload.h"
#include "run_cgroup.h"
#include "run_link.h"
#include "run_sockets.h"
#include "run_usage.h"

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

/* ---- one run ------------------------------------------------------------ */

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
static uint64_t outside_kb(const struct mcpx_run_budget *rb)
{
	return held_total_kb(rb) + rb->socket_kb;
}

/* The socket buffers of the run's processes (in rb->procs), on every
 * reading: a run fills them as fast as it can copy, so a slower pace would
 * let it overshoot by gigabytes. One fd-table walk of the run and one
 * sock_diag dump of the host's AF_UNIX sockets, whose cost stretches the
 * interval like any reading's. */
static void read_sockets(struct mcpx_run_budget *rb)
{
	uint64_t kb = 0;
	int rc;

	if (!rb->lim.memory_kb)
		return;
	rc = mcpx_usage_socket_kb(rb->procs, &kb);
	if (rc < 0 && !rb->b->warned_sockets) {
		rb->b->warned_sockets = true;
		mcpx_warn("run budget: socket buffers cannot be read (sock_diag: %s); they go "
		          "uncounted",
		          strerror(-rc));
	}
	rb->socket_kb = kb;
}

void mcpx_rb_exceed(struct mcpx_run_budget *rb, const char *limit, uint64_t used,
                    uint64_t budget, const char *unit)
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

/* Memory and CPU through the run's cgroup: the kernel enforces memory.max,
 * an OOM kill in the cgroup says the budget was hit. The process list is
 * still read, for the open-file scan. */
static void read_cgroup(struct mcpx_run_budget *rb)
{
	struct mcpx_cgroup_usage u;
	struct mcpx_run_budget *j;
	long n;

	if (mcpx_cgroup_run_usage(&rb->cg, &u) < 0)
		return;
	/* The usage of a cgroup includes its descendants': the joined runs. */
	if (u.cpu_usec / 1000u + rb->charged_us / 1000u > rb->cpu_seen_ms)
		rb->cpu_seen_ms = u.cpu_usec / 1000u + rb->charged_us / 1000u;
	n = mcpx_cgroup_run_pids(&rb->cg, rb->procs->pid, MCPX_USAGE_MAX_PROCS);
	rb->procs->n = n > 0 ? (size_t)n : 0;
	for (const struct mcpx_run_link *at = NULL; (j = mcpx_rb_next_joined(rb, &at));) {
		if (!j->has_cgroup)
			continue; /* its processes are in the caller's cgroup */
		n = mcpx_cgroup_run_pids(&j->cg, rb->procs->pid + rb->procs->n,
		                         MCPX_USAGE_MAX_PROCS - rb->procs->n);
		rb->procs->n += n > 0 ? (size_t)n : 0;
	}
	rb->mem_seen_kb = u.memory_bytes / 1024u;
	read_sockets(rb);
	if (u.oom_kills)
		mcpx_rb_exceed(rb, "memory", u.memory_bytes / 1024u, rb->lim.memory_kb, "KiB");
	else if (rb->lim.memory_kb && rb->mem_seen_kb + outside_kb(rb) > rb->lim.memory_kb)
		mcpx_rb_exceed(rb, "memory", rb->mem_seen_kb + outside_kb(rb), rb->lim.memory_kb,
		               "KiB");
	else if (rb->lim.cpu_ms && rb->cpu_seen_ms > rb->lim.cpu_ms)
		mcpx_rb_exceed(rb, "cpu", rb->cpu_seen_ms, rb->lim.cpu_ms, "ms");
}

/* Whether this reading (p) finds the run quiet since the last one (prev):
 * see QUIET_MAX_PROCS. Never the first reading, nor with joined runs (their
 * CPU is read apart). */
static bool is_quiet(struct mcpx_run_budget *rb, const struct mcpx_usage_procs *p,
                     const struct mcpx_usage_procs *prev)
{
	bool quiet = rb->readings > 0 && !rb->joined_live && !p->truncated && p->n == prev->n &&
	             p->n <= QUIET_MAX_PROCS && rb->quiet_in_row < QUIET_MAX_IN_ROW &&
	             p->cpu_ms == prev->cpu_ms && p->rss_total_kb == prev->rss_total_kb;

	for (size_t i = 0; quiet && i < p->n; i++)
		quiet = p->pid[i] == prev->pid[i] && p->rss_kb[i] == prev->rss_kb[i];
	rb->quiet_in_row = quiet ? rb->quiet_in_row + 1 : 0;
	rb->quiet_total += quiet;
	return quiet;
}

/* Memory and CPU from /proc. The sum of RSS counts a page shared by several
 * processes (after fork, or with the zygote) once per process; only when
 * that upper bound is over the budget is the exact proportional sum read,
 * which costs more. The process groups of the runs that joined the budget
 * are read into the same list, each one's CPU noted for its own result. */
static void read_procs(struct mcpx_run_budget *rb)
{
	struct mcpx_usage_procs *p = rb->prev;
	struct mcpx_run_budget *j;
	uint64_t cpu, pss, held;

	rb->prev = rb->procs;
	rb->procs = p;
	(void)mcpx_usage_procs(rb->pgid, p);
	for (const struct mcpx_run_link *at = NULL; (j = mcpx_rb_next_joined(rb, &at));) {
		uint64_t before = p->cpu_ms;

		if (mcpx_usage_procs_add(j->pgid, p) == 0 && p->cpu_ms - before > j->cpu_seen_ms)
			j->cpu_seen_ms = p->cpu_ms - before;
	}
	if (!p->n)
		return;
	rb->quiet = is_quiet(rb, p, rb->prev);
	mcpx_usage_carry_pss(p, rb->prev);
	cpu = p->cpu_ms > rb->cpu_base_ms ? p->cpu_ms - rb->cpu_base_ms : 0;
	cpu += rb->joined_done_ms + rb->charged_us / 1000u;
	if (cpu > rb->cpu_seen_ms)
		rb->cpu_seen_ms = cpu;
	if (rb->lim.cpu_ms && cpu > rb->lim.cpu_ms) {
		mcpx_rb_exceed(rb, "cpu", cpu, rb->lim.cpu_ms, "ms");
		return;
	}
	/* The server's memory held for the run and the run's socket buffers
	 * count with its processes' (a quiet run's as last read). */
	if (!rb->quiet)
		read_sockets(rb);
	held = outside_kb(rb);
	rb->mem_seen_kb = p->rss_total_kb;
	if (!rb->lim.memory_kb || p->rss_total_kb + held <= rb->lim.memory_kb)
		return;
	if (held >= rb->lim.memory_kb)
		mcpx_rb_exceed(rb, "memory", held, rb->lim.memory_kb, "KiB");
	else if (mcpx_usage_pss_over(p, rb->lim.memory_kb - held, &pss))
		mcpx_rb_exceed(rb, "memory", pss + held, rb->lim.memory_kb, "KiB");
	else
		rb->mem_seen_kb = pss; /* the proportional sum: under */
}

/* CPU time the server's thread has used, in microseconds: what a reading
 * costs the server. Wall time would also count the moments the run's own
 * processes held the CPU, and a run that keeps every core busy would then
 * stretch its own supervision. */
static uint64_t thread_cpu_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return mcpx_now_us();
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The container's memory, whatever the run's own reading says: a burst
 * faster than the readings, or a run within its budget in a container
 * that cannot hold it, is ended before the kernel's OOM killer ends the
 * container (container_memory.h). Returns whether it ended the run. */
static bool read_container(struct mcpx_run_budget *rb)
{
	struct mcpx_container_reading r;

	if (mcpx_container_memory_read(&rb->b->container, &r) < 0 || !r.near)
		return false;
	mcpx_warn("the container's memory is at %llu MiB of its %llu MiB limit: ending run %d "
	          "before the kernel's OOM killer ends the container",
	          (unsigned long long)(r.working_set >> 20), (unsigned long long)(r.limit >> 20),
	          (int)rb->pgid);
	mcpx_rb_exceed(rb, "memory", r.working_set / 1024u, (r.limit - r.headroom) / 1024u,
	       "KiB in the container");
	return true;
}

static void sample_cb(struct mcpx_timer *t)
{
	struct mcpx_run_budget *rb = t->arg;
	uint64_t t0 = thread_cpu_us(), next;

	if (read_container(rb))
		return;
	rb->quiet = false;
	if (rb->has_cgroup)
		read_cgroup(rb);
	else
		read_procs(rb);
	if (!rb->exceeded && !rb->quiet)
		mcpx_rb_disk_read(rb);
	rb->readings++;
	if (rb->exceeded)
		return;
	next = (thread_cpu_us() - t0) * SAMPLE_COST_FACTOR;
	if (next < SAMPLE_MIN_US)
		next = SAMPLE_MIN_US;
	if (next > SAMPLE_MAX_US)
		next = SAMPLE_MAX_US;
	mcpx_timer_start(rb->loop, &rb->timer, next);
}

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
	rb->timer.fn = sample_cb;
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
	kb = top->mem_seen_kb + outside_kb(top);
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

void mcpx_run_budget_kill(struct mcpx_run_budget *rb)
{
	if (rb && rb->has_cgroup)
		(void)mcpx_cgroup_run_kill(&rb->cg);
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
