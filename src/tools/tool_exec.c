/*
 * tool_exec.c - the `exec` tool: the mcp-exec (Go) contract on top of the
 * executor.
 *
 * The tool's glue: it checks a call's arguments (exec_args.c), submits the
 * job, relays queue/start events as MCP log messages and output as
 * rate-limited progress (tool_progress.c), and answers with the finished
 * run's CallToolResult (exec_result.c); its Tool object, description and
 * schemas are exec_describe.c's.
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
#include "exec_describe.h"
#include "jsonschema.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "tool_progress.h"

struct exec_tool {
	struct mcpx_tool base;
	struct mcpx_exec_about about; /* what its Tool object is drawn from */
	struct mcpx_executor *ex;
	struct mcpx_schema *schema; /* the inputSchema, compiled */
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

static void on_done(void *arg, const struct mcpx_job_result *res)
{
	struct exec_run *run = arg;

	/* mcpx_call_finish frees the call; the run goes right after, or after
	 * submit returns when the executor answered from inside it. */
	mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, res->status == MCPX_JOB_DONE     ? "ok"
	                                            : res->status == MCPX_JOB_FAILED ? "failed"
	                                                                             : "busy");
	mcpx_call_finish(run->progress.call, mcpx_exec_result(res));
	run->progress.call = NULL;
	if (run->submitting)
		run->done_early = true;
	else
		free(run);
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
	    .files = a->files,
	    .language = lang,
	};
}

static void exec_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	struct exec_tool *t = tool->ctx;
	struct mcpx_exec_args a;
	struct mcpx_job_spec spec;
	struct mcpx_job_callbacks cb;
	struct exec_run *run;
	char msg[MCPX_SCHEMA_ERRORS_TEXT + 256];
	enum mcpx_lang lang = MCPX_LANG_PYTHON;
	int rc;

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

	job_spec(t, call, &a, lang, &spec);
	cb = (struct mcpx_job_callbacks){.done = on_done, .event = on_event, .arg = run};

	run->submitting = true;
	rc = mcpx_executor_submit(t->ex, &spec, &cb, &run->job);
	run->submitting = false;
	/* Submit copied stdin; an accepted job took the files, a rejected one
	 * left them to us. */
	if (rc == 0)
		a.files = NULL;
	mcpx_exec_args_free(&a);

	if (rc < 0) {
		/* A rejected job never calls back, so the call is still ours. */
		mcpx_call_set_data(call, NULL);
		free(run);
		submit_error(t, rc, msg, sizeof(msg));
		mcpx_metrics_tool_call(MCPX_EXEC_TOOL_NAME, rc == -ENOMEM ? "failed" : "busy");
		mcpx_call_fail(call, msg);
		return;
	}
	if (run->done_early)
		free(run);
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
	mcpx_call_set_data(call, NULL);
	free(run);
}

struct mcpx_tool *mcpx_tool_exec_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                     const struct mcpx_languages *langs)
{
	struct exec_tool *t = calloc(1, sizeof(*t));
	cJSON *schema = mcpx_exec_input_schema(cfg, langs);
	struct mcpx_err err = {{0}};

	/* The schema exec publishes is compiled like a function's: a keyword
	 * the validator does not know would be a bug here, so no start. */
	if (!t || !schema || mcpx_schema_compile(schema, &t->schema, &err) < 0) {
		if (err.msg[0])
			mcpx_error("exec's own inputSchema: %s", err.msg);
		cJSON_Delete(schema);
		free(t);
		return NULL;
	}
	cJSON_Delete(schema);
	t->about.cfg = cfg;
	t->about.langs = langs;
	t->ex = ex;
	t->base.name = MCPX_EXEC_TOOL_NAME;
	t->base.describe = exec_describe;
	t->base.describe_for = exec_describe_for;
	t->base.call = exec_call;
	t->base.cancel = exec_cancel;
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

void mcpx_tool_exec_free(struct mcpx_tool *tool)
{
	struct exec_tool *t = tool ? tool->ctx : NULL;

	if (!t)
		return;
	mcpx_schema_free(t->schema);
	free(t);
}
