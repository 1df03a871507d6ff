/*
 * policy.h - the policy file (MCP_EXEC_POLICY): what runs may reach beyond
 * their sandbox, loaded in one place for the egress broker and, later, for
 * admin-defined functions.
 *
 * The file is JSON, parsed strictly: unknown keys, duplicate keys, wrong
 * types and out-of-range values are errors that name the JSON pointer of the
 * problem ("/egress/2/credential/header"). Top-level keys today:
 *
 *   "egress": [rule, ...]   what can be reached (struct mcpx_egress_rule)
 *   "upstreams": [upstream, ...]  other MCP servers whose tools runs may
 *                                  call (struct mcpx_upstream_conf)
 *   "exec":   {"egress": ["rule-name", ...], "upstreams": ["name", ...],
 *              "max_requests": n, "max_in_flight": n}
 *                                  which rules and upstreams exec code may use
 *   "functions": [function, ...]   admin-written Python published as tools
 *                                  (struct mcpx_function)
 *   "profiles": [profile, ...]     what each caller sees, reaches and may
 *                                  use (struct mcpx_profile)
 *
 * Each top-level key has its own parser in a table (policy_document.c; the
 * sections in policy_egress.c, policy_functions.c, ...), and each caller of the broker (exec, and every
 * function) holds a grant (struct mcpx_egress_grant): the rules it may use
 * and its per-run caps, and the upstreams it may call. A function's schemas are compiled
 * (jsonschema.h) and its source file read when the policy is loaded, so a schema that uses an
 * unsupported keyword or an unreadable source refuses the whole policy.
 *
 * Lifetime: a parsed policy is immutable and reference-counted. The store
 * keeps the current one and replaces it when the file or any secret or
 * source file it uses changes; a run takes a reference when it starts and
 * keeps that version until it ends. Secret values (credential.secret_file) are read
 * when the policy is loaded, live only inside the policy, and are zeroised
 * when the last reference goes; they never appear in messages.
 */
#ifndef MCPX_POLICY_H
#define MCPX_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "egress_check.h"
#include "err.h"
#include "jsonschema.h"
#include "profile_limits.h"

struct mcpx_loop;

#define MCPX_POLICY_MAX_BYTES (1u << 20)
#define MCPX_POLICY_MAX_RULES 64
#define MCPX_POLICY_MAX_METHODS 8
#define MCPX_POLICY_MAX_CIDRS 16
#define MCPX_SECRET_MAX_BYTES 8192
#define MCPX_POLICY_MAX_FUNCTIONS 64
/* A function's name: 1..128 of A-Z a-z 0-9 _ - . (MCP's tool name rule). */
#define MCPX_FUNCTION_NAME_MAX 128
#define MCPX_FUNCTION_SOURCE_MAX (1u << 20)
#define MCPX_FUNCTION_TEXT_MAX 8192 /* title and description */
#define MCPX_FUNCTION_TIMEOUT_MAX_S 3600

/* Defaults and bounds of a rule's and a grant's numbers. */
#define MCPX_EGRESS_TIMEOUT_DEFAULT_S 30
#define MCPX_EGRESS_TIMEOUT_MAX_S 300
#define MCPX_EGRESS_RESPONSE_DEFAULT (10u << 20)
#define MCPX_EGRESS_RESPONSE_MAX (64u << 20)
#define MCPX_EGRESS_MAX_REQUESTS_DEFAULT 100
#define MCPX_EGRESS_MAX_IN_FLIGHT_DEFAULT 4

