/*
 * run_start.c - how a job's run starts, and what follows its end: the choice
 * of start path (the warm interpreter the warm pool prepared, the prepared
 * bash waiting at its gate, or a cold spawn; a nested run always cold), a
 * warm interpreter's feed (header, code, stdin), the run's input files, its
 * channel (the run_start hook) and its budget; after a run, the next job and
 * the warm pool's and prepared bash's turn.
 *
 * The one place the executor branches on language to use a prepared
 * runtime. It starts the process; the job's state, its supervision and its
 * end are executor.c's, run_io.c's and run_end.c's (which sit above it).
 */
#include "run_job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bash_pool.h"
#include "config.h"
#include "log.h"
#include "run_budget.h"
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

/* Where a prepared bash may wait (bash_pool.h), as the warm interpreter
 * may: in fork-server mode beside any run, each in a Landlock domain scoped
 * from the others; in after-reap mode only while no run lives: it is
 * prepared once a bash run has been reaped, and ended before any other
 * run starts (bash_end_beside). Never where the warm path is off. */
static bool bash_may_wait(const struct mcpx_executor *ex)
{
	enum mcpx_warm_mode m = mcpx_warm_pool_mode(ex->warm);

	return m == MCPX_WARM_MODE_FORK || m == MCPX_WARM_MODE_AFTER_REAP;
}

/* After-reap mode prepares the next bash only after a bash run, so that a
 * stream of other calls does not prepare and end one per call. */
static bool bash_prepare_next(const struct mcpx_executor *ex)
{
	enum mcpx_warm_mode m = mcpx_warm_pool_mode(ex->warm);

	return m == MCPX_WARM_MODE_FORK ||
	       (m == MCPX_WARM_MODE_AFTER_REAP && ex->last_lang == MCPX_LANG_BASH);
}

/* A run that is not bash is starting: in after-reap mode nothing prepared
 * may wait beside it. */
static void bash_end_beside(struct mcpx_executor *ex)
{
	if (mcpx_warm_pool_mode(ex->warm) != MCPX_WARM_MODE_FORK)
		mcpx_bash_pool_discard(ex->bash);
}

/* After a run: the next job, and the warm pool's turn (the next
 * interpreter, whatever is due for the zygotes: renewal starts once the
 * response is on its way, not in front of the next call). A nested run
 * that ends while its caller still holds the slot leaves all of that to
 * the caller's end: the caller may be a leaving zygote's child, and in
 * after-reap mode no interpreter may be prepared beside a run. */
void mcpx_ex_after_run(struct mcpx_executor *ex)
{
	if (ex->running || ex->cleaning)
		return;
	mcpx_ex_kick(ex);
	mcpx_warm_pool_run_ended(ex->warm);
	mcpx_bash_pool_run_ended(ex->bash, bash_prepare_next(ex));
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

	return mcpx_runfiles_write(job->files, workdir, &own, err);
}

/* A warm interpreter gets main.py in its workdir and, on stdin, the header,
 * the code and the run's own stdin. On failure it is ended here. */
static int prepare_feed(struct mcpx_executor *ex, struct mcpx_job *job, unsigned cpu_s,
                        struct mcpx_err *err)
{
	char hdr[64];
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), job->code_len, cpu_s);
	int rc;

	job->feed_len = hlen + job->code_len + job->stdin_len;
	job->feed = hlen ? malloc(job->feed_len) : NULL;
	if (!job->feed)
		rc = mcpx_err_set(err, ENOMEM, "out of memory");
	else
		rc = fill_workdir(job, job->proc.workdir, err);
	if (rc == 0)
		rc = mcpx_sandbox_write_main(ex->sb, &job->proc, job->code, job->code_len, err);
	if (rc < 0) {
		mcpx_sandbox_kill(&job->proc);
		mcpx_sandbox_cleanup(&job->proc);
		return rc;
	}
	memcpy(job->feed, hdr, hlen);
	memcpy(job->feed + hlen, job->code, job->code_len);
	if (job->stdin_len)
		memcpy(job->feed + hlen + job->code_len, job->stdin_data, job->stdin_len);
	job->warm = true;
	return 0;
}

/* Starts the run's process: a warm interpreter when one is ready, else
 * cold. A nested call always starts cold: the warm interpreter belongs to
 * the next queued run, and in after-reap mode none may exist beside a run
 * anyway. */
int mcpx_ex_spawn(struct mcpx_executor *ex, struct mcpx_job *job, struct mcpx_err *err)
{
	bool nested = job->has_bind && job->bind.nested;
	struct mcpx_workdir_fill fill = {fill_workdir, job};
	struct mcpx_limits lim;

	memset(&lim, 0, sizeof(lim));
	lim.cpu_s = ex->cfg->cpu_s ? ex->cfg->cpu_s : job->timeout_s;
	lim.memory_mb = job->memory_mb;
	lim.max_procs = ex->cfg->max_procs;
	lim.file_mb = mcpx_config_file_mb(ex->cfg);
	lim.open_files = 256;
	lim.channel = wants_channel(ex, job);
	/* Bash and JavaScript start cold: the prepared interpreter is
	 * Python's (and in after-reap mode none may wait beside a run). */
	if (!nested)
		ex->last_lang = job->lang;
	if (!nested && job->lang != MCPX_LANG_BASH)
		bash_end_beside(ex);
	if (job->lang != MCPX_LANG_PYTHON) {
		if (!nested)
			mcpx_warm_pool_cold_run(ex->warm);
		if (!nested && job->lang == MCPX_LANG_BASH) {
			if (mcpx_bash_pool_take(ex->bash, bash_may_wait(ex), &lim, job->code,
			                        job->code_len, &fill, &job->proc,
			                        &job->cpu_base_ms) > 0) {
				job->warm = true;
				return 0;
			}
			/* One still starting stays for the next call only where
			 * it may wait beside this one. */
			bash_end_beside(ex);
		}
		return mcpx_sandbox_spawn_lang(ex->sb, &lim, job->lang, job->code, job->code_len,
		                               &fill, &job->proc, err);
	}
	if (!nested) {
		bool ready_pending;
		int rc = mcpx_warm_pool_take(ex->warm, &job->proc, lim.channel, &ready_pending,
		                             &job->cpu_base_ms, err);

		if (rc < 0)
			return rc;
		if (rc > 0) {
			job->out.markers =
			    ready_pending ? MCPX_WARM_MARKERS_ALL : MCPX_WARM_MARKERS_TAKEN;
			return prepare_feed(ex, job, lim.cpu_s, err);
		}
	}
	return mcpx_sandbox_spawn_filled(ex->sb, &lim, job->code, job->code_len, &fill, &job->proc,
	                                 err);
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
	mcpx_run_budget_held(job->link.budget, bytes);
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
