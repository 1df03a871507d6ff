/*
 * tool_exec.h - the `exec` tool: the mcp-exec (Go) contract on top of the
 * executor.
 *
 * Input {code, timeout_s?, stdin?, files?, language?} with
 * additionalProperties:false (language: one of the languages the sandbox
 * found at start-up, language.h; python when absent);
 * output structuredContent {stdout, stderr, exit_code, duration_ms,
 * truncated, timed_out} plus our additive fields (signal, limit, cpu_ms,
 * max_rss_kb, files, files_truncated), the same JSON in a text block, and
 * one image or embedded resource block per file returned from out/ (see
 * docs/tool.md). A non-zero exit or a timeout is a normal result; only
 * invalid input and infrastructure failures are tool errors.
 */
#ifndef MCPX_TOOL_EXEC_H
#define MCPX_TOOL_EXEC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "executor.h"
#include "tool.h"

struct mcpx_config;

struct mcpx_exec_args {
	const char *code; /* points into the cJSON args; never holds a NUL */
	size_t code_len;
	char *stdin_data; /* owned copy of the exact bytes (NULs kept); NULL when absent */
	size_t stdin_len;
	unsigned timeout_s; /* clamped to [1, max] */
	/* Decoded input files (heap), NULL when none; freed by
	 * mcpx_exec_args_free unless handed to a job. */
	struct mcpx_runfiles_in *files;
	/* The `language` argument (points into the cJSON args), NULL when
	 * absent; which languages exist is the tool's to check. */
	const char *language;
};

/* exec's arguments by its own checks, in the Go server's words: their shape
 * (types, extra properties, code required), then what no schema says (the
 * code not blank, no NUL, the caps, the input files' paths and contents).
 * The tool decides the shape with the validator against its published
 * inputSchema and calls this only to word a refusal; on arguments the
 * validator accepted it runs only the second part. Returns 0 (free out
 * with mcpx_exec_args_free), or -EINVAL (-ENOMEM) with a message for the
 * client in msg and nothing to free. */
int mcpx_exec_parse_args(const cJSON *args, const struct mcpx_config *cfg, struct mcpx_exec_args *out,
			 char *msg, size_t msglen);
void mcpx_exec_args_free(struct mcpx_exec_args *a);

/* Builds the CallToolResult for a finished job (caller frees). */
cJSON *mcpx_exec_result(const struct mcpx_job_result *res);

/* The language a call asked for (a->language, NULL: python) among those
 * langs offers (NULL: python alone). Returns the language, or -EINVAL with
 * a message naming the available ones in msg. */
int mcpx_exec_language(const struct mcpx_exec_args *a, const struct mcpx_languages *langs,
                       char *msg, size_t msglen);

/* The tool, bound to an executor; freed with mcpx_tool_exec_free. langs
 * (not owned, outlives the tool; NULL: python alone) are the languages its
 * schema offers and its description names. */
struct mcpx_tool *mcpx_tool_exec_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                     const struct mcpx_languages *langs);
void mcpx_tool_exec_free(struct mcpx_tool *tool);

/* The policy whose exec grant the description names (mcpx.fetch and the
 * URLs it reaches); NULL, the default, for none. Not owned. */
struct mcpx_policy_store;
void mcpx_tool_exec_set_policy(struct mcpx_tool *tool, const struct mcpx_policy_store *policy);

/* fn(arg, g) gives the lines naming the upstream MCP servers exec code
 * under grant g may call (a malloc'd string the tool frees, or NULL for
 * none); the description then says how to call and discover their tools.
 * g is the caller's profile's exec grant, or the top-level one. */
struct mcpx_egress_grant;
void mcpx_tool_exec_set_upstreams(struct mcpx_tool *tool,
                                  char *(*fn)(void *arg, const struct mcpx_egress_grant *g),
                                  void *arg);

#endif
