/*
 * run_disk.c - a run's disk budget (run_budget.h): what its files take,
 * read as soon as it writes, and a cap on how far one write can go past it.
 *
 * The reading: the run's workdir trees (its own and its joined runs') and
 * its entries in /dev/shm, walked on the executor's worker (a run decides
 * how many entries there are: 28 000 stalled the loop for most of a
 * second), plus the regular files its processes hold open after unlinking
 * them, memfds included (their fd tables, read on the loop).
 *
 * When: on the budget's timer as before, and at once when the run writes.
 * A write on tmpfs is as fast as memory: a run wrote 40 x 1 MiB past a
 * 20 MiB budget and exited between two ticks of the timer, reported
 * "limit": null. So the write watch (run_disk_watch.h) wakes a walk (and
 * the unlinked-file scan) whenever the run creates, writes or closes a
 * file, paced at DISK_MIN_US and by the walk's own cost like any reading.
 *
 * How far past: RLIMIT_FSIZE bounds how large any one file of a process
 * can grow, and the run starts with it at no more than the whole budget
 * (mcpx_config_file_mb). After each reading it is lowered on every process
 * of the run to what remains of the budget plus one block, so a single
 * write cannot carry the run further past the budget than that block,
 * which is enough for the next reading to see it over. It is lowered
 * (soft and hard: a run may raise its own soft limit up to the hard one)
 * and never raised again, even if the run deletes files: the kernel lets
 * only a privileged process raise a hard limit.
 *
 * At the end: the last word (mcpx_run_budget_settle). A run with writes
 * no finished walk has seen gets one more walk (or waits for the one that
 * began after them) before its result is made, so a run that went past its
 * budget and exited before any reading still says limit "disk"; a run that
 * wrote nothing (most) waits for nothing.
 *
 * What it does not do: memory and CPU and the timer (run_readings.c),
 * joining and finishing (run_budget.c); parsing /proc (run_usage.c).
 */
#include "run_disk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"
#include "offload.h"
#include "run_budget_internal.h"
#include "run_disk_watch.h"

/* Walks woken by writes come no sooner than this after the last one (the
 * walk's cost paces them further, as SAMPLE_COST_FACTOR says). */
#define DISK_MIN_US 2000u
/* The block RLIMIT_FSIZE leaves past what remains: one write that fills
 * the budget takes the run just over it, where a reading sees it. */
#define FSIZE_SLACK_KB 4u
/* Walks at the end, beyond the one under way: the run's processes are
 * gone or dying, so what they still write is bounded; this bounds it more. */
#define SETTLE_WALKS 2u

/* One walk of a run's file trees, taken by value: the worker touches
 * nothing else. Freed by its done() on the loop. */
struct disk_reading {
	struct mcpx_offload_task task; /* first: the task is the struct */
	struct mcpx_run_budget *rb;    /* NULL once the run is finished */
	uint64_t cap;
	uid_t uid;
	gid_t gid;
	struct timespec started;
	int rc;               /* -ELOOP: nested deeper than the walk follows */
	unsigned long writes; /* the run's writes seen when it began */
	uint64_t wd, shm;
	size_t n;
	char dirs[][PATH_MAX]; /* the run's workdir, then its joined runs' */
};

static void start_walk(struct mcpx_run_budget *rb);

/* Space the workdirs take (the run's and its joined runs'), then what the
 * run's uid put in /dev/shm since the run started (the joined runs'
 * entries are newer still). On the worker, or on the loop without one. */
static void walk_files(struct disk_reading *d)
{
	int rc = 0;

	for (size_t i = 0; i < d->n && rc != -ELOOP && d->wd <= d->cap; i++) {
		uint64_t one = 0;

		rc = mcpx_usage_tree_kb(d->dirs[i], d->cap - d->wd, &one);
		d->wd += one;
	}
	d->rc = rc == -ELOOP ? rc : 0;
	if (rc != -ELOOP && d->wd <= d->cap &&
	    mcpx_usage_owned_kb("/dev/shm", d->uid, d->gid, &d->started, d->cap - d->wd, &d->shm) ==
	        -ELOOP)
		d->shm = d->cap + 1;
}

static void disk_work(struct mcpx_offload_task *t)
{
	walk_files((struct disk_reading *)t);
}

/* RLIMIT_FSIZE of every process of the run (the last reading's list, its
 * joined runs' included) lowered to what remains of the budget plus
 * FSIZE_SLACK_KB. Only ever lowered: a process whose limit is lower
 * already (set here before, or spawned so) keeps its own. */
