/*
 * test_config.c - configuration parsing at its edges: every string setting
 * one byte over its limit (as a variable and as a flag) is refused with a
 * message naming it, a value at the limit is kept whole, MCP_EXEC_ADDR's
 * host is bounded in both its plain and bracketed forms, and an over-long
 * TMPDIR is named instead of being cut short.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "langset.h"
#include "sandbox.h"

static struct mcpx_config cfg;
static struct mcpx_err err;

/* Loads with the given argv (NULL-terminated, without argv[0]). */
static __attribute__((noinline)) int load(const char *const *args)
{
	char *argv[8] = {"mcp-exec"};
	int argc = 1, code = 0, rc;

	for (; args && *args && argc < 7; args++)
		argv[argc++] = (char *)*args;
	mcpx_config_free(&cfg);
	memset(&err, 0, sizeof(err));
	rc = mcpx_config_load(&cfg, argc, argv, &code, &err);
	return rc;
}

/* n copies of ch, as a heap string. */
static char *repeat(char ch, size_t n, const char *prefix, const char *suffix)
{
	size_t p = strlen(prefix), s = strlen(suffix);
	char *v = malloc(p + n + s + 1);

	memcpy(v, prefix, p);
	memset(v + p, ch, n);
	memcpy(v + p + n, suffix, s + 1);
	return v;
}

static void test_addr(void)
{
	char *v;

	/* The crash this guards against: a bracketed host longer than
	 * listen_host overwrote the fields after it. */
	v = repeat('a', 280, "[", "]:8080");
	setenv("MCP_EXEC_ADDR", v, 1);
	CHECK_INT(load(NULL), -ENAMETOOLONG);
	CHECK(strstr(err.msg, "MCP_EXEC_ADDR") && strstr(err.msg, "280 bytes"));
	CHECK(cfg.auth_token == NULL);
	free(v);
	v = repeat('b', 256, "", ":80");
	setenv("MCP_EXEC_ADDR", v, 1);
	CHECK_INT(load(NULL), -ENAMETOOLONG);
	CHECK(strstr(err.msg, "MCP_EXEC_ADDR") != NULL);
	free(v);
	/* 255 bytes fit, whole. */
	v = repeat('c', 255, "[", "]:80");
	setenv("MCP_EXEC_ADDR", v, 1);
	CHECK_INT(load(NULL), 0);
	CHECK_INT(strlen(cfg.listen_host), 255);
	CHECK_INT(cfg.listen_port, 80);
	free(v);
	setenv("MCP_EXEC_ADDR", "[]:80", 1);
	CHECK_INT(load(NULL), -EINVAL);
	setenv("MCP_EXEC_ADDR", "[::1]:8081", 1);
	CHECK_INT(load(NULL), 0);
	CHECK_STR(cfg.listen_host, "::1");
	/* Whether the host is loopback is decided once it is resolved (listen_addr.h). */
	unsetenv("MCP_EXEC_ADDR");
}

/* Each string setting, its limit, and a value of that length that is valid. */
struct limit {
	const char *env, *flag;
	size_t max;
	char fill;
	const char *prefix;
};

