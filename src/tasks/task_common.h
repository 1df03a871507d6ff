/*
 * task_common.h - the tasks module's parts, shared by its files. They call
 * one another one way only, top to bottom:
 *   tasks.c        the module, its hooks into the core, the ttl of a new
 *                  task;
 *   task_methods.c tasks/get, tasks/result, tasks/list, tasks/cancel and
 *                  tasks/update: where each is answered (a local run or
 *                  the store), and tasks/list;
 *   task_runner.c  a task this replica runs (task_run below), from its
 *                  request until its call answers: the count cap, the
 *                  lease and record, the cancel-mark poll, a cancel;
 *   task_finish.c  the end of a run: its final status, the byte cap, the
 *                  outcome then the final record, its waiters told;
 *   task_waits.c   a tasks method request being answered (task_wait
 *                  below): the store reads, the lease check, the waits of
 *                  tasks/result and tasks/cancel;
 *   task_common.c  what they all use: a request's generation, a record's
 *                  keep time, store failures logged, the caps' order.
 * A run's end answers the waits that a method left on it, and a method may
 * cancel a run: so the waits sit below the runner and the methods' entry
 * above it. Nothing outside src/tasks includes it.
 */
#ifndef MCPX_TASK_COMMON_H
#define MCPX_TASK_COMMON_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "loop.h"
#include "mcp.h"
#include "task_hooks.h"
#include "task_opts.h"
#include "task_record.h"
#include "task_store.h"
#include "task_wire.h"

/* The JSON-RPC code of a task that ended without the call's own answer
 * (cancelled, or its replica gone), as tasks/result (2025-11-25) reports it:
 * JSON-RPC reserves -32000 to -32099 for server-defined errors. */
#define MCPX_RPC_TASK_ENDED -32000

/* How often a runner looks for a cancel mark, and a waiting tasks/result
 * or tasks/cancel for another replica's task reads the store again. */
#define MCPX_TASK_CANCEL_POLL_MS 1000u
#define MCPX_TASK_WAIT_POLL_MS 1000u

/* The shortest ttl kept: a client that asks for less still gets a minute
 * to read what its task did. */
#define MCPX_TASK_TTL_MIN_MS 60000

struct task_run;
struct task_wait;

struct mcpx_tasks {
	struct mcpx_tasks_opts o;
	char replica[64];
	struct mcpx_core *core;
	struct mcpx_task_store *ts;
	struct mcpx_task_hooks hooks;
	struct task_run *runs;   /* this replica's, newest first */
	struct task_wait *waits; /* requests waiting on the store */
	size_t nruns;
	bool draining;
};

enum run_state {
	RUN_CHECKING,  /* reading the owner's tasks for the caps */
	RUN_PENDING,   /* 2026-07-28: running, may still answer its request itself */
	RUN_CREATING,  /* taking the lease and writing the record */
	RUN_DETACHED,  /* a task: the request got its CreateTaskResult */
	RUN_FINISHING, /* writing its outcome and final record */
	RUN_DONE,
};

/* One task this replica runs, from its request until its final record is
 * written and local waiters are answered. */
