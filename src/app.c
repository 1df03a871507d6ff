/*
 * app.c - wires the modules together for one run of the server.
 *
 * Order of start-up: sandbox (layers probed, seccomp compiled, self-test
 * proves them), the policy file, then the transport's loop (stdio, or the
 * HTTP listener with auth and sessions), then broker -> executor ->
 * functions -> tools (exec, the policy's functions) -> protocol core on
 * that loop, then the transports that feed the core. A reload of the policy
 * that changes the tool list is announced to the core's listeners
 * (notifications/tools/list_changed). Teardown is the reverse
 * (see teardown()). SIGTERM or SIGINT drains: new work is refused (503 /
 * not ready), queued executions are answered with a clear error, the running
 * one finishes, responses are flushed, then the loop stops and the process
 * exits 0. A second SIGTERM or SIGINT during the drain stops at once: the
 * running execution is killed (its whole process tree), everything is torn
 * down in order, and the exit status is 128 + that signal's number (130 for
 * SIGINT, 143 for SIGTERM), as a shell reports a process stopped by it.
 *
 * The judgements start-up shares with --check-config (the sandbox, the
 * languages, the policy file) are app_start.c's, --check-config itself
 * app_check.c's, and the HTTP side is transport/http_front.c's.
 */
#include "app.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "app_start.h"
#include "app_workspaces.h"
#include "broker.h"
#include "config.h"
#include "crypto.h"
#include "curl_loop.h"
#include "executor.h"
#include "functions.h"
#include "heap_trim.h"
#include "app_tasks.h"
#include "http_front.h"
#include "json.h"
#include "listen_addr.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "metrics.h"
#include "policy.h"
#include "run_budget.h"
#include "run_channel.h"
#include "sandbox.h"
#include "signals.h"
#include "store.h"
#include "tasks.h"
#include "tool_exec.h"
#include "tool_function.h"
#include "tool_upstream.h"
#include "transport_stdio.h"
#include "upstream.h"
#include "upstream_ops.h"
#include "workspace_resources.h"

#define DRAIN_POLL_US 50000u
/* How often the policy file and its secret files are checked for changes. */
#define POLICY_POLL_MS 1000u

struct app {
	struct mcpx_config *cfg;
	struct mcpx_sandbox sb;
	bool selftest_ok;
	struct mcpx_loop *loop;
	struct mcpx_policy_store *policy; /* NULL: no MCP_EXEC_POLICY */
	struct mcpx_curl_loop *http;      /* the egress transfers' shared transport */
	struct mcpx_store *store;         /* workspaces and tasks; NULL: off */
	struct mcpx_broker *broker;
	struct mcpx_run_channel *rc; /* the runs' channels; NULL without a policy */
	struct mcpx_executor *ex;
	struct mcpx_functions *functions;
	struct mcpx_upstreams *upstreams;     /* NULL without a policy */
	struct mcpx_upstream_ops *up_ops;     /* the runs' side of them */
	const struct mcpx_policy *up_version; /* the policy the upstreams follow */
	struct mcpx_app_workspaces ws;        /* ws.conf.store NULL: workspaces off */
	struct mcpx_tool *tool;
	struct mcpx_tool *fn_tool; /* NULL without a policy */
	struct mcpx_tool *up_tool; /* the gateway; NULL without a policy */
	char tools_sha256[65];     /* of the tool list last announced */
	struct mcpx_core *core;
	struct mcpx_tasks *tasks; /* NULL: MCP tasks off */
	struct mcpx_signals *sig;
	/* stdio */
	struct mcpx_stdio *stdio;
	/* http */
	struct mcpx_http_front *front;
	bool draining;
	int stop_signal; /* the second signal, which means "stop now"; 0 if none */
	uint64_t drain_deadline_us;
	struct mcpx_timer drain_timer;
	struct mcpx_heap_trim heap_trim;
};

static const char *const INSTRUCTIONS =
    "Call the exec tool with Python 3 source in `code`; each call runs in a fresh sandboxed "
    "process without network access and returns stdout, stderr and the exit code.";

