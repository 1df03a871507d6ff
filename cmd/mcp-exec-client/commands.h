/*
 * commands.h - the three things mcp-exec-client does. Each takes the parsed
 * options and returns the process exit status; each prints its own results
 * and errors. main.c only dispatches.
 */
#ifndef MCPX_CLIENT_COMMANDS_H
#define MCPX_CLIENT_COMMANDS_H

#include "cli.h"

/* Runs code once; the program's output and exit code become ours. */
int cmd_call(const struct cli_opts *o);

/* GET /healthz and /readyz; 0 when ready. */
int cmd_probe(const struct cli_opts *o);

/* N concurrent sessions x M calls; prints latency and throughput. */
int cmd_bench(const struct cli_opts *o);

/* Shared by call and bench: how long to wait for a tools/call reply. */
long cmd_http_timeout(unsigned timeout_s);

/* Shared by call and bench: the code to send must be UTF-8 without NUL
 * bytes (JSON strings carry text, and the server cuts strings at NUL).
 * Returns 0 or -EILSEQ with a message naming what. */
int cmd_check_text(const char *what, const char *s, size_t len, struct mcpx_err *err);

#endif
