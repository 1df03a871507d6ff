/*
 * tool_exec.c - the `exec` tool: the mcp-exec (Go) contract on top of the
 * executor.
 *
 * The tool's glue: it checks a call's arguments (exec_args.c), submits the
 * job, relays queue/start events as MCP log messages and output as
 * rate-limited progress (tool_progress.c), and answers with the finished
 * run's CallToolResult (exec_result.c); its Tool object, description and
 * schemas are exec_describe.c's. A call that names a workspace first has it
 * taken and loaded (exec_workspace.c), is submitted once it is ready, and
 * is answered once the run's version is saved (or not).
 *
 * It does not run anything itself, know about processes or time limits (the
 * executor and the sandbox do), or speak JSON-RPC (the core does).
 */
#include "tool_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "exec_describe.h"
#include "exec_workspace.h"
#include "jsonschema.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "tool_progress.h"

struct exec_tool {
	struct mcpx_tool base;
	struct mcpx_exec_about about; /* what its Tool object is drawn from */
	struct mcpx_executor *ex;
	struct mcpx_schema *schema;            /* the inputSchema, compiled */
	const struct mcpx_workspaces_conf *ws; /* NULL: workspaces are off */
};

/* One tools/call in flight; owned by the tool from submit until done or
 * cancel. */
struct exec_run {
	struct exec_tool *t;
	struct mcpx_call *call;
	struct mcpx_job *job;
	bool submitting;               /* inside mcpx_executor_submit */
	bool done_early;               /* done arrived during submit: free after it returns */
	struct mcpx_progress progress; /* progress.call: NULL once finished */
	/* A workspace call: its workspace until saved, and until submit the
	 * arguments (their code copied: the call's JSON is gone by then);
	 * after the run, its result waiting for the save. */
	struct mcpx_exec_ws *ws;
	struct mcpx_exec_args a;
	enum mcpx_lang lang;
	char *code;
	cJSON *result;
};

/* exec's Tool object as caller sees it (NULL: the top-level view). */
static cJSON *exec_describe_for(const struct mcpx_tool *tool, const char *caller)
{
	const struct exec_tool *t = tool->ctx;

	return mcpx_exec_describe(&t->about, caller);
}

static cJSON *exec_describe(const struct mcpx_tool *tool)
{
	return exec_describe_for(tool, NULL);
}

static void count_call(const struct mcpx_job_result *res)
{
	mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, res->status == MCPX_JOB_DONE     ? "ok"
	                                            : res->status == MCPX_JOB_FAILED ? "failed"
	                                                                             : "busy");
}

/* Frees a run whose call is finished or gone. */
static void run_free(struct exec_run *run)
{
	mcpx_exec_args_free(&run->a);
	if (run->code) {
		mcpx_wipe(run->code, strlen(run->code));
		free(run->code);
	}
	cJSON_Delete(run->result);
	free(run);
}

/* The workspace is saved (or not): the answer gets its part and goes. */
static void on_saved(void *arg, cJSON *workspace)
{
	struct exec_run *run = arg;
	cJSON *result = run->result;

	run->ws = NULL;
	run->result = NULL;
	if (!result)
		result = NULL; /* out of memory: the core answers an internal error */
	else if (mcpx_exec_result_add_workspace(result, workspace) < 0)
		cJSON_Delete(workspace);
	mcpx_call_finish(run->progress.call, result);
	run->progress.call = NULL;
	if (!run->submitting)
		run_free(run);
	else
		run->done_early = true;
}

static void on_done(void *arg, const struct mcpx_job_result *res)
{
	struct exec_run *run = arg;

	count_call(res);
	if (run->ws) {
		/* Answered once the workspace is saved; the result waits. */
		run->job = NULL;
		run->result = mcpx_exec_result(res);
		mcpx_exec_ws_finish(run->ws, (struct mcpx_job_result *)res, on_saved, run);
		return;
	}
	/* mcpx_call_finish frees the call; the run goes right after, or after
	 * submit returns when the executor answered from inside it. */
	mcpx_call_finish(run->progress.call, mcpx_exec_result(res));
	run->progress.call = NULL;
	if (run->submitting)
		run->done_early = true;
	else
		run_free(run);
}

static void on_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct exec_run *run = arg;

	mcpx_progress_event(&run->progress, run->job, ev, pos);
}

/* The tool error for a job the executor refused. */
static void submit_error(const struct exec_tool *t, int rc, char *msg, size_t len)
{
	struct mcpx_executor_stats st;

	if (rc == -EBUSY) {
		mcpx_executor_stats(t->ex, &st);
		snprintf(msg, len,
		         "server busy: %zu executions already queued (limit %u); try again later",
		         st.queue_depth, t->about.cfg->max_queue);
	} else if (rc == -EUSERS || rc == -EAGAIN) {
		mcpx_executor_share_text(t->ex, msg, len);
	} else if (rc == -ESHUTDOWN) {
		snprintf(msg, len, "server is shutting down: not accepting new executions");
	} else {
		snprintf(msg, len, "internal error: could not queue the execution (%s)",
		         strerror(-rc));
	}
}

