/*
 * config.c - MCP_EXEC_* variables and flags into one struct mcpx_config.
 *
 * The settings are a table: name, environment variable, flag, type, bounds
 * and default. Environment first, then flags (flags win). Every value is
 * parsed strictly (no trailing junk, no silent wrap-around) and checked
 * against its bounds, so a typo stops the server at start-up with a message
 * naming the setting instead of running with a surprise. This module does
 * not open sockets, read the token file or probe the sandbox.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "crypto.h"
#include "warm.h"

enum opt_type {
	T_UINT, T_SIZE, T_BOOL, T_STR, T_SECRET, T_TRANSPORT, T_LOGFMT, T_LOGLVL, T_WARM, T_ACTION
};

struct opt {
	const char *flag;  /* without the leading "--" */
	const char *env;   /* NULL: flag only */
	enum opt_type type;
	size_t off;        /* offset into struct mcpx_config */
	size_t size;       /* for strings: buffer size */
	unsigned long long min, max;
	const char *help;
};

#define OFF(f) offsetof(struct mcpx_config, f)
#define SZ(f) sizeof(((struct mcpx_config *)0)->f)

static const struct opt opts[] = {
	{"transport", "MCP_EXEC_TRANSPORT", T_TRANSPORT, OFF(transport), 0, 0, 0,
	 "stdio | http | sse (sse is an alias of http)"},
	{"addr", "MCP_EXEC_ADDR", T_STR, OFF(addr), SZ(addr), 0, 0,
	 "listen address host:port (default 127.0.0.1:8080)"},
	{"auth-token", "MCP_EXEC_AUTH_TOKEN", T_SECRET, OFF(auth_token), 0, 0, 0,
	 "required X-MCP-AUTH / Bearer value (prefer the file: argv is visible to other users)"},
	{"auth-token-file", "MCP_EXEC_AUTH_TOKEN_FILE", T_STR, OFF(auth_token_file),
	 SZ(auth_token_file), 0, 0, "file holding the token (re-read when it changes)"},
	{"insecure-no-auth", "MCP_EXEC_INSECURE_NO_AUTH", T_BOOL, OFF(insecure_no_auth), 0, 0, 0,
	 "allow a non-loopback listener without a token"},
	{"session-key", "MCP_EXEC_SESSION_KEY", T_SECRET, OFF(session_key), 0, 0, 0,
	 "HMAC key shared by all replicas for session ids (default: derived from the token)"},
	{"session-ttl-s", "MCP_EXEC_SESSION_TTL_S", T_UINT, OFF(session_ttl_s), 0, 60, 30 * 86400,
	 "lifetime of a session id in seconds"},
	{"allowed-origins", "MCP_EXEC_ALLOWED_ORIGINS", T_STR, OFF(allowed_origins),
	 SZ(allowed_origins), 0, 0, "extra allowed Origin values, comma-separated"},
	{"max-body-bytes", "MCP_EXEC_MAX_BODY_BYTES", T_SIZE, OFF(max_body_bytes), 0, 1024,
	 256ULL << 20, "largest HTTP request body accepted (413 beyond)"},
	{"header-timeout-s", "MCP_EXEC_HEADER_TIMEOUT_S", T_UINT, OFF(header_timeout_s), 0, 1, 3600,
	 "seconds a connection may take to send its request head (closed after)"},
	{"body-timeout-s", "MCP_EXEC_BODY_TIMEOUT_S", T_UINT, OFF(body_timeout_s), 0, 1, 3600,
	 "seconds a request may take to send its body once the head is in"},
	{"max-connections", "MCP_EXEC_MAX_CONNECTIONS", T_UINT, OFF(max_connections), 0, 4, 65536,
	 "open HTTP connections; beyond, the oldest unauthenticated idle one is dropped"},
	{"default-timeout-s", "MCP_EXEC_DEFAULT_TIMEOUT_S", T_UINT, OFF(default_timeout_s), 0, 1,
	 86400, "wall-clock limit when the call gives none"},
	{"max-timeout-s", "MCP_EXEC_MAX_TIMEOUT_S", T_UINT, OFF(max_timeout_s), 0, 1, 86400,
	 "largest wall-clock limit a call may ask for (larger values are clamped)"},
	{"max-output-bytes", "MCP_EXEC_MAX_OUTPUT_BYTES", T_SIZE, OFF(max_output_bytes), 0, 1,
	 64ULL << 20, "combined stdout+stderr cap"},
	{"max-stdin-bytes", "MCP_EXEC_MAX_STDIN_BYTES", T_SIZE, OFF(max_stdin_bytes), 0, 0,
	 64ULL << 20, "largest stdin a call may pass"},
	{"max-code-bytes", "MCP_EXEC_MAX_CODE_BYTES", T_SIZE, OFF(max_code_bytes), 0, 1,
	 64ULL << 20, "largest code a call may pass"},
	{"python", "MCP_EXEC_PYTHON", T_STR, OFF(python_arg), SZ(python_arg), 0, 0,
	 "interpreter: absolute path, or a name looked up in the system directories"},
	{"memory-mb", "MCP_EXEC_MEMORY_MB", T_UINT, OFF(memory_mb), 0, 32, 1 << 20,
	 "address-space limit per sandboxed process (MiB)"},
	{"max-procs", "MCP_EXEC_MAX_PROCS", T_UINT, OFF(max_procs), 0, 1, 100000,
	 "processes and threads a run may add"},
	{"max-file-mb", "MCP_EXEC_MAX_FILE_MB", T_UINT, OFF(max_file_mb), 0, 0, 1 << 20,
	 "largest file a run may write (MiB)"},
	{"cpu-s", "MCP_EXEC_CPU_S", T_UINT, OFF(cpu_s), 0, 0, 86400,
	 "CPU-time limit per run; 0 follows the run's wall-clock timeout"},
	{"max-queue", "MCP_EXEC_MAX_QUEUE", T_UINT, OFF(max_queue), 0, 0, 100000,
	 "executions that may wait behind the running one"},
	{"queue-timeout-s", "MCP_EXEC_QUEUE_TIMEOUT_S", T_UINT, OFF(queue_timeout_s), 0, 1, 86400,
	 "longest wait in the queue"},
	{"workdir-base", "MCP_EXEC_WORKDIR_BASE", T_STR, OFF(workdir_base), SZ(workdir_base), 0, 0,
	 "where per-run workdirs are made (default $TMPDIR or /tmp)"},
	{"require-landlock", "MCP_EXEC_REQUIRE_LANDLOCK", T_BOOL, OFF(require_landlock), 0, 0, 0,
	 "refuse to start on kernels without Landlock"},
	{"warm", "MCP_EXEC_WARM", T_WARM, OFF(warm), 0, 0, 0,
	 "1|auto: prepare the next sandboxed interpreter before the request arrives; "
	 "after-reap: only once the previous run is gone; 0: off"},
	{"preload", "MCP_EXEC_PRELOAD", T_STR, OFF(preload), SZ(preload), 0, 0,
	 "modules a warm interpreter imports in advance, comma-separated"},
	{"log-format", "MCP_EXEC_LOG_FORMAT", T_LOGFMT, OFF(log_format), 0, 0, 0, "json | text"},
	{"log-level", "MCP_EXEC_LOG_LEVEL", T_LOGLVL, OFF(log_level), 0, 0, 0,
	 "debug | info | warn | error"},
	{"check-config", NULL, T_ACTION, MCPX_ACTION_CHECK_CONFIG, 0, 0, 0,
	 "print the effective configuration and sandbox layers, then exit"},
	{"help", NULL, T_ACTION, MCPX_ACTION_HELP, 0, 0, 0, "show this help"},
	{"version", NULL, T_ACTION, MCPX_ACTION_VERSION, 0, 0, 0, "print the version"},
};

