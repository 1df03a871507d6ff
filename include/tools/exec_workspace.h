/*
 * exec_workspace.h - one exec call's workspace (docs/tool.md, "Workspaces"):
 * the lease taken, the saved version loaded and checked, the run's new
 * version saved, the lease released, and what the call's result and audit
 * line say about it.
 *
 * A call with `workspace` goes: take the workspace's lease in the store
 * (waiting at most the queue timeout while another call, on this replica or
 * another, holds it), load its archive (none: a new workspace), check it as
 * input files are checked and against the
 * run's disk budget (with workspace_reset: delete it instead and start
 * empty), hand it to the job (executor.h), and when the job is
 * done save what the run left (all or nothing, fenced by the lease: a holder
 * whose lease lapsed cannot overwrite its successor), release the lease and
 * answer. A save that fails leaves the previous version and the call still
 * returns the run's result, with saved: false and the reason. A workspace
 * left empty (no file, no variable) is deleted rather than stored.
 *
 * Ownership: every workspace is its caller's: the store's keys are
 * (caller, "workspace", name), so no call reaches another caller's.
 *
 * It does not run anything (the executor restores and collects the
 * workdir, run_workspace.c), nor parse the arguments (exec_args.c).
 */
#ifndef MCPX_EXEC_WORKSPACE_H
#define MCPX_EXEC_WORKSPACE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor.h"

struct mcpx_loop;
struct mcpx_profile;
struct mcpx_store;

/* How long a workspace's lease lasts without renewal (the store renews it
 * every third of this while the call runs): a replica that dies holding
 * one lets the next call have it within this. */
#define MCPX_EXEC_WS_LEASE_TTL_MS 10000u

/* The server's workspaces (MCP_EXEC_WORKSPACES and its caps). Not owned;
 * outlives the tool. */
struct mcpx_workspaces_conf {
	struct mcpx_loop *loop;
	struct mcpx_store *store; /* NULL: workspaces are off */
	size_t max_bytes;         /* one workspace's files plus variables */
	uint64_t ttl_ms;          /* idle expiry */
	unsigned per_caller;      /* workspaces one caller may have (0: no cap) */
	uint32_t wait_ms;         /* a lease wait's bound: the queue timeout */
	unsigned wait_s;          /* the same, for messages */
	size_t disk_bytes;        /* a run's disk budget (0: none) */
};

/* One call's workspace, from begin until its done or cancel. */
struct mcpx_exec_ws;

/* What the call asks for. */
struct mcpx_exec_ws_req {
	const char *caller;
	const struct mcpx_profile *profile; /* NULL: none */
	const char *name;                   /* checked (exec_args.h) */
	bool reset;
	enum mcpx_lang lang;
	const struct mcpx_runfiles_in *inputs; /* the call's input files, or NULL */
};

/* The workspace is ready: spec (valid during the callback; submit takes
 * what it holds) for the job; or the call must fail with msg (spec NULL).
 * Called on the loop, never from inside begin. */
typedef void (*mcpx_exec_ws_ready_fn)(void *arg, struct mcpx_job_workspace *spec, const char *msg);

/* Begins: refuses at once (-EPERM: off for the server or the caller's
 * profile; msg says which) or starts taking the lease, then calls ready.
 * Returns 0 with *out set, or a negative errno with msg set. */
int mcpx_exec_ws_begin(const struct mcpx_workspaces_conf *conf, const struct mcpx_exec_ws_req *req,
                       mcpx_exec_ws_ready_fn ready, void *arg, struct mcpx_exec_ws **out, char *msg,
                       size_t msglen);

/* The saved outcome: the structuredContent.workspace object (the callback
 * takes it; NULL when out of memory). Called on the loop, never from inside
 * finish; w is freed after it returns. */
typedef void (*mcpx_exec_ws_done_fn)(void *arg, cJSON *workspace);

/* The job is done (res: its result, read during this call only; its
 * archive and audit line are taken): saves, releases, then done. */
void mcpx_exec_ws_finish(struct mcpx_exec_ws *w, struct mcpx_job_result *res,
                         mcpx_exec_ws_done_fn done, void *arg);

/* Drops the call (the client cancelled, or its job was refused): no
 * callback follows; the lease is released. */
void mcpx_exec_ws_cancel(struct mcpx_exec_ws *w);

#endif
