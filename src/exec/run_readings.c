/*
 * run_readings.c - the readings of a run's memory and CPU on the budget's
 * timer (run_budget.h): from the run's cgroup or from /proc (run_usage.h),
 * with the socket buffers its processes hold (run_sockets.h) and the
 * container's own memory (container_memory.h); each reading then asks the
 * disk for its part (run_disk.c) and sets the timer for the next.
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
 * What it does not do: start, join or finish a run's budget (run_budget.c),
 * read its disk (run_disk.c), or parse /proc and cgroup files
 * (run_usage.c, run_cgroup.c, container_memory.c).
 */
#include "run_readings.h"

#include <string.h>
#include <time.h>

#include "container_memory.h"
#include "log.h"
#include "run_budget_internal.h"
#include "run_cgroup.h"
#include "run_disk.h"
#include "run_link.h"
#include "run_sockets.h"
#include "run_usage.h"

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
	else if (rb->lim.memory_kb && rb->mem_seen_kb + mcpx_rb_outside_kb(rb) > rb->lim.memory_kb)
		mcpx_rb_exceed(rb, "memory", rb->mem_seen_kb + mcpx_rb_outside_kb(rb),
		               rb->lim.memory_kb, "KiB");
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
	held = mcpx_rb_outside_kb(rb);
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

void mcpx_rb_sample_cb(struct mcpx_timer *t)
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
