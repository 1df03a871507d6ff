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
 * This file holds a job's life: made, its state changed (job_enter),
 * completed once reaped and drained, cancelled, freed, and the executor's
 * own. The queue and admission are run_queue.c's, the start path
 * run_start.c's, the running job's I/O run_io.c's, the result and the audit
 * line run_result.c's (executor_internal.h).
 *
 * This module does not know about MCP or JSON; it reports raw bytes and
 * numbers to the caller's callback and writes the audit line.
 */
#include "executor.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bash_pool.h"
#include "config.h"
#include "crypto.h"
#include "executor_internal.h"
#include "fair_queue.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"
#include "profile_limits.h"
#include "run_budget.h"
#include "run_cleanup.h"
#include "warm.h"
#include "warm_child.h"
#include "warm_pool.h"
#include "zygote_cycle.h"

/* After the leader exits and the tree is killed, the pipes close at once; this
 * bounds the wait anyway, so a wedged pipe can never hold the executor. */
#define DRAIN_DEADLINE_US (2u * 1000000u)

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
	ex->warm = mcpx_warm_pool_new(loop, cfg, sb, &ex->hooks);
	ex->bash = mcpx_bash_pool_new(loop, cfg, sb, &ex->hooks);
	ex->fair = mcpx_fair_new();
	if (!ex->warm || !ex->bash || !ex->fair || mcpx_offload_new(loop, &ex->walker) < 0 ||
	    mcpx_offload_new(loop, &ex->remover) < 0) {
		mcpx_offload_free(ex->walker);
		mcpx_warm_pool_free(ex->warm);
		mcpx_bash_pool_free(ex->bash);
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
	mcpx_warm_pool_start(ex->warm);
}

void mcpx_ex_job_free(struct mcpx_job *job)
{
	if (job->feed) {
		mcpx_wipe(job->feed, job->feed_len);
		free(job->feed);
	}
	if (job->code) {
		mcpx_wipe(job->code, job->code_len);
		free(job->code);
	}
	if (job->stdin_data) {
		mcpx_wipe(job->stdin_data, job->stdin_len);
		free(job->stdin_data);
	}
	mcpx_runfiles_in_free(job->files);
	free(job->files);
	mcpx_runfiles_out_free(&job->out_files);
	mcpx_buf_free(&job->out.buf);
	mcpx_buf_free(&job->err.buf);
	free(job);
}

/* ---- which run called which (run_link.h) ---- */

static struct mcpx_job *job_of(struct mcpx_run_link *l)
{
	return (struct mcpx_job *)((char *)l - offsetof(struct mcpx_job, link));
}

/* The run that called a nested job, while it is there: linked at submit,
 * detached when the caller is DONE. NULL for any other job. */
struct mcpx_job *mcpx_ex_job_caller(const struct mcpx_job *job)
{
	return job->link.caller ? job_of(job->link.caller) : NULL;
}

/* The started or nested job whose run is run_id, or NULL: where a nested
 * call names its caller (once, at submit) and where CPU spent elsewhere is
 * charged. */
struct mcpx_job *mcpx_ex_job_by_run_id(struct mcpx_executor *ex, const char *run_id)
{
	if (ex->running && !strcmp(ex->running->run_id, run_id))
		return ex->running;
	for (struct mcpx_job *j = ex->side; j; j = j->next)
		if (!strcmp(j->run_id, run_id))
			return j;
	return NULL;
}

/* Takes job out of the relation as it becomes DONE, so that no link
 * points at it once it is freed, whichever of a caller and its nested runs
 * ends first. Its nested runs that have started are handed to its own
 * caller: they still count against the outermost run's budget, which they
 * joined (run_budget.c reads this relation), and that run's /dev/shm wipe
 * still covers theirs (job_complete). Those not started yet are cut loose:
 * without a caller they are refused when their start comes (start_job). */
static void job_unlink(struct mcpx_job *job)
{
	struct mcpx_run_link *n;

	while ((n = job->link.nested)) {
		mcpx_run_link_remove(n);
		if (job->link.caller && job_of(n)->state != MCPX_RUN_QUEUED)
			mcpx_run_link_add(job->link.caller, n);
	}
	mcpx_run_link_remove(&job->link);
}

