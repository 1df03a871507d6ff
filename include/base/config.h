/*
 * config.h - the effective configuration, parsed once in main().
 *
 * Every setting comes from an MCP_EXEC_* environment variable (the names of
 * the Go mcp-exec server are kept) and from an equivalent command-line flag,
 * which wins. Parsing is strict: unknown flags, unparsable numbers and
 * out-of-range values are errors with a message naming the setting. The
 * struct is handed down as const; nothing else reads the environment.
 */
#ifndef MCPX_CONFIG_H
#define MCPX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"
#include "log.h"
#include "store_spec.h"

/* The longest workdir base: the sandbox builds each run's directory and the
 * paths beneath it in 4096-byte buffers, with up to 64 bytes after the base
 * (sandbox.c); the configuration refuses a longer one. */
#define MCPX_WORKDIR_BASE_MAX (4096 - 64 - 1)

/* The longest token or session key accepted, as for the token file. */
#define MCPX_SECRET_MAX 4096

#define MCPX_VERSION "0.1.0"
#define MCPX_NAME "mcp-exec"

enum mcpx_transport { MCPX_TRANSPORT_STDIO, MCPX_TRANSPORT_HTTP, MCPX_TRANSPORT_SSE };
enum mcpx_warm { MCPX_WARM_OFF, MCPX_WARM_AUTO, MCPX_WARM_AFTER_REAP };
/* The kernel beneath the server (MCP_EXEC_RUNTIME): the node's own (runc),
 * gVisor's Sentry, or a guest kernel of the pod's own VM (Kata,
 * Firecracker). auto: gVisor when the server sees it (sandbox.c), else
 * host. */
enum mcpx_runtime_class { MCPX_RUNTIME_AUTO, MCPX_RUNTIME_HOST, MCPX_RUNTIME_GVISOR, MCPX_RUNTIME_VM };
enum mcpx_action { MCPX_ACTION_RUN, MCPX_ACTION_CHECK_CONFIG, MCPX_ACTION_HELP, MCPX_ACTION_VERSION };

struct mcpx_config {
	enum mcpx_action action;
	enum mcpx_transport transport;

	/* Listener (http/sse): host part and port of MCP_EXEC_ADDR. */
	char addr[300];
	char listen_host[256];
	int listen_port; /* whether it is loopback: listen_addr.h, once resolved */

	/* Auth. auth_token is heap-owned by this struct until the auth module
	 * takes it (and zeroises it); NULL when unset. */
	char *auth_token;
	char auth_token_file[4096];
	/* Named tokens (auth_tokens.h): a JSON list of callers and the
	 * SHA-256 of each one's token; "" when unset. */
	char auth_tokens_file[4096];
	/* Kubernetes ServiceAccount tokens checked with TokenReview
	 * (tokenreview.h): the audience they must carry, and where the API
	 * server, this pod's own token and the cluster CA are (the defaults
	 * are a pod's; tests point them at a fixture). */
	bool auth_kubernetes;
	char auth_audience[254];
	char auth_kubernetes_api[512];
	char auth_kubernetes_token_file[4096];
	char auth_kubernetes_ca_file[4096];
	bool insecure_no_auth;
	char *session_key; /* MCP_EXEC_SESSION_KEY; heap, zeroised on free */
	unsigned session_ttl_s;
	char allowed_origins[2048]; /* comma-separated, as given */
	size_t max_body_bytes;
	/* The network front door: deadlines for a request's head and body,
	 * and the cap on open HTTP connections. */
	unsigned header_timeout_s;
	unsigned body_timeout_s;
	unsigned max_connections;

	/* Execution. */
	unsigned default_timeout_s;
	unsigned max_timeout_s;
	size_t max_output_bytes;
	size_t max_stdin_bytes;
	size_t max_code_bytes;
	char python_arg[4096]; /* as configured */
	char python[4096];     /* resolved absolute path, set by mcpx_config_load */
	unsigned memory_mb;   /* the run's memory, all processes (and RLIMIT_AS of each) */
	unsigned max_procs;
	unsigned max_file_mb;
	unsigned max_disk_mb; /* the run's files, all together */
	unsigned cpu_s; /* 0: follow the run's wall-clock timeout */
	unsigned max_queue;
	unsigned queue_timeout_s;
	char workdir_base[4096];
	bool require_landlock;
	enum mcpx_runtime_class runtime;

