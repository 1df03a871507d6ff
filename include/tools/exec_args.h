/*
 * exec_args.h - the `exec` tool's arguments: checked against its published
 * inputSchema, then for what no schema says, into struct mcpx_exec_args.
 *
 * Input {code, timeout_s?, stdin?, files?, language?, workspace?,
 * workspace_reset?} with
 * additionalProperties:false (language: one of the languages the sandbox
 * found at start-up, language.h; python when absent). A refusal is worded
 * the way the Go server's go-sdk schema check and handler word it.
 *
 * A new argument is a row in exec_args.c's table of properties (its JSON
 * type), its property in the inputSchema (exec_describe.c), a field here
 * and its reading in exec_args.c's take_args.
 */
#ifndef MCPX_EXEC_ARGS_H
#define MCPX_EXEC_ARGS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "language.h"

struct mcpx_config;
struct mcpx_schema;

/* A workspace's name: ^[a-z0-9][a-z0-9_.-]{0,63}$. */
#define MCPX_EXEC_WORKSPACE_NAME_MAX 64
#define MCPX_EXEC_WORKSPACE_PATTERN "^[a-z0-9][a-z0-9_.-]{0,63}$"

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
	/* The `workspace` argument (points into the cJSON args, checked
	 * against MCPX_EXEC_WORKSPACE_NAME's pattern), NULL when absent; and
	 * `workspace_reset`: start it empty. */
	const char *workspace;
	bool workspace_reset;
};

/* exec's arguments by its own checks, in the Go server's words: their shape
 * (types, extra properties, code required), then what no schema says (the
 * code not blank, no NUL, the caps, the input files' paths and contents).
 * The tool decides the shape with the validator against its published
 * inputSchema and calls this only to word a refusal; on arguments the
 * validator accepted it runs only the second part. Returns 0 (free out
 * with mcpx_exec_args_free), or -EINVAL (-ENOMEM) with a message for the
 * client in msg and nothing to free. */
int mcpx_exec_parse_args(const cJSON *args, const struct mcpx_config *cfg,
                         struct mcpx_exec_args *out, char *msg, size_t msglen);
void mcpx_exec_args_free(struct mcpx_exec_args *a);

/* The language a call asked for (a->language, NULL: python) among those
 * langs offers (NULL: python alone). Returns the language, or -EINVAL with
 * a message naming the available ones in msg. */
int mcpx_exec_language(const struct mcpx_exec_args *a, const struct mcpx_languages *langs,
                       char *msg, size_t msglen);

/* exec's arguments (NULL: none, read as {}) checked once: by the
 * validator against schema, the inputSchema exec publishes (so what the
 * schema says is what holds), then for what no schema says and for the
 * language on offer in langs (NULL: python alone). Returns 0 with out and
 * *lang set (free out with mcpx_exec_args_free), or a negative errno with
 * the client's message in msg and nothing to free. */
int mcpx_exec_args_check(const struct mcpx_schema *schema, const struct mcpx_config *cfg,
                         const struct mcpx_languages *langs, const cJSON *args,
                         struct mcpx_exec_args *out, enum mcpx_lang *lang, char *msg,
                         size_t msglen);

/* Whether langs (NULL: python alone) offers language l. */
bool mcpx_exec_lang_offered(const struct mcpx_languages *langs, int l);

/* The timeout of a run started as an MCP task: timeout_s from args clamped
 * to MCP_EXEC_TASK_MAX_TIMEOUT_S instead of MCP_EXEC_MAX_TIMEOUT_S (the
 * default when absent, as for any call). The arguments were checked. */
unsigned mcpx_exec_task_timeout(const cJSON *args, const struct mcpx_config *cfg);

#endif