/* A function's run: the submitter's bind, its strings copied. */
static void copy_bind(struct mcpx_job *job, const struct mcpx_job_bind *b)
{
	if (!b)
		return;
	job->has_bind = true;
	job->bind = *b;
	snprintf(job->tool, sizeof(job->tool), "%s", b->tool ? b->tool : "");
	snprintf(job->args_sha256, sizeof(job->args_sha256), "%s",
	         b->args_sha256 ? b->args_sha256 : "");
	snprintf(job->source_sha256, sizeof(job->source_sha256), "%s",
	         b->source_sha256 ? b->source_sha256 : "");
	snprintf(job->parent_run_id, sizeof(job->parent_run_id), "%s",
	         b->parent_run_id ? b->parent_run_id : "");
	job->bind.tool = job->tool;
	job->bind.args_sha256 = b->args_sha256 ? job->args_sha256 : NULL;
	job->bind.source_sha256 = b->source_sha256 ? job->source_sha256 : NULL;
	job->bind.parent_run_id = b->parent_run_id ? job->parent_run_id : NULL;
}

/* A new job holding copies of spec's code, stdin, ids and bind; NULL when
 * out of memory. */
struct mcpx_job *mcpx_ex_job_new(struct mcpx_executor *ex, const struct mcpx_job_spec *spec,
                                 const struct mcpx_job_callbacks *cb)
{
	struct mcpx_job *job = calloc(1, sizeof(*job));
	unsigned char id[8] = {0};

	if (!job)
		return NULL;
	job->ex = ex;
	job->code = malloc(spec->code_len ? spec->code_len : 1);
	if (!job->code)
		goto nomem;
	memcpy(job->code, spec->code, spec->code_len);
	job->code_len = spec->code_len;
	job->lang = spec->language;
	if (spec->stdin_data && spec->stdin_len) {
		job->stdin_data = malloc(spec->stdin_len);
		if (!job->stdin_data)
			goto nomem;
		memcpy(job->stdin_data, spec->stdin_data, spec->stdin_len);
		job->stdin_len = spec->stdin_len;
	}
	job->timeout_s = spec->timeout_s;
	job->memory_mb = ex->cfg->memory_mb;
	/* A profile's limits only ever lower the server's. */
	if (spec->limits && spec->limits->timeout_s && spec->limits->timeout_s < job->timeout_s)
		job->timeout_s = spec->limits->timeout_s;
	if (spec->limits && spec->limits->memory_mb &&
	    (!job->memory_mb || spec->limits->memory_mb < job->memory_mb))
		job->memory_mb = spec->limits->memory_mb;
	snprintf(job->request_id, sizeof(job->request_id), "%s",
	         spec->request_id ? spec->request_id : "");
	snprintf(job->caller, sizeof(job->caller), "%s", spec->caller ? spec->caller : "");
	snprintf(job->profile, sizeof(job->profile), "%s", spec->profile ? spec->profile : "");
	snprintf(job->client, sizeof(job->client), "%s", spec->client ? spec->client : "");
	(void)mcpx_random(id, sizeof(id));
	for (size_t i = 0; i < sizeof(id); i++)
		snprintf(job->run_id + 2 * i, 3, "%02x", id[i]);
	copy_bind(job, spec->bind);
	job->cb = *cb;
	mcpx_buf_init(&job->out.buf, ex->cfg->max_output_bytes);
	mcpx_buf_init(&job->err.buf, ex->cfg->max_output_bytes);
	job->state = MCPX_RUN_QUEUED;
	job->enqueued_us = mcpx_now_us();
	return job;
nomem:
	mcpx_ex_job_free(job);
	return NULL;
}

/* The run's channel is no longer served (its requests are cancelled). */
static void end_channel(struct mcpx_executor *ex, struct mcpx_job *job)
{
	if (job->egress && ex->hooks.run_end)
		ex->hooks.run_end(ex->hooks.arg, job->egress);
	job->egress = NULL;
}

/* ---- running a job ---- */

void mcpx_ex_kill_tree(struct mcpx_job *job)
{
	mcpx_run_budget_kill(job->link.budget);
	mcpx_sandbox_kill(&job->proc);
}

