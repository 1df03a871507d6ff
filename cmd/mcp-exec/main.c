/*
 * mcp-exec - runs Python code sent over MCP in a per-execution sandbox.
 *
 * main() only wires modules together: parse and validate the configuration,
 * bring up the sandbox and prove it with a self-test, build the executor, the
 * exec tool and the protocol core on one event loop, attach the transport,
 * run until stdin EOF or SIGTERM, and tear down in reverse order.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "config.h"
#include "executor.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "sandbox.h"
#include "signals.h"
#include "tool_exec.h"
#include "transport_stdio.h"

struct app {
	struct mcpx_config cfg;
	struct mcpx_sandbox sb;
	struct mcpx_loop *loop;
	struct mcpx_executor *ex;
	struct mcpx_tool *tool;
	struct mcpx_core *core;
	struct mcpx_stdio *stdio;
	struct mcpx_signals *sig;
};

static void on_signal(void *arg, int signo)
{
	struct app *app = arg;

	mcpx_info("received %s: finishing the running execution, then exiting",
		  signo == SIGTERM ? "SIGTERM" : "SIGINT");
	mcpx_executor_drain(app->ex);
	if (app->stdio)
		mcpx_stdio_shutdown(app->stdio);
}

static int check_config(struct app *app, int selftest_rc, const char *selftest_msg)
{
	char layers[512];

	mcpx_config_print(&app->cfg, stdout);
	mcpx_sandbox_describe(&app->sb, layers, sizeof(layers));
	printf("sandbox layers: %s\n", layers);
	printf("self-test: %s%s%s\n", selftest_rc == 0 ? "passed" : "FAILED",
	       selftest_rc == 0 ? "" : ": ", selftest_rc == 0 ? "" : selftest_msg);
	return selftest_rc == 0 ? 0 : EX_SOFTWARE;
}

int main(int argc, char **argv)
{
	static struct app app;
	struct mcpx_err err = {{0}};
	int exit_code = 0, rc;
	char layers[512];

	rc = mcpx_config_load(&app.cfg, argc, argv, &exit_code, &err);
	if (rc < 0) {
		fprintf(stderr, "mcp-exec: %s\n", err.msg);
		mcpx_config_free(&app.cfg);
		return exit_code;
	}
	if (app.cfg.action == MCPX_ACTION_HELP) {
		mcpx_config_usage(stdout);
		return 0;
	}
	if (app.cfg.action == MCPX_ACTION_VERSION) {
		printf("%s %s\n", MCPX_NAME, MCPX_VERSION);
		return 0;
	}
	mcpx_log_setup(app.cfg.log_format, app.cfg.log_level);

	rc = mcpx_sandbox_init(&app.sb, app.cfg.python, app.cfg.workdir_base, &err);
	if (rc < 0) {
		fprintf(stderr, "mcp-exec: sandbox: %s\n", err.msg);
		return EX_OSERR;
	}
	rc = mcpx_sandbox_selftest(&app.sb, &err);
	if (app.cfg.action == MCPX_ACTION_CHECK_CONFIG) {
		exit_code = check_config(&app, rc, err.msg);
		goto out_sandbox;
	}
	if (rc < 0) {
		mcpx_error("sandbox self-test failed, refusing to start: %s", err.msg);
		exit_code = EX_SOFTWARE;
		goto out_sandbox;
	}
	if (app.cfg.require_landlock && !app.sb.layers.landlock) {
		mcpx_error("MCP_EXEC_REQUIRE_LANDLOCK is set but this kernel has no Landlock");
		exit_code = EX_UNAVAILABLE;
		goto out_sandbox;
	}
	if (app.cfg.transport != MCPX_TRANSPORT_STDIO) {
		mcpx_error("transport %s is not built into this binary yet",
			   app.cfg.transport == MCPX_TRANSPORT_HTTP ? "http" : "sse");
		exit_code = EX_CONFIG;
		goto out_sandbox;
	}

	app.loop = mcpx_loop_new();
	if (!app.loop) {
		mcpx_error("could not create the event loop");
		exit_code = EX_OSERR;
		goto out_sandbox;
	}
	app.ex = mcpx_executor_new(app.loop, &app.cfg, &app.sb);
	app.tool = app.ex ? mcpx_tool_exec_new(&app.cfg, app.ex) : NULL;
	if (app.tool) {
		struct mcpx_tool *tools[] = {app.tool};
		struct mcpx_core_opts o = {
			.server_name = MCPX_NAME,
			.server_version = MCPX_VERSION,
			.instructions = "Call the exec tool with Python 3 source in `code`; each call "
					"runs in a fresh sandboxed process without network access.",
			.tools = tools,
			.ntools = 1,
		};
		app.core = mcpx_core_new(&o);
	}
	if (!app.core) {
		mcpx_error("out of memory");
		exit_code = EX_OSERR;
		goto out;
	}
	app.sig = mcpx_signals_watch(app.loop, on_signal, &app);
	app.stdio = mcpx_stdio_start(app.loop, app.core, app.cfg.max_body_bytes);
	if (!app.stdio) {
		mcpx_error("could not read stdin");
		exit_code = EX_OSERR;
		goto out;
	}
	mcpx_sandbox_describe(&app.sb, layers, sizeof(layers));
	mcpx_info("mcp-exec %s ready on stdio; python %s; sandbox: %s", MCPX_VERSION,
		  app.cfg.python, layers);
	rc = mcpx_loop_run(app.loop);
	if (rc < 0)
		exit_code = EX_SOFTWARE;
out:
	mcpx_stdio_free(app.stdio);
	mcpx_signals_free(app.sig);
	mcpx_core_free(app.core);
	if (app.tool)
		mcpx_tool_exec_free(app.tool);
	mcpx_executor_free(app.ex);
	mcpx_loop_free(app.loop);
out_sandbox:
	mcpx_sandbox_free(&app.sb);
	mcpx_config_free(&app.cfg);
	return exit_code;
}
