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
 */
#include "app.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "auth.h"
#include "broker.h"
#include "config.h"
#include "crypto.h"
#include "executor.h"
#include "functions.h"
#include "upstream.h"
#include "upstream_ops.h"
#include "tool_upstream.h"
#include "listen_addr.h"
#include "heap_trim.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "metrics.h"
#include "policy.h"
#include "run_budget.h"
#include "run_channel.h"
#include "sandbox.h"
#include "server_http.h"
#include "session.h"
#include "signals.h"
#include "tokenreview.h"
#include "tool_exec.h"
#include "tool_function.h"
#include "transport_http.h"
#include "transport_stdio.h"

#define DRAIN_POLL_US 50000u
/* How often the policy file and its secret files are checked for changes. */
#define POLICY_POLL_MS 1000u

struct app {
	struct mcpx_config *cfg;
	struct mcpx_sandbox sb;
	bool selftest_ok;
	struct mcpx_loop *loop;
	struct mcpx_policy_store *policy; /* NULL: no MCP_EXEC_POLICY */
	struct mcpx_broker *broker;
	struct mcpx_run_channel *rc; /* the runs' channels; NULL without a policy */
	struct mcpx_executor *ex;
	struct mcpx_functions *functions;
	struct mcpx_upstreams *upstreams;     /* NULL without a policy */
	struct mcpx_upstream_ops *up_ops;     /* the runs' side of them */
	const struct mcpx_policy *up_version; /* the policy the upstreams follow */
	struct mcpx_tool *tool;
	struct mcpx_tool *fn_tool; /* NULL without a policy */
	struct mcpx_tool *up_tool; /* the gateway; NULL without a policy */
	char tools_sha256[65];     /* of the tool list last announced */
	struct mcpx_core *core;
	struct mcpx_signals *sig;
	/* stdio */
	struct mcpx_stdio *stdio;
	/* http */
	struct mcpx_auth *auth;
	struct mcpx_tokenreview *k8s;  /* NULL: no Kubernetes tokens */
	unsigned long auth_generation; /* of the token the session key came from */
	struct mcpx_sessions *sessions;
	struct mcpx_http_server *http;
	struct mcpx_streamable *streamable;
	struct mcpx_sse *sse;
	bool draining;
	int stop_signal; /* the second signal, which means "stop now"; 0 if none */
	uint64_t drain_deadline_us;
	struct mcpx_timer drain_timer;
	struct mcpx_heap_trim heap_trim;
};

static const char *const INSTRUCTIONS =
	"Call the exec tool with Python 3 source in `code`; each call runs in a fresh sandboxed "
	"process without network access and returns stdout, stderr and the exit code.";

static void publish_layers(const struct mcpx_sandbox *sb)
{
	mcpx_metrics_set_layer("seccomp", sb->layers.seccomp);
	mcpx_metrics_set_layer("landlock", sb->layers.landlock);
	mcpx_metrics_set_layer("landlock_net", sb->layers.landlock_net);
	mcpx_metrics_set_layer("landlock_scope", sb->layers.landlock_scope);
	mcpx_metrics_set_layer("uid_drop", sb->layers.uid_drop);
	mcpx_metrics_set_layer("no_new_privs", sb->layers.no_new_privs);
	mcpx_metrics_set_layer("rlimits", sb->layers.rlimits);
	mcpx_metrics_set_layer("subreaper", sb->layers.subreaper);
	mcpx_metrics_set_layer("dumpable_off", sb->layers.dumpable_off);
}

/* The warm interpreter's binary (mcp-exec-zygote), resolved once, next to
 * this one. Without it no warm mode can run; the reason goes to why. */
static void find_zygote(const struct mcpx_config *cfg, struct mcpx_sandbox *sb,
			struct mcpx_err *why)
{
	if (cfg->warm != MCPX_WARM_OFF && mcpx_sandbox_use_zygote(sb, NULL, why) < 0)
		mcpx_warn("warm interpreters off, every run starts cold: %s", why->msg);
}