static void keep_fsize(struct mcpx_run_budget *rb, uint64_t used_kb)
{
	uint64_t left = used_kb < rb->lim.disk_kb ? rb->lim.disk_kb - used_kb : 0;
	struct rlimit want = {.rlim_cur = (rlim_t)(left + FSIZE_SLACK_KB) * 1024u};

	want.rlim_max = want.rlim_cur;
	if (rb->fsize_bytes && want.rlim_cur > rb->fsize_bytes)
		want.rlim_cur = want.rlim_max = (rlim_t)rb->fsize_bytes;
	rb->fsize_bytes = want.rlim_cur;
	/* The leader first: before the first reading it is the whole list. */
	for (size_t i = 0; i <= rb->procs->n; i++) {
		pid_t pid = i ? rb->procs->pid[i - 1] : rb->pgid;
		struct rlimit old;

		if ((i == 0 || pid != rb->pgid) && prlimit(pid, RLIMIT_FSIZE, NULL, &old) == 0 &&
		    want.rlim_max < old.rlim_max && prlimit(pid, RLIMIT_FSIZE, &want, NULL) < 0 &&
		    errno == EPERM && !rb->b->warned_fsize) {
			/* Root without CAP_SYS_RESOURCE, its runs of another uid. */
			rb->b->warned_fsize = true;
			mcpx_warn(
			    "run budget: RLIMIT_FSIZE of a run cannot be lowered (prlimit: %s): "
			    "one file may take the run past its disk budget by what remained "
			    "when it started, until a reading ends it",
			    strerror(EPERM));
		}
	}
}

/* What the run's processes hold open unlinked: the last reading's list,
 * or the leader alone before there is one. */
static uint64_t unlinked_now(const struct mcpx_run_budget *rb)
{
	if (rb->procs->n)
		return mcpx_usage_unlinked_kb(rb->procs);
	return mcpx_usage_unlinked_kb_of(&rb->pgid, 1);
}

/* The files with what the processes hold open after unlinking them. */
static void check_disk(struct mcpx_run_budget *rb)
{
	uint64_t used = rb->files_kb + rb->unlinked_kb;

	if (rb->exceeded)
		return;
	if (used > rb->lim.disk_kb)
		mcpx_rb_exceed(rb, "disk", used, rb->lim.disk_kb, "KiB");
	else
		keep_fsize(rb, used);
}

/* A walk's result, on the loop. */
static void disk_apply(struct mcpx_run_budget *rb, struct disk_reading *d)
{
	if (rb->exceeded || rb->finished)
		return;
	if (d->rc == -ELOOP) {
		mcpx_info("run %d nested directories deeper than the disk reading follows",
		          (int)rb->pgid);
		mcpx_rb_exceed(rb, "disk", d->wd, d->cap, "KiB");
		return;
	}
	rb->files_kb = d->wd + d->shm;
	rb->walked = d->writes;
	check_disk(rb);
}

/* The end's last word is in: the settle callback, once. It may finish
 * (and free) the run, so nothing touches rb after it. */
static void settle_done(struct mcpx_run_budget *rb)
{
	void (*fn)(void *) = rb->settle_fn;

	rb->settle_fn = NULL;
	fn(rb->settle_arg);
}

/* Writes since the walk began: another, paced (or at once at the end). */
static void after_walk(struct mcpx_run_budget *rb)
{
	if (rb->settle_fn) {
		if (rb->writes != rb->walked && !rb->exceeded && rb->settle_walks++ < SETTLE_WALKS)
			start_walk(rb);
		if (!rb->disk && rb->settle_fn)
			settle_done(rb);
		return;
	}
	if (rb->disk_dirty && !rb->stopped && !rb->exceeded && !rb->disk_timer.armed)
		mcpx_timer_start(rb->loop, &rb->disk_timer,
		                 rb->disk_next_us > mcpx_now_us() ? rb->disk_next_us - mcpx_now_us()
		                                                  : 0);
}

static void disk_done(struct mcpx_offload_task *t)
{
	struct disk_reading *d = (struct disk_reading *)t;
	struct mcpx_run_budget *rb = d->rb;
	uint64_t wait = t->cpu_us * SAMPLE_COST_FACTOR;

	if (rb) {
		rb->disk = NULL;
		if (wait < DISK_MIN_US)
			wait = DISK_MIN_US;
		if (wait > SAMPLE_MAX_US)
			wait = SAMPLE_MAX_US;
		rb->disk_next_us = mcpx_now_us() + wait;
		if (!t->cancelled)
			disk_apply(rb, d);
	}
	free(d);
	if (rb)
		after_walk(rb);
}

/* A walk of the run's trees as they are now: its workdir and its joined
 * runs'. NULL on allocation failure (the reading is skipped). */
static struct disk_reading *disk_reading_new(struct mcpx_run_budget *rb)
{
	const struct mcpx_run_budget *j;
	struct disk_reading *d;
	size_t n = 1;

	for (const struct mcpx_run_link *at = NULL; (j = mcpx_rb_next_joined(rb, &at));)
		n++;
	d = calloc(1, sizeof(*d) + n * sizeof(d->dirs[0]));
	if (!d)
		return NULL;
	d->task.work = disk_work;
	d->task.done = disk_done;
	d->rb = rb;
	d->cap = rb->lim.disk_kb;
	d->uid = rb->uid;
	d->gid = rb->gid;
	d->started = rb->started;
	memcpy(d->dirs[d->n++], rb->workdir, sizeof(rb->workdir));
	for (const struct mcpx_run_link *at = NULL; (j = mcpx_rb_next_joined(rb, &at));)
		memcpy(d->dirs[d->n++], j->workdir, sizeof(j->workdir));
	return d;
}

