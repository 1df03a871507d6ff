/*
 * run_result.c - a run's end in words: its result (output, times, exit
 * code or signal), the limit that ended it (timeout, a budget, CPU, memory,
 * file size, processes: from the status and the end of stderr), whether its
 * environment failed rather than the program (a tool error, never a result
 * that blames the code), its out/ files read back, and its audit line.
 *
 * It does not end or reap anything: it is given a reaped run.
 */
#include "run_job.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "config.h"
#include "crypto.h"
#include "log.h"
#include "metrics.h"
#include "runfiles.h"

void mcpx_ex_audit(struct mcpx_job *job, const char *status, const struct mcpx_job_result *r)
{
	struct mcpx_audit_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.request_id = job->request_id;
	rec.task_id = job->task_id[0] ? job->task_id : NULL;
	rec.caller = job->caller;
	rec.profile = job->profile[0] ? job->profile : NULL;
	rec.client = job->client[0] ? job->client : NULL;
	mcpx_sha256_hex(job->code, job->code_len, rec.code_sha256);
	rec.code_bytes = job->code_len;
	rec.language = mcpx_lang_name(job->lang);
	rec.stdin_bytes = job->stdin_len;
	rec.status = status;
	rec.exit_code = r ? r->exit_code : -1;
	rec.signal = r ? r->signal : 0;
	rec.limit = r ? r->limit : NULL;
	rec.wall_ms = r ? r->duration_ms : 0;
	rec.cpu_ms = r ? r->cpu_ms : 0;
	rec.max_rss_kb = r ? r->max_rss_kb : 0;
	rec.queue_wait_ms = r ? r->queue_wait_ms : (mcpx_now_us() - job->enqueued_us) / 1000u;
	rec.output_bytes = job->out.buf.len + job->err.buf.len;
	rec.truncated = r ? r->truncated : false;
	rec.warm = job->warm;
	rec.run_id = job->run_id;
	if (job->has_bind) {
		rec.tool = job->bind.tool;
		rec.args_sha256 = job->bind.args_sha256;
		rec.args_bytes = job->bind.args_bytes;
		rec.source_sha256 = job->bind.source_sha256;
		rec.depth = job->bind.depth;
		rec.parent_run_id = job->bind.parent_run_id;
	}
	/* A workspace call's line waits for the save (run_workspace.c);
	 * a cancelled one has none. */
	if (job->has_ws && strcmp(status, "cancelled") != 0)
		job->ws_line = mcpx_audit_prepare(&rec);
	else
		mcpx_audit_log(&rec);
	mcpx_metrics_profile_run(
	    job->profile, !strcmp(status, "ok") && rec.exit_code != 0 ? "error_exit" : status);
	mcpx_metrics_execution(!strcmp(status, "ok") && rec.exit_code != 0 ? "error_exit" : status,
	                       rec.limit, (double)rec.wall_ms / 1000.0,
	                       (double)rec.queue_wait_ms / 1000.0);
}

/* Whether err holds a line starting with "MemoryError" (an uncaught
 * MemoryError's last traceback line, in whichever process of the run). */
static bool traceback_memory_error(const struct mcpx_buf *err)
{
	static const char word[] = "MemoryError";
	const char *p = err->data, *end;

	if (!err->len)
		return false;
	end = err->data + err->len;
	while ((size_t)(end - p) >= sizeof(word) - 1) {
		const char *hit = memmem(p, (size_t)(end - p), word, sizeof(word) - 1);

		if (!hit)
			return false;
		if (hit == err->data || hit[-1] == '\n')
			return true;
		p = hit + 1;
	}
	return false;
}

