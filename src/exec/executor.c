/*
 * executor.c - serialized execution with a bounded FIFO queue.
 *
 * One job runs at a time; up to max_queue wait behind it, each with its own
 * queue-timeout timer. A job goes QUEUED -> RUNNING -> ENDING -> DONE (or
 * QUEUED -> DONE when it never runs), its state changed in one place,
 * job_enter (run_state.h has the diagram), driven by loop events: output
 * readable, leader exited (pidfd), wall-clock timer, stdin
 * writable-by-retry. Whatever ends the run (exit, timeout, a budget,
 * cancellation), the whole process tree is killed before the result is
 * returned, and the job is finished only when the leader is reaped and both
 * output pipes are closed, so nothing of a run outlives its result.
 *
 * A run may get a channel (sandbox.h): a job's bind asks for one, or the
 * hooks (run_hooks.h) say exec's runs want one now. The executor only asks
 * the sandbox for it and hands the server's end to the run_start hook
 * when the run starts, and calls run_end when the run ends; whoever app.c
 * wires there serves it. A function's run (functions.h) passes its word on
 * how it is served through its job's bind; a nested one (a function
 * called from a running run) starts
 * at once beside its caller, outside the queue, since the caller holds the
 * slot and waits for it. A nested job is linked to its caller's by pointer
 * (run_link.h), the one record of which run called which; the run budget
 * reads it to count nested runs against the outermost run's budget.
 *
 * This file holds the executor's interface: made, a job submitted (queued,
 * or started beside its caller), the next one started, cancelled, drained,
 * torn down. The rest of a run is in the files below it (run_job.h names
 * them): its I/O run_io.c's, its end run_end.c's, the start path
 * run_start.c's, its result run_result.c's, the queue run_queue.c's, a job
 * itself run_job.c's.
 *
 * This module does not know about MCP or JSON; it reports raw bytes and
 * numbers to the caller's callback and writes the audit line.
 */
#include "executor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "config.h"
#include "fair_queue.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"
#include "prepared.h"
#include "run_budget.h"
#include "run_job.h"
#include "warm_pool.h"

static void kick_cb(struct mcpx_timer *t);
static void start_next(struct mcpx_executor *ex);
static void start_job(struct mcpx_executor *ex, struct mcpx_job *job);

/* Each language's prepared runtime (prepared.h). The warm environment's
 * mode is the warm interpreter's (Python's). */
static int make_prepared(struct mcpx_executor *ex)
{
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++) {
		const struct mcpx_prepared_ops *ops = mcpx_prepared_ops_for((enum mcpx_lang)l);

		if (!ops)
			continue;
		ex->prepared[l].rt = ops->create(ex->loop, ex->cfg, ex->sb, &ex->hooks);
		if (!ex->prepared[l].rt)
			return -ENOMEM;
		ex->prepared[l].ops = ops;
	}
	ex->warm = ex->prepared[MCPX_LANG_PYTHON].rt;
	return ex->warm ? 0 : -ENOMEM;
}

/* Every prepared runtime: stop (draining) or free. */
static void stop_prepared(struct mcpx_executor *ex)
{
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (ex->prepared[l].ops)
			ex->prepared[l].ops->stop(ex->prepared[l].rt);
}

static void free_prepared(struct mcpx_executor *ex)
{
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (ex->prepared[l].ops)
			ex->prepared[l].ops->free(ex->prepared[l].rt);
	memset(ex->prepared, 0, sizeof(ex->prepared));
	ex->warm = NULL;
}

struct mcpx_executor *mcpx_executor_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                        const struct mcpx_sandbox *sb,
                                        const struct mcpx_executor_hooks *hooks)
{
	struct mcpx_executor *ex = calloc(1, sizeof(*ex));
	if (!ex)
		return NULL;
	ex->loop = loop;
	ex->cfg = cfg;
	ex->sb = sb;
	ex->kick.fn = kick_cb;
	ex->kick.arg = ex;
	if (hooks)
		ex->hooks = *hooks;
	/* Before any sandboxed process exists: it may move the server into a
	 * leaf cgroup. */
	ex->budget = mcpx_budget_new();
	if (!ex->budget) {
		free(ex);
		return NULL;
	}
	mcpx_metrics_set_info("budget", mcpx_budget_method_name(mcpx_budget_method(ex->budget)));
	ex->fair = mcpx_fair_new();
	if (make_prepared(ex) < 0 || !ex->fair || mcpx_offload_new(loop, &ex->walker) < 0 ||
	    mcpx_offload_new(loop, &ex->remover) < 0) {
		mcpx_offload_free(ex->walker);
		free_prepared(ex);
		mcpx_fair_free(ex->fair);
		mcpx_budget_free(ex->budget);
		free(ex);
		return NULL;
	}
	mcpx_budget_use_worker(ex->budget, ex->walker);
	return ex;
}

