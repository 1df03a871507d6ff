/*
 * executor.h - one execution at a time, a bounded FIFO queue in front of it.
 *
 * The executor owns the run's lifecycle: it takes a job from the queue, asks
 * the sandbox to spawn it, feeds stdin, captures stdout/stderr under a
 * combined cap, enforces the wall-clock timeout, kills the whole process tree
 * and reaps it, classifies why the run ended, writes the audit line and hands
 * the result to the job's callback. Every wait is an event on the shared loop,
 * so a long run never blocks ping, health checks or cancellation.
 */
#ifndef MCPX_EXECUTOR_H
#define MCPX_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job_event.h"
#include "loop.h"
#include "run_hooks.h"
#include "runfiles.h"
#include "sandbox.h"
#include "warm_pool.h"
#include "workspace_files.h"

struct mcpx_audit_line;
struct mcpx_config;
struct mcpx_executor;
struct mcpx_job;
struct mcpx_profile_limits;

/* A run that is not exec's own (a function's, functions.h): who serves
 * its channel, and what its audit line says. Copied by submit; what serve
 * points at must stay valid until the job is done or cancelled. */
struct mcpx_job_bind {
	/* Handed untouched to the run_start hook (run_hooks.h): the
	 * submitter's word on how the run is served; NULL: as exec's. */
	const void *serve;
	bool channel;   /* the run wants a channel whatever exec's runs get */
	unsigned depth; /* 0 for a tools/call */
	/* A call from a running run (mcpx.call): it starts at once beside its
	 * caller, which holds the one slot, so it is never queued behind it;
	 * it starts cold (the warm interpreter is the next queued run's). */
	bool nested;
	/* The audit line: the tool, a hash and size of its arguments (never
	 * the arguments), the source that ran, and for a nested call its
	 * caller's run. */
	const char *tool;
	const char *args_sha256;
	size_t args_bytes;
	const char *source_sha256;
	const char *parent_run_id; /* NULL: not nested */
};

/* A call with a workspace (exec_workspace.h decides the rest): what the
 * run starts with, and how its workdir is collected after it. */
struct mcpx_job_workspace {
	const char *name; /* for the audit line; copied */
	/* The archive as loaded (malloc'd; NULL: a new workspace) and its
	 * parse (views into it): an accepted job takes both and frees them
	 * once restored, a rejected one leaves them to the caller. */
	char *blob;
	size_t blob_len;
	struct mcpx_wspack pack;
	size_t vars_limit;            /* what the runner may save in variables */
	struct mcpx_wspack_caps caps; /* the collection's */
};

/* What a run with a workspace left behind (the job result's workspace). */
struct mcpx_job_ws_result {
	bool restored; /* the run started with the workspace's files (and variables) */
	uint64_t restored_bytes;
	/* collected: saved.archive is the new version, the callback's to take
	 * (mcpx_buf_take); else rc says why not: -E2BIG over a cap, another
	 * errno when the server could not read, 0 when the run did not end by
	 * itself or at all (not started, cancelled), with error in words. */
	bool collected;
	int rc;
	char error[256];
	struct mcpx_wsfiles_saved saved;
};

struct mcpx_job_spec {
	const char *code; /* copied by submit */
	size_t code_len;
	const char *stdin_data; /* copied by submit; may be NULL */
	size_t stdin_len;
	unsigned timeout_s;     /* already clamped by the tool */
	const char *request_id; /* for the audit line; copied */
	const char *caller;     /* who (caller.h): audit, and its share of the queue; copied */
	/* The caller's profile (policy.h), for the audit line and /metrics
	 * (NULL: none), and its limits, which only lower the server's: the
	 * timeout and memory of the run, and the caller's share of the queue
	 * (fair_queue.h). Both read during submit only. */
	const char *profile;
	const struct mcpx_profile_limits *limits;
	const char *client; /* the transport's view of the client, for the audit line; copied */
	/* The MCP task the run is for (its audit line names it), or NULL;
	 * copied. Its timeout may exceed MCP_EXEC_MAX_TIMEOUT_S (up to
	 * MCP_EXEC_TASK_MAX_TIMEOUT_S): the tool clamps it. */
	const char *task_id;
	/* Input files (malloc'd, may be NULL): an accepted job takes them and
	 * frees them (mcpx_runfiles_in_free, then free); a rejected one leaves
	 * them to the caller. Written with out/ before the code starts. */
	struct mcpx_runfiles_in *files;
	const struct mcpx_job_bind *bind; /* NULL: an exec run */
	/* The code's language (default python); one the sandbox cannot run
	 * fails the job as a sandbox start would. Only Python runs warm: the
	 * others start cold through the same sandbox. */
	enum mcpx_lang language;
	/* A workspace (NULL: none): taken like files. */
	struct mcpx_job_workspace *workspace;
};

enum mcpx_job_status {
	MCPX_JOB_DONE,     /* ran; see the result fields */
	MCPX_JOB_FAILED,   /* could not run (sandbox start failed): message */
	MCPX_JOB_EXPIRED,  /* waited longer than the queue timeout */
	MCPX_JOB_SHUTDOWN, /* the server is draining and dropped it */
};

