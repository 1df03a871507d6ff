/*
 * config_load.c - the configuration loaded in its order (defaults, then the
 * environment, then flags) and checked as a whole.
 *
 * config.c turns each value into its setting and checks its own bounds;
 * what needs more than one value, or a look at the machine, is checked
 * here once every value is in: settings that contradict each other, paths
 * that must be absolute, the listen address split into host and port, the
 * interpreter resolved. A failure names the setting, and the server does
 * not start. This file does not parse single values, print the
 * configuration (config_print.c) or open the store it names.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "langset.h"
#include "preload.h"

/* Splits MCP_EXEC_ADDR into host and port. ":8080" means every interface, as
 * in the Go server. */
static int parse_addr(struct mcpx_config *c, struct mcpx_err *err)
{
	const char *a = c->addr, *host = a, *colon;
	unsigned long long port;
	size_t hostlen;

	if (a[0] == '[') {
		const char *close = strchr(a, ']');
		if (!close || close[1] != ':' || close == a + 1)
			return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: \"%s\" is not [host]:port", a);
		host = a + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(a, ':');
		if (!colon)
			return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: \"%s\" is not host:port", a);
		hostlen = (size_t)(colon - a);
	}
	/* Both forms: the host must fit listen_host whole. */
	if (hostlen >= sizeof(c->listen_host))
		return mcpx_err_set(err, ENAMETOOLONG,
				    "MCP_EXEC_ADDR: the host is %zu bytes long, more than the %zu allowed",
				    hostlen, sizeof(c->listen_host) - 1);
	memcpy(c->listen_host, host, hostlen);
	c->listen_host[hostlen] = '\0';
	if (hostlen == 0 && host == a)
		strcpy(c->listen_host, "0.0.0.0");
	if (mcpx_config_parse_ull(colon + 1, &port) < 0 || port > 65535)
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: bad port in \"%s\"", a);
	c->listen_port = (int)port;
	return 0;
}

/* Resolves the interpreter once. Bare names are looked up in the system
 * directories only, never in the server's PATH: a per-user shim (pyenv, say)
 * would be unreadable to the sandbox uid and slow. */
static int resolve_python(struct mcpx_config *c, struct mcpx_err *err)
{
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
	struct stat st;

	if (strchr(c->python_arg, '/')) {
		if (c->python_arg[0] != '/')
			return mcpx_err_set(err, EINVAL,
					    "MCP_EXEC_PYTHON: \"%s\" must be an absolute path or a name",
					    c->python_arg);
		if (stat(c->python_arg, &st) < 0 || !S_ISREG(st.st_mode) ||
		    access(c->python_arg, X_OK) < 0)
			return mcpx_err_set(err, ENOENT,
					    "MCP_EXEC_PYTHON: interpreter \"%s\" not found or not executable",
					    c->python_arg);
		strcpy(c->python, c->python_arg);
		return 0;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[sizeof(c->python)];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dirs[i], c->python_arg) >= sizeof(path))
			continue;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0) {
			strcpy(c->python, path);
			return 0;
		}
	}
	return mcpx_err_set(err, ENOENT,
			    "MCP_EXEC_PYTHON: interpreter \"%s\" not found in /usr/local/bin:/usr/bin:/bin "
			    "(install python3 or set an absolute path)",
			    c->python_arg);
}

/* The egress settings: paths absolute, the CA file readable, the proxy an
 * http(s) URL (a SOCKS proxy would resolve names where the broker cannot
 * see them). The policy file itself is read by the policy module. */
static int validate_egress(const struct mcpx_config *c, struct mcpx_err *err)
{
	if (c->policy[0] && c->policy[0] != '/')
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_POLICY: must be an absolute path");
	if (c->egress_ca_file[0] && (c->egress_ca_file[0] != '/' || access(c->egress_ca_file, R_OK) < 0))
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_EGRESS_CA_FILE: \"%s\" is not a readable absolute path",
				    c->egress_ca_file);
	if (c->egress_proxy[0] && strncmp(c->egress_proxy, "http://", 7) != 0 &&
	    strncmp(c->egress_proxy, "https://", 8) != 0)
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_EGRESS_PROXY: must be an http:// or https:// URL");
	return 0;
}

/* The store: as configured, or the default directory (off when there is
 * no state directory to put it in; the start says so). A password file
 * only for Redis, and absolute; it is read when the store opens. */