static void job_complete(struct mcpx_job *job)
{
	struct mcpx_executor *ex = job->ex;
	struct mcpx_job_result r;
	struct mcpx_run_usage usage;
	struct rusage ru;
	int status = 0, files_rc, setup_rc = 0;
	struct mcpx_err ferr = {{0}}, serr = {{0}};
	/* Asked before the reap, while the run's zygote is still known. */
	bool parent_gone = mcpx_zygotes_parent_gone(&job->proc);
	bool nested = job->has_bind && job->bind.nested;

	end_channel(ex, job);
	memset(&ru, 0, sizeof(ru));
	mcpx_sandbox_reap(&job->proc, &status, &ru);
	/* A forked interpreter handed over while still entering its sandbox
	 * that never said ready: its error pipe says whether setup failed,
	 * which fails the run as a cold spawn's failed setup does. */
	if (job->warm && job->out.markers == MCPX_WARM_MARKERS_ALL)
		setup_rc = mcpx_sandbox_setup_verdict(&job->proc, &serr);
	job->env_failure =
	    setup_rc < 0 ? NULL : mcpx_ex_environment_failure(job, status, parent_gone);
	mcpx_run_budget_finish(job->link.budget, &usage);
	job->link.budget = NULL;
	if (!job->budget_limit)
		job->budget_limit = usage.limit;
	files_rc = job->cancelled || job->env_failure || setup_rc < 0
	               ? 0
	               : mcpx_ex_collect_files(job, &ferr);
	/* A nested run's /dev/shm entries are its caller's: counted with the
	 * caller's (run_budget.c) and wiped at the caller's end, which takes
	 * every entry of the runs' group since the caller started. Wiped now,
	 * since the call started, they would take the caller's own entries
	 * made meanwhile. Once the caller is gone they are wiped here (no
	 * other run starts while a nested one is still there: start_next). */
	if (nested && mcpx_ex_job_caller(job))
		job->proc.started.tv_sec = 0;
	/* The run's files go to the remover: the result does not wait
	 * for them, the next run does (after_run). What is left is fds. */
	if (mcpx_run_cleanup_take(ex->remover, &job->proc, job->run_id, mcpx_ex_cleanup_done, ex) ==
	    0)
		ex->cleaning++;
	mcpx_sandbox_cleanup(&job->proc);
	job->ended_us = mcpx_now_us();
	mcpx_ex_fill_result(job, status, &ru, usage.cpu_ms, &r);
	r.files = &job->out_files;
	mcpx_ex_result_failed(&r, setup_rc < 0 ? &serr : NULL, files_rc < 0 ? &ferr : NULL);
	/* A nested job leaves the slot to its caller. */
	if (!nested && ex->running == job)
		ex->running = NULL;
	else
		mcpx_ex_side_remove(ex, job);
	mcpx_ex_job_enter(job, MCPX_RUN_DONE);
	ex->completed++;
	mcpx_ex_report(job, &r);
	mcpx_ex_job_free(job);
	mcpx_ex_after_run(ex);
}

static void budget_settled(void *arg)
{
	mcpx_ex_maybe_complete(arg);
}

/* Called whenever one of the run's watches closes; the job completes when
 * the leader has exited, both pipes are drained, and the disk budget has
 * had its last word (a run that wrote past it and exited before a reading
 * is still told: run_budget.h, mcpx_run_budget_settle). */
void mcpx_ex_maybe_complete(struct mcpx_job *job)
{
	if (job->state != MCPX_RUN_ENDING || job->ex->freeing)
		return;
	if (job->out.open || job->err.open || job->pid_open)
		return;
	if (mcpx_run_budget_settle(job->link.budget, budget_settled, job) == -EINPROGRESS)
		return;
	job_complete(job);
}

static void drain_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	mcpx_warn("output pipes still open after the run's tree was killed; closing them");
	if (job->out.open)
		mcpx_loop_unwatch(&job->out.watch);
	if (job->err.open)
		mcpx_loop_unwatch(&job->err.watch);
}