/* Upstream MCP servers ("upstreams"). A name is 1..32 of a-z 0-9 _. */
#define MCPX_POLICY_MAX_UPSTREAMS 32
#define MCPX_UPSTREAM_NAME_MAX 32
#define MCPX_UPSTREAM_MAX_GLOBS 32
#define MCPX_UPSTREAM_GLOB_MAX 128
#define MCPX_UPSTREAM_TIMEOUT_DEFAULT_S 30
#define MCPX_UPSTREAM_TIMEOUT_MAX_S 3600
#define MCPX_UPSTREAM_RESPONSE_DEFAULT (4u << 20)
#define MCPX_UPSTREAM_RESPONSE_MAX (64u << 20)
#define MCPX_UPSTREAM_CALLS_DEFAULT 100
#define MCPX_UPSTREAM_CALLS_MAX 100000
/* An upstream's tool list kept: at most this many tools and bytes (the
 * tools' JSON text); what passes is left out (upstream_catalog.c). */
#define MCPX_UPSTREAM_TOOLS_DEFAULT 1000
#define MCPX_UPSTREAM_TOOLS_MAX 10000
#define MCPX_UPSTREAM_TOOLS_BYTES_DEFAULT (8u << 20)
#define MCPX_UPSTREAM_TOOLS_BYTES_MIN (64u << 10)
#define MCPX_UPSTREAM_TOOLS_BYTES_MAX (64u << 20)

/* credential: the broker sets `header: prefix + secret` on matching
 * requests. value holds prefix + secret (value_len bytes, NUL-terminated). */
struct mcpx_credential {
	char header[129];
	char secret_file[4096];
	char *value; /* secret: zeroised on free, never logged */
	size_t value_len;
};

struct mcpx_egress_rule {
	char name[65];
	char *url_prefix; /* as written, for descriptions and audit */
	struct mcpx_url_prefix prefix;
	char methods[MCPX_POLICY_MAX_METHODS][17];
	size_t n_methods;
	struct mcpx_cidr allow[MCPX_POLICY_MAX_CIDRS];
	size_t n_allow;
	bool has_credential;
	struct mcpx_credential cred;
	unsigned timeout_s;
	size_t max_response_bytes;
};

/* An upstream MCP server (Streamable HTTP) whose tools runs may call
 * through the server (upstream.h): where it is, the credential sent on
 * every request to it, the private ranges it may live in, which of its
 * tools exist for us (allow/deny globs over the tool names, name_glob.h:
 * allow exact, deny with ASCII case folded), whether they are also listed as tools of this server,
 * and the limits of each call and of each run. */
struct mcpx_upstream_conf {
	char name[MCPX_UPSTREAM_NAME_MAX + 1];
	char *url; /* as written: http(s)://host[:port]/path */
	struct mcpx_cidr allow[MCPX_POLICY_MAX_CIDRS];
	size_t n_allow;
	bool has_credential;
	struct mcpx_credential cred;
	char *allow_tools[MCPX_UPSTREAM_MAX_GLOBS]; /* default: "*" */
	size_t n_allow_tools;
	char *deny_tools[MCPX_UPSTREAM_MAX_GLOBS];
	size_t n_deny_tools;
	bool expose;
	unsigned timeout_s;
	size_t max_response_bytes;
	unsigned max_calls_per_run;
	unsigned max_tools;     /* of its tool list, kept */
	size_t max_tools_bytes; /* of its tool list, kept */
};

/* What one caller of the broker may use: rules (pointers into the same
 * policy) and the caps of one run. */
struct mcpx_egress_grant {
	const struct mcpx_egress_rule **rules;
	size_t n_rules;
	const struct mcpx_upstream_conf **upstreams; /* into the same policy */
	size_t n_upstreams;
	unsigned max_requests;  /* per run, in total */
	unsigned max_in_flight; /* per run, at once */
};

/* An admin-written function published as a tool ("functions"). Its runs
 * are like exec's, with the source's handler(args, ctx) called on
 * arguments validated against input; they reach the rules of grant only. */