void mcpx_executor_start(struct mcpx_executor *ex)
{
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (ex->prepared[l].ops && ex->prepared[l].ops->start)
			ex->prepared[l].ops->start(ex->prepared[l].rt);
}

static void queue_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	char msg[160];

	mcpx_ex_queue_remove(job->ex, job);
	snprintf(msg, sizeof(msg),
	         "execution waited %us in the queue without starting (MCP_EXEC_QUEUE_TIMEOUT_S); "
	         "the server is busy, try again later",
	         job->ex->cfg->queue_timeout_s);
	mcpx_ex_finish_unrun(job, MCPX_JOB_EXPIRED, msg, "expired");
}

static void nested_start_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;

	start_job(job->ex, job);
}

static void kick_cb(struct mcpx_timer *t)
{
	start_next(t->arg);
}

static void wake_cb(void *arg)
{
	mcpx_ex_kick(arg);
}

/* Whether job, started now, ends (by its timeout) before the drain does;
 * always when not draining. */
static bool drain_fits(const struct mcpx_executor *ex, const struct mcpx_job *job)
{
	return !ex->draining ||
	       mcpx_now_us() + (uint64_t)job->timeout_s * 1000000u <= ex->drain_deadline_us;
}

/* Answers a job (out of the queue) that the drain has no time for. */
static void refuse_drain(struct mcpx_executor *ex, struct mcpx_job *job)
{
	uint64_t now = mcpx_now_us();
	uint64_t left_s = ex->drain_deadline_us > now ? (ex->drain_deadline_us - now) / 1000000u : 0;
	char msg[256];

	snprintf(msg, sizeof(msg),
	         "the server is shutting down and did not run this execution: its timeout (%u s) "
	         "would not end within the %llu s left of the drain; retry on another replica",
	         job->timeout_s, (unsigned long long)left_s);
	mcpx_ex_finish_unrun(job, MCPX_JOB_SHUTDOWN, msg, "shutdown");
}

static void start_next(struct mcpx_executor *ex)
{
	struct mcpx_job *job;

	/* Nor beside a nested run still being torn down after its caller
	 * ended: its /dev/shm wipe is by group and time (job_complete). */
	if (ex->running || ex->cleaning || ex->side || !ex->queue_head)
		return;
	/* Its forked child (asked for now if none was) is still on its way
	 * from the zygote: the loop serves others meanwhile, and the pool
	 * kicks again once the zygote has answered. */
	if (mcpx_ex_prepared_wait(ex, mcpx_ex_queue_next(ex), wake_cb))
		return;
	job = mcpx_ex_next_queued(ex);
	/* Draining: one whose timeout would outlast the drain is answered
	 * instead, and the next one is tried on the next turn. */
	if (!drain_fits(ex, job)) {
		refuse_drain(ex, job);
		mcpx_ex_kick(ex);
		return;
	}
	start_job(ex, job);
}