struct mcpx_job_result {
	enum mcpx_job_status status;
	char message[256]; /* for FAILED / EXPIRED / SHUTDOWN */

	const char *stdout_buf; /* raw bytes, valid during the callback */
	size_t stdout_len;
	const char *stderr_buf;
	size_t stderr_len;
	int exit_code; /* -1 when timed out or killed by a signal */
	int signal;    /* 0, or the terminating signal */
	bool timed_out;
	bool truncated;
	const char
	    *limit; /* "timeout", "memory", "cpu", "output", "processes", "file_size" or NULL */
	uint64_t duration_ms;
	uint64_t cpu_ms;
	uint64_t max_rss_kb;
	uint64_t queue_wait_ms;
	/* What the run left in out/, read after its tree was gone; valid
	 * during the callback. Empty when the run was not DONE. */
	const struct mcpx_runfiles_out *files;
	/* A job with a workspace: what it left (the callback may take
	 * saved.archive), and its audit line, not logged yet: the callback
	 * may take it (set it to NULL) to add the save's outcome and log it
	 * (audit.h); one left here is logged when the callback returns. NULL
	 * for a job without a workspace. */
	struct mcpx_job_ws_result *workspace;
	struct mcpx_audit_line *audit;
};

struct mcpx_job_callbacks {
	void (*done)(void *arg, const struct mcpx_job_result *res);
	void (*event)(void *arg, enum mcpx_job_event ev, size_t pos); /* optional */
	void *arg;
};

struct mcpx_executor_stats {
	size_t queue_depth;
	bool running;
	uint64_t completed;
	enum mcpx_warm_mode warm_mode;
	bool warm_ready;
};

/* hooks (copied; may be NULL: no run gets a channel) say who serves the
 * runs' channels; their arg must outlive the executor. */
struct mcpx_executor *mcpx_executor_new(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                                        const struct mcpx_sandbox *sb,
                                        const struct mcpx_executor_hooks *hooks);
/* Starts what runs need before the first one (the warm pool: its zygote or
 * first interpreter). Call once, after every worker thread of the server
 * exists and mcpx_sandbox_refresh_signal_rules has named them. */
void mcpx_executor_start(struct mcpx_executor *ex);
void mcpx_executor_free(struct mcpx_executor *ex);

/* Queues a job. Returns 0 and sets *job, or -EBUSY when the queue is full,
 * -EUSERS when the caller already has its profile's max_queued runs
 * waiting, -EAGAIN when it used up its runs_per_minute (see
 * mcpx_executor_retry_after), -ESHUTDOWN when draining, -ENOMEM. Among
 * waiting jobs, callers take turns: the next to start is the oldest job of
 * the caller served longest ago. The done callback is always called
 * exactly once for an accepted job, unless it is cancelled first. A nested
 * job (bind->nested) is never queued nor refused as busy or draining: it
 * starts on the next loop iteration, beside the run that called it. */
int mcpx_executor_submit(struct mcpx_executor *ex, const struct mcpx_job_spec *spec,
                         const struct mcpx_job_callbacks *cb, struct mcpx_job **job);

/* CPU the server spent for the running run run_id on another thread
 * (validating the arguments its code sent with mcpx.call): counted in its
 * cpu_ms and against its CPU budget. An unknown run_id: nothing. */
void mcpx_executor_charge_cpu(struct mcpx_executor *ex, const char *run_id, uint64_t cpu_us);
/* After -EAGAIN from submit: seconds until the caller's next run would
 * pass (at least 1). */
unsigned mcpx_executor_retry_after(const struct mcpx_executor *ex);
/* After -EUSERS or -EAGAIN from submit: the refusal in words for the
 * caller (which limit of which profile, and for -EAGAIN when to retry). */
void mcpx_executor_share_text(const struct mcpx_executor *ex, char *msg, size_t len);

/* Cancels a queued or running job: a queued one is dropped, a running one is
 * killed. No callback follows. */
void mcpx_executor_cancel(struct mcpx_executor *ex, struct mcpx_job *job);

/* Current partial output of a running job (for progress messages). */
size_t mcpx_job_output(const struct mcpx_job *job, const char **out);
/* The run's id (in its audit and egress lines). */
const char *mcpx_job_run_id(const struct mcpx_job *job);

/* Drain until deadline_us (mcpx_now_us clock): no new jobs are accepted;
 * the running one may finish; the queued ones still run, in turn, each
 * only if its timeout ends before deadline_us, the others completing with
 * MCPX_JOB_SHUTDOWN (at once when they can never fit, else when their turn
 * comes too late). */
void mcpx_executor_drain(struct mcpx_executor *ex, uint64_t deadline_us);
bool mcpx_executor_idle(const struct mcpx_executor *ex);
void mcpx_executor_stats(const struct mcpx_executor *ex, struct mcpx_executor_stats *st);

#endif
