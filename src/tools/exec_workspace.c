/*
 * exec_workspace.c - one exec call's workspace: lease, load, check, save,
 * release (exec_workspace.h).
 *
 * A call's workspace goes LEASE -> LOAD -> (the run) -> SAVE -> done, each
 * step a store operation whose callback starts the next; nothing here
 * blocks the loop. The archive is checked before anything is written
 * (workspace_pack.h: paths, sizes, counts; against the input files of the
 * call; against the run's disk budget) and handed to the job, which writes
 * it into the workdir. After the run the job's collection (run_workspace.c)
 * is put in the store all or nothing, fenced by the lease, or deleted when
 * the run left nothing; any failure there leaves the previous version and
 * becomes saved: false with the reason. The store's own messages never
 * carry its address or password (store.h), so they may reach the caller.
 *
 * It does not parse the arguments (exec_args.c) or encode the rest of the
 * result (exec_result.c); the tool (tool_exec.c) calls in here.
 */
#include "exec_workspace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "caller.h"
#include "exec_args.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "policy.h"
#include "store.h"

struct mcpx_exec_ws {
	const struct mcpx_workspaces_conf *conf;
	char caller[MCPX_CALLER_MAX];
	char name[MCPX_EXEC_WORKSPACE_NAME_MAX + 1];
	char profile[65];
	bool reset;
	enum mcpx_lang lang;
	const struct mcpx_runfiles_in *inputs; /* until ready */
	size_t max_bytes;                      /* the server's cap, or the profile's if lower */
	unsigned per_caller;                   /* likewise */

	struct mcpx_store_op *op; /* the store operation under way */
	struct mcpx_store_lease *lease;
	bool lease_lost;
	mcpx_exec_ws_ready_fn ready;
	void *ready_arg;
	mcpx_exec_ws_done_fn done;
	void *done_arg;
	struct mcpx_timer timer; /* an answer that needs no store operation */

	/* The version the call found (restored), then the one it leaves. */
	unsigned prev_files;
	uint64_t prev_bytes;
	char *prev_names;
	size_t prev_names_len;
	bool restored;
	uint64_t restored_bytes;
	unsigned files;
	uint64_t bytes;
	char *names; /* the run's list, when it left one */
	size_t names_len;
	bool saved;
	char reason[320];
	const char *outcome; /* the save's, for /metrics */
	uint64_t began_us;   /* when the lease was asked for */
	struct mcpx_audit_line *audit;
};

static void ws_free(struct mcpx_exec_ws *w)
{
	mcpx_timer_cancel(&w->timer);
	if (w->op)
		mcpx_store_cancel(w->op);
	if (w->lease)
		mcpx_store_lease_end(w->lease);
	mcpx_audit_line_emit(w->audit);
	free(w->prev_names);
	free(w->names);
	free(w);
}

static struct mcpx_store_key key_of(const struct mcpx_exec_ws *w)
{
	return (struct mcpx_store_key){w->caller, MCPX_STORE_KIND_WORKSPACE, w->name};
}

/* ---- the answer --------------------------------------------------------- */

struct name_lists {
	cJSON *kept, *not_kept;
};

static void add_name(void *arg, bool kept, const char *name, size_t len)
{
	struct name_lists *l = arg;
	char buf[MCPX_WSPACK_NAME_MAX + 1];

	if (!l->kept || !l->not_kept)
		return;
	memcpy(buf, name, len);
	buf[len] = '\0';
	cJSON_AddItemToArray(kept ? l->kept : l->not_kept, cJSON_CreateString(buf));
}

/* The kept (or not kept) names of a names' list, as a JSON array. */
static cJSON *name_array(const char *names, size_t len, bool kept)
{
	struct name_lists l = {cJSON_CreateArray(), cJSON_CreateArray()};
	cJSON *want = kept ? l.kept : l.not_kept;

	mcpx_wspack_names(names, len, add_name, &l);
	cJSON_Delete(kept ? l.not_kept : l.kept);
	return want;
}

