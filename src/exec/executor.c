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
 * This module does not know about MCP or JSON; it reports raw bytes and
 * numbers to the caller's callback and writes the audit line.
 */
#include "executor.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "bash_pool.h"
#include "buf.h"
#include "caller.h"
#include "config.h"
#include "crypto.h"
#include "fair_queue.h"
#include "log.h"
#include "metrics.h"
#include "profile_limits.h"
#include "procstat.h"
#include "runfiles.h"
#include "run_budget.h"
#include "offload.h"
#include "run_cleanup.h"
#include "run_link.h"
#include "run_state.h"
#include "warm.h"
#include "warm_child.h"
#include "warm_pool.h"
#include "zygote_cycle.h"

/* After the leader exits and the tree is killed, the pipes close at once; this
 * bounds the wait anyway, so a wedged pipe can never hold the executor. */
#define DRAIN_DEADLINE_US (2u * 1000000u)
#define STDIN_RETRY_US 2000u
/* How often a queued run looks whether the first zygote is proven. */
#define START_WAIT_POLL_US 5000u

struct job_stream {
	struct mcpx_watch watch;
	struct mcpx_job *job;
	struct mcpx_buf buf; /* capped at the combined output cap */
	bool open;
	/* Bytes of a warm interpreter's protocol still to come before the
	 * program's output (warm.h): READY (when it had not arrived when the
	 * run started), then TAKEN. */
	unsigned markers;
};

struct mcpx_job {
	struct mcpx_executor *ex;
	struct mcpx_job *next; /* queue link */
	enum mcpx_run_state state; /* changed by job_enter only (run_state.h) */
	/* Which run called which (run_link.h): a nested job is linked under
	 * its caller's job from submit until it is DONE; a caller that is
	 * DONE first detaches its nested jobs (job_unlink). link.budget is
	 * the run's budget (run_budget.h) while it has one. */
	struct mcpx_run_link link;

	char *code;
	size_t code_len;
	enum mcpx_lang lang;
	char *stdin_data;
	size_t stdin_len, stdin_off;
	unsigned timeout_s;
	char request_id[128];
	char caller[MCPX_CALLER_MAX];
	char profile[65];
	char client[160];
	unsigned memory_mb; /* the run's memory: the server's, or its profile's if lower */
	char run_id[17]; /* joins the run's audit line and its egress lines */
	void *egress;         /* the run_start hook's handle for the run's channel */
	uint64_t egress_held; /* bytes the server holds for the run */
	uint64_t charged_us;  /* server CPU spent for it elsewhere (validation) */
	/* Not exec's run: a copy of the submitter's bind, whose strings point
	 * at the arrays below. */
	bool has_bind;
	struct mcpx_job_bind bind;
	char tool[129], args_sha256[65], source_sha256[65], parent_run_id[17];
	struct mcpx_job_callbacks cb;
	bool cancelled;
	bool warm; /* served by a warm interpreter */
	uint64_t cpu_base_ms; /* warm: CPU the preload used before the code arrived */
	char *feed; /* warm: header + code + stdin, fed to the interpreter */
	size_t feed_len;
	struct mcpx_runfiles_in *files;     /* input files, or NULL */
	struct mcpx_runfiles_out out_files; /* out/, read after the run */

	uint64_t enqueued_us, started_us, ended_us;
	uint64_t deadline_us; /* when its wall clock ends (set once supervised) */
	struct mcpx_timer queue_timer;

	/* Running state. */
	struct mcpx_sandbox_proc proc;
	struct job_stream out, err;
	struct mcpx_watch pid_watch;
	bool pid_open;
	bool timed_out;
	bool truncated;             /* output beyond the cap was dropped */
	const char *env_failure;    /* set: the environment failed, not the program */
	const char *budget_limit;   /* the budget that ended it */
	struct mcpx_timer wall_timer;
	struct mcpx_timer drain_timer;
	struct mcpx_timer stdin_timer;
};

struct mcpx_executor {
	struct mcpx_loop *loop;
	const struct mcpx_config *cfg;
	const struct mcpx_sandbox *sb;
	struct mcpx_executor_hooks hooks; /* zeroed: no run gets a channel */
	struct mcpx_job *queue_head, *queue_tail;
	size_t queue_len;
	struct mcpx_fair *fair; /* each caller's share of the queue */
	unsigned retry_after_s; /* of the last -EAGAIN */
	char share_msg[256];    /* why the last -EUSERS or -EAGAIN */
	struct mcpx_job *running;
	struct mcpx_job *side; /* nested jobs, beside the running one */
	bool draining;
	bool freeing;
	uint64_t completed;
	struct mcpx_timer kick;

