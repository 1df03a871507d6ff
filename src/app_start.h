/*
 * app_start.h - the judgements the server's start and --check-config share
 * (app_start.c). Private to src/app*.c.
 */
#ifndef MCPX_APP_START_H
#define MCPX_APP_START_H

#include <stdbool.h>
#include <stddef.h>

struct mcpx_config;
struct mcpx_err;
struct mcpx_policy_store;
struct mcpx_sandbox;
struct mcpx_loop;
struct mcpx_store;
struct mcpx_store_config;

/* The sandbox for cfg: initialised, its zygote found, judged, its languages
 * proven, its layers published in /metrics. 0, or the exit code with the
 * reason logged. */
int mcpx_app_start_sandbox(const struct mcpx_config *cfg, struct mcpx_sandbox *sb);

/* The warm interpreter's binary (mcp-exec-zygote), resolved once, next to
 * this one. Without it no warm mode can run; the reason goes to why. */
void mcpx_app_find_zygote(const struct mcpx_config *cfg, struct mcpx_sandbox *sb,
                          struct mcpx_err *why);
/* Whether the server may serve with the sandbox sb offers. 0, or the exit
 * code with the reason in err. */
int mcpx_app_judge_sandbox(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                           struct mcpx_err *err);
/* The languages MCP_EXEC_LANGUAGES allows, each proven in the sandbox. 0,
 * or the exit code with the reason in err. */
int mcpx_app_find_languages(const struct mcpx_config *cfg, struct mcpx_sandbox *sb,
                            struct mcpx_err *err);
/* Whether a run could read path (ctx: the sandbox). */
bool mcpx_app_run_may_read(void *ctx, const char *path);
/* The policy file (none: 0 with *out NULL), checked against what runs can
 * read. -1 with the error logged. */
int mcpx_app_open_policy(struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                         struct mcpx_policy_store **out);

/* The workspace and task store cfg names, judged (app_store.c): 0 with
 * out filled (out->spec.type MCPX_STORE_OFF: none, desc says why) and desc
 * saying which and why runs cannot reach it; -1 when the server must not
 * start (a configured store runs could read), with err set. */
int mcpx_app_judge_store(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                         struct mcpx_store_config *out, char *desc, size_t n, struct mcpx_err *err);
/* The store, judged and opened on loop (off: 0 with *out NULL); -1 with
 * the error logged. The caller frees it (mcpx_store_free). */
int mcpx_app_open_store(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb,
                        struct mcpx_loop *loop, struct mcpx_store **out);

#endif
