/*
 * run_end.c - a run's end. A job goes QUEUED -> RUNNING -> ENDING -> DONE
 * (or QUEUED -> DONE when it never runs), its state changed in one place,
 * job_enter (run_state.h has the diagram). Whatever ends the run (exit,
 * timeout, a budget, cancellation), the whole process tree is killed before
 * the result is returned, and the job completes only when the leader is
 * reaped and both output pipes are closed, so nothing of a run outlives its
 * result: reaped, its budget finished, its out/ read, its files handed to
 * the remover, its result reported.
 *
 * It does not watch the running job (run_io.c) nor word its result
 * (run_result.c).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"
#include "run_budget.h"
#include "run_cleanup.h"
#include "run_job.h"
#include "warm.h"
#include "warm_child.h"
#include "zygote_cycle.h"

/* After the leader exits and the tree is killed, the pipes close at once; this
 * bounds the wait anyway, so a wedged pipe can never hold the executor. */
#define DRAIN_DEADLINE_US (2u * 1000000u)

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
		mcpx_ex_job_unlink(job);
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

static void job_reaped(void *arg, int rc, int status, const struct rusage *ru);

/* The run is over (its leader exited, its pipes drained): it is reaped,
 * for a child of a zygote by asking the zygote, whose answer comes on the
 * loop (job_reaped), so the loop never waits for it. */
static void job_complete(struct mcpx_job *job)
{
	int rc;

	/* Asked before the reap, while the run's zygote is still known. */
	job->parent_gone = mcpx_zygotes_parent_gone(&job->proc);
	job->reaping = true;
	mcpx_ex_end_channel(job->ex, job);
	rc = mcpx_sandbox_reap_async(&job->proc, job_reaped, job);
	if (rc < 0)
		job_reaped(job, rc, 0, NULL);
}

/* What a run that ran (not cancelled, its environment and setup whole)
 * leaves: its out/ files, then its workspace, whose variables count when
 * it ended by itself. Returns the files' outcome (0 when none were due). */
static int collect_outputs(struct mcpx_job *job, int setup_rc, struct mcpx_err *ferr)
{
	int files_rc;

	if (job->cancelled || job->env_failure || setup_rc < 0)
		return 0;
	files_rc = mcpx_ex_collect_files(job, ferr);
	if (files_rc == 0)
		mcpx_ex_ws_collect(job, !job->timed_out && !job->budget_limit);
	return files_rc;
}

/* The run is reaped: its result, its files handed to the remover, its
 * audit line, its caller told, the next run's turn. */
static void job_reaped(void *arg, int rc, int status, const struct rusage *rup)
{
	struct mcpx_job *job = arg;
	struct mcpx_executor *ex = job->ex;
	struct mcpx_job_result r;
	struct mcpx_run_usage usage;
	struct rusage ru = {0};
	int files_rc, setup_rc = 0;
	struct mcpx_err ferr = {{0}}, serr = {{0}};
	bool nested = job->has_bind && job->bind.nested;

	job->reaping = false;
	if (rc == 0 && rup)
		ru = *rup;
	else
		status = 0;
	/* A forked interpreter handed over while still entering its sandbox
	 * that never said ready: its error pipe says whether setup failed,
	 * which fails the run as a cold spawn's failed setup does. */
	if (job->warm && job->out.markers == MCPX_WARM_MARKERS_ALL)
		setup_rc = mcpx_sandbox_setup_verdict(&job->proc, &serr);
	job->env_failure =
	    setup_rc < 0 ? NULL : mcpx_ex_environment_failure(job, status, job->parent_gone);
	mcpx_run_budget_finish(job->link.budget, &usage);
	job->link.budget = NULL;
	if (!job->budget_limit)
		job->budget_limit = usage.limit;
	files_rc = collect_outputs(job, setup_rc, &ferr);
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
	if (job->state != MCPX_RUN_ENDING || job->ex->freeing || job->reaping)
		return;
	if (job->out.open || job->err.open || job->pid_open)
		return;
	if (mcpx_run_budget_settle(job->link.budget, budget_settled, job) == -EINPROGRESS)
		return;
	job_complete(job);
}

/* Completes a job that never ran (expired, shutdown, failed to start). */
void mcpx_ex_finish_unrun(struct mcpx_job *job, enum mcpx_job_status status, const char *msg,
                          const char *audit_status)
{
	struct mcpx_job_result r;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.exit_code = -1;
	r.queue_wait_ms = (mcpx_now_us() - job->enqueued_us) / 1000u;
	snprintf(r.message, sizeof(r.message), "%.*s", (int)sizeof(r.message) - 1, msg);
	mcpx_ex_job_enter(job, MCPX_RUN_DONE);
	mcpx_ex_audit(job, audit_status, &r);
	mcpx_ex_ws_before_done(job, &r);
	if (job->cb.done)
		job->cb.done(job->cb.arg, &r);
	mcpx_ex_ws_after_done(&r);
	mcpx_ex_job_free(job);
}
