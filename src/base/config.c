/*
 * config.c - MCP_EXEC_* variables and flags into one struct mcpx_config.
 *
 * The settings are a table: name, environment variable, flag, type, bounds
 * and default. Environment first, then flags (flags win). Every value is
 * parsed strictly (no trailing junk, no silent wrap-around) and checked
 * against its bounds, so a typo stops the server at start-up with a message
 * naming the setting instead of running with a surprise. The order of
 * loading and the checks across settings are config_load.c's; printing the
 * result is config_print.c's. This module does not open sockets, read the
 * token file or probe the sandbox.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "crypto.h"
#include "langset.h"
#include "preload.h"

enum opt_type {
	T_UINT, T_SIZE, T_BOOL, T_STR, T_SECRET, T_TRANSPORT, T_LOGFMT, T_LOGLVL, T_WARM, T_RUNTIME,
	T_ACTION
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
	{"auth-token", "MCP_EXEC_AUTH_TOKEN", T_SECRET, OFF(auth_token), MCPX_SECRET_MAX + 1, 0, 0,
	 "required X-MCP-AUTH / Bearer value (prefer the file: argv is visible to other users)"},
	{"auth-token-file", "MCP_EXEC_AUTH_TOKEN_FILE", T_STR, OFF(auth_token_file),
	 SZ(auth_token_file), 0, 0, "file holding the token (re-read when it changes)"},
	{"auth-tokens-file", "MCP_EXEC_AUTH_TOKENS_FILE", T_STR, OFF(auth_tokens_file),
	 SZ(auth_tokens_file), 0, 0,
	 "JSON list of {caller, token_sha256}: one token per caller (re-read when it changes)"},
	{"auth-kubernetes", "MCP_EXEC_AUTH_KUBERNETES", T_BOOL, OFF(auth_kubernetes), 0, 0, 0,
	 "accept Kubernetes ServiceAccount tokens (Bearer), checked with TokenReview"},
	{"auth-audience", "MCP_EXEC_AUTH_AUDIENCE", T_STR, OFF(auth_audience), SZ(auth_audience), 0,
	 0, "the audience a ServiceAccount token must carry (default mcp-exec)"},
	{"auth-kubernetes-api", "MCP_EXEC_AUTH_KUBERNETES_API", T_STR, OFF(auth_kubernetes_api),
	 SZ(auth_kubernetes_api), 0, 0,
	 "API server base URL for TokenReview (default https://kubernetes.default.svc)"},
	{"auth-kubernetes-token-file", "MCP_EXEC_AUTH_KUBERNETES_TOKEN_FILE", T_STR,
	 OFF(auth_kubernetes_token_file), SZ(auth_kubernetes_token_file), 0, 0,
	 "this pod's own ServiceAccount token, sent with each TokenReview"},
	{"auth-kubernetes-ca-file", "MCP_EXEC_AUTH_KUBERNETES_CA_FILE", T_STR,
	 OFF(auth_kubernetes_ca_file), SZ(auth_kubernetes_ca_file), 0, 0,
	 "CA bundle (PEM) the API server's certificate is checked against"},
	{"insecure-no-auth", "MCP_EXEC_INSECURE_NO_AUTH", T_BOOL, OFF(insecure_no_auth), 0, 0, 0,
	 "allow a non-loopback listener without a token"},
	{"session-key", "MCP_EXEC_SESSION_KEY", T_SECRET, OFF(session_key), MCPX_SECRET_MAX + 1, 0, 0,
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
	 "memory of a run, all its processes together (MiB); also each process's address space"},
	{"max-procs", "MCP_EXEC_MAX_PROCS", T_UINT, OFF(max_procs), 0, 1, 100000,
	 "processes and threads a run may add"},
	{"max-file-mb", "MCP_EXEC_MAX_FILE_MB", T_UINT, OFF(max_file_mb), 0, 0, 1 << 20,
	 "largest file a run may write (MiB)"},
	{"max-disk-mb", "MCP_EXEC_MAX_DISK_MB", T_UINT, OFF(max_disk_mb), 0, 1, 1 << 20,
	 "space a run's files may take in total: workdir, /dev/shm, unlinked open files (MiB)"},
	{"cpu-s", "MCP_EXEC_CPU_S", T_UINT, OFF(cpu_s), 0, 0, 86400,
	 "CPU-time limit per run; 0 follows the run's wall-clock timeout"},
	{"max-queue", "MCP_EXEC_MAX_QUEUE", T_UINT, OFF(max_queue), 0, 0, 100000,
	 "executions that may wait behind the running one"},
	{"queue-timeout-s", "MCP_EXEC_QUEUE_TIMEOUT_S", T_UINT, OFF(queue_timeout_s), 0, 1, 86400,
	 "longest wait in the queue"},
	{"workdir-base", "MCP_EXEC_WORKDIR_BASE", T_STR, OFF(workdir_base), MCPX_WORKDIR_BASE_MAX + 1, 0, 0,
	 "where per-run workdirs are made (default $TMPDIR or /tmp)"},
	{"require-landlock", "MCP_EXEC_REQUIRE_LANDLOCK", T_BOOL, OFF(require_landlock), 0, 0, 0,
	 "refuse to start on kernels without Landlock (unless the runtime replaces the kernel)"},
	{"runtime", "MCP_EXEC_RUNTIME", T_RUNTIME, OFF(runtime), 0, 0, 0,
	 "the kernel beneath the server: auto (gVisor when seen, else host) | host | gvisor | vm "
	 "(Kata, Firecracker); gvisor and vm accept a missing Landlock"},
	{"max-files-in-bytes", "MCP_EXEC_MAX_FILES_IN_BYTES", T_SIZE, OFF(max_files_in_bytes), 0, 0,
	 64ULL << 20, "input files a call may pass: decoded bytes in total"},
	{"max-files-out", "MCP_EXEC_MAX_FILES_OUT", T_UINT, OFF(max_files_out), 0, 0, 1000,
	 "files returned from a run's out/ directory"},
	{"max-files-out-bytes", "MCP_EXEC_MAX_FILES_OUT_BYTES", T_SIZE, OFF(max_files_out_bytes), 0,
	 0, 64ULL << 20, "bytes returned from a run's out/ directory, in total"},
	{"warm", "MCP_EXEC_WARM", T_WARM, OFF(warm), 0, 0, 0,
	 "1|auto: prepare the next sandboxed interpreter before the request arrives; "
	 "after-reap: only once the previous run is gone; 0: off"},
	{"preload", "MCP_EXEC_PRELOAD", T_STR, OFF(preload), SZ(preload), 0, 0,
	 "modules a warm interpreter imports in advance, comma-separated; auto: numpy, and in "
	 "fork-server mode matplotlib too"},
	{"languages", "MCP_EXEC_LANGUAGES", T_STR, OFF(languages), SZ(languages), 0, 0,
	 "languages exec runs: auto (every one whose runtime is present) or a comma-separated "
	 "list of python, bash, javascript (python required)"},
	{"tasks", "MCP_EXEC_TASKS", T_BOOL, OFF(tasks), 0, 0, 0,
	 "MCP tasks: a tools/call may run detached from its request, its result kept in the "
	 "store for any replica to answer (needs a store)"},
	{"task-max-timeout-s", "MCP_EXEC_TASK_MAX_TIMEOUT_S", T_UINT, OFF(task_max_timeout_s), 0, 1,
	 86400, "largest wall-clock limit of a run started as a task"},
	{"task-ttl-max-s", "MCP_EXEC_TASK_TTL_MAX_S", T_UINT, OFF(task_ttl_max_s), 0, 60,
	 30 * 86400, "longest a task and its result are kept (also the default ttl)"},
	{"tasks-per-caller", "MCP_EXEC_TASKS_PER_CALLER", T_UINT, OFF(tasks_per_caller), 0, 1,
	 4000, "tasks kept per caller (the oldest finished ones make room)"},
	{"tasks-max-mb", "MCP_EXEC_TASKS_MAX_MB", T_UINT, OFF(tasks_max_mb), 0, 1, 1 << 20,
	 "results kept per caller (MiB; the oldest finished tasks make room)"},
	{"task-lease-s", "MCP_EXEC_TASK_LEASE_S", T_UINT, OFF(task_lease_s), 0, 3, 3600,
	 "a running task's lease: another replica fails the task when its runner has not "
	 "renewed it for this long"},
	{"task-sync-ms", "MCP_EXEC_TASK_SYNC_MS", T_UINT, OFF(task_sync_ms), 0, 0, 3600000,
	 "2026-07-28 clients with the tasks extension: a call still running after this long "
	 "becomes a task (0: at once)"},
	{"policy", "MCP_EXEC_POLICY", T_STR, OFF(policy), SZ(policy), 0, 0,
	 "policy file (JSON): what runs may reach through the egress broker; re-read on change"},
	{"egress-proxy", "MCP_EXEC_EGRESS_PROXY", T_STR, OFF(egress_proxy), SZ(egress_proxy), 0, 0,
	 "http(s)://host:port proxy for broker requests (never taken from http_proxy & co.)"},
	{"egress-ca-file", "MCP_EXEC_EGRESS_CA_FILE", T_STR, OFF(egress_ca_file),
	 SZ(egress_ca_file), 0, 0, "CA bundle (PEM) that broker HTTPS requests trust instead of "
				   "the system's"},
	{"warm-max-runs", "MCP_EXEC_WARM_MAX_RUNS", T_UINT, OFF(warm_max_runs), 0, 0, 1000000,
	 "runs a fork-server zygote serves before a fresh one replaces it; 0: no bound"},
	{"warm-max-age-s", "MCP_EXEC_WARM_MAX_AGE_S", T_UINT, OFF(warm_max_age_s), 0, 0, 86400,
	 "seconds a fork-server zygote serves before a fresh one replaces it; 0: no bound"},
	{"workspaces", "MCP_EXEC_WORKSPACES", T_STR, OFF(workspaces_arg), SZ(workspaces_arg), 0, 0,
	 "where workspaces and tasks are kept: dir:<absolute path>, redis://[user@]host:port[/db] "
	 "or off (default: a directory under the server's state directory)"},
	{"workspaces-password-file", "MCP_EXEC_WORKSPACES_PASSWORD_FILE", T_STR,
	 OFF(workspaces_password_file), SZ(workspaces_password_file), 0, 0,
	 "file holding the redis:// store's password"},
	{"workspace-max-mb", "MCP_EXEC_WORKSPACE_MAX_MB", T_UINT, OFF(workspace_max_mb), 0, 1, 4096,
	 "largest workspace (files plus variables, as stored) in MiB"},
	{"workspace-ttl-s", "MCP_EXEC_WORKSPACE_TTL_S", T_UINT, OFF(workspace_ttl_s), 0, 1,
	 10 * 366 * 86400, "seconds a workspace is kept after its last use"},
	{"workspaces-per-caller", "MCP_EXEC_WORKSPACES_PER_CALLER", T_UINT,
	 OFF(workspaces_per_caller), 0, 1, 100000, "workspaces one caller may keep"},
	{"log-format", "MCP_EXEC_LOG_FORMAT", T_LOGFMT, OFF(log_format), 0, 0, 0, "json | text"},
	{"log-level", "MCP_EXEC_LOG_LEVEL", T_LOGLVL, OFF(log_level), 0, 0, 0,
	 "debug | info | warn | error"},
	{"check-config", NULL, T_ACTION, MCPX_ACTION_CHECK_CONFIG, 0, 0, 0,
	 "print the effective configuration and sandbox layers, then exit"},
	{"help", NULL, T_ACTION, MCPX_ACTION_HELP, 0, 0, 0, "show this help"},
	{"version", NULL, T_ACTION, MCPX_ACTION_VERSION, 0, 0, 0, "print the version"},
};

void mcpx_config_defaults(struct mcpx_config *c)
{
	const char *tmp = getenv("TMPDIR");

	memset(c, 0, sizeof(*c));
	c->transport = MCPX_TRANSPORT_STDIO;
	strcpy(c->addr, "127.0.0.1:8080");
	c->session_ttl_s = 86400;
	strcpy(c->auth_audience, "mcp-exec");
	strcpy(c->auth_kubernetes_api, "https://kubernetes.default.svc");
	strcpy(c->auth_kubernetes_token_file, "/var/run/secrets/kubernetes.io/serviceaccount/token");
	strcpy(c->auth_kubernetes_ca_file, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
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
	c->max_disk_mb = 128;
	c->max_queue = 16;
	c->queue_timeout_s = 60;
	c->max_files_in_bytes = 4u << 20;
	c->max_files_out = 16;
	c->max_files_out_bytes = 8u << 20;
	/* A TMPDIR too long to hold the per-run directories leaves the base
	 * unset; the checks (config_load.c) then name TMPDIR rather than using a
	 * cut path. */
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (strlen(tmp) <= MCPX_WORKDIR_BASE_MAX)
		strcpy(c->workdir_base, tmp);
	c->warm = MCPX_WARM_AUTO;
	strcpy(c->preload, MCPX_PRELOAD_AUTO);
	strcpy(c->languages, MCPX_LANGS_AUTO);
	c->warm_max_runs = 100;
	c->warm_max_age_s = 300;
	c->workspace_max_mb = 64;
	c->workspace_ttl_s = 86400;
	c->workspaces_per_caller = 32;
	c->tasks = true;
	c->task_max_timeout_s = 3600;
	c->task_ttl_max_s = 86400;
	c->tasks_per_caller = 100;
	c->tasks_max_mb = 256;
	c->task_lease_s = 15;
	c->task_sync_ms = 500;
	c->log_format = MCPX_LOG_JSON;
	c->log_level = MCPX_LOG_INFO;
}