static void test_strings(void)
{
	const struct limit limits[] = {
	    {"MCP_EXEC_ADDR", "--addr", sizeof(cfg.addr) - 1, '1', "1:"},
	    {"MCP_EXEC_AUTH_TOKEN_FILE", "--auth-token-file", sizeof(cfg.auth_token_file) - 1, 'f', "/"},
	    {"MCP_EXEC_ALLOWED_ORIGINS", "--allowed-origins", sizeof(cfg.allowed_origins) - 1, 'o', ""},
	    {"MCP_EXEC_PYTHON", "--python", sizeof(cfg.python_arg) - 1, 'p', "/"},
	    {"MCP_EXEC_WORKDIR_BASE", "--workdir-base", MCPX_WORKDIR_BASE_MAX, 'w', "/"},
	    {"MCP_EXEC_PRELOAD", "--preload", sizeof(cfg.preload) - 1, 'm', ""},
	    {"MCP_EXEC_AUTH_TOKEN", "--auth-token", MCPX_SECRET_MAX, 't', ""},
	    {"MCP_EXEC_SESSION_KEY", "--session-key", MCPX_SECRET_MAX, 'k', ""},
	};

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		const struct limit *l = &limits[i];
		size_t fill = l->max + 1 - strlen(l->prefix);
		char *over = repeat(l->fill, fill, l->prefix, "");
		const char *args[] = {l->flag, NULL, NULL};
		char want[64];

		snprintf(want, sizeof(want), "more than the %zu allowed", l->max);
		setenv(l->env, over, 1);
		CHECK_INT(load(NULL), -ENAMETOOLONG);
		CHECK(strstr(err.msg, l->env) && strstr(err.msg, want));
		unsetenv(l->env);
		args[1] = over;
		CHECK_INT(load(args), -ENAMETOOLONG);
		CHECK(strstr(err.msg, l->flag) && strstr(err.msg, want));
		if (check_failures)
			fprintf(stderr, "  (setting %s: %s)\n", l->env, err.msg);
		free(over);
	}
}

static void test_tmpdir(void)
{
	char *v = repeat('t', MCPX_WORKDIR_BASE_MAX, "/", "");
	const char *args[] = {"--workdir-base", "/tmp", NULL};

	setenv("TMPDIR", v, 1);
	CHECK_INT(load(NULL), -ENAMETOOLONG);
	CHECK(strstr(err.msg, "TMPDIR") && strstr(err.msg, "MCP_EXEC_WORKDIR_BASE"));
	/* Not in the way when the base is set explicitly. */
	CHECK_INT(load(args), 0);
	CHECK_STR(cfg.workdir_base, "/tmp");
	v[MCPX_WORKDIR_BASE_MAX] = '\0';
	setenv("TMPDIR", v, 1);
	CHECK_INT(load(NULL), 0);
	CHECK_STR(cfg.workdir_base, v);
	unsetenv("TMPDIR");
	free(v);
}

/* MCP_EXEC_LANGUAGES: auto, or a list that names python; anything else
 * refuses to start with the variable's name in the message. */
static void test_languages(void)
{
	static const struct {
		const char *v;
		int rc;
		const char *msg;
	} cases[] = {
	    {"auto", 0, NULL},
	    {"python", 0, NULL},
	    {"python,bash", 0, NULL},
	    {"javascript,python,bash", 0, NULL},
	    {"bash", -EINVAL, "must include python"},
	    {"python,ruby", -EINVAL, "\"ruby\" is not a language"},
	    {"python,", -EINVAL, "\"\" is not a language"},
	    {"Python", -EINVAL, "\"Python\" is not a language"},
	    {"python, bash", -EINVAL, "\" bash\" is not a language"},
	};
	unsigned mask;
	bool listed;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("MCP_EXEC_LANGUAGES", cases[i].v, 1);
		CHECK_INT(load(NULL), cases[i].rc);
		if (cases[i].msg && !(strstr(err.msg, "MCP_EXEC_LANGUAGES") &&
				      strstr(err.msg, cases[i].msg))) {
			fprintf(stderr, "  MCP_EXEC_LANGUAGES=%s: %s\n", cases[i].v, err.msg);
			check_failures++;
		}
	}
	unsetenv("MCP_EXEC_LANGUAGES");
	CHECK_INT(load(NULL), 0);
	CHECK_STR(cfg.languages, "auto");
	CHECK_INT(mcpx_langset_parse("auto", &mask, &listed, &err), 0);
	CHECK(mask == 7 && !listed);
	CHECK_INT(mcpx_langset_parse("bash,python", &mask, &listed, &err), 0);
	CHECK(mask == ((1u << MCPX_LANG_PYTHON) | (1u << MCPX_LANG_BASH)) && listed);
	CHECK_INT(mcpx_lang_from_name("javascript", 10), MCPX_LANG_JAVASCRIPT);
	CHECK_INT(mcpx_lang_from_name("javascript", 4), -1);
	CHECK_STR(mcpx_lang_name(MCPX_LANG_BASH), "bash");
}