	/* Threads that walk and remove runs' files, off the loop: one for the
	 * budget's disk readings (run_budget.h), one for the removal of
	 * finished runs' files (run_cleanup.h), so no reading waits behind a
	 * removal (a run's nested calls could otherwise keep its own readings
	 * waiting). While any removal is under way no run starts. */
	struct mcpx_offload *walker, *remover;
	unsigned cleaning;

	/* The next run's interpreter, prepared in advance (warm_pool.h). */
	struct mcpx_warm_pool *warm;
	struct mcpx_bash_pool *bash; /* the next bash run, waiting at its gate */
	enum mcpx_lang last_lang;     /* of the last run that was not nested */
	struct mcpx_budget *budget; /* how runs are held to their budget */
};

static void start_next(struct mcpx_executor *ex);
static void start_job(struct mcpx_executor *ex, struct mcpx_job *job);
static int job_enter(struct mcpx_job *job, enum mcpx_run_state next);

static void kick_cb(struct mcpx_timer *t)
{
	start_next(t->arg);
}

/* Defers starting the next job to a fresh loop iteration, so callbacks that
 * submit or cancel never re-enter a job that is being torn down. */
static void kick(struct mcpx_executor *ex)
{
	ex->kick.fn = kick_cb;
	ex->kick.arg = ex;
	mcpx_timer_start(ex->loop, &ex->kick, 0);
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

static void job_free(struct mcpx_job *job)
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

static void queue_remove(struct mcpx_executor *ex, struct mcpx_job *job)
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

/* ---- which run called which (run_link.h) ---- */

static struct mcpx_job *job_of(struct mcpx_run_link *l)
{
	return (struct mcpx_job *)((char *)l - offsetof(struct mcpx_job, link));
}

/* The run that called a nested job, while it is there: linked at submit,
 * detached when the caller is DONE. NULL for any other job. */
static struct mcpx_job *job_caller(const struct mcpx_job *job)
{
	return job->link.caller ? job_of(job->link.caller) : NULL;
}

/* The started or nested job whose run is run_id, or NULL: where a nested
 * call names its caller (once, at submit) and where CPU spent elsewhere is
 * charged. */
static struct mcpx_job *job_by_run_id(struct mcpx_executor *ex, const char *run_id)
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

static void audit(const struct mcpx_job *job, const char *status, const struct mcpx_job_result *r)
{
	struct mcpx_audit_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.request_id = job->request_id;
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
	rec.queue_wait_ms = r ? r->queue_wait_ms
			      : (mcpx_now_us() - job->enqueued_us) / 1000u;
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
	mcpx_audit_log(&rec);
	mcpx_metrics_profile_run(
	    job->profile, !strcmp(status, "ok") && rec.exit_code != 0 ? "error_exit" : status);
	mcpx_metrics_execution(!strcmp(status, "ok") && rec.exit_code != 0 ? "error_exit" : status,
			       rec.limit, (double)rec.wall_ms / 1000.0, (double)rec.queue_wait_ms / 1000.0);
}

/* Completes a job that never ran (expired, shutdown, failed to start). */
static void finish_unrun(struct mcpx_job *job, enum mcpx_job_status status, const char *msg,
			 const char *audit_status)
{
	struct mcpx_job_result r;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.exit_code = -1;
	r.queue_wait_ms = (mcpx_now_us() - job->enqueued_us) / 1000u;
	snprintf(r.message, sizeof(r.message), "%.*s", (int)sizeof(r.message) - 1, msg);
	job_enter(job, MCPX_RUN_DONE);
	audit(job, audit_status, &r);
	if (job->cb.done)
		job->cb.done(job->cb.arg, &r);
	job_free(job);
}

static void queue_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	char msg[160];

	queue_remove(job->ex, job);
	snprintf(msg, sizeof(msg),
		 "execution waited %us in the queue without starting (MCP_EXEC_QUEUE_TIMEOUT_S); "
		 "the server is busy, try again later",
		 job->ex->cfg->queue_timeout_s);
	finish_unrun(job, MCPX_JOB_EXPIRED, msg, "expired");
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
static struct mcpx_job *job_new(struct mcpx_executor *ex, const struct mcpx_job_spec *spec,
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
	snprintf(job->request_id, sizeof(job->request_id), "%s", spec->request_id ? spec->request_id : "");
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
	job_free(job);
	return NULL;
}

static void side_remove(struct mcpx_executor *ex, struct mcpx_job *job)
{
	for (struct mcpx_job **pp = &ex->side; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			job->next = NULL;
			return;
		}
	}
}