/* The one place a job's state changes (run_state.h has the diagram), and
 * what entering each state does:
 * - RUNNING: its process is started; one that is not nested holds the
 *   slot;
 * - ENDING: the leader exited, or the run is being ended: the budget stops
 *   reading, everything else of the run is killed while the leader's
 *   zombie still reserves the process-group id, its wall clock and stdin
 *   stop, and its pipes get DRAIN_DEADLINE_US to close;
 * - DONE: no timer of the job is left, and it is out of the caller/nested
 *   relation (job_unlink): nothing points at it, it may be freed.
 * A transition the diagram does not have is the executor's bug: a debug
 * build stops there; a release build logs it and leaves the job as it
 * was. */
int mcpx_ex_job_enter(struct mcpx_job *job, enum mcpx_run_state next)
{
	int rc = mcpx_run_state_to(&job->state, next, job->run_id);

	if (rc < 0) {
		assert(!"illegal run state transition");
		return rc;
	}
	switch (next) {
	case MCPX_RUN_QUEUED:
		break;
	case MCPX_RUN_RUNNING:
		if (!(job->has_bind && job->bind.nested))
			job->ex->running = job;
		job->out.job = job->err.job = job;
		break;
	case MCPX_RUN_ENDING:
		mcpx_run_budget_stop(job->link.budget);
		mcpx_ex_kill_tree(job);
		mcpx_timer_cancel(&job->wall_timer);
		mcpx_timer_cancel(&job->stdin_timer);
		job->drain_timer.fn = drain_timer_cb;
		job->drain_timer.arg = job;
		mcpx_timer_start(job->ex->loop, &job->drain_timer, DRAIN_DEADLINE_US);
		break;
	case MCPX_RUN_DONE:
		mcpx_timer_cancel(&job->queue_timer);
		mcpx_timer_cancel(&job->wall_timer);
		mcpx_timer_cancel(&job->drain_timer);
		mcpx_timer_cancel(&job->stdin_timer);
		job_unlink(job);
		break;
	}
	return 0;
}

/* The leader exited (or was killed): the run is ending, once. */
void mcpx_ex_leader_exited(struct mcpx_job *job)
{
	if (job->state == MCPX_RUN_RUNNING)
		mcpx_ex_job_enter(job, MCPX_RUN_ENDING);
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

bool mcpx_ex_drain_refuses(struct mcpx_executor *ex, struct mcpx_job *job)
{
	uint64_t now = mcpx_now_us(), left_s;
	char msg[256];

	if (!ex->draining || now + (uint64_t)job->timeout_s * 1000000u <= ex->drain_deadline_us)
		return false;
	left_s = ex->drain_deadline_us > now ? (ex->drain_deadline_us - now) / 1000000u : 0;
	snprintf(msg, sizeof(msg),
	         "the server is shutting down and did not run this execution: its timeout (%u s) "
	         "would not end within the %llu s left of the drain; retry on another replica",
	         job->timeout_s, (unsigned long long)left_s);
	mcpx_ex_queue_remove(ex, job);
	mcpx_ex_finish_unrun(job, MCPX_JOB_SHUTDOWN, msg, "shutdown");
	return true;
}

/* Accepted work still runs: the queue is kept, in order, and each job
 * starts if its timeout ends before deadline_us; one that cannot is
 * answered now, the rest when their turn comes (run_queue.c). */
void mcpx_executor_drain(struct mcpx_executor *ex, uint64_t deadline_us)
{
	struct mcpx_job *next;

	ex->draining = true;
	ex->drain_deadline_us = deadline_us;
	mcpx_warm_pool_stop(ex->warm);
	mcpx_bash_pool_stop(ex->bash);
	for (struct mcpx_job *job = ex->queue_head; job; job = next) {
		next = job->next;
		(void)mcpx_ex_drain_refuses(ex, job);
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
	st->warm_ready = mcpx_warm_pool_ready(ex->warm);
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
	end_channel(job->ex, job);
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
	mcpx_warm_pool_stop(ex->warm);
	mcpx_bash_pool_stop(ex->bash);
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
	mcpx_warm_pool_free(ex->warm);
	mcpx_bash_pool_free(ex->bash);
	mcpx_budget_free(ex->budget);
	mcpx_fair_free(ex->fair);
	free(ex);
}