int mcpx_config_parse_ull(const char *s, unsigned long long *out)
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

static int apply_number(struct mcpx_config *c, const struct opt *o, const char *val,
			const char *src, struct mcpx_err *err)
{
	char *base = (char *)c;
	unsigned long long v;

	if (mcpx_config_parse_ull(val, &v) < 0)
		return mcpx_err_set(err, EINVAL, "%s: \"%.64s\" is not a non-negative integer", src,
				    val);
	if (v < o->min || v > o->max)
		return mcpx_err_set(err, ERANGE, "%s: %llu is out of range [%llu, %llu]", src, v,
				    o->min, o->max);
	if (o->type == T_UINT)
		*(unsigned *)(base + o->off) = (unsigned)v;
	else
		*(size_t *)(base + o->off) = (size_t)v;
	return 0;
}

/* Strings are copied whole or refused: a value cut to fit a buffer would be a
 * different value (a path, an address) than the one configured. */
static int apply_string(struct mcpx_config *c, const struct opt *o, const char *val,
			const char *src, struct mcpx_err *err)
{
	char *base = (char *)c;
	size_t len = strlen(val);
	char **slot;

	if (len >= o->size)
		return mcpx_err_set(err, ENAMETOOLONG,
				    "%s: the value is %zu bytes long, more than the %zu allowed", src,
				    len, o->size - 1);
	if (o->type == T_STR) {
		memcpy(base + o->off, val, len + 1);
		return 0;
	}
	slot = (char **)(base + o->off);
	if (*slot) {
		mcpx_wipe(*slot, strlen(*slot));
		free(*slot);
	}
	*slot = strdup(val);
	return *slot ? 0 : -ENOMEM;
}