/* Whether the server may serve with the sandbox sb offers: the one
 * judgement both the server's start and --check-config make, so they never
 * disagree. 0, or the exit code with the reason in err. Logs (as a warning)
 * what is lost when Landlock is missing and not required. */
static int judge_sandbox(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
			 struct mcpx_err *err)
{
	/* seccomp is the layer that holds everywhere (Landlock depends on the
	 * kernel): without it the network promise is gone, so no start. */
	if (!sb->layers.seccomp) {
		mcpx_err_set(err, ENOSYS, "seccomp is unavailable (kernel or runtime profile), "
			     "refusing to start");
		return EX_UNAVAILABLE;
	}
	if (!sb->layers.landlock && cfg->require_landlock) {
		mcpx_err_set(err, ENOSYS, "MCP_EXEC_REQUIRE_LANDLOCK is set but this kernel has no "
			     "Landlock, refusing to start");
		return EX_UNAVAILABLE;
	}
	if (mcpx_sandbox_selftest(sb, err) < 0) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err->msg);
		mcpx_err_set(err, EPERM, "sandbox self-test failed, refusing to start: %s", why);
		return EX_SOFTWARE;
	}
	if (!sb->layers.landlock)
		mcpx_warn("Landlock is unavailable on this kernel, so runs lose it: they can write "
			  "outside their workdir (files in /tmp and /dev/shm that later runs see) and "
			  "read every file the server's uid can read, the token file and other "
			  "mounted secrets included; warm interpreters are prepared only after the "
			  "previous run is reaped. Set MCP_EXEC_REQUIRE_LANDLOCK=1 to refuse to start "
			  "instead (mcp_exec_sandbox_layer{layer=\"landlock\"} is 0)");
	return 0;
}

/* The languages MCP_EXEC_LANGUAGES allows, each proven in the sandbox with
 * a run's own limits (language.h). 0, or the exit code with the reason in
 * err: a language listed by name that cannot run, or Python. */
static int find_languages(const struct mcpx_config *cfg, struct mcpx_sandbox *sb,
                          struct mcpx_err *err)
{
	struct mcpx_limits lim = {.cpu_s = 10,
	                          .memory_mb = cfg->memory_mb,
	                          .max_procs = cfg->max_procs,
	                          .file_mb = cfg->max_file_mb,
	                          .open_files = 256};

	if (mcpx_sandbox_find_languages(sb, cfg->languages, &lim, err) < 0)
		return EX_UNAVAILABLE;
	for (int l = 0; l < MCPX_LANG_COUNT; l++)
		if (!sb->langs.rt[l].available)
			mcpx_info("language %s off: %s", mcpx_lang_name(l), sb->langs.rt[l].why);
	return 0;
}

static int start_sandbox(struct app *app)
{
	struct mcpx_err err = {{0}};
	int rc;

	rc = mcpx_sandbox_init(&app->sb, app->cfg->python, app->cfg->workdir_base, &err);
	if (rc < 0) {
		mcpx_error("sandbox: %s", err.msg);
		return EX_OSERR;
	}
	find_zygote(app->cfg, &app->sb, &err);
	rc = judge_sandbox(app->cfg, &app->sb, &err);
	if (!rc)
		rc = find_languages(app->cfg, &app->sb, &err);
	if (rc) {
		mcpx_error("%s", err.msg);
		return rc;
	}
	app->selftest_ok = true;
	publish_layers(&app->sb);
	mcpx_metrics_set_info("warm_mode", mcpx_warm_mode_name(mcpx_warm_mode_for(app->cfg, &app->sb)));
	return 0;
}

static bool run_may_read(void *ctx, const char *path)
{
	return mcpx_sandbox_run_may_read(ctx, path);
}

/* The auth tokens: the single one (caller "default") and the named tokens
 * file, which, like the policy, may not lie where runs can read it. */
static int open_auth(struct mcpx_config *cfg, const struct mcpx_sandbox *sb, struct mcpx_auth **out,
                     struct mcpx_err *err)
{
	bool landlock = sb && sb->layers.landlock;