static int validate_workspaces(struct mcpx_config *c, struct mcpx_err *err)
{
	struct mcpx_store_spec *s = &c->workspaces;
	struct mcpx_err inner = {{0}};

	memset(s, 0, sizeof(*s));
	if (c->workspaces_arg[0]) {
		if (mcpx_store_spec_parse(c->workspaces_arg, s, &inner) < 0)
			return mcpx_err_set(err, EINVAL, "MCP_EXEC_WORKSPACES: %s", inner.msg);
	} else if (mcpx_store_spec_default(s, &inner) < 0) {
		s->type = MCPX_STORE_OFF;
		s->is_default = true;
	}
	if (!c->workspaces_password_file[0])
		return 0;
	if (s->type != MCPX_STORE_REDIS)
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_WORKSPACES_PASSWORD_FILE is only for a redis:// store");
	if (c->workspaces_password_file[0] != '/')
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_WORKSPACES_PASSWORD_FILE: must be an absolute path");
	memcpy(s->password_file, c->workspaces_password_file, sizeof(s->password_file));
	return 0;
}

static int validate(struct mcpx_config *c, struct mcpx_err *err)
{
	int rc;

	if (c->default_timeout_s > c->max_timeout_s)
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_DEFAULT_TIMEOUT_S (%u) exceeds MCP_EXEC_MAX_TIMEOUT_S (%u)",
				    c->default_timeout_s, c->max_timeout_s);
	if (c->auth_token && !c->auth_token[0]) {
		free(c->auth_token);
		c->auth_token = NULL;
	}
	if (c->auth_token && c->auth_token_file[0])
		return mcpx_err_set(err, EINVAL,
				    "set MCP_EXEC_AUTH_TOKEN or MCP_EXEC_AUTH_TOKEN_FILE, not both");
	if (c->auth_tokens_file[0] && c->auth_tokens_file[0] != '/')
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_AUTH_TOKENS_FILE: must be an absolute path");
	if (c->auth_kubernetes &&
	    (!c->auth_audience[0] || strncmp(c->auth_kubernetes_api, "https://", 8) != 0))
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_AUTH_KUBERNETES needs a non-empty MCP_EXEC_AUTH_AUDIENCE "
				    "and an https:// MCP_EXEC_AUTH_KUBERNETES_API");
	if (c->session_key && strlen(c->session_key) < 16)
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_SESSION_KEY: use at least 16 characters");
	if (!mcpx_preload_valid(c->preload))
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_PRELOAD: \"%s\" is not a comma-separated list of module names",
				    c->preload);
	{
		unsigned mask;
		bool listed;

		if (mcpx_langset_parse(c->languages, &mask, &listed, err) < 0)
			return -EINVAL;
	}
	if (!c->workdir_base[0] && getenv("TMPDIR") && strlen(getenv("TMPDIR")) > MCPX_WORKDIR_BASE_MAX)
		return mcpx_err_set(err, ENAMETOOLONG,
				    "MCP_EXEC_WORKDIR_BASE is unset and its default, TMPDIR, is %zu "
				    "bytes long, more than the %d allowed",
				    strlen(getenv("TMPDIR")), MCPX_WORKDIR_BASE_MAX);
	if (c->workdir_base[0] != '/')
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_WORKDIR_BASE: must be an absolute path");
	rc = validate_egress(c, err);
	if (rc == 0)
		rc = validate_workspaces(c, err);
	if (rc < 0)
		return rc;
	rc = parse_addr(c, err);
	if (rc < 0)
		return rc;
	return resolve_python(c, err);
}

int mcpx_config_load(struct mcpx_config *c, int argc, char **argv, int *exit_code,
		     struct mcpx_err *err)
{
	int rc;

	mcpx_config_defaults(c);
	*exit_code = EX_CONFIG;
	rc = mcpx_config_load_env(c, err);
	for (int i = 1; rc == 0 && i < argc; i++)
		rc = mcpx_config_load_flag(c, argc, argv, &i, exit_code, err);
	if (rc < 0)
		return rc;
	*exit_code = EX_CONFIG;
	if (c->action == MCPX_ACTION_HELP || c->action == MCPX_ACTION_VERSION)
		return 0;
	return validate(c, err);
}