struct mcpx_function {
	char name[MCPX_FUNCTION_NAME_MAX + 1];
	char *title; /* NULL when not given */
	char *description;
	cJSON *input_schema;        /* as written: the tool's inputSchema */
	cJSON *output_schema;       /* as written, or NULL: the tool's outputSchema */
	struct mcpx_schema *input;  /* compiled */
	struct mcpx_schema *output; /* compiled, or NULL */
	char source_file[4096];
	char *source; /* the file's text: UTF-8, no NUL */
	size_t source_len;
	char source_sha256[65];
	struct mcpx_egress_grant grant;
	unsigned timeout_s;      /* 0: the server's default */
	bool callable_from_exec; /* exec code may call it with mcpx.call */
	/* "task_support": whether a tools/call of it may run as an MCP task
	 * (default optional). */
	enum mcpx_fn_tasks {
		MCPX_FN_TASKS_OPTIONAL,
		MCPX_FN_TASKS_FORBIDDEN,
		MCPX_FN_TASKS_REQUIRED,
	} task_support;
};

#define MCPX_POLICY_MAX_PROFILES 64
#define MCPX_PROFILE_MAX_GLOBS 64
#define MCPX_PROFILE_GLOB_MAX 352 /* a caller glob holds a whole caller name */

/* A profile ("profiles"): the callers it applies to (globs, name_glob.h),
 * the tools they see and may call (globs over tool names, exec and
 * functions alike), what their exec code may reach, and their limits. The
 * first profile whose callers match applies; its exec grant names egress
 * rules and upstreams like the top-level one. */
struct mcpx_profile {
	char name[65];
	char **callers;
	size_t n_callers;
	char **tools;
	size_t n_tools;
	bool has_exec;                 /* false: the top-level "exec" applies */
	struct mcpx_egress_grant exec; /* rules and upstreams point into the same policy */
	struct mcpx_profile_limits limits;
	struct mcpx_profile_workspaces workspaces;
};

/* One file the policy was built from, as it was when read. */
struct mcpx_file_id {
	char path[4096];
	dev_t dev;
	ino_t ino;
	int64_t mtime_ns;
	off_t size;
	int err; /* errno of a failed stat, else 0 */
};

struct mcpx_policy {
	unsigned long refs;
	uint64_t version;
	struct mcpx_egress_rule *rules;
	size_t n_rules;
	struct mcpx_upstream_conf *upstreams;
	size_t n_upstreams;
	struct mcpx_egress_grant exec;
	struct mcpx_function *functions;
	size_t n_functions;
	/* With "profiles" present (even empty) every caller needs one to see
	 * any function: an unmatched caller gets exec alone, under the
	 * top-level "exec" grant. */
	bool has_profiles;
	struct mcpx_profile *profiles;
	size_t n_profiles;
};

/* How a policy is checked against the sandbox it serves. */
struct mcpx_policy_opts {
	/* True when a run could read path; such a policy or secret file is
	 * refused. NULL: no check (unit tests). */
	bool (*run_may_read)(void *ctx, const char *path);
	void *ctx;
	/* False without Landlock or the filesystem view that stands in for it
	 * (sandbox.h, mcpx_sandbox_files_confined): runs could read any file
	 * the server can, and
	 * write each other's workdirs, so a rule with a credential is refused,
	 * and so is a function exec code may call that has egress rules (the
	 * caller could take over the function's run, and its rules). */
	bool credentials_allowed;
};

/* Parses a policy from len bytes of JSON (reading every secret and source
 * file it names). files, when not NULL, receives the identity of each such
 * file as stat() saw it before reading (up to max_files; *n_files counts them),
 * even when parsing fails, so the store can watch for the fix. Returns 0
 * with *out (one reference), or -errno with err naming the JSON pointer. */
int mcpx_policy_parse(const char *json, size_t len, const struct mcpx_policy_opts *o,
                      struct mcpx_policy **out, struct mcpx_file_id *files, size_t max_files,
                      size_t *n_files, struct mcpx_err *err);

struct mcpx_policy *mcpx_policy_ref(struct mcpx_policy *p);
/* Drops a reference; the last one wipes the secrets and frees. NULL is fine. */
void mcpx_policy_unref(struct mcpx_policy *p);

