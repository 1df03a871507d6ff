/*
 * mcp-exec-client - runs code on an mcp-exec server over MCP Streamable
 * HTTP, checks its health, and generates load for benchmarks.
 *
 * main() parses the command line, sets libcurl up once for the process and
 * hands over to the command; the work lives in cmd_*.c, the protocol in
 * mcp_session.c and the HTTP in http_client.c.
 */
#include <stdio.h>
#include <sysexits.h>

#include "commands.h"
#include "config.h"
#include "http_client.h"

int main(int argc, char **argv)
{
	struct cli_opts opts;
	struct mcpx_err err = {{0}};
	int status;

	if (cli_parse(argc, argv, &opts, &err) < 0) {
		fprintf(stderr, "mcp-exec-client: %s\n", err.msg);
		fprintf(stderr, "Try 'mcp-exec-client%s%s --help'.\n", opts.cmd ? " " : "",
		        cli_command_name(opts.cmd));
		return EX_USAGE;
	}
	if (opts.help) {
		cli_usage(opts.cmd, stdout);
		return 0;
	}
	if (opts.version) {
		printf("mcp-exec-client %s\n", MCPX_VERSION);
		return 0;
	}
	if (hc_global_init() < 0) {
		fprintf(stderr, "mcp-exec-client: cannot initialise libcurl\n");
		return EX_OSERR;
	}
	switch (opts.cmd) {
	case CLI_CALL:
		status = cmd_call(&opts);
		break;
	case CLI_PROBE:
		status = cmd_probe(&opts);
		break;
	default:
		status = cmd_bench(&opts);
		break;
	}
	hc_global_cleanup();
	return status;
}