/* The job call's checked arguments a (lang: their language) ask for,
 * under the caller's profile; it points into a and the call. */
static void job_spec(const struct exec_tool *t, struct mcpx_call *call,
                     const struct mcpx_exec_args *a, enum mcpx_lang lang,
                     struct mcpx_job_spec *spec)
{
	const struct mcpx_profile *pr = mcpx_policy_profile_for(
	    mcpx_policy_store_current(t->about.policy), mcpx_call_caller(call));

	*spec = (struct mcpx_job_spec){
	    .code = a->code,
	    .code_len = a->code_len,
	    .stdin_data = a->stdin_data,
	    .stdin_len = a->stdin_len,
	    .timeout_s = a->timeout_s,
	    .request_id = mcpx_call_id_text(call),
	    .caller = mcpx_call_caller(call),
	    .profile = pr ? pr->name : NULL,
	    .limits = pr ? &pr->limits : NULL,
	    .client = mcpx_call_client(call),
	    .task_id = mcpx_call_task_id(call),
	    .files = a->files,
	    .language = lang,
	};
}

/* Submits the run's job (ws: its workspace, NULL for none). Returns 0, or
 * fails the call (and frees nothing: the caller does). */
static int submit(struct exec_run *run, const struct mcpx_exec_args *a, enum mcpx_lang lang,
                  struct mcpx_job_workspace *ws)
{
	struct exec_tool *t = run->t;
	struct mcpx_call *call = run->progress.call;
	struct mcpx_job_spec spec;
	struct mcpx_job_callbacks cb = {.done = on_done, .event = on_event, .arg = run};
	char msg[256];
	int rc;

	job_spec(t, call, a, lang, &spec);
	spec.workspace = ws;
	run->submitting = true;
	rc = mcpx_executor_submit(t->ex, &spec, &cb, &run->job);
	run->submitting = false;
	if (rc < 0) {
		submit_error(t, rc, msg, sizeof(msg));
		mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, rc == -ENOMEM ? "failed" : "busy");
		mcpx_call_set_data(call, NULL);
		mcpx_call_fail(call, msg);
	}
	return rc;
}

/* The workspace is ready (spec) or cannot be had (msg): submit or fail. */
static void on_ws_ready(void *arg, struct mcpx_job_workspace *spec, const char *msg)
{
	struct exec_run *run = arg;
	struct mcpx_exec_args *a = &run->a;
	int rc;

	if (!spec) {
		run->ws = NULL; /* gone with its failure */
		mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, "failed");
		mcpx_call_set_data(run->progress.call, NULL);
		mcpx_call_fail(run->progress.call, msg);
		run_free(run);
		return;
	}
	a->code = run->code;
	rc = submit(run, a, run->lang, spec);
	if (rc < 0) {
		mcpx_exec_ws_cancel(run->ws);
		run->ws = NULL;
		run_free(run);
		return;
	}
	/* An accepted job took the files (and the workspace's archive). */
	a->files = NULL;
	mcpx_exec_args_free(a);
	if (run->done_early && !run->ws)
		run_free(run);
	else
		run->done_early = false;
}

/* A call with a workspace: taken and loaded first (on_ws_ready). Takes a. */
static void begin_ws(struct exec_run *run, struct mcpx_exec_args *a, enum mcpx_lang lang)
{
	struct exec_tool *t = run->t;
	struct mcpx_call *call = run->progress.call;
	struct mcpx_exec_ws_req req = {
	    .caller = mcpx_call_caller(call),
	    .profile = mcpx_policy_profile_for(mcpx_policy_store_current(t->about.policy),
	                                       mcpx_call_caller(call)),
	    .name = a->workspace,
	    .reset = a->workspace_reset,
	    .lang = lang,
	    .inputs = a->files,
	};
	char msg[512];
	int rc;

	run->a = *a;
	run->lang = lang;
	run->code = strndup(a->code, a->code_len);
	rc = run->code
	         ? mcpx_exec_ws_begin(t->ws, &req, on_ws_ready, run, &run->ws, msg, sizeof(msg))
	         : -ENOMEM;
	if (rc < 0) {
		if (rc == -ENOMEM && !run->code)
			snprintf(msg, sizeof(msg), "internal error: out of memory");
		mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME,
		                       rc == -EPERM ? "invalid_arguments" : "failed");
		mcpx_call_set_data(call, NULL);
		mcpx_call_fail(call, msg);
		run_free(run);
	}
}