static int start_broker(struct app *app)
{
	struct mcpx_broker_opts bo = {.proxy = app->cfg->egress_proxy,
	                              .ca_file = app->cfg->egress_ca_file};
	struct mcpx_err err = {{0}};

	if (!app->policy)
		return 0;
	mcpx_policy_store_watch(app->policy, app->loop, POLICY_POLL_MS);
	/* One transport for the runs' fetches and the upstream MCP client:
	 * libcurl is loaded with its first transfer. */
	if (!(app->http = mcpx_curl_loop_new(app->loop, "egress"))) {
		mcpx_error("egress: out of memory");
		return -1;
	}
	if (mcpx_broker_new(app->http, app->policy, &bo, &app->broker, &err) < 0) {
		mcpx_error("%s", err.msg);
		return -1;
	}
	/* What runs send over their channels: "fetch" to the broker, the
	 * upstream ops to the upstreams, "call"/"result" to the functions
	 * (build_tools). */
	if (!(app->rc = mcpx_run_channel_new(app->loop, app->policy)) ||
	    mcpx_broker_serve(app->broker, app->rc) < 0) {
		mcpx_error("run channel: out of memory");
		return -1;
	}
	/* The upstream MCP servers' client shares the transport. */
	if (mcpx_upstreams_new(app->loop, app->http, app->policy, app->cfg->egress_ca_file,
	                       &app->upstreams) < 0 ||
	    !(app->up_ops = mcpx_upstream_ops_new(app->rc, app->upstreams))) {
		mcpx_error("upstreams: out of memory");
		return -1;
	}
	return 0;
}

/* ---- the executor's run hooks, wired to the run channel ------------------- */

static bool hook_exec_wants(void *arg)
{
	return mcpx_run_channel_exec_wants(arg);
}

/* A run's channel goes to the run channel, under what the submitter named
 * in its job's bind (functions.c: a struct mcpx_run_who with the policy
 * version, grant and token of a function's run), by default as exec's. */
static void *hook_run_start(void *arg, int *fd, const struct mcpx_run_info *info)
{
	struct mcpx_run_who who = {0};

	if (info->serve)
		who = *(const struct mcpx_run_who *)info->serve;
	who.run_id = info->run_id;
	who.request_id = info->request_id;
	who.caller = info->caller;
	who.depth = info->depth;
	who.deadline_us = info->deadline_us;
	who.held = info->held;
	who.held_arg = info->held_arg;
	return mcpx_run_channel_start(arg, fd, &who);
}

static void hook_run_end(void *arg, void *run)
{
	(void)arg;
	mcpx_run_channel_end(run);
}

/* The SHA-256 of the tool list as tools/list shows it now. */
static int tools_digest(struct app *app, char hex[65])
{
	cJSON *arr = cJSON_CreateArray();
	cJSON *exec = app->tool->describe(app->tool);
	const struct mcpx_tool_provider *pr =
	    app->up_tool ? mcpx_tool_upstream_provider(app->up_tool) : NULL;
	char *text = NULL;

	if (arr && exec && cJSON_AddItemToArray(arr, exec)) {
		exec = NULL;
		if (!pr || pr->list(pr->ctx, arr) == 0)
			text = mcpx_json_print_exact(arr);
	}
	cJSON_Delete(exec);
	cJSON_Delete(arr);
	if (!text)
		return -ENOMEM;
	mcpx_sha256_hex(text, strlen(text), hex);
	free(text);
	return 0;
}

/* A new policy version: when the tools it gives (its functions, exec's
 * description of its egress) differ from those last announced, every
 * listening session hears notifications/tools/list_changed. */