struct keyword {
	const char *name;
	int value;
};

static const struct keyword transports[] = {{"stdio", MCPX_TRANSPORT_STDIO},
					    {"http", MCPX_TRANSPORT_HTTP},
					    {"sse", MCPX_TRANSPORT_SSE},
					    {NULL, 0}};
static const struct keyword log_formats[] = {{"json", MCPX_LOG_JSON}, {"text", MCPX_LOG_TEXT},
					     {NULL, 0}};
static const struct keyword log_levels[] = {{"debug", MCPX_LOG_DEBUG}, {"info", MCPX_LOG_INFO},
					    {"warn", MCPX_LOG_WARN},   {"warning", MCPX_LOG_WARN},
					    {"error", MCPX_LOG_ERROR}, {NULL, 0}};
static const struct keyword warm_modes[] = {{"auto", MCPX_WARM_AUTO},
					    {"after-reap", MCPX_WARM_AFTER_REAP},
					    {NULL, 0}};
static const struct keyword runtimes[] = {{"auto", MCPX_RUNTIME_AUTO},
					  {"host", MCPX_RUNTIME_HOST},
					  {"gvisor", MCPX_RUNTIME_GVISOR},
					  {"vm", MCPX_RUNTIME_VM},
					  {NULL, 0}};

const char *mcpx_runtime_name(enum mcpx_runtime_class r)
{
	for (const struct keyword *k = runtimes; k->name; k++)
		if (k->value == (int)r)
			return k->name;
	return "?";
}