static void set_defaults(struct mcpx_config *c)
{
	const char *tmp = getenv("TMPDIR");

	memset(c, 0, sizeof(*c));
	c->transport = MCPX_TRANSPORT_STDIO;
	strcpy(c->addr, "127.0.0.1:8080");
	c->session_ttl_s = 86400;
	c->max_body_bytes = 4u << 20;
	c->header_timeout_s = 10;
	c->body_timeout_s = 10;
	c->max_connections = 512;
	c->default_timeout_s = 30;
	c->max_timeout_s = 300;
	c->max_output_bytes = 1u << 20;
	c->max_stdin_bytes = 1u << 20;
	c->max_code_bytes = 1u << 20;
	strcpy(c->python_arg, "python3");
	c->memory_mb = 512;
	c->max_procs = 64;
	c->max_file_mb = 64;
	c->max_queue = 16;
	c->queue_timeout_s = 60;
	snprintf(c->workdir_base, sizeof(c->workdir_base), "%s",
		 tmp && tmp[0] == '/' ? tmp : "/tmp");
	c->warm = MCPX_WARM_AUTO;
	strcpy(c->preload, "numpy");
	c->log_format = MCPX_LOG_JSON;
	c->log_level = MCPX_LOG_INFO;
}

static int parse_ull(const char *s, unsigned long long *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, 0;
	}
	return -EINVAL;
}