static void nested_start_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;

	start_job(job->ex, job);
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
	job = job_new(ex, spec, cb);
	if (!job)
		return -ENOMEM;
	job->files = spec->files; /* accepted: ours from here on */
	*out = job;
	job->queue_timer.arg = job;
	if (nested) {
		struct mcpx_job *caller =
		    spec->bind->parent_run_id ? job_by_run_id(ex, spec->bind->parent_run_id) : NULL;

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
	mcpx_timer_start(ex->loop, &job->queue_timer, (uint64_t)ex->cfg->queue_timeout_s * 1000000u);
	kick(ex);
	return 0;
}


/* Whether job's run gets a channel. */
static bool wants_channel(const struct mcpx_executor *ex, const struct mcpx_job *job)
{
	return (job->has_bind && job->bind.channel) ||
	       (ex->hooks.exec_wants_channel && ex->hooks.exec_wants_channel(ex->hooks.arg));
}

/* The run's channel is no longer served (its requests are cancelled). */
static void end_channel(struct mcpx_executor *ex, struct mcpx_job *job)
{
	if (job->egress && ex->hooks.run_end)
		ex->hooks.run_end(ex->hooks.arg, job->egress);
	job->egress = NULL;
}

/* ---- running a job ---- */

static void kill_tree(struct mcpx_job *job)
{
	mcpx_run_budget_kill(job->link.budget);
	mcpx_sandbox_kill(&job->proc);
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
	 * errors); look at the end of stderr, where the traceback's last line is. The label only describes the
	 * caller's own run, so a program printing these words fools no one else. */
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
static int collect_files(struct mcpx_job *job, struct mcpx_err *err)
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
static const char *environment_failure(const struct mcpx_job *job, int status, bool parent_gone)
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
static void fill_result(struct mcpx_job *job, int status, const struct rusage *ru,
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
static void report(struct mcpx_job *job, struct mcpx_job_result *r)
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
		audit(job, "cancelled", r);
		return;
	}
	audit(job, status, r);
	if (job->cb.done)
		job->cb.done(job->cb.arg, r);
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
static void after_run(struct mcpx_executor *ex)
{
	if (ex->running || ex->cleaning)
		return;
	kick(ex);
	mcpx_warm_pool_run_ended(ex->warm);
	mcpx_bash_pool_run_ended(ex->bash, bash_prepare_next(ex));
}

/* A finished run's files are gone: the next run may start. */
static void cleanup_done(void *arg)
{
	struct mcpx_executor *ex = arg;

	ex->cleaning--;
	if (!ex->freeing)
		after_run(ex);
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
	job->env_failure = setup_rc < 0 ? NULL : environment_failure(job, status, parent_gone);
	mcpx_run_budget_finish(job->link.budget, &usage);
	job->link.budget = NULL;
	if (!job->budget_limit)
		job->budget_limit = usage.limit;
	files_rc =
	    job->cancelled || job->env_failure || setup_rc < 0 ? 0 : collect_files(job, &ferr);
	/* A nested run's /dev/shm entries are its caller's: counted with the
	 * caller's (run_budget.c) and wiped at the caller's end, which takes
	 * every entry of the runs' group since the caller started. Wiped now,
	 * since the call started, they would take the caller's own entries
	 * made meanwhile. Once the caller is gone they are wiped here (no
	 * other run starts while a nested one is still there: start_next). */
	if (nested && job_caller(job))
		job->proc.started.tv_sec = 0;
	/* The run's files go to the remover: the result does not wait
	 * for them, the next run does (after_run). What is left is fds. */
	if (mcpx_run_cleanup_take(ex->remover, &job->proc, job->run_id, cleanup_done, ex) == 0)
		ex->cleaning++;
	mcpx_sandbox_cleanup(&job->proc);
	job->ended_us = mcpx_now_us();
	fill_result(job, status, &ru, usage.cpu_ms, &r);
	r.files = &job->out_files;
	if (setup_rc < 0) {
		r.status = MCPX_JOB_FAILED;
		snprintf(r.message, sizeof(r.message), "could not start the sandbox: %.200s",
		         serr.msg);
	} else if (files_rc < 0) {
		/* The server could not read what the run left: its failure, not
		 * the program's result. */
		r.status = MCPX_JOB_FAILED;
		snprintf(r.message, sizeof(r.message), "could not read the run's out/ files: %.200s",
			 ferr.msg);
	}
	/* A nested job leaves the slot to its caller. */
	if (!nested && ex->running == job)
		ex->running = NULL;
	else
		side_remove(ex, job);
	job_enter(job, MCPX_RUN_DONE);
	ex->completed++;
	report(job, &r);
	job_free(job);
	after_run(ex);
}