static int lookup(const struct keyword *k, const char *val, int *out)
{
	for (; k->name; k++)
		if (strcmp(val, k->name) == 0)
			return *out = k->value, 0;
	return -EINVAL;
}

/* The keyword settings; each returns 0 or -EINVAL. */
static int apply_keyword(struct mcpx_config *c, const struct opt *o, const char *val)
{
	int v = 0;
	bool b;

	switch (o->type) {
	case T_TRANSPORT:
		if (lookup(transports, val, &v) < 0)
			return -EINVAL;
		c->transport = (enum mcpx_transport)v;
		return 0;
	case T_LOGFMT:
		if (lookup(log_formats, val, &v) < 0)
			return -EINVAL;
		c->log_format = (enum mcpx_log_format)v;
		return 0;
	case T_LOGLVL:
		if (lookup(log_levels, val, &v) < 0)
			return -EINVAL;
		c->log_level = (enum mcpx_log_level)v;
		return 0;
	case T_RUNTIME:
		if (lookup(runtimes, val, &v) < 0)
			return -EINVAL;
		c->runtime = (enum mcpx_runtime_class)v;
		return 0;
	case T_WARM:
		if (lookup(warm_modes, val, &v) == 0)
			c->warm = (enum mcpx_warm)v;
		else if (parse_bool(val, &b) == 0)
			c->warm = b ? MCPX_WARM_AUTO : MCPX_WARM_OFF;
		else
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Applies one value; `src` names its origin (variable or flag) for messages. */
static int apply(struct mcpx_config *c, const struct opt *o, const char *val, const char *src,
		 struct mcpx_err *err)
{
	static const char *const want[] = {
		[T_TRANSPORT] = "stdio|http|sse", [T_LOGFMT] = "json|text",
		[T_LOGLVL] = "debug|info|warn|error", [T_WARM] = "0|1|auto|after-reap",
		[T_RUNTIME] = "auto|host|gvisor|vm"};

	switch (o->type) {
	case T_UINT:
	case T_SIZE:
		return apply_number(c, o, val, src, err);
	case T_BOOL:
		if (parse_bool(val, (bool *)((char *)c + o->off)) < 0)
			return mcpx_err_set(err, EINVAL, "%s: \"%.64s\" is not a boolean (true/false)",
					    src, val);
		return 0;
	case T_STR:
	case T_SECRET:
		return apply_string(c, o, val, src, err);
	case T_ACTION:
		c->action = (enum mcpx_action)o->off;
		return 0;
	default:
		if (apply_keyword(c, o, val) < 0)
			return mcpx_err_set(err, EINVAL, "%s: \"%.64s\" is not %s", src, val,
					    want[o->type]);
		return 0;
	}
}

static const struct opt *find_flag(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strlen(opts[i].flag) == len && strncmp(opts[i].flag, name, len) == 0)
			return &opts[i];
	return NULL;
}

int mcpx_config_load_env(struct mcpx_config *c, struct mcpx_err *err)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
		int rc;

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
	return 0;
}

