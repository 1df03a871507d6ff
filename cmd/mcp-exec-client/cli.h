/*
 * cli.h - the client's user interface contract: commands and options, help
 * texts, where the token and the code come from, and which exit code each
 * kind of failure gets.
 *
 * Parsing never touches the network and never prints the token. The
 * commands themselves live in cmd_call.c, cmd_probe.c and cmd_bench.c.
 */
#ifndef MCPX_CLIENT_CLI_H
#define MCPX_CLIENT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"

/* Exit codes beside the program's own (sysexits.h, plus timeout(1)'s 124).
 * They are what scripts and `helm test` see, so they are part of the
 * interface. */
#define CLI_EXIT_TIMEOUT 124

enum cli_command { CLI_NONE, CLI_CALL, CLI_PROBE, CLI_BENCH };

struct cli_opts {
	enum cli_command cmd;
	bool help;              /* --help: print the command's usage, exit 0 */
	bool version;           /* --version */
	char url[2048];         /* the /mcp endpoint (a bare host URL gets /mcp) */
	const char *token_file; /* NULL: MCP_EXEC_TOKEN, or no token */
	unsigned timeout_s;     /* 0 when not given */
	const char *stdin_file; /* call: NULL for no stdin, "-" for ours */
	const char *code;       /* --code */
	const char *code_file;  /* call: FILE, or "-" for our stdin */
	bool progress;          /* call: stream progress to stderr */
	const char *language;   /* call: --language, NULL: the server's default */
	unsigned clients;       /* bench */
	unsigned calls;         /* bench: per client */
	unsigned warmup;        /* bench: unmeasured calls per client */
	unsigned think_ms;      /* bench: pause between a client's calls */
	const char *tool;       /* bench: NULL for exec */
	const char *args;       /* bench: JSON object, instead of --code */
	const char *expect;     /* bench: success marker in the result text */
};

/* Parses argv (argv[1] is the command). Returns 0, or -EINVAL with a
 * message for a usage error. */
int cli_parse(int argc, char **argv, struct cli_opts *o, struct mcpx_err *err);

/* "call", "probe", "bench", or "" for CLI_NONE. */
const char *cli_command_name(enum cli_command cmd);

/* Usage for one command, or the overview for CLI_NONE. */
void cli_usage(enum cli_command cmd, FILE *out);

/* The token from --token-file (trailing newlines stripped) or
 * MCP_EXEC_TOKEN; *token is NULL when neither is set. Free with
 * cli_token_free, which wipes it. Returns 0, -EIO (unreadable file) or
 * -EINVAL (empty). */
int cli_token(const struct cli_opts *o, char **token, struct mcpx_err *err);
void cli_token_free(char *token);

/* Reads a whole file ("-" is standard input) of at most max bytes into a
 * NUL-terminated buffer the caller frees. Returns 0 or -EIO. */
int cli_read_file(const char *path, size_t max, char **out, size_t *len, struct mcpx_err *err);

/* The base URL (scheme://host:port plus any prefix before /mcp) for the
 * operations endpoints. */
void cli_base_url(const char *mcp_url, char *out, size_t cap);

/* The exit code for a negative errno from the client's modules. */
int cli_exit_code(int rc);

#endif