static void policy_changed(void *arg)
{
	struct app *app = arg;
	char now[65];

	const struct mcpx_policy *p = mcpx_policy_store_current(app->policy);

	if (app->upstreams && p != app->up_version) {
		app->up_version = p;
		mcpx_upstreams_reload(app->upstreams);
	}
	/* A tools/list that waited for the gateway's upstreams' first answers
	 * is answered once they all came (or failed, or ran out of time). */
	if (app->core)
		mcpx_core_tools_ready(app->core);
	/* With profiles each caller's list depends on them too: any new
	 * version may have changed some caller's list, so it is announced. */
	if (!app->core || tools_digest(app, now) < 0 ||
	    (strcmp(now, app->tools_sha256) == 0 && !(p && p->has_profiles)))
		return;
	memcpy(app->tools_sha256, now, sizeof(now));
	mcpx_info("the tool list changed; telling the sessions that listen");
	mcpx_core_tools_changed(app->core);
}

/* The upstreams exec code under grant g (a caller's profile's, or the
 * top-level one) may call, for exec's description. */
static char *exec_upstreams(void *arg, const struct mcpx_egress_grant *g)
{
	struct app *app = arg;
	struct mcpx_policy *p = mcpx_policy_store_current(app->policy);

	return mcpx_upstreams_summary(app->upstreams, p, g ? g : &p->exec);
}

/* exec, and with a policy its functions. */
static int build_tools(struct app *app)
{
	app->tool = mcpx_tool_exec_new(app->cfg, app->ex, &app->sb.langs);
	if (!app->tool)
		return -1;
	mcpx_tool_exec_set_policy(app->tool, app->policy);
	if (app->ws.conf.store && mcpx_tool_exec_set_workspaces(app->tool, &app->ws.conf) < 0)
		return -1;
	if (app->upstreams)
		mcpx_tool_exec_set_upstreams(app->tool, exec_upstreams, app);
	app->functions = mcpx_functions_new(app->cfg, app->ex, app->rc, app->loop);
	if (!app->functions)
		return -1;
	if (app->policy && !(app->fn_tool = mcpx_tool_function_new(app->functions, app->policy)))
		return -1;
	/* The gateway's tools come after the functions' (it asks them first). */
	if (app->policy &&
	    !(app->up_tool = mcpx_tool_upstream_new(app->upstreams, app->policy,
	                                            mcpx_tool_function_provider(app->fn_tool))))
		return -1;
	return 0;
}

/* Which tools a caller sees and may call: its profile's, under the policy
 * in force now (mcpx_policy_tool_allowed). */
static bool access_allowed(void *ctx, const char *caller, const char *name)
{
	return mcpx_policy_tool_allowed(mcpx_policy_store_current(ctx), caller, name);
}

static bool access_per_caller(void *ctx)
{
	const struct mcpx_policy *p = mcpx_policy_store_current(ctx);

	return p && p->has_profiles;
}

static int build_core(struct app *app)
{
	struct mcpx_tool *tools[1];
	struct mcpx_core_opts o;
	struct mcpx_tool_access access = {access_allowed, access_per_caller, app->policy};
	struct mcpx_err err = {{0}};
	int failed;

	if (start_broker(app) < 0)
		return -1;
	app->tasks = mcpx_app_start_tasks(app->cfg, app->loop, app->store, &failed);
	if (failed)
		return -1;
	{
		/* Without a policy no run gets a channel. */
		const struct mcpx_executor_hooks hooks = {.exec_wants_channel = hook_exec_wants,
		                                          .run_start = hook_run_start,
		                                          .run_end = hook_run_end,
		                                          .arg = app->rc};

		app->ex = mcpx_executor_new(app->loop, app->cfg, &app->sb, app->rc ? &hooks : NULL);
	}
	if (!app->ex || build_tools(app) < 0)
		return -1;
	/* Every worker thread exists now: the filters name them all before
	 * the zygote or a run receives one. */
	if (mcpx_sandbox_refresh_signal_rules(&app->sb, &err) < 0) {
		mcpx_error("sandbox: %s", err.msg);
		return -1;
	}
	mcpx_executor_start(app->ex);
	tools[0] = app->tool;
	memset(&o, 0, sizeof(o));
	o.server_name = MCPX_NAME;
	o.server_version = MCPX_VERSION;
	o.instructions = INSTRUCTIONS;
	o.tools = tools;
	o.ntools = 1;
	/* The gateway's provider chains the functions' (tool_upstream.c). */
	o.provider = app->up_tool   ? mcpx_tool_upstream_provider(app->up_tool)
	             : app->fn_tool ? mcpx_tool_function_provider(app->fn_tool)
	                            : NULL;
	o.access = app->policy ? &access : NULL;
	o.tools_list_changed = app->policy != NULL;
	o.tasks = app->tasks ? mcpx_tasks_hooks(app->tasks) : NULL;
	o.resources = mcpx_workspace_resources_provider(app->ws.resources);
	app->core = mcpx_core_new(&o);
	if (!app->core || tools_digest(app, app->tools_sha256) < 0)
		return -1;
	if (app->tasks)
		mcpx_tasks_attach(app->tasks, app->core);
	if (app->policy)
		mcpx_policy_store_on_change(app->policy, policy_changed, app);
	if (app->upstreams) {
		/* An upstream's new tool list may change what tools/list shows. */
		app->up_version = mcpx_policy_store_current(app->policy);
		mcpx_upstreams_on_list_changed(app->upstreams, policy_changed, app);
	}
	return 0;
}

