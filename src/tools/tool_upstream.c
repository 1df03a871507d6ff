/*
 * tool_upstream.c - the gateway (tool_upstream.h): exposed upstreams' tools
 * listed and called as tools of this server.
 *
 * It looks the upstream up in the policy current when the list is asked
 * for or the call arrives; the call then holds that version (upstream.c
 * takes its reference) until it ends. It neither checks nor changes what
 * the upstream answers: the checks are upstream.c's, the same as for a
 * run's call, and the result goes to the client as the upstream gave it;
 * so does the upstream's progress of the call, to a client that asked for
 * progress. Its provider is ready once every exposed upstream has answered
 * or failed once (or its timeout_s passed): the core holds the first
 * tools/list until then, so the gateway's tools are in it.
 */
#include "tool_upstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "upstream.h"

struct upstream_tool {
	struct mcpx_tool base;
	struct mcpx_upstreams *ups;
	const struct mcpx_policy_store *store;
	struct mcpx_tool_provider next; /* list == NULL: none */
	struct mcpx_tool_provider provider;
};

/* One tools/call in flight; owned by the tool until done or cancel. */
struct gateway_call {
	struct mcpx_call *call;
	struct mcpx_upstream_call *up;
};

static int list_tools(void *ctx, cJSON *arr)
{
	struct upstream_tool *t = ctx;
	cJSON *mine, *e;
	int rc = t->next.list ? t->next.list(t->next.ctx, arr) : 0;

	if (rc < 0)
		return rc;
	mine = mcpx_upstreams_gateway_tools(t->ups, mcpx_policy_store_current(t->store));
	if (!mine)
		return -ENOMEM;
	while ((e = cJSON_DetachItemFromArray(mine, 0)))
		cJSON_AddItemToArray(arr, e);
	cJSON_Delete(mine);
	return 0;
}

/* Ready once every exposed upstream answered or failed once (or its
 * timeout_s passed), and the chained provider is. */
static bool tools_ready(void *ctx)
{
	struct upstream_tool *t = ctx;

	return mcpx_upstreams_settled(t->ups, mcpx_policy_store_current(t->store), NULL, 0) &&
	       (!t->next.ready || t->next.ready(t->next.ctx));
}

static const struct mcpx_tool *find_tool(void *ctx, const char *name)
{
	struct upstream_tool *t = ctx;
	const struct mcpx_tool *found = t->next.find ? t->next.find(t->next.ctx, name) : NULL;
	const struct mcpx_upstream_conf *conf;

	if (found)
		return found;
	conf = mcpx_upstream_of(mcpx_policy_store_current(t->store), name, NULL);
	return conf && conf->expose ? &t->base : NULL;
}

static void on_done(void *arg, struct mcpx_upstream_answer *a)
{
	struct gateway_call *gc = arg;
	struct mcpx_call *call = gc->call;

	/* Finishing hands the call back to the core, which may free it. */
	mcpx_call_set_data(call, NULL);
	free(gc);
	if (a->kind == MCPX_UPSTREAM_RESULT) {
		mcpx_call_finish(call, a->result);
		a->result = NULL;
	} else {
		mcpx_call_fail(call, a->message);
	}
}

/* The upstream's progress of a call whose client asked for progress. */
static void on_progress(void *arg, double progress, const char *message)
{
	struct gateway_call *gc = arg;

	mcpx_call_progress(gc->call, progress, message);
}

static void upstream_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	struct upstream_tool *t = tool->ctx;
	struct mcpx_upstream_caller who = {.request_id = mcpx_call_id_text(call),
	                                   .caller = mcpx_call_caller(call),
	                                   .policy = mcpx_policy_store_current(t->store)};
	struct gateway_call *gc = calloc(1, sizeof(*gc));
	char msg[MCPX_UPSTREAM_MSG_MAX];
	const char *reason = NULL;
	int rc;

	if (!gc) {
		mcpx_call_fail(call, "internal error: out of memory");
		return;
	}
	if (args && !cJSON_IsObject(args)) {
		free(gc);
		mcpx_call_fail(call, "arguments must be an object");
		return;
	}
	gc->call = call;
	mcpx_call_set_data(call, gc);
	/* The client's progressToken is the core's; the upstream is asked with
	 * a token of the request's own, and its progress comes back here. */
	if (mcpx_call_has_progress(call)) {
		who.progress = on_progress;
		who.progress_arg = gc;
	}
	rc = mcpx_upstream_call_start(t->ups, &who, mcpx_call_tool_name(call), args, on_done, gc,
	                              &gc->up, &reason, msg, sizeof(msg));
	if (rc == 0)
		return;
	mcpx_call_set_data(call, NULL);
	free(gc);
	mcpx_call_fail(call, rc == -EACCES   ? msg
	                     : rc == -ENOENT ? "no such tool"
	                                     : "internal error: out of memory");
}

static void upstream_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	struct gateway_call *gc = mcpx_call_data(call);

	(void)tool;
	if (!gc)
		return;
	mcpx_upstream_call_cancel(gc->up);
	mcpx_call_set_data(call, NULL);
	free(gc);
}

/* An upstream's tool keeps the execution.taskSupport its upstream listed
 * (tools/list shows the upstream's Tool as it is). A task of it holds the
 * forwarded call, which reaches the upstream as a direct call; one the
 * upstream marks "required" is offered as optional here, since this server
 * never asks it for a task, and the upstream decides what it answers. */
static enum mcpx_task_support task_support(const struct mcpx_tool *tool, const char *name)
{
	struct upstream_tool *t = tool->ctx;
	char *text = mcpx_upstreams_tool_member(t->ups, mcpx_policy_store_current(t->store), name,
	                                        "execution");
	cJSON *exec = text ? cJSON_Parse(text) : NULL;
	const cJSON *sup = cJSON_GetObjectItemCaseSensitive(exec, "taskSupport");
	enum mcpx_task_support s = MCPX_TASK_SUPPORT_FORBIDDEN;

	if (cJSON_IsString(sup) && (strcmp(sup->valuestring, "optional") == 0 ||
	                            strcmp(sup->valuestring, "required") == 0))
		s = MCPX_TASK_SUPPORT_OPTIONAL;
	cJSON_Delete(exec);
	free(text);
	return s;
}

/* Never listed itself: the provider lists each tool. */
static cJSON *describe_none(const struct mcpx_tool *tool)
{
	(void)tool;
	return NULL;
}

struct mcpx_tool *mcpx_tool_upstream_new(struct mcpx_upstreams *ups,
                                         const struct mcpx_policy_store *store,
                                         const struct mcpx_tool_provider *next)
{
	struct upstream_tool *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->ups = ups;
	t->store = store;
	if (next)
		t->next = *next;
	t->base.name = "(upstream)";
	t->base.describe = describe_none;
	t->base.call = upstream_call;
	t->base.cancel = upstream_cancel;
	t->base.task_support = task_support;
	t->base.ctx = t;
	t->provider.list = list_tools;
	t->provider.find = find_tool;
	t->provider.ready = tools_ready;
	t->provider.ctx = t;
	return &t->base;
}

void mcpx_tool_upstream_free(struct mcpx_tool *tool)
{
	if (tool)
		free(tool->ctx);
}

const struct mcpx_tool_provider *mcpx_tool_upstream_provider(struct mcpx_tool *tool)
{
	struct upstream_tool *t = tool->ctx;

	return &t->provider;
}
