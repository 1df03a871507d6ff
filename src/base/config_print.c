/*
 * config_print.c - the effective configuration as --check-config prints it:
 * one MCP_EXEC_* line per setting, in the order of docs/configuration.md's
 * table.
 *
 * Secrets are never printed: a token or session key shows as <redacted>,
 * a proxy URL with credentials is withheld, the store's address shows the
 * password file's path only. This file does not parse or check anything;
 * it prints what mcpx_config_load settled.
 */
#include "config.h"

#include <string.h>

#include "preload.h"

static const char *transport_name(enum mcpx_transport t)
{
	return t == MCPX_TRANSPORT_STDIO ? "stdio" : t == MCPX_TRANSPORT_HTTP ? "http" : "sse";
}

/* Longer than 60 lines on purpose: one line per setting, in the order of
 * docs/configuration.md's table, secrets redacted where they stand. */
void mcpx_config_print(const struct mcpx_config *c, FILE *out)
{
	static const char *const lvl[] = {"debug", "info", "warn", "error"};

	fprintf(out, "MCP_EXEC_TRANSPORT=%s\n", transport_name(c->transport));
	fprintf(out, "MCP_EXEC_ADDR=%s\n", c->addr);
	fprintf(out, "MCP_EXEC_AUTH_TOKEN=%s\n", c->auth_token ? "<redacted>" : "<unset>");
	fprintf(out, "MCP_EXEC_AUTH_TOKEN_FILE=%s\n", c->auth_token_file[0] ? c->auth_token_file : "<unset>");
	fprintf(out, "MCP_EXEC_AUTH_TOKENS_FILE=%s\n",
		c->auth_tokens_file[0] ? c->auth_tokens_file : "<unset>");
	fprintf(out, "MCP_EXEC_AUTH_KUBERNETES=%s\n", c->auth_kubernetes ? "true" : "false");
	if (c->auth_kubernetes) {
		fprintf(out, "MCP_EXEC_AUTH_AUDIENCE=%s\n", c->auth_audience);
		fprintf(out, "MCP_EXEC_AUTH_KUBERNETES_API=%s\n", c->auth_kubernetes_api);
		fprintf(out, "MCP_EXEC_AUTH_KUBERNETES_TOKEN_FILE=%s\n",
			c->auth_kubernetes_token_file);
		fprintf(out, "MCP_EXEC_AUTH_KUBERNETES_CA_FILE=%s\n", c->auth_kubernetes_ca_file);
	}
	fprintf(out, "MCP_EXEC_INSECURE_NO_AUTH=%s\n", c->insecure_no_auth ? "true" : "false");
	fprintf(out, "MCP_EXEC_SESSION_KEY=%s\n",
		c->session_key ? "<redacted>" : "<derived from the auth token, or random>");
	fprintf(out, "MCP_EXEC_SESSION_TTL_S=%u\n", c->session_ttl_s);
	fprintf(out, "MCP_EXEC_ALLOWED_ORIGINS=%s\n", c->allowed_origins);
	fprintf(out, "MCP_EXEC_MAX_BODY_BYTES=%zu\n", c->max_body_bytes);
	fprintf(out, "MCP_EXEC_HEADER_TIMEOUT_S=%u\n", c->header_timeout_s);
	fprintf(out, "MCP_EXEC_BODY_TIMEOUT_S=%u\n", c->body_timeout_s);
	fprintf(out, "MCP_EXEC_MAX_CONNECTIONS=%u\n", c->max_connections);
	fprintf(out, "MCP_EXEC_DEFAULT_TIMEOUT_S=%u\n", c->default_timeout_s);
	fprintf(out, "MCP_EXEC_MAX_TIMEOUT_S=%u\n", c->max_timeout_s);
	fprintf(out, "MCP_EXEC_MAX_OUTPUT_BYTES=%zu\n", c->max_output_bytes);
	fprintf(out, "MCP_EXEC_MAX_STDIN_BYTES=%zu\n", c->max_stdin_bytes);
	fprintf(out, "MCP_EXEC_MAX_CODE_BYTES=%zu\n", c->max_code_bytes);
	fprintf(out, "MCP_EXEC_PYTHON=%s (resolved: %s)\n", c->python_arg, c->python);
	fprintf(out, "MCP_EXEC_MEMORY_MB=%u\n", c->memory_mb);
	fprintf(out, "MCP_EXEC_MAX_PROCS=%u\n", c->max_procs);
	fprintf(out, "MCP_EXEC_MAX_FILE_MB=%u\n", c->max_file_mb);
	fprintf(out, "MCP_EXEC_MAX_DISK_MB=%u\n", c->max_disk_mb);
	fprintf(out, "MCP_EXEC_CPU_S=%u%s\n", c->cpu_s, c->cpu_s ? "" : " (follows the timeout)");
	fprintf(out, "MCP_EXEC_MAX_QUEUE=%u\n", c->max_queue);
	fprintf(out, "MCP_EXEC_QUEUE_TIMEOUT_S=%u\n", c->queue_timeout_s);
	fprintf(out, "MCP_EXEC_WORKDIR_BASE=%s\n", c->workdir_base);
	fprintf(out, "MCP_EXEC_REQUIRE_LANDLOCK=%s\n", c->require_landlock ? "true" : "false");
	fprintf(out, "MCP_EXEC_RUNTIME=%s\n", mcpx_runtime_name(c->runtime));
	fprintf(out, "MCP_EXEC_MAX_FILES_IN_BYTES=%zu\n", c->max_files_in_bytes);
	fprintf(out, "MCP_EXEC_MAX_FILES_OUT=%u\n", c->max_files_out);
	fprintf(out, "MCP_EXEC_MAX_FILES_OUT_BYTES=%zu\n", c->max_files_out_bytes);
	fprintf(out, "MCP_EXEC_WARM=%s\n",
		c->warm == MCPX_WARM_OFF ? "0" : c->warm == MCPX_WARM_AUTO ? "auto" : "after-reap");
	fprintf(out, "MCP_EXEC_PRELOAD=%s", c->preload);
	if (strcmp(c->preload, MCPX_PRELOAD_AUTO) == 0)
		fprintf(out, " (fork-server: %s; after-reap: %s)",
			mcpx_preload_list(c->preload, true), mcpx_preload_list(c->preload, false));
	fputc('\n', out);
	fprintf(out, "MCP_EXEC_LANGUAGES=%s\n", c->languages);
	fprintf(out, "MCP_EXEC_TASKS=%s\n", c->tasks ? "true" : "false");
	fprintf(out, "MCP_EXEC_TASK_MAX_TIMEOUT_S=%u\n", c->task_max_timeout_s);
	fprintf(out, "MCP_EXEC_TASK_TTL_MAX_S=%u\n", c->task_ttl_max_s);
	fprintf(out, "MCP_EXEC_TASKS_PER_CALLER=%u\n", c->tasks_per_caller);
	fprintf(out, "MCP_EXEC_TASKS_MAX_MB=%u\n", c->tasks_max_mb);
	fprintf(out, "MCP_EXEC_TASK_LEASE_S=%u\n", c->task_lease_s);
	fprintf(out, "MCP_EXEC_TASK_SYNC_MS=%u\n", c->task_sync_ms);
	fprintf(out, "MCP_EXEC_POLICY=%s\n", c->policy[0] ? c->policy : "<unset: no egress>");
	/* A proxy URL may carry a password. */
	fprintf(out, "MCP_EXEC_EGRESS_PROXY=%s\n",
		!c->egress_proxy[0]		    ? "<unset: direct>"
		: strchr(c->egress_proxy, '@') ? "<set, with credentials: redacted>"
						    : c->egress_proxy);
	fprintf(out, "MCP_EXEC_EGRESS_CA_FILE=%s\n",
		c->egress_ca_file[0] ? c->egress_ca_file : "<unset: the system's CAs>");
	fprintf(out, "MCP_EXEC_WARM_MAX_RUNS=%u%s\n", c->warm_max_runs,
		c->warm_max_runs ? "" : " (no bound)");
	fprintf(out, "MCP_EXEC_WARM_MAX_AGE_S=%u%s\n", c->warm_max_age_s,
		c->warm_max_age_s ? "" : " (no bound)");
	{
		/* The store's address, never a password (the file's path only). */
		char store[MCPX_STORE_DIR_MAX + 400];

		mcpx_store_spec_format(&c->workspaces, store, sizeof(store));
		fprintf(out, "MCP_EXEC_WORKSPACES=%s%s\n", store,
			!c->workspaces.is_default		      ? ""
			: c->workspaces.type == MCPX_STORE_OFF ? " (default: no state directory)"
								      : " (default)");
	}
	fprintf(out, "MCP_EXEC_WORKSPACES_PASSWORD_FILE=%s\n",
		c->workspaces_password_file[0] ? c->workspaces_password_file : "<unset>");
	fprintf(out, "MCP_EXEC_WORKSPACE_MAX_MB=%u\n", c->workspace_max_mb);
	fprintf(out, "MCP_EXEC_WORKSPACE_TTL_S=%u\n", c->workspace_ttl_s);
	fprintf(out, "MCP_EXEC_WORKSPACES_PER_CALLER=%u\n", c->workspaces_per_caller);
	fprintf(out, "MCP_EXEC_LOG_FORMAT=%s\n", c->log_format == MCPX_LOG_JSON ? "json" : "text");
	fprintf(out, "MCP_EXEC_LOG_LEVEL=%s\n", lvl[c->log_level]);
}