static const char *classify_limit(struct mcpx_job *job, int status, uint64_t cpu_ms, unsigned cpu_s)
{
	const char *tail;
	size_t n;

	if (job->timed_out)
		return "timeout";
	if (job->budget_limit)
		return job->budget_limit;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		if (sig == SIGXCPU || (sig == SIGKILL && cpu_ms + 50 >= (uint64_t)cpu_s * 1000u))
			return "cpu";
		if (sig == SIGXFSZ)
			return "file_size";
		/* V8 aborts when its heap (--max-old-space-size, the run's
		 * memory) or the address space runs out. */
		if (sig == SIGABRT && job->lang == MCPX_LANG_JAVASCRIPT && job->err.buf.len &&
		    (memmem(job->err.buf.data, job->err.buf.len, "heap out of memory", 18) ||
		     memmem(job->err.buf.data, job->err.buf.len, "Fatal process OOM", 17)))
			return "memory";
		return NULL;
	}
	/* Any process of the run that hit its memory limit (RLIMIT_AS) and
	 * died of it left a traceback ending in a line that starts with
	 * MemoryError on the run's stderr, which it shares with the leader;
	 * the leader may have carried on and exited 0. */
	if (job->ex->cfg->memory_mb && traceback_memory_error(&job->err.buf))
		return "memory";
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0 || !job->err.buf.len)
		return NULL;
	/* Python reports these limits as exceptions (Node and bash's tools as
	 * errors); look at the end of stderr, where the traceback's last line is. The label only
	 * describes the caller's own run, so a program printing these words fools no one else. */
	n = job->err.buf.len < 4096 ? job->err.buf.len : 4096;
	tail = job->err.buf.data + job->err.buf.len - n;
	if (memmem(tail, n, "MemoryError", 11) || memmem(tail, n, "Unable to allocate", 18) ||
	    memmem(tail, n, "Cannot allocate memory", 22) ||
	    memmem(tail, n, "Array buffer allocation failed", 30))
		return "memory";
	/* Node ignores SIGXFSZ, so its write fails with EFBIG instead. */
	if (memmem(tail, n, "File too large", 14) || memmem(tail, n, "file too large", 14))
		return "file_size";
	if (memmem(tail, n, "Resource temporarily unavailable", 32) ||
	    memmem(tail, n, "can't start new thread", 22))
		return "processes";
	return NULL;
}

/* Reads out/ back: called once the leader is reaped and the run's group
 * swept, so no process of the run can change it meanwhile (runfiles.h). */
int mcpx_ex_collect_files(struct mcpx_job *job, struct mcpx_err *err)
{
	const struct mcpx_config *cfg = job->ex->cfg;
	struct mcpx_runfiles_caps caps = {cfg->max_files_out, cfg->max_files_out_bytes};

	int wd = mcpx_sandbox_workdir_open(&job->proc), rc;

	if (wd < 0)
		return mcpx_err_set(err, -wd, "cannot open the workdir: %s", strerror(-wd));
	rc = mcpx_runfiles_collect(wd, job->ex->sb->run_uid, &caps, &job->out_files, err);
	close(wd);
	return rc;
}

/* Whether a run's end was a failure of its environment, not the program's
 * result, decided on evidence the server holds (docs/architecture.md,
 * "Error contract"):
 * - a warm interpreter that ended before saying it had the whole code
 *   (MCPX_WARM_TAKEN) never ran it, whatever ended it;
 * - a forked run killed by a SIGKILL the server did not send, whose zygote
 *   has exited: the zygote's death killed it (the child's parent-death
 *   signal). Run code cannot signal the zygote (Landlock's signal scope,
 *   which fork mode requires), so that was not the program's doing.
 * A run that kills itself, even with SIGKILL, keeps its result: its zygote
 * lives on, and it had its code. */
