/*
 * run_queue.c - the executor's admission and queue: the queue's cap, each
 * caller's share of it (fair_queue.h), a bounded FIFO queue, nested jobs
 * kept beside the running one (their caller holds the slot), which job
 * starts next (callers take turns), and the kick that starts it on a fresh
 * loop iteration.
 *
 * It starts no job and keeps no timer of one (executor.c does both).
 */
#include "run_job.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fair_queue.h"
#include "metrics.h"
#include "profile_limits.h"
#include "warm_pool.h"

/* Starts the next job on a fresh loop iteration, so callbacks that submit
 * or cancel never re-enter a job that is being torn down (the timer's
 * callback, executor.c's, is set when the executor is made). */
void mcpx_ex_kick(struct mcpx_executor *ex)
{
	mcpx_timer_start(ex->loop, &ex->kick, 0);
}

void mcpx_ex_queue_remove(struct mcpx_executor *ex, struct mcpx_job *job)
{
	struct mcpx_job **pp = &ex->queue_head, *prev = NULL;
	for (; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			if (ex->queue_tail == job)
				ex->queue_tail = prev;
			ex->queue_len--;
			job->next = NULL;
			mcpx_fair_leave(ex->fair, job->caller);
			return;
		}
	}
}

void mcpx_ex_side_remove(struct mcpx_executor *ex, struct mcpx_job *job)
{
	for (struct mcpx_job **pp = &ex->side; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			job->next = NULL;
			return;
		}
	}
}

/* The caller's share: its queued runs and its rate (fair_queue.h). */
static int admit_share(struct mcpx_executor *ex, const struct mcpx_job_spec *spec)
{
	const struct mcpx_profile_limits *l = spec->limits;
	int rc = mcpx_fair_admit(ex->fair, spec->caller ? spec->caller : "", l ? l->max_queued : 0,
	                         l ? l->runs_per_minute : 0, mcpx_now_us(), &ex->retry_after_s);

	if (rc == -EBUSY) {
		mcpx_metrics_execution("busy", NULL, 0, 0);
		mcpx_metrics_profile_run(spec->profile, "busy");
		snprintf(ex->share_msg, sizeof(ex->share_msg),
		         "server busy for this caller: %u of its executions already wait "
		         "(max_queued of profile %.64s); try again when one has started",
		         l->max_queued, spec->profile ? spec->profile : "");
		return -EUSERS;
	}
	if (rc == -EAGAIN) {
		mcpx_metrics_profile_run(spec->profile, "rate_limited");
		snprintf(ex->share_msg, sizeof(ex->share_msg),
		         "rate limited: this caller may start %u executions a minute "
		         "(runs_per_minute of profile %.64s); retry after %u s",
		         l->runs_per_minute, spec->profile ? spec->profile : "", ex->retry_after_s);
	}
	return rc;
}

/* Whether a job that is not nested may join the queue: its cap (unless
 * the executor is idle) and its caller's share. 0, -EBUSY, -EUSERS or
 * -EAGAIN (the share's reason in ex->share_msg). */
int mcpx_ex_admit(struct mcpx_executor *ex, const struct mcpx_job_spec *spec, bool idle)
{
	if (!idle && ex->queue_len >= ex->cfg->max_queue) {
		mcpx_metrics_execution("busy", NULL, 0, 0);
		mcpx_metrics_profile_run(spec->profile, "busy");
		return -EBUSY;
	}
	return admit_share(ex, spec);
}

/* Appends job to the queue, counted in its caller's share. */
void mcpx_ex_enqueue(struct mcpx_executor *ex, struct mcpx_job *job)
{
	if (ex->queue_tail)
		ex->queue_tail->next = job;
	else
		ex->queue_head = job;
	ex->queue_tail = job;
	ex->queue_len++;
	mcpx_fair_enter(ex->fair, job->caller);
}

/* Takes the next job off the queue (not empty): callers take turns, the
 * oldest job of the caller served longest ago (the queue is short:
 * MCP_EXEC_MAX_QUEUE). */
struct mcpx_job *mcpx_ex_queue_next(const struct mcpx_executor *ex)
{
	struct mcpx_job *job = ex->queue_head;

	for (struct mcpx_job *j = job->next; j; j = j->next)
		if (mcpx_fair_last_served(ex->fair, j->caller) <
		    mcpx_fair_last_served(ex->fair, job->caller))
			job = j;
	return job;
}

struct mcpx_job *mcpx_ex_next_queued(struct mcpx_executor *ex)
{
	struct mcpx_job *job = mcpx_ex_queue_next(ex);

	mcpx_ex_queue_remove(ex, job);
	mcpx_fair_served(ex->fair, job->caller);
	return job;
}

unsigned mcpx_executor_retry_after(const struct mcpx_executor *ex)
{
	return ex->retry_after_s ? ex->retry_after_s : 1;
}

void mcpx_executor_share_text(const struct mcpx_executor *ex, char *msg, size_t len)
{
	snprintf(msg, len, "%s", ex->share_msg);
}
