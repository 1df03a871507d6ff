/*
 * run_start.c - how a job's run starts, and what follows its end: the
 * run's limits (run_limits.h), the start path (its language's prepared
 * runtime through the table of prepared.h when one takes it, else a cold
 * spawn; a nested run always cold), where a prepared process may wait
 * (the warm mode decides it for every runtime), the run's input files, its
 * channel (the run_start hook) and its budget; the prepared runtimes told
 * when runs start and end.
 *
 * It never branches on a language: each one's prepared runtime is an
 * entry of the table. It starts the process; the job's state, its
 * supervision and its end are executor.c's, run_io.c's and run_end.c's
 * (which sit above it).
 */
#include "run_job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "prepared.h"
#include "run_budget.h"
#include "run_limits.h"
#include "runfiles.h"
#include "warm.h"
#include "warm_child.h"
#include "warm_pool.h"

/* Whether job's run gets a channel. */
static bool wants_channel(const struct mcpx_executor *ex, const struct mcpx_job *job)
{
	return (job->has_bind && job->bind.channel) ||
	       (ex->hooks.exec_wants_channel && ex->hooks.exec_wants_channel(ex->hooks.arg));
}

/* ---- the prepared runtimes (prepared.h) ---------------------------------- */

/* The warm path is on: a runtime may be prepared before its call. */
static bool allowed(const struct mcpx_executor *ex)
{
	return mcpx_warm_pool_mode(ex->warm) != MCPX_WARM_MODE_OFF;
}

/* A prepared process may wait beside a run: in fork-server mode, where each
 * run's Landlock domain is scoped from every other process. In after-reap
 * mode none may exist while a run lives. */
static bool beside(const struct mcpx_executor *ex)
{
	return mcpx_warm_pool_mode(ex->warm) == MCPX_WARM_MODE_FORK;
}

static void turn(const struct mcpx_executor *ex, enum mcpx_lang lang, struct mcpx_prepared_turn *t)
{
	memset(t, 0, sizeof(*t));
	t->lang = lang;
	t->allowed = allowed(ex);
	t->beside = beside(ex);
}

/* A run of lang is starting: what another language prepared may not wait
 * beside it unless the mode allows. */
static void end_beside(struct mcpx_executor *ex, enum mcpx_lang lang)
{
	if (beside(ex))
		return;
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (l != (size_t)lang && ex->prepared[l].ops)
			ex->prepared[l].ops->discard(ex->prepared[l].rt);
}

/* Whether the code alone says what the run imports: not a function's run
 * (its source comes on stdin), and not a workspace call, whose restore
 * imports the modules its saved variables came from (a plt kept from the
 * last call) although the code names none of them. */
static bool code_says_all(const struct mcpx_job *job)
{
	return !job->has_bind && !job->has_ws;
}

bool mcpx_ex_prepared_wait(struct mcpx_executor *ex, const struct mcpx_job *job,
                           void (*wake)(void *arg))
{
	const struct mcpx_prepared_ops *ops = ex->prepared[job->lang].ops;
	struct mcpx_prepared_call call = {
	    .code = job->code, .code_len = job->code_len, .scan = code_says_all(job)};

	return ops && ops->wait && ops->wait(ex->prepared[job->lang].rt, &call, wake, ex);
}

void mcpx_ex_prepared_call_queued(struct mcpx_executor *ex)
{
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (ex->prepared[l].ops && ex->prepared[l].ops->call_queued)
			ex->prepared[l].ops->call_queued(ex->prepared[l].rt);
}

void mcpx_ex_prepared_run_started(struct mcpx_executor *ex, const struct mcpx_job *job)
{
	struct mcpx_prepared_turn t;

	turn(ex, job->lang, &t);
	t.pgrp = job->proc.pid;
	t.arrived_us = job->enqueued_us;
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (ex->prepared[l].ops && ex->prepared[l].ops->run_started)
			ex->prepared[l].ops->run_started(ex->prepared[l].rt, &t);
}

/* After a run: the next job, and each prepared runtime's turn (the next
 * interpreter, whatever is due for the zygotes: renewal starts once the
 * response is on its way, not in front of the next call). A nested run
 * that ends while its caller still holds the slot leaves all of that to
 * the caller's end: the caller may be a leaving zygote's child, and in
 * after-reap mode nothing may be prepared beside a run. */
void mcpx_ex_after_run(struct mcpx_executor *ex)
{
	struct mcpx_prepared_turn t;

	if (ex->running || ex->cleaning)
		return;
	mcpx_ex_kick(ex);
	turn(ex, ex->last_lang, &t);
	for (size_t l = 0; l < MCPX_LANG_COUNT; l++)
		if (ex->prepared[l].ops)
			ex->prepared[l].ops->run_ended(ex->prepared[l].rt, &t);
}

/* A finished run's files are gone: the next run may start. */
void mcpx_ex_cleanup_done(void *arg)
{
	struct mcpx_executor *ex = arg;

	ex->cleaning--;
	if (!ex->freeing)
		mcpx_ex_after_run(ex);
}

/* The run's out/ directory and input files go into its workdir before its
 * code starts (runfiles.h). */
static int fill_workdir(void *arg, const char *workdir, struct mcpx_err *err)
{
	struct mcpx_job *job = arg;
	const struct mcpx_sandbox *sb = job->ex->sb;
	struct mcpx_runfiles_owner own = {sb->layers.uid_drop, sb->run_uid, sb->run_gid};
	int rc = mcpx_ex_ws_restore(job, workdir, &own, err);

	return rc < 0 ? rc : mcpx_runfiles_write(job->files, workdir, &own, err);
}