/* ---- draining ---- */

static bool drained(struct app *app)
{
	if (!mcpx_executor_idle(app->ex) || mcpx_core_inflight(app->core))
		return false;
	/* A task's run that ended is still writing its result. */
	if (app->tasks && mcpx_tasks_busy(app->tasks))
		return false;
	if (app->front && mcpx_http_front_busy(app->front))
		return false;
	return true;
}

static void drain_timer_cb(struct mcpx_timer *t)
{
	struct app *app = t->arg;

	if (app->front)
		mcpx_http_front_close_idle(app->front);
	if (drained(app) || mcpx_now_us() > app->drain_deadline_us) {
		if (!drained(app))
			mcpx_warn("drain grace period over; exiting with work in flight");
		mcpx_loop_stop(app->loop);
		return;
	}
	mcpx_timer_start(app->loop, &app->drain_timer, DRAIN_POLL_US);
}

static void on_signal(void *arg, int signo)
{
	struct app *app = arg;

	if (app->draining) {
		if (!app->stop_signal) {
			app->stop_signal = signo;
			mcpx_warn("second %s: stopping now (the running execution is killed)",
			          signo == SIGTERM ? "SIGTERM" : "SIGINT");
			mcpx_loop_stop(app->loop);
		}
		return;
	}
	app->draining = true;
	/* The drain budget: the running execution may take up to its own
	 * timeout, and the calls already accepted run after it while theirs
	 * end within the same window (the chart's grace period covers it:
	 * mcp-exec.drainSlackS). */
	app->drain_deadline_us =
	    mcpx_now_us() + ((uint64_t)app->cfg->max_timeout_s + 10u) * 1000000u;
	mcpx_info("received %s: draining (the running execution and the queued ones that fit "
	          "in %u s finish; the rest are answered)",
	          signo == SIGTERM ? "SIGTERM" : "SIGINT", app->cfg->max_timeout_s + 10u);
	if (app->front)
		mcpx_http_front_drain(app->front);
	/* Listen streams end with their completion result. */
	mcpx_core_end_subscriptions(app->core);
	mcpx_executor_drain(app->ex, app->drain_deadline_us);
	if (app->tasks)
		mcpx_tasks_drain(app->tasks);
	if (app->stdio) {
		mcpx_stdio_shutdown(app->stdio);
		return;
	}
	app->drain_timer.fn = drain_timer_cb;
	app->drain_timer.arg = app;
	mcpx_timer_start(app->loop, &app->drain_timer, 0);
}

/* ---- what the HTTP side asks of the server ---- */