/* Called whenever one of the run's watches closes; the job completes when
 * the leader has exited and both pipes are drained. */
static void maybe_complete(struct mcpx_job *job)
{
	if (job->state != MCPX_RUN_ENDING || job->ex->freeing)
		return;
	if (job->out.open || job->err.open || job->pid_open)
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
static int job_enter(struct mcpx_job *job, enum mcpx_run_state next)
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
		kill_tree(job);
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
static void leader_exited(struct mcpx_job *job)
{
	if (job->state == MCPX_RUN_RUNNING)
		job_enter(job, MCPX_RUN_ENDING);
}

static void pid_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_job *job = w->arg;

	if (events & MCPX_EV_READ) {
		leader_exited(job);
		mcpx_loop_unwatch(w);
		return;
	}
	if (events & MCPX_EV_CLOSED) {
		job->pid_open = false;
		leader_exited(job);
		maybe_complete(job);
	}
}

/* The environment failed under a run (not the program): the run is ended
 * and the caller gets a tool error with msg instead of a result. */
static void fail_run(struct mcpx_job *job, const char *msg)
{
	if (!job->env_failure)
		job->env_failure = msg;
	kill_tree(job);
}

/* Keeps what fits under the combined stdout+stderr cap and drops the rest.
 * The program runs on, as with the Go mcp-exec: its pipes are still drained,
 * so it never blocks on a full pipe, and only its own limits or the timeout
 * end it; the result says truncated. */
static void keep_output(struct mcpx_job *job, struct job_stream *s, const char *p, size_t n)
{
	size_t cap = job->ex->cfg->max_output_bytes;
	size_t used = job->out.buf.len + job->err.buf.len;
	size_t room = used < cap ? cap - used : 0;
	long got = mcpx_buf_add_some(&s->buf, p, n < room ? n : room);

	if (got < 0) {
		fail_run(job, "the server ran out of memory while collecting the output");
		return;
	}
	if ((size_t)got < n)
		job->truncated = true;
}

/* Takes the warm interpreter's protocol bytes off the front of a warm run's
 * stdout (warm_child.h); returns how many of buf's bytes they were. */
static size_t take_markers(struct mcpx_job *job, struct job_stream *s, const char *buf, size_t n)
{
	bool ready = false;
	size_t used = 0;
	int rc = mcpx_warm_markers_take(&s->markers, buf, n, &used, &ready);

	if (ready)
		mcpx_run_budget_code_started(job->link.budget);
	if (rc < 0)
		fail_run(job, "the warm interpreter broke its protocol");
	return used;
}

static void stream_cb(struct mcpx_watch *w, int events)
{
	struct job_stream *s = w->arg;
	struct mcpx_job *job = s->job;
	char buf[65536];
	size_t skip;

	if (events & MCPX_EV_READ) {
		for (;;) {
			ssize_t n = read(w->fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				mcpx_loop_unwatch(w);
				break;
			}
			skip = s->markers ? take_markers(job, s, buf, (size_t)n) : 0;
			keep_output(job, s, buf + skip, (size_t)n - skip);
		}
		if (s == &job->out && job->cb.event && job->state == MCPX_RUN_RUNNING && !job->cancelled)
			job->cb.event(job->cb.arg, MCPX_JOB_OUTPUT, job->out.buf.len + job->err.buf.len);
		return;
	}
	if (events & MCPX_EV_CLOSED) {
		s->open = false;
		maybe_complete(job);
	}
}

static void wall_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	job->timed_out = true;
	kill_tree(job);
}

/* Feeds stdin without blocking: what fits in the pipe now, the rest on retry
 * timers until the child reads it, exits, or closes its end. */
static void feed_stdin(struct mcpx_job *job)
{
	const char *data = job->feed ? job->feed : job->stdin_data;
	size_t len = job->feed ? job->feed_len : job->stdin_len;

	while (job->stdin_off < len) {
		ssize_t n = write(job->proc.stdin_fd, data + job->stdin_off, len - job->stdin_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			mcpx_timer_start(job->ex->loop, &job->stdin_timer, STDIN_RETRY_US);
			return;
		}
		if (n <= 0)
			break; /* EPIPE: the program closed stdin; that is its choice. */
		job->stdin_off += (size_t)n;
	}
	close(job->proc.stdin_fd);
	job->proc.stdin_fd = -1;
}