/* Starts the run's process: its language's prepared runtime when one takes
 * it, else cold. A nested call always starts cold: what is prepared
 * belongs to the next queued run, and in after-reap mode nothing may exist
 * beside a run anyway. */
int mcpx_ex_spawn(struct mcpx_executor *ex, struct mcpx_job *job, struct mcpx_err *err)
{
	bool nested = job->has_bind && job->bind.nested;
	const struct mcpx_prepared_ops *ops = nested ? NULL : ex->prepared[job->lang].ops;
	struct mcpx_workdir_fill fill = {fill_workdir, job};
	struct mcpx_prepared_run run;
	struct mcpx_limits lim;
	int rc;

	mcpx_run_limits(ex->cfg, mcpx_run_cpu_s(ex->cfg, job->timeout_s), job->memory_mb,
	                wants_channel(ex, job), &lim);
	if (!nested) {
		ex->last_lang = job->lang;
		end_beside(ex, job->lang);
	}
	if (ops) {
		struct mcpx_prepared_call call = {.lim = &lim,
		                                  .code = job->code,
		                                  .code_len = job->code_len,
		                                  .stdin_data = job->stdin_data,
		                                  .stdin_len = job->stdin_len,
		                                  .fill = &fill,
		                                  .allowed = allowed(ex),
		                                  .scan = code_says_all(job)};

		rc = ops->take(ex->prepared[job->lang].rt, ex->loop, &call, &run, err);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			job->proc = run.proc;
			job->cpu_base_ms = run.cpu_base_ms;
			job->out.markers = run.markers;
			job->feed = run.feed;
			job->feed_len = run.feed_len;
			job->warm = true;
			return 0;
		}
		/* One still preparing stays for the next call only where it
		 * may wait beside this one. */
		if (!beside(ex))
			ops->discard(ex->prepared[job->lang].rt);
	}
	return mcpx_sandbox_spawn_lang(ex->sb, &lim, job->lang, job->code, job->code_len, &fill,
	                               &job->proc, err);
}

/* When the run's wall clock ends, counted from from: its timeout, and for a
 * nested run no later than its caller's (which then ends both anyway). */
uint64_t mcpx_ex_run_deadline_us(const struct mcpx_job *job, uint64_t from)
{
	uint64_t d = from + (uint64_t)job->timeout_s * 1000000u;
	const struct mcpx_job *caller = mcpx_ex_job_caller(job);

	if (caller && caller->deadline_us && caller->deadline_us < d)
		d = caller->deadline_us;
	return d;
}

/* What the server holds for the run is the run's memory (run_budget.h). */
static void held_changed(void *arg, uint64_t bytes)
{
	struct mcpx_job *job = arg;

	job->egress_held = bytes;
	/* A workspace's previous variables are held for the run as well. */
	mcpx_run_budget_held(job->link.budget, bytes + job->ws_held);
}

/* A run with a channel is served by the run_start hook until it ends.
 * Without a server side the run's end sees EOF, and mcpx.fetch says so. */
void mcpx_ex_start_egress(struct mcpx_executor *ex, struct mcpx_job *job)
{
	struct mcpx_run_info info = {.run_id = job->run_id,
	                             .request_id = job->request_id,
	                             .caller = job->caller,
	                             .deadline_us = mcpx_ex_run_deadline_us(job, job->started_us),
	                             .held = held_changed,
	                             .held_arg = job};

	if (job->proc.channel_fd < 0 || !ex->hooks.run_start)
		return;
	if (job->has_bind) {
		info.serve = job->bind.serve;
		info.depth = job->bind.depth;
	}
	job->egress = ex->hooks.run_start(ex->hooks.arg, &job->proc.channel_fd, &info);
	if (!job->egress)
		mcpx_error("run %s: nobody could take its channel", job->run_id);
}

static void budget_exceeded(void *arg, const char *limit)
{
	struct mcpx_job *job = arg;

	if (!job->budget_limit)
		job->budget_limit = limit;
	mcpx_ex_kill_tree(job);
}

/* Holds the run as a whole to its budget (run_budget.h); a warm interpreter
 * is still waiting for its code here, so all it will start is counted. A
 * nested run (mcpx.call) joins its caller's budget instead: what it uses
 * counts against the calling run's limits, and the budget ends both.
 * -ESRCH: a nested run whose caller is gone or no longer has a budget. */
int mcpx_ex_start_budget(struct mcpx_job *job, unsigned cpu_s)
{
	const struct mcpx_config *cfg = job->ex->cfg;
	struct mcpx_job *caller;
	struct mcpx_budget_limits lim = {
	    .memory_kb = (uint64_t)job->memory_mb * 1024u,
	    .disk_kb = (uint64_t)cfg->max_disk_mb * 1024u,
	    .cpu_ms = (uint64_t)cpu_s * 1000u,
	    .max_procs = cfg->max_procs,
	};

	if (job->has_bind && job->bind.nested) {
		caller = mcpx_ex_job_caller(job);
		if (!caller || !caller->link.budget)
			return -ESRCH;
		/* Linked under its caller since submit: the outermost run's
		 * readings find it through link.budget. */
		return mcpx_run_budget_join(caller->link.budget, &job->proc, budget_exceeded, job,
		                            &job->link.budget);
	}
	return mcpx_run_budget_start(job->ex->budget, job->ex->loop, &lim, &job->proc,
	                             job->cpu_base_ms, &job->link, budget_exceeded, job,
	                             &job->link.budget);
}