/* The store's settings: defaults, the three forms, a password file only
 * with redis://, bounds; messages name the variable, never the value. */
static void test_workspaces(void)
{
	CHECK_INT(load(NULL), 0);
	CHECK(cfg.workspaces.type == MCPX_STORE_DIR && cfg.workspaces.is_default);
	CHECK_INT(cfg.workspace_max_mb, 64);
	CHECK_INT(cfg.workspace_ttl_s, 86400);
	CHECK_INT(cfg.workspaces_per_caller, 32);
	setenv("MCP_EXEC_WORKSPACES", "off", 1);
	CHECK_INT(load(NULL), 0);
	CHECK(cfg.workspaces.type == MCPX_STORE_OFF && !cfg.workspaces.is_default);
	{
		const char *args[] = {"--workspaces=redis://mcp@cache.ns:6380/1",
		                      "--workspaces-password-file", "/run/secrets/redis",
		                      "--workspace-ttl-s=3600", NULL};

		CHECK_INT(load(args), 0);
		CHECK(cfg.workspaces.type == MCPX_STORE_REDIS);
		CHECK_STR(cfg.workspaces.host, "cache.ns");
		CHECK_STR(cfg.workspaces.password_file, "/run/secrets/redis");
		CHECK_INT(cfg.workspace_ttl_s, 3600);
	}
	setenv("MCP_EXEC_WORKSPACES", "redis://mcp:hunter2pw@cache.ns", 1);
	CHECK(load(NULL) < 0);
	CHECK(strstr(err.msg, "MCP_EXEC_WORKSPACES") && !strstr(err.msg, "hunter2pw"));
	setenv("MCP_EXEC_WORKSPACES", "dir:/srv/ws", 1);
	setenv("MCP_EXEC_WORKSPACES_PASSWORD_FILE", "/run/pw", 1);
	CHECK(load(NULL) < 0);
	CHECK(strstr(err.msg, "only for a redis://") != NULL);
	setenv("MCP_EXEC_WORKSPACES", "redis://cache", 1);
	setenv("MCP_EXEC_WORKSPACES_PASSWORD_FILE", "pw", 1);
	CHECK(load(NULL) < 0);
	CHECK(strstr(err.msg, "absolute") != NULL);
	unsetenv("MCP_EXEC_WORKSPACES_PASSWORD_FILE");
	unsetenv("MCP_EXEC_WORKSPACES");
	setenv("MCP_EXEC_WORKSPACE_MAX_MB", "0", 1);
	CHECK_INT(load(NULL), -ERANGE);
	unsetenv("MCP_EXEC_WORKSPACE_MAX_MB");
	setenv("MCP_EXEC_WORKSPACES_PER_CALLER", "x", 1);
	CHECK_INT(load(NULL), -EINVAL);
	unsetenv("MCP_EXEC_WORKSPACES_PER_CALLER");
	setenv("MCP_EXEC_WORKSPACE_TTL_S", "0", 1);
	CHECK_INT(load(NULL), -ERANGE);
	unsetenv("MCP_EXEC_WORKSPACE_TTL_S");
}

int main(void)
{
	/* The interpreter must resolve for a load to succeed. */
	setenv("MCP_EXEC_PYTHON", "/usr/bin/python3", 1);
	CHECK_INT(load(NULL), 0);
	test_addr();
	unsetenv("MCP_EXEC_PYTHON");
	test_strings();
	setenv("MCP_EXEC_PYTHON", "/usr/bin/python3", 1);
	test_tmpdir();
	test_languages();
	test_workspaces();
	mcpx_config_free(&cfg);
	CHECK_DONE();
}