struct task_run {
	struct mcpx_sink sink; /* first: the core hands it back */
	struct mcpx_tasks *t;
	struct task_run *next, *prev;
	struct mcpx_task_rec rec;
	enum mcpx_task_gen gen;
	enum run_state state;
	struct mcpx_call *req;  /* the tools/call waiting for its answer, or NULL */
	struct mcpx_call *call; /* the detached call while it runs, else NULL */
	cJSON *outcome;         /* {"result": ...} or {"error": ...} once the call answered */
	bool answered;          /* the call answered (outcome may be NULL: unreadable) */
	bool cancelled;         /* tasks/cancel reached it */
	bool cancel_asked;      /* tasks/cancel came while the record was being written */
	bool lease_lost;        /* the lease lapsed or was taken: write nothing */
	bool direct;            /* 2026-07-28 without a task after all: answers req itself */
	cJSON *args;            /* 2025-11-25: the arguments until the task exists */
	char *blob;             /* the outcome as stored */
	size_t blob_len;
	char client[160];     /* the request's, for the run's audit line */
	char request_id[128]; /* the creating tools/call's id, for the audit line */
	char version[16];
	struct mcpx_timer step;         /* the next step, out of the core's callback */
	struct mcpx_timer window;       /* RUN_PENDING: when it becomes a task */
	struct mcpx_timer heartbeat;    /* the cancel-mark poll */
	struct mcpx_store_lease *lease; /* held while the task runs (the store renews it) */
	struct mcpx_task_op *op;        /* the store operation in flight */
	struct mcpx_task_op *op_watch;  /* the cancel-mark read in flight */
	bool saved_again;               /* the final record was retried after -ESTALE */
	struct task_wait *waiters; /* local tasks/result and tasks/cancel waiting for the end */
};

/* A tasks method request being answered. Most need the store (the task's
 * record, its outcome, a lease check); tasks/result waits until the task
 * ends, and a 2025-11-25 tasks/cancel until the runner confirms. A wait on
 * a task this replica runs is tied to its run (answered when it ends);
 * otherwise it re-reads the store every MCPX_TASK_WAIT_POLL_MS. All of
 * them are on the module's list, so that an abandoned request is found. */
struct task_wait {
	struct task_wait *next, *prev;
	struct mcpx_tasks *t;
	struct task_run *run; /* the local run it waits for, or NULL */
	struct mcpx_call *req;
	enum mcpx_task_gen gen;
	char method[16]; /* "get", "result", "cancel", "update", "list" */
	char id[MCPX_TASK_ID_LEN + 1];
	char owner[MCPX_CALLER_MAX];
	char cursor[80]; /* tasks/list */
	struct mcpx_timer poll;
	struct mcpx_task_op *op;
	uint64_t deadline_us;     /* a 2025-11-25 tasks/cancel: when to stop waiting */
	bool cancel_marked;       /* tasks/cancel: the mark is written */
	struct mcpx_task_rec rec; /* the last record read */
};

/* ---- task_methods.c ---- */

void mcpx_task_method(struct mcpx_tasks *t, struct mcpx_call *req, const char *method,
                      const cJSON *params);

/* ---- task_runner.c ---- */

/* A new run for req (linked, state RUN_CHECKING), or NULL when out of
 * memory or randomness. */
struct task_run *mcpx_task_run_new(struct mcpx_tasks *t, struct mcpx_call *req,
                                   enum mcpx_task_gen gen, const char *name, int64_t ttl_ms);
/* Step 1 of a run: the owner's count cap (calls mcpx_task_run_room). */
void mcpx_task_caps_check(struct task_run *run);
/* After the caps check: room says whether a task may be made. */
void mcpx_task_run_room(struct task_run *run, bool room);

/* Starts a run for request req of gen (tool by name, args). sync_ms:
 * 2026-07-28 only, how long it may answer req itself (0: a task at once).
 * The run answers req. */
void mcpx_task_run_start(struct mcpx_tasks *t, struct mcpx_call *req, enum mcpx_task_gen gen,
                         const struct mcpx_tool *tool, const char *name, const cJSON *args,
                         int64_t ttl_ms, unsigned sync_ms);
/* This replica's run of task id, or NULL. */
struct task_run *mcpx_task_run_find(struct mcpx_tasks *t, const char *id);
/* tasks/cancel reached run: its call is ended, the record written
 * cancelled, and its waiters answered. */
void mcpx_task_run_cancel(struct task_run *run);
/* The request req was abandoned (the client left): a pending run ends like
 * a direct call whose client left; a task goes on. */
void mcpx_task_run_abandon(struct mcpx_tasks *t, struct mcpx_call *req);
/* Every run is abandoned without writing (teardown). */
void mcpx_task_runs_free(struct mcpx_tasks *t);