/* Applies one value; `src` names its origin (variable or flag) for messages. */
static int apply(struct mcpx_config *c, const struct opt *o, const char *val, const char *src,
		 struct mcpx_err *err)
{
	char *base = (char *)c;
	unsigned long long v;

	switch (o->type) {
	case T_UINT:
	case T_SIZE:
		if (parse_ull(val, &v) < 0)
			return mcpx_err_set(err, EINVAL, "%s: \"%s\" is not a non-negative integer",
					    src, val);
		if (v < o->min || v > o->max)
			return mcpx_err_set(err, ERANGE, "%s: %llu is out of range [%llu, %llu]", src,
					    v, o->min, o->max);
		if (o->type == T_UINT)
			*(unsigned *)(base + o->off) = (unsigned)v;
		else
			*(size_t *)(base + o->off) = (size_t)v;
		return 0;
	case T_BOOL:
		if (parse_bool(val, (bool *)(base + o->off)) < 0)
			return mcpx_err_set(err, EINVAL, "%s: \"%s\" is not a boolean (true/false)",
					    src, val);
		return 0;
	case T_STR:
		if (strlen(val) >= o->size)
			return mcpx_err_set(err, ENAMETOOLONG, "%s: value too long", src);
		strcpy(base + o->off, val);
		return 0;
	case T_SECRET: {
		char **slot = (char **)(base + o->off);
		if (*slot) {
			mcpx_wipe(*slot, strlen(*slot));
			free(*slot);
		}
		*slot = strdup(val);
		return *slot ? 0 : -ENOMEM;
	}
	case T_TRANSPORT:
		if (strcmp(val, "stdio") == 0)
			c->transport = MCPX_TRANSPORT_STDIO;
		else if (strcmp(val, "http") == 0)
			c->transport = MCPX_TRANSPORT_HTTP;
		else if (strcmp(val, "sse") == 0)
			c->transport = MCPX_TRANSPORT_SSE;
		else
			return mcpx_err_set(err, EINVAL,
					    "%s: unknown transport \"%s\" (want stdio|http|sse)", src,
					    val);
		return 0;
	case T_LOGFMT:
		if (strcmp(val, "json") == 0)
			c->log_format = MCPX_LOG_JSON;
		else if (strcmp(val, "text") == 0)
			c->log_format = MCPX_LOG_TEXT;
		else
			return mcpx_err_set(err, EINVAL, "%s: \"%s\" is not json|text", src, val);
		return 0;
	case T_LOGLVL:
		if (strcmp(val, "debug") == 0)
			c->log_level = MCPX_LOG_DEBUG;
		else if (strcmp(val, "info") == 0)
			c->log_level = MCPX_LOG_INFO;
		else if (strcmp(val, "warn") == 0 || strcmp(val, "warning") == 0)
			c->log_level = MCPX_LOG_WARN;
		else if (strcmp(val, "error") == 0)
			c->log_level = MCPX_LOG_ERROR;
		else
			return mcpx_err_set(err, EINVAL, "%s: \"%s\" is not debug|info|warn|error",
					    src, val);
		return 0;
	case T_WARM: {
		bool b;
		if (strcmp(val, "auto") == 0)
			c->warm = MCPX_WARM_AUTO;
		else if (strcmp(val, "after-reap") == 0)
			c->warm = MCPX_WARM_AFTER_REAP;
		else if (parse_bool(val, &b) == 0)
			c->warm = b ? MCPX_WARM_AUTO : MCPX_WARM_OFF;
		else
			return mcpx_err_set(err, EINVAL, "%s: \"%s\" is not 0|1|auto|after-reap", src,
					    val);
		return 0;
	}
	case T_ACTION:
		c->action = (enum mcpx_action)o->off;
		return 0;
	}
	return -EINVAL;
}