static void stdin_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_job *job = t->arg;
	if (job->proc.stdin_fd >= 0 && job->state == MCPX_RUN_RUNNING)
		feed_stdin(job);
}

static int watch_fd(struct mcpx_job *job, struct mcpx_watch *w, int *fdp, mcpx_watch_fn fn,
		    void *arg)
{
	int rc;
	w->fd = *fdp;
	w->fn = fn;
	w->arg = arg;
	rc = mcpx_loop_watch(job->ex->loop, w);
	if (rc == 0)
		*fdp = -1; /* the loop owns it now */
	return rc;
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

/* When the run's wall clock ends, counted from from: its timeout, and for a
 * nested run no later than its caller's (which then ends both anyway). */
static uint64_t run_deadline_us(const struct mcpx_job *job, uint64_t from)
{
	uint64_t d = from + (uint64_t)job->timeout_s * 1000000u;
	const struct mcpx_job *caller = job_caller(job);

	if (caller && caller->deadline_us && caller->deadline_us < d)
		d = caller->deadline_us;
	return d;
}

/* What the server holds for the run is the run's memory (run_budget.h). */
static void egress_held(void *arg, uint64_t bytes)
{
	struct mcpx_job *job = arg;

	job->egress_held = bytes;
	mcpx_run_budget_held(job->link.budget, bytes);
}

/* A run with a channel is served by the run_start hook until it ends.
 * Without a server side the run's end sees EOF, and mcpx.fetch says so. */
static void start_egress(struct mcpx_executor *ex, struct mcpx_job *job)
{
	struct mcpx_run_info info = {.run_id = job->run_id,
				     .request_id = job->request_id,
				     .caller = job->caller,
				     .deadline_us = run_deadline_us(job, job->started_us),
				     .held = egress_held,
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
	kill_tree(job);
}

/* Holds the run as a whole to its budget (run_budget.h); a warm interpreter
 * is still waiting for its code here, so all it will start is counted. A
 * nested run (mcpx.call) joins its caller's budget instead: what it uses
 * counts against the calling run's limits, and the budget ends both.
 * -ESRCH: a nested run whose caller is gone or no longer has a budget. */
static int start_budget(struct mcpx_job *job, unsigned cpu_s)
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
		caller = job_caller(job);
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

/* Starts the run's process: a warm interpreter when one is ready, else
 * cold. A nested call always starts cold: the warm interpreter belongs to
 * the next queued run, and in after-reap mode none may exist beside a run
 * anyway. */
static int spawn_job(struct mcpx_executor *ex, struct mcpx_job *job, struct mcpx_err *err)
{
	bool nested = job->has_bind && job->bind.nested;
	struct mcpx_workdir_fill fill = {fill_workdir, job};
	struct mcpx_limits lim;

	memset(&lim, 0, sizeof(lim));
	lim.cpu_s = ex->cfg->cpu_s ? ex->cfg->cpu_s : job->timeout_s;
	lim.memory_mb = job->memory_mb;
	lim.max_procs = ex->cfg->max_procs;
	lim.file_mb = ex->cfg->max_file_mb;
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

/* The run's output, exit and stdin on the loop, its budget and its wall
 * clock. False when it cannot be supervised (then it is being ended). */
static bool supervise(struct mcpx_executor *ex, struct mcpx_job *job, unsigned cpu_s)
{
	uint64_t now;
	int rc;

	if (watch_fd(job, &job->out.watch, &job->proc.stdout_fd, stream_cb, &job->out) == 0)
		job->out.open = true;
	if (watch_fd(job, &job->err.watch, &job->proc.stderr_fd, stream_cb, &job->err) == 0)
		job->err.open = true;
	if (watch_fd(job, &job->pid_watch, &job->proc.pidfd, pid_cb, job) == 0)
		job->pid_open = true;
	if (!job->out.open || !job->err.open || !job->pid_open) {
		/* Without its watches the run cannot be supervised: end it now. */
		mcpx_error("could not watch the run's descriptors");
		kill_tree(job);
		leader_exited(job);
		maybe_complete(job);
		return false;
	}
	rc = start_budget(job, cpu_s);
	if (rc < 0) {
		fail_run(job, rc == -ENOMEM ? "out of memory while starting the run's budget"
					    : "the nested call could not be held to its caller's "
					      "budget");
		return false;
	}
	mcpx_run_budget_held(job->link.budget, job->egress_held);
	now = mcpx_now_us();
	job->deadline_us = run_deadline_us(job, now);
	job->wall_timer.fn = wall_timer_cb;
	job->wall_timer.arg = job;
	mcpx_timer_start(ex->loop, &job->wall_timer,
			 job->deadline_us > now ? job->deadline_us - now : 0);
	job->stdin_timer.fn = stdin_timer_cb;
	job->stdin_timer.arg = job;
	if (job->proc.stdin_fd >= 0) {
		size_t need = job->feed ? job->feed_len : job->stdin_len;
		if (need > 65536)
			(void)fcntl(job->proc.stdin_fd, F_SETPIPE_SZ, (int)need);
		feed_stdin(job);
	}
	return true;
}

static void start_job(struct mcpx_executor *ex, struct mcpx_job *job)
{
	bool nested = job->has_bind && job->bind.nested;
	const struct mcpx_job *caller = job_caller(job);
	struct mcpx_err err;
	int rc;

	mcpx_timer_cancel(&job->queue_timer);
	if (nested && (!caller || caller->state != MCPX_RUN_RUNNING)) {
		/* Its caller is ending: it would only count against nothing. */
		side_remove(ex, job);
		finish_unrun(job, MCPX_JOB_FAILED, "the calling run has ended", "failed");
		return;
	}
	job->started_us = mcpx_now_us();
	err.msg[0] = '\0';
	rc = spawn_job(ex, job, &err);
	if (rc < 0) {
		char msg[300];
		mcpx_error("sandbox start failed: %s", err.msg);
		snprintf(msg, sizeof(msg), "could not start the sandbox: %s", err.msg);
		if (nested)
			side_remove(ex, job);
		finish_unrun(job, MCPX_JOB_FAILED, msg, "failed");
		kick(ex);
		return;
	}
	job_enter(job, MCPX_RUN_RUNNING);
	start_egress(ex, job);
	if (!supervise(ex, job, ex->cfg->cpu_s ? ex->cfg->cpu_s : job->timeout_s))
		return;
	if (job->cb.event)
		job->cb.event(job->cb.arg, MCPX_JOB_STARTED, 0);
	/* The pool prepares the next run's interpreter once this one ends, or
	 * now if calls come back to back or one already waits for it (a
	 * nested run's caller did both). */
	if (!nested) {
		mcpx_warm_pool_run_started(ex->warm, job->proc.pid, job->enqueued_us);
		if (ex->queue_head)
			mcpx_warm_pool_call_waiting(ex->warm);
	}
}

static void wake_cb(void *arg)
{
	kick(arg);
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
	queue_remove(ex, job);
	mcpx_fair_served(ex->fair, job->caller);
	start_job(ex, job);
}

void mcpx_executor_charge_cpu(struct mcpx_executor *ex, const char *run_id, uint64_t cpu_us)
{
	struct mcpx_job *job = job_by_run_id(ex, run_id);

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
			side_remove(ex, job);
		else
			queue_remove(ex, job);
		job_enter(job, MCPX_RUN_DONE);
		audit(job, "cancelled", NULL);
		job_free(job);
		return;
	}
	kill_tree(job);
}

size_t mcpx_job_output(const struct mcpx_job *job, const char **out)
{
	*out = mcpx_buf_str(&job->out.buf);
	return job->out.buf.len;
}

void mcpx_executor_drain(struct mcpx_executor *ex)
{
	ex->draining = true;
	mcpx_warm_pool_stop(ex->warm);
	mcpx_bash_pool_stop(ex->bash);
	while (ex->queue_head) {
		struct mcpx_job *job = ex->queue_head;
		queue_remove(ex, job);
		finish_unrun(job, MCPX_JOB_SHUTDOWN,
			     "the server is shutting down and did not run this execution; retry on "
			     "another replica",
			     "shutdown");
	}
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
		job_enter(job, MCPX_RUN_DONE);
		job_free(job);
		return;
	}
	job->cancelled = true;
	kill_tree(job);
	leader_exited(job);
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
	job_enter(job, MCPX_RUN_DONE);
	audit(job, "shutdown", NULL);
	job_free(job);
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
		queue_remove(ex, job);
		job_enter(job, MCPX_RUN_DONE);
		job_free(job);
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