int mcpx_executor_submit(struct mcpx_executor *ex, const struct mcpx_job_spec *spec,
                         const struct mcpx_job_callbacks *cb, struct mcpx_job **out)
{
	struct mcpx_job *job;
	int rc;
	bool idle = !ex->running && !ex->queue_head;
	bool nested = spec->bind && spec->bind->nested;

	if (ex->draining && !nested)
		return -ESHUTDOWN;
	if (!nested && (rc = mcpx_ex_admit(ex, spec, idle)) < 0)
		return rc;
	job = mcpx_ex_job_new(ex, spec, cb);
	if (!job)
		return -ENOMEM;
	job->files = spec->files; /* accepted: ours from here on */
	if (spec->workspace)
		mcpx_ex_ws_take(job, spec->workspace);
	*out = job;
	job->queue_timer.arg = job;
	if (nested) {
		struct mcpx_job *caller = spec->bind->parent_run_id
		                              ? mcpx_ex_job_by_run_id(ex, spec->bind->parent_run_id)
		                              : NULL;

		/* Linked to its caller from now on (job_unlink says until
		 * when); one the executor does not know is refused at start. */
		if (caller)
			mcpx_run_link_add(&caller->link, &job->link);
		/* Its caller holds the slot and waits for it: it starts beside
		 * it, on a fresh loop iteration like every start. */
		job->next = ex->side;
		ex->side = job;
		job->queue_timer.fn = nested_start_cb;
		mcpx_timer_start(ex->loop, &job->queue_timer, 0);
		return 0;
	}
	mcpx_ex_enqueue(ex, job);

	if (!idle && job->cb.event)
		job->cb.event(job->cb.arg, MCPX_JOB_QUEUED, ex->queue_len);
	if (ex->running)
		mcpx_ex_prepared_call_queued(ex);
	job->queue_timer.fn = queue_timer_cb;
	mcpx_timer_start(ex->loop, &job->queue_timer,
	                 (uint64_t)ex->cfg->queue_timeout_s * 1000000u);
	mcpx_ex_kick(ex);
	return 0;
}

static void start_job(struct mcpx_executor *ex, struct mcpx_job *job)
{
	bool nested = job->has_bind && job->bind.nested;
	const struct mcpx_job *caller = mcpx_ex_job_caller(job);
	struct mcpx_err err;
	int rc;

	mcpx_timer_cancel(&job->queue_timer);
	if (nested && (!caller || caller->state != MCPX_RUN_RUNNING)) {
		/* Its caller is ending: it would only count against nothing. */
		mcpx_ex_side_remove(ex, job);
		mcpx_ex_finish_unrun(job, MCPX_JOB_FAILED, "the calling run has ended", "failed");
		return;
	}
	job->started_us = mcpx_now_us();
	err.msg[0] = '\0';
	rc = mcpx_ex_spawn(ex, job, &err);
	if (rc < 0) {
		char msg[300];
		mcpx_error("sandbox start failed: %s", err.msg);
		snprintf(msg, sizeof(msg), "could not start the sandbox: %s", err.msg);
		if (nested)
			mcpx_ex_side_remove(ex, job);
		mcpx_ex_finish_unrun(job, MCPX_JOB_FAILED, msg, "failed");
		mcpx_ex_kick(ex);
		return;
	}
	mcpx_ex_job_enter(job, MCPX_RUN_RUNNING);
	mcpx_ex_start_egress(ex, job);
	if (!mcpx_ex_supervise(ex, job, ex->cfg->cpu_s ? ex->cfg->cpu_s : job->timeout_s))
		return;
	if (job->cb.event)
		job->cb.event(job->cb.arg, MCPX_JOB_STARTED, 0);
	/* The pool prepares the next run's interpreter once this one ends, or
	 * now if calls come back to back or one already waits for it (a
	 * nested run's caller did both). */
	if (!nested) {
		mcpx_ex_prepared_run_started(ex, job);
		if (ex->queue_head)
			mcpx_ex_prepared_call_queued(ex);
	}
}

void mcpx_executor_charge_cpu(struct mcpx_executor *ex, const char *run_id, uint64_t cpu_us)
{
	struct mcpx_job *job = mcpx_ex_job_by_run_id(ex, run_id);

	if (!job)
		return;
	job->charged_us += cpu_us;
	mcpx_run_budget_charge_cpu(job->link.budget, cpu_us);
}

void mcpx_executor_cancel(struct mcpx_executor *ex, struct mcpx_job *job)
{
	if (!job || job->cancelled)
		return;
	job->cancelled = true;
	if (job->state == MCPX_RUN_QUEUED) {
		if (job->has_bind && job->bind.nested)
			mcpx_ex_side_remove(ex, job);
		else
			mcpx_ex_queue_remove(ex, job);
		mcpx_ex_job_enter(job, MCPX_RUN_DONE);
		mcpx_ex_audit(job, "cancelled", NULL);
		mcpx_ex_job_free(job);
		return;
	}
	mcpx_ex_kill_tree(job);
}

