/*
 * run_workspace.c - a workspace call's part of a run: the workspace written
 * into the workdir before the code starts, the workdir collected after the
 * run's whole process tree is gone, and the audit line that waits for the
 * save (run_job.h).
 *
 * The archive the exec tool loaded is the job's from submit: it is written
 * out when the run starts (workspace_files.h, beside the input files), and
 * then freed but for the previous variables and their names, which a run
 * that does not save its own (it was killed, or ended outside Python's own
 * exit) keeps. Those bytes are what the server holds for the run, so they
 * count towards its memory budget as the run channel's bytes do; the
 * restored files count towards its disk budget like anything in the
 * workdir (the tool checks they fit before the call is submitted).
 *
 * It does not talk to the store, take leases or decide what a call's
 * result says (the exec tool does, exec_workspace.c); nor does it parse the
 * variables, which only the run's Python reads.
 */
#include "run_job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "run_budget.h"

void mcpx_ex_ws_take(struct mcpx_job *job, struct mcpx_job_workspace *spec)
{
	job->has_ws = true;
	job->ws = *spec;
	snprintf(job->ws_name, sizeof(job->ws_name), "%s", spec->name ? spec->name : "");
	job->ws.name = job->ws_name;
	/* Ours from here on. */
	spec->blob = NULL;
	memset(&spec->pack, 0, sizeof(spec->pack));
}

/* Keeps the previous variables and names, frees the rest of the archive. */
static int keep_prev(struct mcpx_job *job)
{
	const struct mcpx_wspack *p = &job->ws.pack;
	size_t n = p->vars_len + p->names_len;

	if (n && !(job->ws_prev = malloc(n)))
		return -ENOMEM;
	if (p->vars_len)
		memcpy(job->ws_prev, p->vars, p->vars_len);
	if (p->names_len)
		memcpy(job->ws_prev + p->vars_len, p->names, p->names_len);
	job->ws_prev_vars = p->vars_len;
	job->ws_prev_names = p->names_len;
	job->ws_held = n;
	mcpx_wspack_free(&job->ws.pack);
	free(job->ws.blob);
	job->ws.blob = NULL;
	return 0;
}

int mcpx_ex_ws_restore(struct mcpx_job *job, const char *workdir,
                       const struct mcpx_runfiles_owner *own, struct mcpx_err *err)
{
	bool python = job->lang == MCPX_LANG_PYTHON;
	int rc;

	if (!job->has_ws)
		return 0;
	rc = mcpx_wsfiles_restore(&job->ws.pack, workdir, python, job->ws.vars_limit, own, err);
	if (rc < 0)
		return rc;
	job->ws_res.restored = job->ws.blob_len > 0;
	job->ws_res.restored_bytes = job->ws.pack.file_bytes + (python ? job->ws.pack.vars_len : 0);
	rc = keep_prev(job);
	if (rc < 0)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	return 0;
}

void mcpx_ex_ws_collect(struct mcpx_job *job, bool by_itself)
{
	struct mcpx_job_ws_result *res = &job->ws_res;
	struct mcpx_wsfiles_prev prev = {job->ws_prev, job->ws_prev_vars,
	                                 job->ws_prev ? job->ws_prev + job->ws_prev_vars : NULL,
	                                 job->ws_prev_names};
	struct mcpx_err err = {{0}};
	int wd, rc;

	if (!job->has_ws)
		return;
	wd = mcpx_sandbox_workdir_open(&job->proc);
	if (wd < 0) {
		res->rc = wd;
		snprintf(res->error, sizeof(res->error), "cannot open the workdir: %s",
		         strerror(-wd));
		return;
	}
	rc = mcpx_wsfiles_collect(wd, job->ex->sb->run_uid, &job->ws.caps, by_itself, &prev,
	                          &res->saved, &err);
	close(wd);
	res->collected = rc == 0;
	res->rc = rc;
	if (rc < 0)
		snprintf(res->error, sizeof(res->error), "%s", err.msg);
}

void mcpx_ex_ws_before_done(struct mcpx_job *job, struct mcpx_job_result *r)
{
	if (!job->has_ws)
		return;
	if (!job->ws_res.collected && !job->ws_res.rc && !job->ws_res.error[0])
		snprintf(job->ws_res.error, sizeof(job->ws_res.error), "%s",
		         r->status == MCPX_JOB_DONE ? "the run's workdir was not collected"
		                                    : "the code did not run");
	r->workspace = &job->ws_res;
	r->audit = job->ws_line;
	job->ws_line = NULL;
}

void mcpx_ex_ws_after_done(struct mcpx_job_result *r)
{
	/* The callback did not take the line: it is logged as it is. */
	if (r->audit)
		mcpx_audit_line_emit(r->audit);
	r->audit = NULL;
}

void mcpx_ex_ws_free(struct mcpx_job *job)
{
	if (!job->has_ws)
		return;
	if (job->ws_line)
		mcpx_audit_line_emit(job->ws_line);
	mcpx_wspack_free(&job->ws.pack);
	free(job->ws.blob);
	free(job->ws_prev);
	mcpx_wsfiles_saved_free(&job->ws_res.saved);
	job->has_ws = false;
}