	/* A run's files (runfiles.h): decoded input bytes in total, files and
	 * bytes returned from out/. */
	size_t max_files_in_bytes;
	unsigned max_files_out;
	size_t max_files_out_bytes;

	/* Warm interpreters: auto prepares the next one while a run executes
	 * when the kernel isolates them (Landlock ABI >= 6), otherwise only
	 * after the previous run was reaped; after-reap forces the latter. */
	enum mcpx_warm warm;
	char preload[1024]; /* comma-separated module names */
	/* MCP_EXEC_LANGUAGES as given: "auto" or a list (langset.h) */
	char languages[128];
	/* A zygote is replaced (in the background) after this many runs or
	 * seconds; 0: no bound of that kind. */
	unsigned warm_max_runs;
	unsigned warm_max_age_s;

	/* MCP tasks (tasks.h): on or off; a task's longest run; the longest
	 * (and default) ttl; per caller, the tasks and result bytes kept; how
	 * long a runner's lease lasts unrenewed; how long a 2026-07-28 call
	 * runs before it becomes a task. */
	bool tasks;
	unsigned task_max_timeout_s;
	unsigned task_ttl_max_s;
	unsigned tasks_per_caller;
	unsigned tasks_max_mb;
	unsigned task_lease_s;
	unsigned task_sync_ms;

	/* What runs may reach beyond the sandbox (policy.h, broker.h). */
	char policy[4096];         /* MCP_EXEC_POLICY: the policy file, or "" */
	char egress_proxy[2048];   /* MCP_EXEC_EGRESS_PROXY: http(s)://host:port, or "" */
	char egress_ca_file[4096]; /* MCP_EXEC_EGRESS_CA_FILE: CA bundle, or "" */

	/* Workspaces and tasks (store.h): MCP_EXEC_WORKSPACES as given ("":
	 * unset, the default directory), MCP_EXEC_WORKSPACES_PASSWORD_FILE,
	 * the store they name (parsed by mcpx_config_load, the password file
	 * copied in), and the caps: the largest workspace (MiB), its idle
	 * expiry, workspaces per caller. */
	char workspaces_arg[MCPX_STORE_DIR_MAX + 16];
	char workspaces_password_file[4096];
	struct mcpx_store_spec workspaces;
	unsigned workspace_max_mb;
	unsigned workspace_ttl_s;
	unsigned workspaces_per_caller;

	enum mcpx_log_format log_format;
	enum mcpx_log_level log_level;
};

/* Fills cfg from the environment and argv. On error returns a negative errno
 * and describes it in err; the exit status for that case is EX_USAGE (bad flag)
 * or EX_CONFIG (bad value), reported through *exit_code. */
int mcpx_config_load(struct mcpx_config *cfg, int argc, char **argv, int *exit_code,
		     struct mcpx_err *err);

/* The steps of mcpx_config_load (config_load.c) that config.c's table
 * does: the defaults; every MCP_EXEC_* variable set; the flag argv[*i]
 * (and its value, advancing *i; a usage error sets *exit_code to
 * EX_USAGE). Each value is parsed and checked against its own bounds. */
void mcpx_config_defaults(struct mcpx_config *cfg);
int mcpx_config_load_env(struct mcpx_config *cfg, struct mcpx_err *err);
int mcpx_config_load_flag(struct mcpx_config *cfg, int argc, char **argv, int *i,
			  int *exit_code, struct mcpx_err *err);
/* A decimal without sign, space or trailing junk that fits 64 bits. */
int mcpx_config_parse_ull(const char *s, unsigned long long *out);

/* Prints the effective configuration, secrets redacted. */
void mcpx_config_print(const struct mcpx_config *cfg, FILE *out);

void mcpx_config_usage(FILE *out);

/* "auto", "host", "gvisor" or "vm". */
const char *mcpx_runtime_name(enum mcpx_runtime_class r);

/* Zeroises and frees the secrets the struct still owns. */
void mcpx_config_free(struct mcpx_config *cfg);

/* A run's RLIMIT_FSIZE in MiB: MCP_EXEC_MAX_FILE_MB, never above the run's
 * whole disk budget (one file cannot take more than all of its files may;
 * the budget then lowers it further as the run writes: run_disk.c). 0 (no
 * per-file cap) gives the disk budget. */
unsigned long mcpx_config_file_mb(const struct mcpx_config *cfg);

#endif