/* A walk now, on the worker (on the loop without one, finished before
 * this returns); a write seen from here on asks for another. */
static void start_walk(struct mcpx_run_budget *rb)
{
	struct disk_reading *d = disk_reading_new(rb);

	if (!d)
		return;
	rb->disk_dirty = false;
	d->writes = rb->writes;
	if (!rb->b->worker) {
		walk_files(d);
		d->rb = NULL; /* applied here, not by disk_done */
		rb->disk_next_us = mcpx_now_us() + DISK_MIN_US;
		disk_apply(rb, d);
		free(d);
		return;
	}
	rb->disk = d;
	mcpx_offload_submit(rb->b->worker, &d->task);
}

/* The run wrote: read what it holds open unlinked, and walk as soon as
 * the pace allows. While the run is ending only noted, for the end. */
static void disk_kick(struct mcpx_run_budget *rb)
{
	uint64_t now;

	if (rb->exceeded || rb->finished || rb->stopped || rb->disk || rb->settle_fn)
		return;
	now = mcpx_now_us();
	if (now < rb->disk_next_us) {
		if (!rb->disk_timer.armed)
			mcpx_timer_start(rb->loop, &rb->disk_timer, rb->disk_next_us - now);
		return;
	}
	rb->unlinked_kb = unlinked_now(rb);
	check_disk(rb);
	if (!rb->exceeded)
		start_walk(rb);
}

static void on_write(void *arg)
{
	struct mcpx_run_budget *rb = arg;

	rb->disk_dirty = true;
	rb->writes++;
	disk_kick(rb);
}

static void disk_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_run_budget *rb = t->arg;

	if (rb->disk_dirty)
		disk_kick(rb);
}

void mcpx_rb_disk_begin(struct mcpx_run_budget *rb)
{
	int rc;

	if (!rb->lim.disk_kb)
		return;
	rb->disk_timer.fn = disk_timer_cb;
	rb->disk_timer.arg = rb;
	/* The process's one inotify instance, made with the first run (a
	 * budget has no loop before): closing one costs milliseconds. */
	if (!rb->b->watcher && !rb->b->no_watcher &&
	    (rc = mcpx_disk_watcher_new(rb->loop, &rb->b->watcher)) < 0) {
		rb->b->no_watcher = true;
		mcpx_warn("run budget: no inotify (%s): runs' disk is read on the timer only",
		          strerror(-rc));
	}
	if (rb->b->watcher)
		(void)mcpx_disk_watch_open(rb->b->watcher, rb->workdir, true, rb->uid, rb->gid,
		                           on_write, rb, &rb->watch);
}

void mcpx_rb_disk_joined(struct mcpx_run_budget *top, const struct mcpx_run_budget *j)
{
	mcpx_disk_watch_add(top->watch, j->workdir);
}

/* Files in the workdirs and /dev/shm, walked on the worker, and unlinked
 * files the processes hold open, read here. The budget is checked against
 * the last finished walk now, and again when the next one finishes. */
void mcpx_rb_disk_read(struct mcpx_run_budget *rb)
{
	if (!rb->lim.disk_kb)
		return;
	if (rb->readings % UNLINKED_EVERY == 0 || rb->disk_dirty)
		rb->unlinked_kb = mcpx_usage_unlinked_kb(rb->procs);
	check_disk(rb);
	if (rb->exceeded || rb->disk || mcpx_now_us() < rb->disk_next_us)
		return;
	start_walk(rb);
}

void mcpx_rb_disk_end(struct mcpx_run_budget *rb)
{
	mcpx_disk_watch_close(rb->watch);
	rb->watch = NULL;
	mcpx_timer_cancel(&rb->disk_timer);
	/* A walk under way finds no run when it ends. */
	if (rb->disk)
		rb->disk->rb = NULL;
	rb->disk = NULL;
	rb->settle_fn = NULL;
}

int mcpx_run_budget_settle(struct mcpx_run_budget *rb, void (*fn)(void *arg), void *arg)
{
	if (!rb || rb->top || !rb->lim.disk_kb)
		return 0;
	if (rb->settle_fn)
		return -EINPROGRESS; /* asked again while the last walk runs */
	if (rb->settled || rb->exceeded)
		return 0;
	rb->settled = true;
	/* Every write seen is in a finished walk: its verdict stands (a run
	 * that wrote nothing waits for nothing, whatever walk the timer has
	 * under way). Otherwise the walk under way (after_walk starts one
	 * more if writes came after it began), or a new one. */
	if (rb->writes == rb->walked)
		return 0;
	mcpx_timer_cancel(&rb->disk_timer);
	rb->settle_fn = fn;
	rb->settle_arg = arg;
	if (!rb->disk)
		start_walk(rb);
	if (rb->disk)
		return -EINPROGRESS;
	rb->settle_fn = NULL; /* walked on the loop: the verdict is in */
	return 0;
}