/* Whether the server takes work now (/readyz). */
static bool app_ready(void *arg, char *reason, size_t len)
{
	struct app *app = arg;
	struct mcpx_executor_stats st;

	if (!app->selftest_ok) {
		snprintf(reason, len, "sandbox self-test has not passed");
		return false;
	}
	if (app->draining) {
		snprintf(reason, len, "draining");
		return false;
	}
	/* The gateway's tools are there from the first list: not ready while
	 * an exposed upstream has not answered or failed once (at most its
	 * timeout_s). */
	if (app->upstreams &&
	    !mcpx_upstreams_settled(app->upstreams, mcpx_policy_store_current(app->policy), reason,
	                            len))
		return false;
	mcpx_executor_stats(app->ex, &st);
	if (st.running && st.queue_depth >= app->cfg->max_queue) {
		snprintf(reason, len, "execution queue is full");
		return false;
	}
	return true;
}

/* The gauges of /metrics only the server knows. */
static void app_gauges(void *arg, struct mcpx_metrics_gauges *g)
{
	struct app *app = arg;
	struct mcpx_executor_stats st;

	mcpx_executor_stats(app->ex, &st);
	g->queue_depth = st.queue_depth;
	g->running = st.running;
	g->draining = app->draining;
}

static int start_http(struct app *app)
{
	struct mcpx_http_front_hooks h = {
	    .ready = app_ready,
	    .gauges = app_gauges,
	    .arg = app,
	    /* With a policy the tool list can change: GET /mcp streams carry
	     * notifications/tools/list_changed (transport_streamable.c). */
	    .mcp_stream = app->policy != NULL,
	    .may_read = mcpx_sandbox_files_confined(&app->sb) ? mcpx_app_run_may_read : NULL,
	    .may_read_ctx = &app->sb,
	};
	int rc = mcpx_http_front_new(&app->front, app->cfg, &h);

	if (rc == 0)
		app->loop = mcpx_http_front_loop(app->front);
	return rc;
}

/*
 * Reverse order of setup: what feeds the core goes before the core, the core
 * before the tool and the executor, those before the loop they run on. One
 * wrinkle: the HTTP listener owns both the loop and the connections, and
 * its closing connections still reach the transports and the core, so those
 * outlive it, while the executor (watches, timers) must not outlive the
 * loop. The work is therefore stopped first (every call cancelled, which
 * stops its run), the tool and executor freed on the live loop, then the
 * HTTP side (http_front.h), then the core.
 */
static void teardown(struct app *app)
{
	mcpx_timer_cancel(&app->drain_timer);
	mcpx_heap_trim_stop(&app->heap_trim);
	mcpx_signals_free(app->sig);
	/* These detach their sinks from the core themselves. */
	mcpx_stdio_free(app->stdio);
	mcpx_http_front_close_sse(app->front);
	if (app->core)
		mcpx_core_cancel_all(app->core);
	/* The core no longer holds its requests or runs; the leases of tasks
	 * still running are given back, and their next reader fails them. */
	mcpx_tasks_free(app->tasks);
	if (app->tool)
		mcpx_tool_exec_free(app->tool);
	mcpx_tool_function_free(app->fn_tool);
	mcpx_tool_upstream_free(app->up_tool);
	/* The executor ends the runs still there, and with them the calls
	 * they made (functions.h); then nothing is left of the functions. */
	mcpx_executor_free(app->ex);
	mcpx_functions_free(app->functions);
	/* Its workers and connection are the loop's; what still waits on it
	 * is told -ESHUTDOWN (held leases lapse in the store). The calls that
	 * used it (exec's workspaces, the resources) were cancelled above. */
	mcpx_app_workspaces_stop(&app->ws);
	mcpx_store_free(app->store);
	/* Their calls ended with the runs; their transfers are on the shared
	 * transport, so they go before it. */
	mcpx_upstream_ops_free(app->up_ops);
	mcpx_upstreams_free(app->upstreams);
	/* The channels' runs are gone; the table's handlers go first (above),
	 * the broker, whose fetches the channel's runs held, after it. The
	 * broker's sockets and the store's timer are on the loop: both go
	 * before it. */
	mcpx_run_channel_free(app->rc);
	mcpx_broker_free(app->broker);
	mcpx_curl_loop_free(app->http);
	mcpx_policy_store_free(app->policy);
	/* The listener takes the loop with it, and the transports its closing
	 * connections reach go after it, before the core (http_front.h). */
	if (app->front)
		mcpx_http_front_free(app->front);
	else
		mcpx_loop_free(app->loop);
	mcpx_core_free(app->core);
	mcpx_sandbox_free(&app->sb);
}

