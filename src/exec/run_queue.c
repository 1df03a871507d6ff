/*
 * run_queue.c - the executor's admission and queue: the queue's cap, each
 * caller's share of it (fair_queue.h), a bounded FIFO queue with a
 * queue-timeout timer per job, nested jobs kept beside the running one
 * (their caller holds the slot), and which job starts next (callers take
 * turns; none while a run, a nested run or a removal is under way, nor
 * before the first zygote is proven).
 *
 * It does not start a job (run_start.c does) nor decide its result.
 */
#include "executor_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fair_queue.h"
#include "metrics.h"
#include "profile_limits.h"
#include "warm_pool.h"

/* How often a queued run looks whether the first zygote is proven. */
#define START_WAIT_POLL_US 5000u

static void start_next(struct mcpx_executor *ex);

static void kick_cb(struct mcpx_timer *t)
{
	start_next(t->arg);
}

/* Defers starting the next job to a fresh loop iteration, so callbacks that
 * submit or cancel never re-enter a job that is being torn down. */
void mcpx_ex_kick(struct mcpx_executor *ex)
{
	ex->kick.fn = kick_cb;
	ex->kick.arg = ex;
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

	mcpx_ex_start_job(job->ex, job);
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

unsigned mcpx_executor_retry_after(const struct mcpx_executor *ex)
{
	return ex->retry_after_s ? ex->retry_after_s : 1;
}

void mcpx_executor_share_text(const struct mcpx_executor *ex, char *msg, size_t len)
{
	snprintf(msg, len, "%s", ex->share_msg);
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
	if (!nested && !idle && ex->queue_len >= ex->cfg->max_queue) {
		mcpx_metrics_execution("busy", NULL, 0, 0);
		mcpx_metrics_profile_run(spec->profile, "busy");
		return -EBUSY;
	}
	if (!nested && (rc = admit_share(ex, spec)) < 0)
		return rc;
	job = mcpx_ex_job_new(ex, spec, cb);
	if (!job)
		return -ENOMEM;
	job->files = spec->files; /* accepted: ours from here on */
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
	if (ex->queue_tail)
		ex->queue_tail->next = job;
	else
		ex->queue_head = job;
	ex->queue_tail = job;
	ex->queue_len++;
	mcpx_fair_enter(ex->fair, job->caller);

	if (!idle && job->cb.event)
		job->cb.event(job->cb.arg, MCPX_JOB_QUEUED, ex->queue_len);
	if (ex->running)
		mcpx_warm_pool_call_waiting(ex->warm);
	job->queue_timer.fn = queue_timer_cb;
	mcpx_timer_start(ex->loop, &job->queue_timer,
	                 (uint64_t)ex->cfg->queue_timeout_s * 1000000u);
	mcpx_ex_kick(ex);
	return 0;
}

static void wake_cb(void *arg)
{
	mcpx_ex_kick(arg);
}

static void start_next(struct mcpx_executor *ex)
{
	struct mcpx_job *job;

	/* Nor beside a nested run still being torn down after its caller
	 * ended: its /dev/shm wipe is by group and time (job_complete). */
	if (ex->running || ex->cleaning || ex->side || !ex->queue_head)
		return;
	if (mcpx_warm_pool_starting(ex->warm)) {
		/* The first zygote is being proven: runs wait for it (so none
		 * starts before its self-test), the protocol does not. */
		ex->kick.fn = kick_cb;
		ex->kick.arg = ex;
		mcpx_timer_start(ex->loop, &ex->kick, START_WAIT_POLL_US);
		return;
	}
	/* Its forked child's pid is still on its way from the zygote: the
	 * loop serves others meanwhile, and the pool kicks again. */
	if (mcpx_warm_pool_wait(ex->warm, wake_cb, ex))
		return;
	/* Callers take turns: the oldest job of the caller served longest
	 * ago (the queue is short: MCP_EXEC_MAX_QUEUE). */
	job = ex->queue_head;
	for (struct mcpx_job *j = job->next; j; j = j->next)
		if (mcpx_fair_last_served(ex->fair, j->caller) <
		    mcpx_fair_last_served(ex->fair, job->caller))
			job = j;
	/* Draining: one whose timeout would outlast the drain is answered
	 * instead, and the next one is tried on the next turn. */
	if (mcpx_ex_drain_refuses(ex, job)) {
		mcpx_ex_kick(ex);
		return;
	}
	mcpx_ex_queue_remove(ex, job);
	mcpx_fair_served(ex->fair, job->caller);
	mcpx_ex_start_job(ex, job);
}