/* structuredContent.workspace: the workspace as it is after the call (the
 * run's version when saved, else the previous one), and the run's own
 * variables that could not be kept. */
static cJSON *answer(const struct mcpx_exec_ws *w)
{
	cJSON *o = cJSON_CreateObject();
	const char *names = w->saved ? w->names : w->prev_names;
	size_t names_len = w->saved ? w->names_len : w->prev_names_len;

	if (!o || !cJSON_AddStringToObject(o, "name", w->name) ||
	    !cJSON_AddBoolToObject(o, "saved", w->saved) ||
	    (!w->saved && !cJSON_AddStringToObject(o, "reason", w->reason)) ||
	    !cJSON_AddNumberToObject(o, "files", w->saved ? w->files : w->prev_files) ||
	    !cJSON_AddNumberToObject(o, "bytes", (double)(w->saved ? w->bytes : w->prev_bytes)) ||
	    !mcpx_json_add_owned(o, "variables", name_array(names, names_len, true)) ||
	    !mcpx_json_add_owned(o, "not_kept", name_array(w->names, w->names_len, false))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The call's end: the lease released, the audit line completed and logged,
 * the answer given; w is freed. */
static void complete(struct mcpx_exec_ws *w)
{
	struct mcpx_audit_workspace aw = {w->name,
	                                  w->restored,
	                                  w->restored_bytes,
	                                  w->saved,
	                                  w->saved ? w->bytes : 0,
	                                  w->saved ? NULL : w->reason};
	mcpx_exec_ws_done_fn done = w->done;
	void *arg = w->done_arg;
	cJSON *o;

	if (w->lease) {
		mcpx_store_lease_end(w->lease);
		w->lease = NULL;
	}
	mcpx_metrics_workspace_save(w->outcome);
	mcpx_audit_line_workspace(w->audit, &aw);
	mcpx_audit_line_emit(w->audit);
	w->audit = NULL;
	if (!w->saved)
		mcpx_info("workspace %s not saved: %s", w->name, w->reason);
	o = answer(w);
	ws_free(w);
	done(arg, o);
}

static void complete_cb(struct mcpx_timer *t)
{
	complete(t->arg);
}

/* Completes on a fresh loop iteration (finish never calls back inside). */
static void complete_later(struct mcpx_exec_ws *w)
{
	w->timer.fn = complete_cb;
	w->timer.arg = w;
	mcpx_timer_start(w->conf->loop, &w->timer, 0);
}

/* ---- lease and load ----------------------------------------------------- */

/* How long the call has waited for its lease and load. */
static double waited_s(const struct mcpx_exec_ws *w)
{
	return (double)(mcpx_now_us() - w->began_us) / 1e6;
}

static void fail(struct mcpx_exec_ws *w, const char *outcome, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The call cannot go on (outcome: how its restore ended, for /metrics):
 * ready is told why; w is freed. */
static void fail(struct mcpx_exec_ws *w, const char *outcome, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	mcpx_exec_ws_ready_fn ready = w->ready;
	void *arg = w->ready_arg;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mcpx_metrics_workspace_restore(outcome, waited_s(w));
	ws_free(w);
	ready(arg, NULL, msg);
}

/* The checked archive to the job (blob: the loaded bytes, NULL for a new
 * or reset workspace; taken). */
static void hand_over(struct mcpx_exec_ws *w, char *blob, size_t len)
{
	struct mcpx_wspack_caps caps = {w->max_bytes, MCPX_WSPACK_FILES_MAX};
	struct mcpx_job_workspace spec = {.name = w->name,
	                                  .blob = blob,
	                                  .blob_len = len,
	                                  .vars_limit = w->max_bytes,
	                                  .caps = caps};
	struct mcpx_err err = {{0}};
	size_t need;
	mcpx_exec_ws_ready_fn ready = w->ready;

	if (mcpx_wspack_parse(blob, len, &caps, &spec.pack, &err) < 0) {
		free(blob);
		fail(w, "refused",
		     "workspace \"%s\" cannot be restored: %s (workspace_reset: true starts it "
		     "empty)",
		     w->name, err.msg);
		return;
	}
	if (mcpx_wsfiles_merge_inputs(&spec.pack, w->inputs, &err) < 0) {
		mcpx_wspack_free(&spec.pack);
		free(blob);
		fail(w, "refused", "%s", err.msg);
		return;
	}
	need = mcpx_wsfiles_restore_bytes(&spec.pack, w->lang == MCPX_LANG_PYTHON) +
	       (w->inputs ? w->inputs->bytes : 0);
	if (w->conf->disk_bytes && need > w->conf->disk_bytes) {
		mcpx_wspack_free(&spec.pack);
		free(blob);
		fail(w, "refused",
		     "workspace \"%s\" holds %zu bytes with the input files, more than a run's "
		     "disk budget of %zu bytes (MCP_EXEC_MAX_DISK_MB)",
		     w->name, need, w->conf->disk_bytes);
		return;
	}
	w->prev_files = (unsigned)spec.pack.n;
	w->prev_bytes = spec.pack.file_bytes + spec.pack.vars_len;
	if (spec.pack.names_len && (w->prev_names = malloc(spec.pack.names_len))) {
		memcpy(w->prev_names, spec.pack.names, spec.pack.names_len);
		w->prev_names_len = spec.pack.names_len;
	}
	w->inputs = NULL;
	mcpx_metrics_workspace_restore(blob ? "restored" : "new", waited_s(w));
	ready(w->ready_arg, &spec, NULL);
	/* What the job did not take (it was refused) is ours to free. */
	mcpx_wspack_free(&spec.pack);
	free(spec.blob);
}

static void loaded_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_exec_ws *w = arg;
	char *blob = NULL;
	size_t len = 0;

	w->op = NULL;
	if (res->rc == 0) {
		blob = res->data;
		len = res->len;
		res->data = NULL;
	} else if (res->rc != -ENOENT) {
		fail(w, "error", "workspace \"%s\" could not be loaded: %s", w->name,
		     res->error ? res->error : strerror(-res->rc));
		return;
	}
	hand_over(w, blob, len);
}

static void reset_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_exec_ws *w = arg;

	w->op = NULL;
	if (res->rc < 0 && res->rc != -ENOENT) {
		fail(w, "error", "workspace \"%s\" could not be reset: %s", w->name,
		     res->error ? res->error : strerror(-res->rc));
		return;
	}
	hand_over(w, NULL, 0);
}

static void lost_cb(void *arg, struct mcpx_store_lease *l, int reason)
{
	struct mcpx_exec_ws *w = arg;

	(void)l;
	w->lease_lost = true;
	mcpx_warn("workspace %s: its lease was lost (%s); the run's save will be refused", w->name,
	          strerror(-reason));
}

static void leased_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_exec_ws *w = arg;
	struct mcpx_store_key k = key_of(w);
	int rc;

	w->op = NULL;
	if (res->rc == -ETIMEDOUT || res->rc == -EBUSY) {
		fail(w, "busy",
		     "workspace \"%s\" is busy: it is in use by another call, which did not end "
		     "within %u s, the queue timeout (MCP_EXEC_QUEUE_TIMEOUT_S); try again later",
		     w->name, w->conf->wait_s);
		return;
	}
	if (res->rc < 0) {
		fail(w, "error", "workspace \"%s\" could not be taken: %s", w->name,
		     res->error ? res->error : strerror(-res->rc));
		return;
	}
	w->lease = res->lease;
	res->lease = NULL;
	/* A reset drops the saved version first, so what the call leaves
	 * (or, when its save fails, nothing) is the workspace afterwards. */
	if (w->reset)
		rc = mcpx_store_delete(w->conf->store, &k, mcpx_store_lease_owner(w->lease), reset_cb,
		                       w, &w->op);
	else
		rc = mcpx_store_get(w->conf->store, &k, true, loaded_cb, w, &w->op);
	if (rc < 0)
		fail(w, "error", "workspace \"%s\" could not be loaded: %s", w->name,
		     strerror(-rc));
}