/* The function named name, or NULL. */
const struct mcpx_function *mcpx_policy_function(const struct mcpx_policy *p, const char *name);
/* The upstream named name (name_len bytes), or NULL. */
const struct mcpx_upstream_conf *mcpx_policy_upstream(const struct mcpx_policy *p, const char *name,
                                                      size_t name_len);
/* True when g lets its runs call upstream u. */
bool mcpx_egress_grant_has_upstream(const struct mcpx_egress_grant *g,
                                    const struct mcpx_upstream_conf *u);
/* True when u's tools/allow and tools/deny let tool exist. */
bool mcpx_upstream_tool_allowed(const struct mcpx_upstream_conf *u, const char *tool);
/* True when exec code may call some function or some upstream's tool (so
 * exec runs need a channel). */
bool mcpx_policy_exec_calls(const struct mcpx_policy *p);
/* The profile that applies to caller (the first whose callers match), or
 * NULL: no "profiles" section, or none matches. */
const struct mcpx_profile *mcpx_policy_profile_for(const struct mcpx_policy *p, const char *caller);
/* Whether caller may see and call the tool named name: without profiles
 * every tool; with them, what its profile's tools match, and for a caller
 * no profile matches, exec alone. */
bool mcpx_policy_tool_allowed(const struct mcpx_policy *p, const char *caller, const char *name);
/* The egress grant caller's exec runs are served under: its profile's
 * "exec", else the top-level one. */
const struct mcpx_egress_grant *mcpx_policy_exec_grant(const struct mcpx_policy *p,
                                                       const char *caller);

/* One line for logs and --check-config: "version N, R egress rules, exec
 * may use E, F functions (C callable from exec)". */
void mcpx_policy_summary(const struct mcpx_policy *p, char *buf, size_t len);

/* The rule of g that covers url and allows method. Returns it, or NULL with
 * *reason: "no_rule" (no rule's url_prefix covers the URL) or "method" (one
 * does, but none allows the method). */
const struct mcpx_egress_rule *mcpx_egress_grant_match(const struct mcpx_egress_grant *g,
                                                       const struct mcpx_url *url,
                                                       const char *method, const char **reason);

/* Appends a sentence for an agent: which URL prefixes g reaches, with which
 * methods. Returns 0 or -E2BIG / -ENOMEM. */
int mcpx_egress_grant_describe(const struct mcpx_egress_grant *g, struct mcpx_buf *b);

/* ---- the store: the current policy, re-read when its files change ------ */

struct mcpx_policy_store;

/* Reads and parses path (refused when a run could read it). A bad file at
 * start is an error; the caller refuses to start. */
int mcpx_policy_store_open(const char *path, const struct mcpx_policy_opts *o,
                           struct mcpx_policy_store **out, struct mcpx_err *err);
void mcpx_policy_store_free(struct mcpx_policy_store *s);

/* Polls the identity (device, inode, mtime, size) of the policy file and of
 * every secret and source file every interval_ms on loop, so an edited file, a swapped
 * ConfigMap symlink or a rotated Secret is picked up. */
void mcpx_policy_store_watch(struct mcpx_policy_store *s, struct mcpx_loop *loop,
                             unsigned interval_ms);

/* One poll: 1 when a new policy was loaded, 0 when nothing changed (or the
 * same bad files were already reported), -errno when the changed files are
 * bad (logged; the old policy stays). */
int mcpx_policy_store_check(struct mcpx_policy_store *s);

/* fn(arg) runs after each successful reload (the tool list may have
 * changed). */
void mcpx_policy_store_on_change(struct mcpx_policy_store *s, void (*fn)(void *arg), void *arg);

/* The current policy, borrowed: take a reference to keep it. */
struct mcpx_policy *mcpx_policy_store_current(const struct mcpx_policy_store *s);

#endif