/* Splits MCP_EXEC_ADDR into host and port. ":8080" means every interface, as
 * in the Go server. */
static int parse_addr(struct mcpx_config *c, struct mcpx_err *err)
{
	const char *a = c->addr, *colon;
	unsigned long long port;
	size_t hostlen;

	if (a[0] == '[') {
		const char *close = strchr(a, ']');
		if (!close || close[1] != ':')
			return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: \"%s\" is not [host]:port", a);
		hostlen = (size_t)(close - a - 1);
		memcpy(c->listen_host, a + 1, hostlen);
		c->listen_host[hostlen] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(a, ':');
		if (!colon)
			return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: \"%s\" is not host:port", a);
		hostlen = (size_t)(colon - a);
		if (hostlen >= sizeof(c->listen_host))
			return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: host too long");
		memcpy(c->listen_host, a, hostlen);
		c->listen_host[hostlen] = '\0';
		if (hostlen == 0)
			strcpy(c->listen_host, "0.0.0.0");
	}
	if (parse_ull(colon + 1, &port) < 0 || port > 65535)
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_ADDR: bad port in \"%s\"", a);
	c->listen_port = (int)port;
	c->listen_loopback = strncmp(c->listen_host, "127.", 4) == 0 ||
			     strcmp(c->listen_host, "::1") == 0 ||
			     strcmp(c->listen_host, "localhost") == 0;
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
	if (c->session_key && strlen(c->session_key) < 16)
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_SESSION_KEY: use at least 16 characters");
	if (!mcpx_warm_preload_valid(c->preload))
		return mcpx_err_set(err, EINVAL,
				    "MCP_EXEC_PRELOAD: \"%s\" is not a comma-separated list of module names",
				    c->preload);
	if (c->workdir_base[0] != '/')
		return mcpx_err_set(err, EINVAL, "MCP_EXEC_WORKDIR_BASE: must be an absolute path");
	rc = parse_addr(c, err);
	if (rc < 0)
		return rc;
	return resolve_python(c, err);
}

static const struct opt *find_flag(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strlen(opts[i].flag) == len && strncmp(opts[i].flag, name, len) == 0)
			return &opts[i];
	return NULL;
}

int mcpx_config_load(struct mcpx_config *c, int argc, char **argv, int *exit_code,
		     struct mcpx_err *err)
{
	int rc;