/* The transport that feeds the core, started on the loop; logs that the
 * server is ready. 0, or the exit status. */
static int start_transport(struct app *app)
{
	const struct mcpx_config *cfg = app->cfg;
	char layers[512], langs[400];

	mcpx_sandbox_describe(&app->sb, layers, sizeof(layers));
	mcpx_languages_describe(&app->sb.langs, langs, sizeof(langs));
	if (cfg->transport == MCPX_TRANSPORT_STDIO) {
		app->stdio = mcpx_stdio_start(app->loop, app->core, cfg->max_body_bytes);
		if (!app->stdio) {
			mcpx_error("could not read stdin");
			return EX_OSERR;
		}
		mcpx_info(
		    "mcp-exec %s ready on stdio; python %s; languages: %s; sandbox: %s; warm: %s",
		    MCPX_VERSION, cfg->python, langs, layers,
		    mcpx_warm_mode_name(mcpx_warm_mode_for(cfg, &app->sb)));
		return 0;
	}
	if (mcpx_http_front_attach(app->front, app->core) < 0)
		return EX_OSERR;
	mcpx_info("mcp-exec %s listening on http://%s:%d (Streamable HTTP at /mcp, legacy "
	          "SSE at /sse); python %s; languages: %s; sandbox: %s",
	          MCPX_VERSION, strchr(cfg->listen_host, ':') ? "[ipv6]" : cfg->listen_host,
	          mcpx_http_front_port(app->front), cfg->python, langs, layers);
	return 0;
}

int mcpx_app_run(struct mcpx_config *cfg)
{
	static struct app app;
	int rc;

	memset(&app, 0, sizeof(app));
	app.cfg = cfg;
	/* Writes to a closed pipe or socket must fail with EPIPE, not kill the
	 * server (libwebsockets does this too, but not in every build). */
	signal(SIGPIPE, SIG_IGN);
	mcpx_log_setup(cfg->log_format, cfg->log_level);
	rc = mcpx_app_start_sandbox(cfg, &app.sb);
	if (rc)
		goto out;
	app.selftest_ok = true;
	if (mcpx_app_open_policy(cfg, &app.sb, &app.policy) < 0) {
		rc = EX_CONFIG;
		goto out;
	}
	if (cfg->transport == MCPX_TRANSPORT_STDIO) {
		app.loop = mcpx_loop_new();
		if (!app.loop) {
			rc = EX_OSERR;
			goto out;
		}
	} else if ((rc = start_http(&app)) != 0) {
		goto out;
	}
	if (mcpx_app_open_store(cfg, &app.sb, app.loop, &app.store) < 0) {
		rc = EX_CONFIG;
		goto out;
	}
	if (mcpx_app_workspaces_start(cfg, app.store, app.loop, app.policy, &app.ws) < 0) {
		rc = EX_OSERR;
		goto out;
	}
	if (build_core(&app) < 0) {
		mcpx_error(
		    "could not build the server (out of memory, or the egress broker failed)");
		rc = EX_OSERR;
		goto out;
	}
	app.sig = mcpx_signals_watch(app.loop, on_signal, &app);
	mcpx_heap_trim_start(&app.heap_trim, app.loop);
	if ((rc = start_transport(&app)) != 0)
		goto out;
	rc = mcpx_loop_run(app.loop) < 0 ? EX_SOFTWARE : 0;
	if (rc == 0 && app.stop_signal)
		rc = 128 + app.stop_signal;
	else if (rc == 0)
		mcpx_info("stopped");
out:
	teardown(&app);
	return rc;
}
