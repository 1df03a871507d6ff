/*
 * run_job.h - what the executor's files share: a job and the executor as
 * structures, and the steps of a run each file holds. The files call one
 * another one way only, top to bottom:
 *
 * executor.c   the executor's interface: made, a job submitted (queued, or
 *              started beside its caller), the next one started, cancel,
 *              drain, teardown
 * run_io.c     a running job on the loop: its output, stdin, exit, wall clock
 * run_end.c    a run's end: its state changed (job_enter), the job completed
 *              once reaped and drained, or finished without running
 * run_start.c  the start path (a language's prepared runtime, or cold), the
 *              prepared runtimes told of runs, the run's channel and budget,
 *              what follows a run
 * run_result.c a run's end in words: its result, the limit that ended it,
 *              whether its environment failed, the audit line
 * run_queue.c  admission (the queue's cap, each caller's share), the queue,
 *              the nested jobs beside the running one, which job is next
 * run_job.c    a job made and freed, which run called which, killing a
 *              run's tree, the end of its channel
 *
 * Not for use outside src/exec/executor.c and src/exec/run_{io,end,start,
 * result,queue,job}.c; everyone else has executor.h.
 */
#ifndef MCPX_RUN_JOB_H
#define MCPX_RUN_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "buf.h"
#include "caller.h"
#include "executor.h"
#include "loop.h"
#include "run_link.h"
#include "run_state.h"

struct mcpx_prepared_ops;
struct mcpx_budget;
struct mcpx_err;
struct mcpx_fair;
struct mcpx_offload;
struct mcpx_warm_pool;

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
	struct mcpx_job *next;     /* queue link */
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
	char task_id[40]; /* the MCP task it runs for, or "" */
	char caller[MCPX_CALLER_MAX];
	char profile[65];
	char client[160];
	unsigned memory_mb;   /* the run's memory: the server's, or its profile's if lower */
	char run_id[17];      /* joins the run's audit line and its egress lines */
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
	bool warm;            /* served by a warm interpreter */
	uint64_t cpu_base_ms; /* warm: CPU the preload used before the code arrived */
	char *feed;           /* warm: header + code + stdin, fed to the interpreter */
	size_t feed_len;
	struct mcpx_runfiles_in *files; /* input files, or NULL */
	/* A workspace call's (run_workspace.c): the archive until it is
	 * restored; then the previous variables and names, kept for a run
	 * that does not save its own, and counted as held for it; what the
	 * run left; its audit line until the callback takes it. */
	bool has_ws;
	char ws_name[65];
	struct mcpx_job_workspace ws;
	char *ws_prev; /* the previous variables, then their names */
	size_t ws_prev_vars, ws_prev_names;
	uint64_t ws_held;
	struct mcpx_job_ws_result ws_res;
	struct mcpx_audit_line *ws_line;
	struct mcpx_runfiles_out out_files; /* out/, read after the run */

	uint64_t enqueued_us, started_us, ended_us;
	uint64_t deadline_us; /* when its wall clock ends (set once supervised) */
	struct mcpx_timer queue_timer;

	/* Running state. */
	struct mcpx_sandbox_proc proc;
	struct job_stream out, err;
	struct mcpx_watch pid_watch;
	bool pid_open;
	/* Reaped without waiting on the loop (job_complete): its leader's
	 * status is asked of its zygote, and the result waits for the
	 * answer. parent_gone: its zygote had died before (asked first). */
	bool reaping;
	bool parent_gone;
	bool timed_out;
	bool truncated;           /* output beyond the cap was dropped */
	const char *env_failure;  /* set: the environment failed, not the program */
	const char *budget_limit; /* the budget that ended it */
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
	/* The drain's end (mcpx_executor_drain): a queued job starts only if
	 * its timeout ends before it. */
	uint64_t drain_deadline_us;
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

	/* Each language's runtime prepared before its call (prepared.h; ops
	 * NULL: the language has none). The warm environment's mode
	 * (fork-server, after-reap, off) is the warm interpreter's, warm:
	 * every prepared runtime follows it (run_start.c). */
	struct {
		const struct mcpx_prepared_ops *ops;
		void *rt;
	} prepared[MCPX_LANG_COUNT];
	struct mcpx_warm_pool *warm;
	enum mcpx_lang last_lang;   /* of the last run that was not nested */
	struct mcpx_budget *budget; /* how runs are held to their budget */
};

/* ---- run_job.c ---- */

/* A new job holding copies of spec's code, stdin, ids and bind; NULL when
 * out of memory. */
struct mcpx_job *mcpx_ex_job_new(struct mcpx_executor *ex, const struct mcpx_job_spec *spec,
                                 const struct mcpx_job_callbacks *cb);
void mcpx_ex_job_free(struct mcpx_job *job);
/* The run that called a nested job, while it is there; NULL for any other. */
struct mcpx_job *mcpx_ex_job_caller(const struct mcpx_job *job);
/* The started or nested job whose run is run_id, or NULL. */
struct mcpx_job *mcpx_ex_job_by_run_id(struct mcpx_executor *ex, const char *run_id);
/* Takes job out of the caller/nested relation as it becomes DONE. */
void mcpx_ex_job_unlink(struct mcpx_job *job);
/* Kills everything of the run (its budget's processes and its group). */
void mcpx_ex_kill_tree(struct mcpx_job *job);
/* The run's channel is no longer served (its requests are cancelled). */
void mcpx_ex_end_channel(struct mcpx_executor *ex, struct mcpx_job *job);