static void exec_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	struct exec_tool *t = tool->ctx;
	struct mcpx_exec_args a;
	struct exec_run *run;
	char msg[MCPX_SCHEMA_ERRORS_TEXT + 256];
	enum mcpx_lang lang = MCPX_LANG_PYTHON;
	int rc;

	/* Off, the schema has no workspace: say so rather than "unexpected
	 * property". */
	if (!t->ws && cJSON_GetObjectItemCaseSensitive(args, "workspace")) {
		mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, "invalid_arguments");
		mcpx_call_fail(call, "workspaces are off on this server (MCP_EXEC_WORKSPACES=off): "
		                     "call exec without workspace");
		return;
	}
	if (mcpx_exec_args_check(t->schema, t->about.cfg, t->about.langs, args, &a, &lang, msg,
	                         sizeof(msg)) < 0) {
		mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, "invalid_arguments");
		mcpx_call_fail(call, msg);
		return;
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		mcpx_exec_args_free(&a);
		mcpx_call_fail(call, "internal error: out of memory");
		return;
	}
	run->t = t;
	run->progress.call = call;
	mcpx_call_set_data(call, run);
	/* A task's run may last longer than a direct call's. */
	if (mcpx_call_task_id(call))
		a.timeout_s = mcpx_exec_task_timeout(args, t->about.cfg);
	if (a.workspace) {
		begin_ws(run, &a, lang);
		return;
	}
	rc = submit(run, &a, lang, NULL);
	/* Submit copied stdin; an accepted job took the files, a rejected one
	 * left them to us. */
	if (rc == 0)
		a.files = NULL;
	mcpx_exec_args_free(&a);
	if (rc < 0 || run->done_early)
		run_free(run);
}

static void exec_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	struct exec_tool *t = tool->ctx;
	struct exec_run *run = mcpx_call_data(call);

	if (!run)
		return;
	mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, "cancelled");
	if (run->job)
		mcpx_executor_cancel(t->ex, run->job);
	/* Its lease released, whatever step it was at. */
	mcpx_exec_ws_cancel(run->ws);
	mcpx_call_set_data(call, NULL);
	run_free(run);
}

/* Compiles the inputSchema exec publishes now into t->schema: it is
 * compiled like a function's, so a keyword the validator does not know is
 * a bug here, and no start. Except the workspace name's pattern: take_args
 * checks that very pattern by hand (check_workspace, whose words a client
 * gets either way), so the compiled copy leaves it out and the server
 * does not load a regex compiler at start for it (~130 KiB of resident
 * memory, docs/benchmarks.md). */
static int compile_schema(struct exec_tool *t, const struct mcpx_config *cfg,
                          const struct mcpx_languages *langs)
{
	cJSON *schema = mcpx_exec_input_schema(cfg, langs, t->ws != NULL);
	cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	struct mcpx_schema *compiled = NULL;
	struct mcpx_err err = {{0}};

	cJSON_DeleteItemFromObjectCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(props, "workspace"), "pattern");
	if (!schema || mcpx_schema_compile(schema, &compiled, &err) < 0) {
		if (err.msg[0])
			mcpx_error("exec's own inputSchema: %s", err.msg);
		cJSON_Delete(schema);
		return -EINVAL;
	}
	cJSON_Delete(schema);
	mcpx_schema_free(t->schema);
	t->schema = compiled;
	return 0;
}

/* exec may always run as a task (2025-11-25 execution.taskSupport). */
static enum mcpx_task_support exec_task_support(const struct mcpx_tool *tool, const char *name)
{
	(void)tool;
	(void)name;
	return MCPX_TASK_SUPPORT_OPTIONAL;
}

struct mcpx_tool *mcpx_tool_exec_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                     const struct mcpx_languages *langs)
{
	struct exec_tool *t = calloc(1, sizeof(*t));

	if (!t || compile_schema(t, cfg, langs) < 0) {
		free(t);
		return NULL;
	}
	t->about.cfg = cfg;
	t->about.langs = langs;
	t->ex = ex;
	t->base.name = MCPX_EXEC_TOOL_NAME;
	t->base.describe = exec_describe;
	t->base.describe_for = exec_describe_for;
	t->base.call = exec_call;
	t->base.cancel = exec_cancel;
	t->base.task_support = exec_task_support;
	t->base.ctx = t;
	return &t->base;
}

void mcpx_tool_exec_set_policy(struct mcpx_tool *tool, const struct mcpx_policy_store *policy)
{
	struct exec_tool *t = tool->ctx;

	t->about.policy = policy;
}

void mcpx_tool_exec_set_upstreams(struct mcpx_tool *tool,
                                  char *(*fn)(void *arg, const struct mcpx_egress_grant *g),
                                  void *arg)
{
	struct exec_tool *t = tool->ctx;

	t->about.upstreams = fn;
	t->about.upstreams_arg = arg;
}

int mcpx_tool_exec_set_workspaces(struct mcpx_tool *tool, const struct mcpx_workspaces_conf *ws)
{
	struct exec_tool *t = tool->ctx;
	const struct mcpx_workspaces_conf *old = t->ws;

	t->ws = ws && ws->store ? ws : NULL;
	t->about.workspaces = t->ws != NULL;
	if (compile_schema(t, t->about.cfg, t->about.langs) < 0) {
		t->ws = old;
		t->about.workspaces = old != NULL;
		return -EINVAL;
	}
	return 0;
}

void mcpx_tool_exec_free(struct mcpx_tool *tool)
{
	struct exec_tool *t = tool ? tool->ctx : NULL;

	if (!t)
		return;
	mcpx_schema_free(t->schema);
	free(t);
}
