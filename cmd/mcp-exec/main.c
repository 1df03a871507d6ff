/*
 * mcp-exec - runs Python code sent over MCP in a per-execution sandbox.
 *
 * main() parses and validates the configuration, then hands over to the app
 * module, which wires the sandbox, executor, tool, protocol core and
 * transport together on one event loop.
 */
#include <stdio.h>

#include "app.h"
#include "config.h"

int main(int argc, char **argv)
{
	static struct mcpx_config cfg;
	struct mcpx_err err = {{0}};
	int exit_code = 0, rc;

	rc = mcpx_config_load(&cfg, argc, argv, &exit_code, &err);
	if (rc < 0) {
		fprintf(stderr, "mcp-exec: %s\n", err.msg);
		mcpx_config_free(&cfg);
		return exit_code;
	}
	switch (cfg.action) {
	case MCPX_ACTION_HELP:
		mcpx_config_usage(stdout);
		exit_code = 0;
		break;
	case MCPX_ACTION_VERSION:
		printf("%s %s\n", MCPX_NAME, MCPX_VERSION);
		exit_code = 0;
		break;
	case MCPX_ACTION_CHECK_CONFIG:
		exit_code = mcpx_app_check_config(&cfg);
		break;
	case MCPX_ACTION_RUN:
		exit_code = mcpx_app_run(&cfg);
		break;
	}
	mcpx_config_free(&cfg);
	return exit_code;
}