/* ---- run_queue.c ---- */

void mcpx_ex_kick(struct mcpx_executor *ex);
int mcpx_ex_admit(struct mcpx_executor *ex, const struct mcpx_job_spec *spec, bool idle);
void mcpx_ex_enqueue(struct mcpx_executor *ex, struct mcpx_job *job);
/* The job that starts next (callers take turns), left in the queue. */
struct mcpx_job *mcpx_ex_queue_next(const struct mcpx_executor *ex);
struct mcpx_job *mcpx_ex_next_queued(struct mcpx_executor *ex);
void mcpx_ex_queue_remove(struct mcpx_executor *ex, struct mcpx_job *job);
void mcpx_ex_side_remove(struct mcpx_executor *ex, struct mcpx_job *job);

/* ---- run_workspace.c: a workspace call's restore and collection ---- */

/* Takes spec's workspace (an accepted job). */
void mcpx_ex_ws_take(struct mcpx_job *job, struct mcpx_job_workspace *spec);
/* Writes the workspace into the workdir, before the input files; then
 * keeps only the previous variables. Returns 0 or -errno with err set. */
int mcpx_ex_ws_restore(struct mcpx_job *job, const char *workdir,
                       const struct mcpx_runfiles_owner *own, struct mcpx_err *err);
/* Collects the workdir of a reaped run into job->ws_res; by_itself: the
 * run ended on its own (no timeout, no budget), so its variables count. */
void mcpx_ex_ws_collect(struct mcpx_job *job, bool by_itself);
/* Hands r the workspace's result and audit line before the callback, and
 * logs the line the callback left after it. */
void mcpx_ex_ws_before_done(struct mcpx_job *job, struct mcpx_job_result *r);
void mcpx_ex_ws_after_done(struct mcpx_job_result *r);
void mcpx_ex_ws_free(struct mcpx_job *job);

/* ---- run_result.c ---- */

/* The result of a run that ended (reaped): raw output, times, how it ended. */
void mcpx_ex_fill_result(struct mcpx_job *job, int status, const struct rusage *ru,
                         uint64_t budget_cpu_ms, struct mcpx_job_result *r);
/* A failure of the run's environment, not the program's result, or NULL. */
const char *mcpx_ex_environment_failure(const struct mcpx_job *job, int status, bool parent_gone);
/* Reads out/ back once the run is reaped and its group swept. */
int mcpx_ex_collect_files(struct mcpx_job *job, struct mcpx_err *err);
void mcpx_ex_result_failed(struct mcpx_job_result *r, const struct mcpx_err *setup,
                           const struct mcpx_err *files);
/* Audits the run and hands the caller its result (or a tool error). */
void mcpx_ex_report(struct mcpx_job *job, struct mcpx_job_result *r);
/* The run's audit line and its metrics; r NULL for a run without a result. */
void mcpx_ex_audit(struct mcpx_job *job, const char *status, const struct mcpx_job_result *r);

/* ---- run_start.c ---- */

/* Starts the run's process: its language's prepared runtime when one
 * takes it, else cold. */
int mcpx_ex_spawn(struct mcpx_executor *ex, struct mcpx_job *job, struct mcpx_err *err);
/* Before job's run starts: true when what its language's prepared runtime
 * would hand it is still on its way (wake(ex) follows once it has come). */
bool mcpx_ex_prepared_wait(struct mcpx_executor *ex, const struct mcpx_job *job,
                           void (*wake)(void *arg));
/* A call waits in the queue behind the running run. */
void mcpx_ex_prepared_call_queued(struct mcpx_executor *ex);
/* A run that is not nested started. */
void mcpx_ex_prepared_run_started(struct mcpx_executor *ex, const struct mcpx_job *job);
/* Hands the run's channel to the run_start hook. */
void mcpx_ex_start_egress(struct mcpx_executor *ex, struct mcpx_job *job);
/* Holds the run as a whole to its budget; -ESRCH: a nested run whose
 * caller is gone or no longer has one. */
int mcpx_ex_start_budget(struct mcpx_job *job, unsigned cpu_s);
/* When the run's wall clock ends, counted from from. */
uint64_t mcpx_ex_run_deadline_us(const struct mcpx_job *job, uint64_t from);
/* After a run: the next job and the prepared runtimes' turn. */
void mcpx_ex_after_run(struct mcpx_executor *ex);
/* A finished run's files are gone (run_cleanup.h's callback, arg: ex). */
void mcpx_ex_cleanup_done(void *arg);

/* ---- run_end.c ---- */

/* The one place a job's state changes (run_end.c says what entering each
 * state does). */
int mcpx_ex_job_enter(struct mcpx_job *job, enum mcpx_run_state next);
/* The leader exited (or was killed): the run is ending, once. */
void mcpx_ex_leader_exited(struct mcpx_job *job);
/* Completes the job once the leader has exited and both pipes are drained. */
void mcpx_ex_maybe_complete(struct mcpx_job *job);
/* Completes a job that never ran (expired, shutdown, failed to start). */
void mcpx_ex_finish_unrun(struct mcpx_job *job, enum mcpx_job_status status, const char *msg,
                          const char *audit_status);

/* ---- run_io.c ---- */

/* Watches the run's output and exit, starts its budget, wall clock and
 * stdin. False when it cannot be supervised (then it is being ended). */
bool mcpx_ex_supervise(struct mcpx_executor *ex, struct mcpx_job *job, unsigned cpu_s);

#endif
