/*
 * fuzz_config.c - the configuration parser (mcpx_config_load) with argv and
 * the environment taken from the input, then --check-config's printer on
 * whatever loaded. Beyond the sanitizers it checks that a load either fails
 * with a message or yields a configuration whose strings are terminated and
 * whose listener fields hold together.
 *
 * Input: entries separated by NUL bytes. An entry starting with '-' is an
 * argument; any other entry is a variable: its first byte picks the name
 * (one of the MCP_EXEC_* variables or TMPDIR), the rest is the value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

extern char **environ;

static const char *const names[] = {
    "MCP_EXEC_TRANSPORT",
    "MCP_EXEC_ADDR",
    "MCP_EXEC_AUTH_TOKEN",
    "MCP_EXEC_AUTH_TOKEN_FILE",
    "MCP_EXEC_INSECURE_NO_AUTH",
    "MCP_EXEC_SESSION_KEY",
    "MCP_EXEC_SESSION_TTL_S",
    "MCP_EXEC_ALLOWED_ORIGINS",
    "MCP_EXEC_MAX_BODY_BYTES",
    "MCP_EXEC_DEFAULT_TIMEOUT_S",
    "MCP_EXEC_MAX_TIMEOUT_S",
    "MCP_EXEC_MAX_OUTPUT_BYTES",
    "MCP_EXEC_MAX_STDIN_BYTES",
    "MCP_EXEC_MAX_CODE_BYTES",
    "MCP_EXEC_PYTHON",
    "MCP_EXEC_MEMORY_MB",
    "MCP_EXEC_MAX_PROCS",
    "MCP_EXEC_MAX_FILE_MB",
    "MCP_EXEC_CPU_S",
    "MCP_EXEC_MAX_QUEUE",
    "MCP_EXEC_QUEUE_TIMEOUT_S",
    "MCP_EXEC_WORKDIR_BASE",
    "MCP_EXEC_REQUIRE_LANDLOCK",
    "MCP_EXEC_WARM",
    "MCP_EXEC_PRELOAD",
    "MCP_EXEC_LOG_FORMAT",
    "MCP_EXEC_LOG_LEVEL",
    "MCP_EXEC_LANGUAGES",
    "TMPDIR",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))
#define MAX_ARGS 32

static void check_loaded(const struct mcpx_config *c)
{
	/* Every fixed-size string is terminated within its buffer. */
	if (!memchr(c->addr, 0, sizeof(c->addr)) ||
	    !memchr(c->listen_host, 0, sizeof(c->listen_host)) ||
	    !memchr(c->auth_token_file, 0, sizeof(c->auth_token_file)) ||
	    !memchr(c->allowed_origins, 0, sizeof(c->allowed_origins)) ||
	    !memchr(c->languages, 0, sizeof(c->languages)) ||
	    !memchr(c->python, 0, sizeof(c->python)) ||
	    !memchr(c->workdir_base, 0, sizeof(c->workdir_base)) ||
	    !memchr(c->preload, 0, sizeof(c->preload)))
		abort();
	if (c->listen_port < 0 || c->listen_port > 65535 || c->workdir_base[0] != '/')
		abort();
	if (c->default_timeout_s > c->max_timeout_s)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mcpx_config cfg;
	static char *none[1];
	char *copy, *argv[MAX_ARGS + 1] = {"mcp-exec"}, *env[MAX_ARGS + 1];
	size_t nenv = 0;
	int argc = 1, code = 0, rc;
	struct mcpx_err err = {{0}};
	FILE *devnull;

	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	/* A private environment block: setenv() would leak every value. */
	for (char *p = copy; p < copy + size; p += strlen(p) + 1) {
		if (p[0] == '-' && argc < MAX_ARGS) {
			argv[argc++] = p;
		} else if (p[0] && p[0] != '-' && nenv < MAX_ARGS) {
			const char *name = names[(unsigned char)p[0] % NNAMES];
			size_t n = strlen(name), v = strlen(p + 1);
			char *e = malloc(n + v + 2);
			if (!e)
				break;
			memcpy(e, name, n);
			e[n] = '=';
			memcpy(e + n + 1, p + 1, v + 1);
			env[nenv++] = e;
		}
	}
	argv[argc] = NULL;
	env[nenv] = NULL;
	environ = env;
	rc = mcpx_config_load(&cfg, argc, argv, &code, &err);
	if (rc < 0 && (!err.msg[0] || (code != 64 && code != 78)))
		abort();
	if (rc == 0 && cfg.action != MCPX_ACTION_HELP && cfg.action != MCPX_ACTION_VERSION)
		check_loaded(&cfg);
	if (rc == 0 && (devnull = fopen("/dev/null", "w"))) {
		mcpx_config_print(&cfg, devnull);
		fclose(devnull);
	}
	mcpx_config_free(&cfg);
	environ = none;
	for (size_t i = 0; i < nenv; i++)
		free(env[i]);
	free(copy);
	return 0;
}