const char *mcpx_ex_environment_failure(const struct mcpx_job *job, int status, bool parent_gone)
{
	if (job->env_failure || job->cancelled)
		return job->env_failure;
	if (job->warm && job->out.markers)
		return "the warm interpreter ended before it had taken the code";
	if (job->timed_out || job->budget_limit)
		return NULL;
	if (parent_gone && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return "the fork server's zygote died during the run and took the run with it";
	return NULL;
}

/* The result of a run that ended (reaped): raw output, times, how it ended. */
void mcpx_ex_fill_result(struct mcpx_job *job, int status, const struct rusage *ru,
                         uint64_t budget_cpu_ms, struct mcpx_job_result *r)
{
	const struct mcpx_config *cfg = job->ex->cfg;
	unsigned cpu_s = cfg->cpu_s ? cfg->cpu_s : job->timeout_s;

	memset(r, 0, sizeof(*r));
	r->status = MCPX_JOB_DONE;
	r->stdout_buf = mcpx_buf_str(&job->out.buf);
	r->stdout_len = job->out.buf.len;
	r->stderr_buf = mcpx_buf_str(&job->err.buf);
	r->stderr_len = job->err.buf.len;
	r->duration_ms = (job->ended_us - job->started_us) / 1000u;
	r->queue_wait_ms = (job->started_us - job->enqueued_us) / 1000u;
	r->cpu_ms = (uint64_t)ru->ru_utime.tv_sec * 1000u + (uint64_t)ru->ru_utime.tv_usec / 1000u +
	            (uint64_t)ru->ru_stime.tv_sec * 1000u + (uint64_t)ru->ru_stime.tv_usec / 1000u;
	r->cpu_ms = r->cpu_ms > job->cpu_base_ms ? r->cpu_ms - job->cpu_base_ms : 0;
	r->cpu_ms += job->charged_us / 1000u;
	/* The budget's count also holds what no one's rusage does. */
	if (budget_cpu_ms > r->cpu_ms)
		r->cpu_ms = budget_cpu_ms;
	r->max_rss_kb = (uint64_t)ru->ru_maxrss;
	r->timed_out = job->timed_out;
	r->truncated = job->truncated;
	/* A run ended by its timeout or a budget was stopped, whatever its
	 * leader managed on its own meanwhile: a result never says both
	 * "exited normally" and "stopped by a limit" (the kill is SIGKILL). */
	if (WIFEXITED(status) && !job->timed_out && !job->budget_limit) {
		r->exit_code = WEXITSTATUS(status);
	} else {
		r->exit_code = -1;
		r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	}
	r->limit = classify_limit(job, status, r->cpu_ms, cpu_s);
}

/* Audits the run and hands the caller its result, or, when the environment
 * failed, a tool error: never a result that blames the code. */
void mcpx_ex_report(struct mcpx_job *job, struct mcpx_job_result *r)
{
	const char *status = job->timed_out ? "timeout" : r->signal ? "killed" : "ok";

	if (job->env_failure) {
		r->status = MCPX_JOB_FAILED;
		snprintf(r->message, sizeof(r->message),
		         "the execution environment failed: %s; no result of the program is "
		         "reported, and the call can be retried",
		         job->env_failure);
		mcpx_error("run failed: %s", r->message);
		status = "failed";
	} else if (r->status == MCPX_JOB_FAILED) {
		mcpx_error("run failed: %s", r->message);
		status = "failed";
	}
	if (job->cancelled) {
		mcpx_ex_audit(job, "cancelled", r);
		return;
	}
	mcpx_ex_audit(job, status, r);
	mcpx_ex_ws_before_done(job, r);
	if (job->cb.done)
		job->cb.done(job->cb.arg, r);
	mcpx_ex_ws_after_done(r);
}

/* A run whose interpreter's sandbox setup failed (setup, its message) or
 * whose out/ the server could not read (files): the server's failure, not
 * the program's result. NULL for each that did not fail. */
void mcpx_ex_result_failed(struct mcpx_job_result *r, const struct mcpx_err *setup,
                           const struct mcpx_err *files)
{
	if (setup) {
		r->status = MCPX_JOB_FAILED;
		snprintf(r->message, sizeof(r->message), "could not start the sandbox: %.200s",
		         setup->msg);
	} else if (files) {
		r->status = MCPX_JOB_FAILED;
		snprintf(r->message, sizeof(r->message),
		         "could not read the run's out/ files: %.200s", files->msg);
	}
}
