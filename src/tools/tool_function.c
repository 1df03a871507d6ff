/*
 * tool_function.c - the policy's functions as MCP tools (tool_function.h):
 * their Tool objects for tools/list, and tools/call turned into a run of
 * the function (functions.h) and its outcome into a CallToolResult.
 *
 * It looks functions up in the policy current when the list is asked for
 * or the call arrives; a call then holds that version (through its run)
 * until it ends. It does not validate or run anything itself.
 */
#include "tool_function.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "functions.h"
#include "jsonrpc.h"
#include "metrics.h"
#include "policy.h"
#include "tool_progress.h"

struct function_tool {
	struct mcpx_tool base;
	struct mcpx_functions *fs;
	const struct mcpx_policy_store *store;
	struct mcpx_tool_provider provider;
};

/* One tools/call in flight; owned by the tool until done or cancel. */
struct function_call {
	struct function_tool *t;
	struct mcpx_fn_run *run;
	struct mcpx_progress progress; /* progress.call: the core's call */
};

static cJSON *describe_function(const struct mcpx_function *fn)
{
	cJSON *d = cJSON_CreateObject();

	if (!d || !cJSON_AddStringToObject(d, "name", fn->name) ||
	    (fn->title && !cJSON_AddStringToObject(d, "title", fn->title)) ||
	    !cJSON_AddStringToObject(d, "description", fn->description) ||
	    !mcpx_json_add_owned(d, "inputSchema", cJSON_Duplicate(fn->input_schema, true)) ||
	    (fn->output_schema &&
	     !mcpx_json_add_owned(d, "outputSchema", cJSON_Duplicate(fn->output_schema, true)))) {
		cJSON_Delete(d);
		return NULL;
	}
	return d;
}

/* The provider: the functions in policy order, after exec. */
static int list_tools(void *ctx, cJSON *arr)
{
	const struct function_tool *t = ctx;
	const struct mcpx_policy *p = mcpx_policy_store_current(t->store);

	for (size_t i = 0; p && i < p->n_functions; i++) {
		cJSON *d = describe_function(&p->functions[i]);

		if (!d || !cJSON_AddItemToArray(arr, d)) {
			cJSON_Delete(d);
			return -ENOMEM;
		}
	}
	return 0;
}

static const struct mcpx_tool *find_tool(void *ctx, const char *name)
{
	const struct function_tool *t = ctx;

	return mcpx_policy_function(mcpx_policy_store_current(t->store), name) ? &t->base : NULL;
}

/* ---- calls ------------------------------------------------------------ */

/* structuredContent, and the same JSON as text for clients that read only
 * content ("a tool that returns structured content SHOULD also return the
 * serialized JSON in a TextContent block", server/tools). */
static cJSON *ok_result(cJSON *structured)
{
	char *text = mcpx_json_print_exact(structured);
	cJSON *res = text ? mcpx_text_result(text, false) : NULL;

	free(text);
	if (!res || !cJSON_AddItemToObject(res, "structuredContent", structured)) {
		cJSON_Delete(res);
		cJSON_Delete(structured);
		return NULL;
	}
	return res;
}

static void on_done(void *arg, struct mcpx_fn_result *res)
{
	struct function_call *fc = arg;
	cJSON *result;

	if (res->outcome == MCPX_FN_OK) {
		result = ok_result(res->structured);
		res->structured = NULL;
	} else {
		result = mcpx_text_result(res->text, true);
	}
	mcpx_call_finish(fc->progress.call, result);
	free(fc);
}

static void on_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct function_call *fc = arg;

	mcpx_progress_event(&fc->progress, mcpx_fn_job(fc->run), ev, pos);
}

static void function_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	struct function_tool *t = tool->ctx;
	struct mcpx_policy *p = mcpx_policy_store_current(t->store);
	struct mcpx_fn_call spec = {.policy = p,
	                            .fn = mcpx_policy_function(p, mcpx_call_tool_name(call)),
	                            .args = args,
	                            .request_id = mcpx_call_id_text(call),
	                            .caller = mcpx_call_caller(call),
	                            .client = mcpx_call_client(call),
	                            .task_id = mcpx_call_task_id(call)};
	struct mcpx_fn_callbacks cb = {.done = on_done, .event = on_event};
	struct function_call *fc;
	char msg[MCPX_FN_MSG_MAX];

	/* The core found the tool by this name in this same loop turn. */
	if (!spec.fn) {
		mcpx_call_fail(call, "no such function");
		return;
	}
	fc = calloc(1, sizeof(*fc));
	if (!fc) {
		mcpx_metrics_tool_call(spec.fn->name, "failed");
		mcpx_call_fail(call, "internal error: out of memory");
		return;
	}
	fc->t = t;
	fc->progress.call = call;
	fc->progress.quiet = true;
	cb.arg = fc;
	if (mcpx_fn_start(t->fs, &spec, &cb, &fc->run, msg, sizeof(msg)) < 0) {
		free(fc);
		mcpx_call_fail(call, msg);
		return;
	}
	mcpx_call_set_data(call, fc);
}

static void function_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	struct function_call *fc = mcpx_call_data(call);

	(void)tool;
	if (!fc)
		return;
	mcpx_fn_cancel(fc->run);
	mcpx_call_set_data(call, NULL);
	free(fc);
}

/* Each function says in the policy (default optional). */
static enum mcpx_task_support task_support(const struct mcpx_tool *tool, const char *name)
{
	const struct function_tool *t = tool->ctx;
	const struct mcpx_function *fn =
	    mcpx_policy_function(mcpx_policy_store_current(t->store), name);

	if (!fn || fn->task_support == MCPX_FN_TASKS_FORBIDDEN)
		return MCPX_TASK_SUPPORT_FORBIDDEN;
	return fn->task_support == MCPX_FN_TASKS_REQUIRED ? MCPX_TASK_SUPPORT_REQUIRED
	                                                  : MCPX_TASK_SUPPORT_OPTIONAL;
}

/* Never listed itself: the provider lists each function. */
static cJSON *describe_none(const struct mcpx_tool *tool)
{
	(void)tool;
	return NULL;
}

struct mcpx_tool *mcpx_tool_function_new(struct mcpx_functions *fs,
                                         const struct mcpx_policy_store *store)
{
	struct function_tool *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->fs = fs;
	t->store = store;
	t->base.name = "(function)";
	t->base.describe = describe_none;
	t->base.call = function_call;
	t->base.cancel = function_cancel;
	t->base.task_support = task_support;
	t->base.ctx = t;
	t->provider.list = list_tools;
	t->provider.find = find_tool;
	t->provider.ctx = t;
	return &t->base;
}

void mcpx_tool_function_free(struct mcpx_tool *tool)
{
	if (tool)
		free(tool->ctx);
}

const struct mcpx_tool_provider *mcpx_tool_function_provider(struct mcpx_tool *tool)
{
	struct function_tool *t = tool->ctx;

	return &t->provider;
}