/* Applies argv[*i] (and its value, which may be the next argument). A usage
 * error sets *exit_code to EX_USAGE. */
int mcpx_config_load_flag(struct mcpx_config *c, int argc, char **argv, int *i, int *exit_code,
			  struct mcpx_err *err)
{
	const char *arg = argv[*i], *eq, *val = NULL;
	const struct opt *o;
	char src[80];
	int rc;

	*exit_code = EX_USAGE;
	if (strncmp(arg, "--", 2) != 0)
		return mcpx_err_set(err, EINVAL, "unexpected argument \"%.64s\" (see --help)", arg);
	arg += 2;
	eq = strchr(arg, '=');
	o = find_flag(arg, eq ? (size_t)(eq - arg) : strlen(arg));
	if (!o)
		return mcpx_err_set(err, EINVAL, "unknown flag \"%.64s\" (see --help)", argv[*i]);
	snprintf(src, sizeof(src), "--%s", o->flag);
	if (o->type == T_ACTION && eq)
		return mcpx_err_set(err, EINVAL, "%s takes no value", src);
	if (eq)
		val = eq + 1;
	else if (o->type == T_BOOL)
		val = "true";
	else if (o->type != T_ACTION && *i + 1 >= argc)
		return mcpx_err_set(err, EINVAL, "%s needs a value", src);
	else if (o->type != T_ACTION)
		val = argv[++*i];
	*exit_code = EX_CONFIG;
	rc = apply(c, o, val ? val : "", src, err);
	/* A secret given as a flag is overwritten in argv, which is what
	 * /proc/<pid>/cmdline shows (the env file is still better). */
	if (rc == 0 && o->type == T_SECRET && val)
		mcpx_wipe((char *)val, strlen(val));
	return rc;
}

unsigned long mcpx_config_file_mb(const struct mcpx_config *c)
{
	if (!c->max_disk_mb)
		return c->max_file_mb;
	if (c->max_file_mb && c->max_file_mb < c->max_disk_mb)
		return c->max_file_mb;
	return c->max_disk_mb;
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