/* ---- task_finish.c ---- */

/* Step 5: the call answered (or the run was cancelled): the final status,
 * the byte cap, then the outcome and the final record. */
void mcpx_task_run_finish(struct task_run *run);
/* Step 5's byte cap, for run's outcome (calls mcpx_task_run_store). */
void mcpx_task_bytes_check(struct task_run *run);
/* After the byte cap: writes blob (NULL: no outcome to keep), then the
 * final record. */
void mcpx_task_run_store(struct task_run *run, const char *blob, size_t len);
/* The lease was lost: the run stops and writes nothing. */
void mcpx_task_run_lease_lost(struct task_run *run);
/* Unlinks and frees run with whatever it still holds. */
void mcpx_task_run_free(struct task_run *run);
/* The first text of a tool error result, as a status message. */
const char *mcpx_task_error_text(const cJSON *result);
/* notifications/tasks/status for run's final record, to its session's
 * streams on this replica (2025-11-25 tasks only). */
void mcpx_task_notify_status(struct mcpx_tasks *t, const struct task_run *run);

/* ---- task_waits.c ---- */

/* A wait for req's method (its short name) on task id (NULL: none),
 * linked on t's list; NULL when out of memory. */
struct task_wait *mcpx_task_wait_new(struct mcpx_tasks *t, struct mcpx_call *req,
                                     const char *method, const char *id);
/* Each of these answers w's request (if it is still there) and frees w. */
void mcpx_task_wait_answer(struct task_wait *w, cJSON *result);
void mcpx_task_wait_error(struct task_wait *w, int code, const char *msg);
void mcpx_task_wait_not_found(struct task_wait *w);
void mcpx_task_wait_store_error(struct task_wait *w, int rc);
/* An empty result: an acknowledgement. */
cJSON *mcpx_task_ack(void);
/* Reads w's task from the store (and judges it against its lease), then
 * goes on with mcpx_task_wait_proceed. */
void mcpx_task_wait_reload(struct task_wait *w);
/* The record is known (and judged against its lease): w's method goes on. */
void mcpx_task_wait_proceed(struct task_wait *w);

/* run lost its lease: its local waiters go back to reading the store. */
void mcpx_task_waiters_orphan(struct task_run *run);
/* A run ended (rec final; outcome may be NULL): its waiters are answered. */
void mcpx_task_waiters_done(struct task_run *run);
/* req went away: its wait (if any) ends without an answer. */
bool mcpx_task_wait_abandon(struct mcpx_tasks *t, struct mcpx_call *req);
/* Draining: waits on the store are answered with an error. */
void mcpx_task_waits_drain(struct mcpx_tasks *t);
void mcpx_task_waits_free(struct mcpx_tasks *t);
/* Answers a tasks/result (2025-11-25) for a finished task. */
void mcpx_task_answer_result(struct mcpx_call *req, const struct mcpx_task_rec *r,
                             const cJSON *outcome);

/* ---- task_common.c ---- */

/* The generation of a request: 2026-07-28 (stateless) or 2025-11-25. */
enum mcpx_task_gen mcpx_task_gen_of(const struct mcpx_call *req);
/* Logs a store failure about a task once, with what was being done. */
void mcpx_task_store_failed(const char *what, const struct mcpx_task_rec *r, int rc);
/* The store record of a run that lasts: its ttl, but at least the lease. */
int64_t mcpx_task_keep_for(const struct mcpx_tasks *t, const struct mcpx_task_rec *r);
/* Orders finished records oldest first; working ones last (qsort). */
int mcpx_task_by_age(const void *a, const void *b);
/* Drops recs[0..n) (finished ones, oldest first) to make room in the
 * owner's caps. */
void mcpx_task_drop_oldest(struct mcpx_tasks *t, const struct mcpx_task_rec *recs, size_t n);

#endif
