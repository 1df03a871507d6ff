/*
 * run_job.c - a job of the executor: made (copies of the submitter's code,
 * stdin, ids and bind; a fresh run id), freed (code, stdin and feed wiped),
 * linked to the run that called it (run_link.h), killed as a whole tree,
 * and its channel's end told to the run_end hook.
 *
 * The bottom of the executor's files (run_job.h): it calls none of them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "profile_limits.h"
#include "run_budget.h"
#include "run_job.h"

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
	snprintf(job->task_id, sizeof(job->task_id), "%s", spec->task_id ? spec->task_id : "");
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
	mcpx_ex_ws_free(job);
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
void mcpx_ex_job_unlink(struct mcpx_job *job)
{
	struct mcpx_run_link *n;

	while ((n = job->link.nested)) {
		mcpx_run_link_remove(n);
		if (job->link.caller && job_of(n)->state != MCPX_RUN_QUEUED)
			mcpx_run_link_add(job->link.caller, n);
	}
	mcpx_run_link_remove(&job->link);
}

/* ---- running a job ---- */

void mcpx_ex_kill_tree(struct mcpx_job *job)
{
	mcpx_run_budget_kill(job->link.budget);
	mcpx_sandbox_kill(&job->proc);
}

/* The run's channel is no longer served (its requests are cancelled). */
void mcpx_ex_end_channel(struct mcpx_executor *ex, struct mcpx_job *job)
{
	if (job->egress && ex->hooks.run_end)
		ex->hooks.run_end(ex->hooks.arg, job->egress);
	job->egress = NULL;
}