	if (mcpx_auth_new(out, &cfg->auth_token, cfg->auth_token_file, err) < 0)
		return -1;
	if (mcpx_auth_set_tokens_file(*out, cfg->auth_tokens_file, landlock ? run_may_read : NULL,
	                              (void *)sb, err) < 0) {
		mcpx_auth_free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* The policy file, checked against what runs can read. Without Landlock a
 * run reads whatever the server's uid reads: no file is hidden from it, so
 * no credential is accepted (policy.c says so, naming the rule). */
static int open_policy(struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
		       struct mcpx_policy_store **out)
{
	struct mcpx_policy_opts o = {.credentials_allowed = sb->layers.landlock};
	struct mcpx_err err = {{0}};
	const struct mcpx_policy *p;

	*out = NULL;
	if (!cfg->policy[0])
		return 0;
	if (sb->layers.landlock) {
		o.run_may_read = run_may_read;
		o.ctx = (void *)sb;
	}
	if (mcpx_policy_store_open(cfg->policy, &o, out, &err) < 0) {
		mcpx_error("%s", err.msg);
		return -1;
	}
	p = mcpx_policy_store_current(*out);
	{
		char what[160];

		mcpx_policy_summary(p, what, sizeof(what));
		mcpx_info("policy %s: %s", cfg->policy, what);
	}
	return 0;
}

static int start_broker(struct app *app)
{
	struct mcpx_broker_opts bo = {.proxy = app->cfg->egress_proxy,
				      .ca_file = app->cfg->egress_ca_file};
	struct mcpx_err err = {{0}};

	if (!app->policy)
		return 0;
	mcpx_policy_store_watch(app->policy, app->loop, POLICY_POLL_MS);
	if (mcpx_broker_new(app->loop, app->policy, &bo, &app->broker, &err) < 0) {
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
	/* The upstream MCP servers' client shares the broker's curl handle. */
	if (mcpx_upstreams_new(app->loop, app->broker, app->policy, app->cfg->egress_ca_file,
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
			text = cJSON_PrintUnformatted(arr);
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

	if (start_broker(app) < 0)
		return -1;
	{
		/* Without a policy no run gets a channel. */
		const struct mcpx_executor_hooks hooks = {.exec_wants_channel = hook_exec_wants,
							  .run_start = hook_run_start,
							  .run_end = hook_run_end,
							  .arg = app->rc};

		app->ex = mcpx_executor_new(app->loop, app->cfg, &app->sb,
					    app->rc ? &hooks : NULL);
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
	app->core = mcpx_core_new(&o);
	if (!app->core || tools_digest(app, app->tools_sha256) < 0)
		return -1;
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
	if (app->http && (mcpx_streamable_open(app->streamable) || mcpx_http_server_busy(app->http) >
									     mcpx_sse_streams(app->sse)))
		return false;
	return true;
}

static void drain_timer_cb(struct mcpx_timer *t)
{
	struct app *app = t->arg;

	if (app->sse)
		mcpx_sse_close_idle(app->sse);
	if (app->streamable)
		mcpx_streamable_close_streams(app->streamable);
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
	mcpx_info("received %s: draining (running execution finishes, queued ones are answered)",
		  signo == SIGTERM ? "SIGTERM" : "SIGINT");
	if (app->http)
		mcpx_http_server_drain(app->http);
	/* Listen streams end with their completion result. */
	mcpx_core_end_subscriptions(app->core);
	mcpx_executor_drain(app->ex);
	if (app->stdio) {
		mcpx_stdio_shutdown(app->stdio);
		return;
	}
	/* The running execution may take up to its own timeout. */
	app->drain_deadline_us = mcpx_now_us() + ((uint64_t)app->cfg->max_timeout_s + 10u) * 1000000u;
	app->drain_timer.fn = drain_timer_cb;
	app->drain_timer.arg = app;
	mcpx_timer_start(app->loop, &app->drain_timer, 0);
}

/* ---- HTTP handlers ---- */

static void h_mcp(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct app *app = arg;

	/* A rotated token file moves the session key with it (sessions signed
	 * under the old token stop verifying; replicas reading the new token
	 * agree again). The gate has just re-read the file if it changed. */
	if (mcpx_auth_generation(app->auth) != app->auth_generation) {
		app->auth_generation = mcpx_auth_generation(app->auth);
		mcpx_sessions_rekey(app->sessions, mcpx_auth_digest(app->auth));
	}
	mcpx_streamable_handle(app->streamable, c, req);
}

static void h_sse_open(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct app *app = arg;
	mcpx_sse_open(app->sse, c, req);
}

static void h_sse_post(void *arg, struct mcpx_http_conn *c, const struct mcpx_http_req *req)
{
	struct app *app = arg;
	mcpx_sse_post(app->sse, c, req);
}

static bool h_ready(void *arg, char *reason, size_t len)
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
	mcpx_executor_stats(app->ex, &st);
	if (st.running && st.queue_depth >= app->cfg->max_queue) {
		snprintf(reason, len, "execution queue is full");
		return false;
	}
	return true;
}

static char *h_metrics(void *arg, size_t *len)
{
	struct app *app = arg;
	struct mcpx_executor_stats st;
	struct mcpx_metrics_gauges g;
	char reason[64];

	mcpx_executor_stats(app->ex, &st);
	memset(&g, 0, sizeof(g));
	g.queue_depth = st.queue_depth;
	g.running = st.running;
	g.sse_streams = mcpx_sse_streams(app->sse);
	g.active_sessions = mcpx_session_active(app->sessions, time(NULL), 600) + g.sse_streams;
	g.ready = h_ready(app, reason, sizeof(reason));
	g.draining = app->draining;
	return mcpx_metrics_render(&g, len);
}

static int start_http(struct app *app)
{
	struct mcpx_config *cfg = app->cfg;
	struct mcpx_err err = {{0}};
	struct mcpx_http_handlers h;
	struct mcpx_listen_addr addr;

	if (mcpx_listen_addr_resolve(cfg->listen_host, &addr, &err) < 0) {
		mcpx_error("%s", err.msg);
		return EX_CONFIG;
	}
	if (open_auth(cfg, &app->sb, &app->auth, &err) < 0) {
		mcpx_error("auth: %s", err.msg);
		return EX_CONFIG;
	}
	if (!mcpx_auth_enabled(app->auth) && !cfg->auth_kubernetes && !addr.loopback &&
	    !cfg->insecure_no_auth) {
		mcpx_error("refusing to listen on %s without a token: set MCP_EXEC_AUTH_TOKEN, "
		           "MCP_EXEC_AUTH_TOKEN_FILE, MCP_EXEC_AUTH_TOKENS_FILE or "
		           "MCP_EXEC_AUTH_KUBERNETES, or pass --insecure-no-auth",
		           cfg->addr);
		return EX_CONFIG;
	}
	if (mcpx_auth_tokens_count(app->auth))
		mcpx_info("auth: %zu named tokens from %s", mcpx_auth_tokens_count(app->auth),
		          cfg->auth_tokens_file);
	if (!mcpx_auth_enabled(app->auth) && !cfg->auth_kubernetes)
		mcpx_warn("HTTP without auth (%s)",
			  addr.loopback ? "loopback listener" : "--insecure-no-auth");
	app->auth_generation = mcpx_auth_generation(app->auth);
	app->sessions = mcpx_sessions_new_digest(cfg->session_key, mcpx_auth_digest(app->auth),
						  cfg->session_ttl_s);
	if (!app->sessions)
		return EX_OSERR;
	if (!mcpx_sessions_shared_key(app->sessions))
		mcpx_info("session ids are signed with a per-process key: set MCP_EXEC_SESSION_KEY "
			  "or a token so replicas accept each other's sessions");

	memset(&h, 0, sizeof(h));
	h.mcp = h_mcp;
	h.sse_open = h_sse_open;
	h.sse_post = h_sse_post;
	h.ready = h_ready;
	h.metrics = h_metrics;
	h.arg = app;
	/* With a policy the tool list can change: GET /mcp streams carry
	 * notifications/tools/list_changed (transport_streamable.c). */
	h.mcp_stream = app->policy != NULL;
	if (mcpx_http_server_new(&app->http, cfg, &addr, app->auth, &h, &err) < 0) {
		mcpx_error("http: %s", err.msg);
		return EX_UNAVAILABLE;
	}
	app->loop = mcpx_http_server_loop(app->http);
	if (cfg->auth_kubernetes) {
		struct mcpx_tokenreview_opts ko = {.api = cfg->auth_kubernetes_api,
		                                   .token_file = cfg->auth_kubernetes_token_file,
		                                   .ca_file = cfg->auth_kubernetes_ca_file,
		                                   .audience = cfg->auth_audience};

		if (mcpx_tokenreview_new(&app->k8s, app->loop, &ko, &err) < 0) {
			mcpx_error("auth: %s", err.msg);
			return EX_CONFIG;
		}
		mcpx_auth_set_kubernetes(app->auth, app->k8s);
		mcpx_info("auth: Kubernetes ServiceAccount tokens with audience %s, reviewed at %s",
		          cfg->auth_audience, cfg->auth_kubernetes_api);
	}
	return 0;
}

/*
 * Reverse order of setup: what feeds the core goes before the core, the core
 * before the tool and the executor, those before the loop they run on. One
 * wrinkle: the HTTP server owns both the loop and the connections, and lws
 * closes connections only when the whole context is destroyed. A Streamable
 * HTTP POST still attached to its connection then reports its close to the
 * transport and the core, so those two must outlive the server, while the
 * executor (watches, timers) must not outlive the loop. The work is
 * therefore stopped first (every call cancelled, which stops its run), the
 * tool and executor freed on the live loop, then the server, then the
 * transport and the core its closing connections reached.
 */
static void teardown(struct app *app)
{
	mcpx_timer_cancel(&app->drain_timer);
	mcpx_heap_trim_stop(&app->heap_trim);
	mcpx_signals_free(app->sig);
	/* These detach their sinks from the core themselves. */
	mcpx_stdio_free(app->stdio);
	mcpx_sse_free(app->sse);
	if (app->core)
		mcpx_core_cancel_all(app->core);
	if (app->tool)
		mcpx_tool_exec_free(app->tool);
	mcpx_tool_function_free(app->fn_tool);
	mcpx_tool_upstream_free(app->up_tool);
	/* The executor ends the runs still there, and with them the calls
	 * they made (functions.h); then nothing is left of the functions. */
	mcpx_executor_free(app->ex);
	mcpx_functions_free(app->functions);
	/* Their calls ended with the runs; their transfers are on the broker's
	 * handle, so they go before it. */
	mcpx_upstream_ops_free(app->up_ops);
	mcpx_upstreams_free(app->upstreams);
	/* The channels' runs are gone; the table's handlers go first (above),
	 * the broker, whose fetches the channel's runs held, after it. The
	 * broker's sockets and the store's timer are on the loop: both go
	 * before it. */
	mcpx_run_channel_free(app->rc);
	mcpx_broker_free(app->broker);
	mcpx_policy_store_free(app->policy);
	/* Its sockets are on the loop, and requests waiting for a review are
	 * told before their connections go. */
	mcpx_tokenreview_free(app->k8s);
	if (app->http)
		mcpx_http_server_free(app->http);
	else
		mcpx_loop_free(app->loop);
	mcpx_streamable_free(app->streamable);
	mcpx_core_free(app->core);
	mcpx_sessions_free(app->sessions);
	mcpx_auth_free(app->auth);
	mcpx_sandbox_free(&app->sb);
}

int mcpx_app_run(struct mcpx_config *cfg)
{
	static struct app app;
	char layers[512], langs[400];
	int rc;

	memset(&app, 0, sizeof(app));
	app.cfg = cfg;
	/* Writes to a closed pipe or socket must fail with EPIPE, not kill the
	 * server (libwebsockets does this too, but not in every build). */
	signal(SIGPIPE, SIG_IGN);
	mcpx_log_setup(cfg->log_format, cfg->log_level);
	rc = start_sandbox(&app);
	if (rc)
		goto out;
	if (open_policy(cfg, &app.sb, &app.policy) < 0) {
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
	if (build_core(&app) < 0) {
		mcpx_error("could not build the server (out of memory, or the egress broker failed)");
		rc = EX_OSERR;
		goto out;
	}
	app.sig = mcpx_signals_watch(app.loop, on_signal, &app);
	mcpx_heap_trim_start(&app.heap_trim, app.loop);
	mcpx_sandbox_describe(&app.sb, layers, sizeof(layers));
	mcpx_languages_describe(&app.sb.langs, langs, sizeof(langs));
	if (cfg->transport == MCPX_TRANSPORT_STDIO) {
		app.stdio = mcpx_stdio_start(app.loop, app.core, cfg->max_body_bytes);
		if (!app.stdio) {
			mcpx_error("could not read stdin");
			rc = EX_OSERR;
			goto out;
		}
		mcpx_info(
		    "mcp-exec %s ready on stdio; python %s; languages: %s; sandbox: %s; warm: %s",
		    MCPX_VERSION, cfg->python, langs, layers,
		    mcpx_warm_mode_name(mcpx_warm_mode_for(cfg, &app.sb)));
	} else {
		app.streamable = mcpx_streamable_new(app.core, app.sessions, app.loop);
		app.sse = mcpx_sse_new(app.core, app.loop);
		if (!app.streamable || !app.sse) {
			rc = EX_OSERR;
			goto out;
		}
		mcpx_info("mcp-exec %s listening on http://%s:%d (Streamable HTTP at /mcp, legacy "
		          "SSE at /sse); python %s; languages: %s; sandbox: %s",
		          MCPX_VERSION, strchr(cfg->listen_host, ':') ? "[ipv6]" : cfg->listen_host,
		          mcpx_http_server_port(app.http), cfg->python, langs, layers);
	}
	rc = mcpx_loop_run(app.loop) < 0 ? EX_SOFTWARE : 0;
	if (rc == 0 && app.stop_signal)
		rc = 128 + app.stop_signal;
	else if (rc == 0)
		mcpx_info("stopped");
out:
	teardown(&app);
	return rc;
}

/* The token file, as the HTTP server's start reads it (then forgotten). */
static int check_auth(struct mcpx_config *cfg, const struct mcpx_sandbox *sb, bool loopback)
{
	struct mcpx_err err = {{0}};
	struct mcpx_auth *auth = NULL;

	if (cfg->transport == MCPX_TRANSPORT_STDIO)
		return 0;
	if (open_auth(cfg, sb, &auth, &err) < 0) {
		printf("auth: FAILED: %s\n", err.msg);
		return -1;
	}
	if (!mcpx_auth_enabled(auth) && !cfg->auth_kubernetes && !loopback &&
	    !cfg->insecure_no_auth) {
		printf("auth: MISSING: a non-loopback listener needs a token (fail closed)\n");
		mcpx_auth_free(auth);
		return -1;
	}
	mcpx_auth_free(auth);
	if (cfg->auth_kubernetes) {
		/* The files a review needs, as the start checks them (no
		 * request is made here). */
		struct mcpx_tokenreview_opts ko = {.api = cfg->auth_kubernetes_api,
		                                   .token_file = cfg->auth_kubernetes_token_file,
		                                   .ca_file = cfg->auth_kubernetes_ca_file,
		                                   .audience = cfg->auth_audience};
		struct mcpx_tokenreview *tr = NULL;

		if (mcpx_tokenreview_new(&tr, NULL, &ko, &err) < 0) {
			printf("auth: FAILED: %s\n", err.msg);
			return -1;
		}
		mcpx_tokenreview_free(tr);
	}
	return 0;
}

int mcpx_app_check_config(struct mcpx_config *cfg)
{
	struct mcpx_listen_addr addr = {.loopback = false};
	struct mcpx_sandbox sb;
	struct mcpx_err err = {{0}};
	char layers[512];
	int rc, verdict;

	mcpx_log_setup(cfg->log_format, MCPX_LOG_WARN);
	mcpx_config_print(cfg, stdout);
	rc = mcpx_sandbox_init(&sb, cfg->python, cfg->workdir_base, &err);
	if (rc < 0) {
		printf("sandbox: FAILED: %s\n", err.msg);
		return EX_OSERR;
	}
	mcpx_sandbox_describe(&sb, layers, sizeof(layers));
	printf("sandbox layers: %s\n", layers);
	{
		struct mcpx_err why = {{0}};

		find_zygote(cfg, &sb, &why);
		printf("warm interpreter binary: %s%s\n", sb.zygote[0] ? sb.zygote : "none: ",
		       sb.zygote[0] ? "" : why.msg[0] ? why.msg : "MCP_EXEC_WARM=0");
	}
	/* The server's own judgement: what it would refuse, this refuses. */
	verdict = judge_sandbox(cfg, &sb, &err);
	rc = verdict ? -1 : 0;
	if (verdict == EX_SOFTWARE)
		printf("self-test: FAILED: %s\n", err.msg);
	else if (verdict)
		printf("sandbox: REFUSED: %s (the server would exit %d)\n", err.msg, verdict);
	else
		printf("self-test: passed\n");
	if (!verdict) {
		char langs[400];

		if (find_languages(cfg, &sb, &err)) {
			printf("languages: FAILED: %s\n", err.msg);
			rc = -1;
		}
		mcpx_languages_describe(&sb.langs, langs, sizeof(langs));
		printf("languages: %s\n", langs);
		for (int l = 0; l < MCPX_LANG_COUNT; l++) {
			const struct mcpx_runtime *rt = &sb.langs.rt[l];

			if (rt->available)
				printf("language %s: %s%s%s\n", mcpx_lang_name(l), rt->path,
				       rt->root[0] ? ", readable prefix " : "", rt->root);
			else
				printf("language %s: off (%s)\n", mcpx_lang_name(l), rt->why);
		}
	}
	{
		enum mcpx_warm_mode m = mcpx_warm_mode_for(cfg, &sb);
		printf("warm interpreters: %s%s\n", mcpx_warm_mode_name(m),
		       m == MCPX_WARM_MODE_FORK
			       ? " (each run forked from a preloaded zygote that never runs user "
				 "code; Landlock scoping keeps runs away from it)"
		       : m == MCPX_WARM_MODE_AFTER_REAP
			       ? " (a fresh interpreter per run, prepared only after the previous run "
				 "is reaped)"
			       : "");
	}
	if (cfg->policy[0]) {
		struct mcpx_policy_store *ps = NULL;

		if (open_policy(cfg, &sb, &ps) < 0) {
			printf("policy: FAILED (see the error above)\n");
			rc = -1;
		} else {
			char what[160];

			mcpx_policy_summary(mcpx_policy_store_current(ps), what, sizeof(what));
			printf("policy: %s\n", what);
		}
		mcpx_policy_store_free(ps);
	}
	if (cfg->transport != MCPX_TRANSPORT_STDIO) {
		if (mcpx_listen_addr_resolve(cfg->listen_host, &addr, &err) < 0) {
			printf("listen: FAILED: %s\n", err.msg);
			rc = -1;
		}
	}
	{
		char how[400];

		mcpx_budget_describe(how, sizeof(how));
		printf("run budget: memory %u MiB, disk %u MiB and CPU for all of a run's processes "
		       "together; method: %s\n",
		       cfg->memory_mb, cfg->max_disk_mb, how);
	}
	if (check_auth(cfg, &sb, addr.loopback) < 0)
		rc = -1;
	mcpx_sandbox_free(&sb);
	return rc == 0 ? 0 : EX_CONFIG;
}