size_t mcpx_job_output(const struct mcpx_job *job, const char **out)
{
	*out = mcpx_buf_str(&job->out.buf);
	return job->out.buf.len;
}

/* Accepted work still runs: the queue is kept, in order, and each job
 * starts if its timeout ends before deadline_us; one that can never fit
 * is answered now, the rest when their turn comes (start_next). */
void mcpx_executor_drain(struct mcpx_executor *ex, uint64_t deadline_us)
{
	struct mcpx_job *next;

	ex->draining = true;
	ex->drain_deadline_us = deadline_us;
	stop_prepared(ex);
	for (struct mcpx_job *job = ex->queue_head; job; job = next) {
		next = job->next;
		if (drain_fits(ex, job))
			continue;
		mcpx_ex_queue_remove(ex, job);
		refuse_drain(ex, job);
	}
	mcpx_ex_kick(ex);
}

bool mcpx_executor_idle(const struct mcpx_executor *ex)
{
	return !ex->running && !ex->queue_head && !ex->side && !ex->cleaning;
}

const char *mcpx_job_run_id(const struct mcpx_job *job)
{
	return job->run_id;
}

void mcpx_executor_stats(const struct mcpx_executor *ex, struct mcpx_executor_stats *st)
{
	st->queue_depth = ex->queue_len;
	st->running = ex->running != NULL;
	st->completed = ex->completed;
	st->warm_mode = mcpx_warm_pool_mode(ex->warm);
	st->warm_ready = ex->prepared[MCPX_LANG_PYTHON].ops &&
	                 ex->prepared[MCPX_LANG_PYTHON].ops->ready(ex->warm);
}

/* Teardown: a started job is killed and reaped here, synchronously, with
 * no callback; one not started yet is just freed. */
static void abandon(struct mcpx_job *job)
{
	int status;
	struct rusage ru;

	if (job->state == MCPX_RUN_QUEUED) {
		mcpx_ex_job_enter(job, MCPX_RUN_DONE);
		mcpx_ex_job_free(job);
		return;
	}
	job->cancelled = true;
	mcpx_ex_kill_tree(job);
	mcpx_ex_leader_exited(job);
	/* Ends its nested calls too (their jobs are killed, and freed below). */
	mcpx_ex_end_channel(job->ex, job);
	if (job->out.open)
		mcpx_loop_unwatch(&job->out.watch);
	if (job->err.open)
		mcpx_loop_unwatch(&job->err.watch);
	if (job->pid_open)
		mcpx_loop_unwatch(&job->pid_watch);
	mcpx_sandbox_reap(&job->proc, &status, &ru);
	mcpx_run_budget_finish(job->link.budget, &(struct mcpx_run_usage){0});
	job->link.budget = NULL;
	mcpx_sandbox_cleanup(&job->proc);
	mcpx_ex_job_enter(job, MCPX_RUN_DONE);
	mcpx_ex_audit(job, "shutdown", NULL);
	mcpx_ex_job_free(job);
}

void mcpx_executor_free(struct mcpx_executor *ex)
{
	if (!ex)
		return;
	ex->freeing = true;
	/* Removals under way finish here, before the zygote goes, and so do
	 * disk readings (the loop does not turn again to start others). */
	mcpx_budget_use_worker(ex->budget, NULL);
	mcpx_offload_free(ex->walker);
	mcpx_offload_free(ex->remover);
	mcpx_timer_cancel(&ex->kick);
	stop_prepared(ex);
	while (ex->queue_head) {
		struct mcpx_job *job = ex->queue_head;
		mcpx_ex_queue_remove(ex, job);
		mcpx_ex_job_enter(job, MCPX_RUN_DONE);
		mcpx_ex_job_free(job);
	}
	if (ex->running) {
		struct mcpx_job *job = ex->running;

		ex->running = NULL;
		abandon(job);
	}
	while (ex->side) {
		struct mcpx_job *job = ex->side;

		ex->side = job->next;
		abandon(job);
	}
	/* After the running run's reaping: its zygote may go now. */
	free_prepared(ex);
	mcpx_budget_free(ex->budget);
	mcpx_fair_free(ex->fair);
	free(ex);
}