int mcpx_exec_ws_begin(const struct mcpx_workspaces_conf *conf, const struct mcpx_exec_ws_req *req,
                       mcpx_exec_ws_ready_fn ready, void *arg, struct mcpx_exec_ws **out, char *msg,
                       size_t msglen)
{
	const struct mcpx_profile *pr = req->profile;
	struct mcpx_exec_ws *w;
	struct mcpx_store_key k;
	int rc;

	if (!conf || !conf->store) {
		snprintf(msg, msglen,
		         "workspaces are off on this server (MCP_EXEC_WORKSPACES=off): call exec "
		         "without workspace");
		return -EPERM;
	}
	if (pr && pr->workspaces.off) {
		snprintf(msg, msglen,
		         "workspaces are off for your profile %.64s: call exec without workspace",
		         pr->name);
		return -EPERM;
	}
	if (!(w = calloc(1, sizeof(*w)))) {
		snprintf(msg, msglen, "internal error: out of memory");
		return -ENOMEM;
	}
	w->conf = conf;
	snprintf(w->caller, sizeof(w->caller), "%s", req->caller ? req->caller : "");
	snprintf(w->name, sizeof(w->name), "%s", req->name);
	w->reset = req->reset;
	w->lang = req->lang;
	w->inputs = req->inputs;
	w->max_bytes = conf->max_bytes;
	w->per_caller = conf->per_caller;
	if (pr && pr->workspaces.max_mb && (size_t)pr->workspaces.max_mb << 20 < w->max_bytes)
		w->max_bytes = (size_t)pr->workspaces.max_mb << 20;
	if (pr && pr->workspaces.max && (!w->per_caller || pr->workspaces.max < w->per_caller))
		w->per_caller = pr->workspaces.max;
	w->ready = ready;
	w->ready_arg = arg;
	w->began_us = mcpx_now_us();
	k = key_of(w);
	rc = mcpx_store_lease_hold(conf->store, &k, NULL, MCPX_EXEC_WS_LEASE_TTL_MS, conf->wait_ms,
	                           lost_cb, w, leased_cb, w, &w->op);
	if (rc < 0) {
		snprintf(msg, msglen, "workspace \"%s\" could not be taken: %s", w->name,
		         strerror(-rc));
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* ---- save --------------------------------------------------------------- */

static void saved_cb(void *arg, struct mcpx_store_result *res)
{
	struct mcpx_exec_ws *w = arg;
	int rc = res->rc;

	w->op = NULL;
	w->saved = rc == 0 || (rc == -ENOENT && w->bytes == 0);
	w->outcome = w->saved && w->bytes == 0 ? "deleted" : w->saved ? "saved" : "error";
	if (rc == -EDQUOT) {
		w->outcome = "quota";
		snprintf(w->reason, sizeof(w->reason),
		         "you already have %u workspaces, the most one caller may have "
		         "(MCP_EXEC_WORKSPACES_PER_CALLER, or your profile's max); reset one with "
		         "workspace_reset or let one expire",
		         w->per_caller);
	} else if (rc == -ENOLCK) {
		w->outcome = "lease_lost";
		snprintf(
		    w->reason, sizeof(w->reason),
		    "the workspace's lease was lost during the call (the store was unreachable "
		    "for %u s or more), so another call may have it; the previous version is kept",
		    MCPX_EXEC_WS_LEASE_TTL_MS / 1000u);
	} else if (rc == -EFBIG) {
		w->outcome = "too_large";
		snprintf(w->reason, sizeof(w->reason),
		         "the workspace would hold more than its cap of %zu bytes "
		         "(MCP_EXEC_WORKSPACE_MAX_MB)",
		         w->max_bytes);
	} else if (!w->saved) {
		snprintf(w->reason, sizeof(w->reason), "the store could not save it: %s",
		         res->error ? res->error : strerror(-rc));
	}
	complete(w);
}

/* Whether the run left nothing worth a stored object: no file and no
 * variable kept. */
static bool empty(const struct mcpx_exec_ws *w)
{
	/* '+' marks a kept name; no name holds one. */
	return w->files == 0 && !(w->names && memchr(w->names, '+', w->names_len));
}

/* Puts the collected archive (taken from res), or deletes an emptied one. */
static void save(struct mcpx_exec_ws *w, struct mcpx_job_ws_result *res)
{
	struct mcpx_store_key k = key_of(w);
	struct mcpx_store_put_opts o = {.ttl_ms = w->conf->ttl_ms,
	                                .max_count = w->per_caller,
	                                .lease_owner = mcpx_store_lease_owner(w->lease)};
	size_t len;
	char *data;
	int rc;

	w->files = res->saved.files;
	w->bytes = res->saved.file_bytes + res->saved.vars_bytes;
	if (res->saved.names_len && (w->names = malloc(res->saved.names_len))) {
		memcpy(w->names, res->saved.names, res->saved.names_len);
		w->names_len = res->saved.names_len;
	}
	if (empty(w)) {
		w->bytes = 0;
		rc = mcpx_store_delete(w->conf->store, &k, o.lease_owner, saved_cb, w, &w->op);
	} else {
		data = mcpx_buf_take(&res->saved.archive, &len);
		rc = mcpx_store_put(w->conf->store, &k, data, len, &o, saved_cb, w, &w->op);
	}
	if (rc < 0) {
		w->outcome = "error";
		snprintf(w->reason, sizeof(w->reason), "the store could not save it: %s",
		         strerror(-rc));
		complete_later(w);
	}
}

void mcpx_exec_ws_finish(struct mcpx_exec_ws *w, struct mcpx_job_result *res,
                         mcpx_exec_ws_done_fn done, void *arg)
{
	struct mcpx_job_ws_result *r = res->workspace;

	w->done = done;
	w->done_arg = arg;
	w->audit = res->audit;
	res->audit = NULL;
	if (r) {
		w->restored = r->restored;
		w->restored_bytes = r->restored_bytes;
	}
	if (res->status == MCPX_JOB_DONE && r && r->collected && !w->lease_lost) {
		save(w, r);
		return;
	}
	w->outcome = w->lease_lost                  ? "lease_lost"
	             : res->status != MCPX_JOB_DONE ? "not_run"
	             : r && r->rc == -E2BIG         ? "too_large"
	             : r && r->rc < 0               ? "error"
	                                            : "not_run";
	if (w->lease_lost)
		snprintf(
		    w->reason, sizeof(w->reason),
		    "the workspace's lease was lost during the call (the store was unreachable "
		    "for %u s or more); the previous version is kept",
		    MCPX_EXEC_WS_LEASE_TTL_MS / 1000u);
	else if (res->status != MCPX_JOB_DONE)
		snprintf(w->reason, sizeof(w->reason), "the code did not run");
	else
		snprintf(w->reason, sizeof(w->reason), "%s",
		         r && r->error[0] ? r->error : "the run's workdir was not collected");
	complete_later(w);
}

void mcpx_exec_ws_cancel(struct mcpx_exec_ws *w)
{
	if (!w)
		return;
	if (w->audit) {
		struct mcpx_audit_workspace aw = {w->name, w->restored, w->restored_bytes,
		                                  false,   0,           "the call was cancelled"};
		mcpx_audit_line_workspace(w->audit, &aw);
	}
	ws_free(w);
}