	set_defaults(c);
	*exit_code = EX_CONFIG;
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
		if (!v)
			continue;
		rc = apply(c, &opts[i], v, opts[i].env, err);
		if (rc < 0)
			return rc;
		/* Secrets are copied; the original bytes in the process's
		 * environment block are overwritten, so nothing that can read
		 * /proc/<pid>/environ later finds them. */
		if (opts[i].type == T_SECRET)
			mcpx_wipe((char *)v, strlen(v));
	}
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *val = NULL;
		const struct opt *o;
		char src[80];

		if (strncmp(arg, "--", 2) != 0) {
			*exit_code = EX_USAGE;
			return mcpx_err_set(err, EINVAL, "unexpected argument \"%s\" (see --help)", arg);
		}
		arg += 2;
		eq = strchr(arg, '=');
		o = find_flag(arg, eq ? (size_t)(eq - arg) : strlen(arg));
		if (!o) {
			*exit_code = EX_USAGE;
			return mcpx_err_set(err, EINVAL, "unknown flag \"%s\" (see --help)", argv[i]);
		}
		snprintf(src, sizeof(src), "--%s", o->flag);
		if (eq)
			val = eq + 1;
		else if (o->type == T_BOOL)
			val = "true";
		else if (o->type != T_ACTION) {
			if (i + 1 >= argc) {
				*exit_code = EX_USAGE;
				return mcpx_err_set(err, EINVAL, "%s needs a value", src);
			}
			val = argv[++i];
		}
		if (o->type == T_ACTION && eq) {
			*exit_code = EX_USAGE;
			return mcpx_err_set(err, EINVAL, "%s takes no value", src);
		}
		rc = apply(c, o, val ? val : "", src, err);
		if (rc < 0)
			return rc;
		/* A secret given as a flag is overwritten in argv, which is what
		 * /proc/<pid>/cmdline shows (the env file is still better). */
		if (o->type == T_SECRET && val)
			mcpx_wipe((char *)val, strlen(val));
	}
	if (c->action == MCPX_ACTION_HELP || c->action == MCPX_ACTION_VERSION)
		return 0;
	return validate(c, err);
}

static const char *transport_name(enum mcpx_transport t)
{
	return t == MCPX_TRANSPORT_STDIO ? "stdio" : t == MCPX_TRANSPORT_HTTP ? "http" : "sse";
}

void mcpx_config_print(const struct mcpx_config *c, FILE *out)
{
	static const char *const lvl[] = {"debug", "info", "warn", "error"};

	fprintf(out, "MCP_EXEC_TRANSPORT=%s\n", transport_name(c->transport));
	fprintf(out, "MCP_EXEC_ADDR=%s\n", c->addr);
	fprintf(out, "MCP_EXEC_AUTH_TOKEN=%s\n", c->auth_token ? "<redacted>" : "<unset>");
	fprintf(out, "MCP_EXEC_AUTH_TOKEN_FILE=%s\n", c->auth_token_file[0] ? c->auth_token_file : "<unset>");
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
	fprintf(out, "MCP_EXEC_CPU_S=%u%s\n", c->cpu_s, c->cpu_s ? "" : " (follows the timeout)");
	fprintf(out, "MCP_EXEC_MAX_QUEUE=%u\n", c->max_queue);
	fprintf(out, "MCP_EXEC_QUEUE_TIMEOUT_S=%u\n", c->queue_timeout_s);
	fprintf(out, "MCP_EXEC_WORKDIR_BASE=%s\n", c->workdir_base);
	fprintf(out, "MCP_EXEC_REQUIRE_LANDLOCK=%s\n", c->require_landlock ? "true" : "false");
	fprintf(out, "MCP_EXEC_WARM=%s\n",
		c->warm == MCPX_WARM_OFF ? "0" : c->warm == MCPX_WARM_AUTO ? "auto" : "after-reap");
	fprintf(out, "MCP_EXEC_PRELOAD=%s\n", c->preload);
	fprintf(out, "MCP_EXEC_LOG_FORMAT=%s\n", c->log_format == MCPX_LOG_JSON ? "json" : "text");
	fprintf(out, "MCP_EXEC_LOG_LEVEL=%s\n", lvl[c->log_level]);
}

void mcpx_config_usage(FILE *out)
{
	fprintf(out, "usage: mcp-exec [--flag=value ...]\n\n"
		     "Runs Python code sent over MCP (stdio or HTTP) in a per-execution sandbox.\n"
		     "Every flag has an environment variable; flags win.\n\n");
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		fprintf(out, "  --%-20s %-28s %s\n", opts[i].flag, opts[i].env ? opts[i].env : "",
			opts[i].help);
}

void mcpx_config_free(struct mcpx_config *c)
{
	if (c->auth_token) {
		mcpx_wipe(c->auth_token, strlen(c->auth_token));
		free(c->auth_token);
		c->auth_token = NULL;
	}
	if (c->session_key) {
		mcpx_wipe(c->session_key, strlen(c->session_key));
		free(c->session_key);
		c->session_key = NULL;
	}
}
