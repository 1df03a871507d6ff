/*
 * exec_describe.c - the `exec` tool's Tool object: a description that states
 * the configured limits and, for the caller asking, what its policy lets
 * code reach (mcpx.fetch's URLs, the functions it may call, the upstream
 * MCP servers), the input and output schemas, and the annotations that
 * follow from that reach.
 *
 * It does not check arguments against the schema (exec_args.c) nor build
 * results (exec_result.c); it reads the policy, never changes it.
 */
#include "exec_describe.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "exec_args.h"
#include "jsonrpc.h"
#include "language.h"
#include "policy.h"
#include "runfiles.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define LIST_MAX_TEXT STR(MCPX_RUNFILES_LIST_MAX)

/* What exec is for one caller: the policy in force, the exec grant its
 * runs are served under (its profile's, else the top-level one) and its
 * profile, so the description names what that caller's code may reach,
 * not what some other profile grants. */
struct exec_view {
	const struct mcpx_policy *p;         /* NULL: no policy */
	const struct mcpx_egress_grant *all; /* the grant, rules or not; NULL without a policy */
	const struct mcpx_egress_grant *net; /* the grant when it has rules, else NULL */
	const struct mcpx_profile *pr;       /* NULL: none applies */
	const char *caller;                  /* NULL: the top-level view */
};

/* More than Python on offer: the tool's texts name the languages. */
static bool multilingual(const struct mcpx_languages *langs)
{
	return langs && (langs->mask & ~(1u << MCPX_LANG_PYTHON)) != 0;
}

/* "1 MiB", "64 KiB" or "1000 bytes": exact, never rounded. */
static void human_bytes(size_t n, char *buf, size_t cap)
{
	if (n && n % (1024 * 1024) == 0)
		snprintf(buf, cap, "%zu MiB", n / (1024 * 1024));
	else if (n && n % 1024 == 0)
		snprintf(buf, cap, "%zu KiB", n / 1024);
	else
		snprintf(buf, cap, "%zu bytes", n);
}

/* Appends what the description says about files in and out; frees d. */
static char *with_files_sentence(char *d, const struct mcpx_config *cfg)
{
	char in_cap[32], out_cap[32], *all;

	human_bytes(cfg->max_files_in_bytes, in_cap, sizeof(in_cap));
	human_bytes(cfg->max_files_out_bytes, out_cap, sizeof(out_cap));
	if (asprintf(&all,
	             "%s Files: pass input files in `files` ({path, content} for text, {path, "
	             "content_base64} for binary; %s in total); they are written into the working "
	             "directory before the code runs. Whatever the code writes under out/ comes "
	             "back (at most %u files, %s in total): PNG, JPEG, GIF and WebP images as "
	             "pictures, other files as embedded resources, each listed in "
	             "structuredContent.files. plt.show() saves the open matplotlib figures into "
	             "out/ as PNG, so a chart is returned as a picture.",
	             d, in_cap, cfg->max_files_out, out_cap) < 0)
		all = NULL;
	free(d);
	return all;
}

/* What the description says about bash and JavaScript, with the versions
 * found at start-up; d unchanged when Python is the only language. Takes
 * d; NULL when out of memory. */
static char *with_languages_sentence(char *d, const struct mcpx_languages *langs)
{
	struct mcpx_buf b;
	int rc;

	if (!multilingual(langs))
		return d;
	mcpx_buf_init(&b, 64 * 1024);
	rc = mcpx_buf_addf(&b,
	                   "%s Languages: set `language` to run code other than Python 3 (%s, the "
	                   "default), in the same sandbox, with the same limits, stdin, files and "
	                   "out/; only Python has the modules above and mcpx.",
	                   d, langs->rt[MCPX_LANG_PYTHON].version);
	if (!rc && (langs->mask & (1u << MCPX_LANG_BASH)))
		rc = mcpx_buf_addf(
		    &b,
		    " bash (%s): code is a script run as `bash --noprofile --norc "
		    "main.sh` (no -e: a failed command does not end it) with "
		    "coreutils, grep, sed, gawk, findutils, jq, sqlite3 and file where "
		    "installed.",
		    langs->rt[MCPX_LANG_BASH].version);
	if (!rc && (langs->mask & (1u << MCPX_LANG_JAVASCRIPT)))
		rc = mcpx_buf_addf(
		    &b,
		    " javascript (Node.js %s): code is an ES module (main.mjs: import, "
		    "top-level await), console.log writes stdout, process.stdin reads "
		    "stdin; Node's built-in modules only.",
		    langs->rt[MCPX_LANG_JAVASCRIPT].version);
	free(d);
	if (rc) {
		mcpx_buf_free(&b);
		return NULL;
	}
	return mcpx_buf_take(&b, NULL);
}

/* A profile's share of the queue, when it sets one: runs beyond it are
 * refused as busy (fair_queue.h). Takes d; NULL when out of memory. */
static char *with_share_sentence(char *d, const struct mcpx_profile_limits *lim)
{
	char queued[64] = "", rate[64] = "", *all = NULL;

	if (!lim || (!lim->max_queued && !lim->runs_per_minute))
		return d;
	if (lim->max_queued)
		snprintf(queued, sizeof(queued), " at most %u of your calls waiting at once%s",
		         lim->max_queued, lim->runs_per_minute ? "," : "");
	if (lim->runs_per_minute)
		snprintf(rate, sizeof(rate), " at most %u runs started per minute",
		         lim->runs_per_minute);
	if (asprintf(&all, "%s Your share:%s%s.", d, queued, rate) < 0)
		all = NULL;
	free(d);
	return all;
}

/* Whether v's caller's code may call function i with mcpx.call: it must
 * be callable from exec and, with profiles, one the caller's profile
 * allows (functions_ops.c refuses the others). */
static bool callable(const struct exec_view *v, size_t i)
{
	const struct mcpx_function *f = &v->p->functions[i];

	return f->callable_from_exec &&
	       (!v->caller || mcpx_policy_tool_allowed(v->p, v->caller, f->name));
}

/* The policy's functions that code may call (policy.md, mcpx.call): their
 * names, since each one's arguments are in its own tool's inputSchema.
 * Takes d; NULL when out of memory. */
static char *with_calls_sentence(char *d, const struct exec_view *v)
{
	const struct mcpx_policy *p = v->p;
	struct mcpx_buf b;
	size_t n = 0;
	int rc;

	bool any = false;

	for (size_t i = 0; p && i < p->n_functions; i++)
		any |= callable(v, i);
	if (!d || !any)
		return d;
	mcpx_buf_init(&b, 64 * 1024);
	rc = mcpx_buf_addf(&b,
	                   "%s Functions: the code may call these tools of this server with "
	                   "`mcpx.call(name, **arguments)`, which returns the tool's structured "
	                   "result (a dict) or raises mcpx.ToolError with its error text; each "
	                   "one's arguments are in its own inputSchema: ",
	                   d);
	for (size_t i = 0; !rc && i < p->n_functions; i++)
		if (callable(v, i))
			rc = mcpx_buf_addf(&b, "%s%s", n++ ? ", " : "", p->functions[i].name);
	if (!rc)
		rc = mcpx_buf_adds(&b, ".");
	free(d);
	if (rc) {
		mcpx_buf_free(&b);
		return NULL;
	}
	return mcpx_buf_take(&b, NULL);
}

/* The upstream MCP servers code may call (policy.md, "upstreams"): one
 * line each with its tool count, and how to discover the rest, never every
 * schema. Takes d; NULL when out of memory. */
static char *with_upstreams_sentence(char *d, const struct mcpx_exec_about *t,
                                     const struct exec_view *v)
{
	char *lines = d && t->upstreams && v->all && v->all->n_upstreams
	                  ? t->upstreams(t->upstreams_arg, v->all)
	                  : NULL;
	char *all = NULL;

	if (!lines)
		return d;
	if (asprintf(&all,
	             "%s Upstream MCP servers: the code may call their tools with "
	             "`mcpx.call(\"<server>.<tool>\", **arguments)`, which returns the tool's "
	             "structuredContent (else its text), raises mcpx.ToolError on a tool error and "
	             "mcpx.Denied when refused (not allowed, budget spent, server down); "
	             "`mcpx.call_raw` returns the whole result (images). Discover the tools in the "
	             "code with `mcpx.tools(query)`, `mcpx.describe(name)` or `from mcpx.servers "
	             "import <server>` and help(); keep large results in the code and print only "
	             "what matters. Servers:\n%s",
	             d, lines) < 0)
		all = NULL;
	free(lines);
	free(d);
	return all;
}

/* exec as caller (NULL: the top-level exec section) sees it now. */
static void view_for(const struct mcpx_exec_about *t, const char *caller, struct exec_view *v)
{
	memset(v, 0, sizeof(*v));
	v->p = mcpx_policy_store_current(t->policy);
	v->caller = caller;
	if (!v->p)
		return;
	v->pr = caller ? mcpx_policy_profile_for(v->p, caller) : NULL;
	v->all = v->pr && v->pr->has_exec ? &v->pr->exec : &v->p->exec;
	v->net = v->all->n_rules ? v->all : NULL;
}

/* The smaller of the server's limit and a profile's (0: not set). */
static unsigned lower(unsigned server, unsigned profile)
{
	return profile && (!server || profile < server) ? profile : server;
}

/* What an agent needs to use mcpx.fetch: the call, the result, the errors,
 * and exactly which URLs it reaches. NULL when out of memory. */
static char *egress_text(const struct mcpx_egress_grant *g)
{
	struct mcpx_buf b;
	int rc;

	mcpx_buf_init(&b, 64 * 1024);
	rc = mcpx_buf_addf(
	    &b, " Network: `import mcpx`, then `r = mcpx.fetch(url, method=\"GET\", headers=None, "
	        "data=None, json=None, timeout=None)` makes an HTTP(S) request through the server, "
	        "which allows only these URL prefixes (and methods): ");
	if (!rc)
		rc = mcpx_egress_grant_describe(g, &b);
	if (!rc)
		rc = mcpx_buf_addf(
		    &b,
		    ". r.status, r.headers (a dict, lower-case names), r.content (bytes), r.text "
		    "and r.json() hold the response; a refused request raises mcpx.Denied (a "
		    "PermissionError) saying why, a network failure mcpx.FetchError (an OSError). "
		    "At most %u requests per call, %u at a time.",
		    g->max_requests, g->max_in_flight);
	if (rc) {
		mcpx_buf_free(&b);
		return NULL;
	}
	return mcpx_buf_take(&b, NULL);
}

/* Whether v's caller may name a workspace: the server keeps them and its
 * profile does not turn them off. */
static bool workspaces_for(const struct mcpx_exec_about *t, const struct exec_view *v)
{
	return t->workspaces && !(v->pr && v->pr->workspaces.off);
}

/* How to keep state between calls, in one sentence, for a caller that may.
 * Takes d; NULL when out of memory. */
static char *with_workspace_sentence(char *d, const struct mcpx_exec_about *t,
                                     const struct exec_view *v)
{
	char *all = NULL;

	if (!d || !workspaces_for(t, v))
		return d;
	if (asprintf(&all,
	             "%s To keep state between calls, give the same workspace name (e.g. "
	             "\"analysis\") to each: the working directory's files and, for Python, the "
	             "top-level variables (values such as DataFrames, imported modules, functions "
	             "you defined; not open files, generators or classes you defined) are there "
	             "again at the start of every call with that name, on any server, so a "
	             "DataFrame loaded in one call is used in the next without reading it again "
	             "(workspace_reset: true starts it empty; out/ is never kept).",
	             d) < 0)
		all = NULL;
	free(d);
	return all;
}

static char *description(const struct mcpx_exec_about *t, const struct exec_view *v)
{
	const struct mcpx_config *cfg = t->cfg;
	const struct mcpx_egress_grant *g = v->net;
	const struct mcpx_profile_limits *lim = v->pr ? &v->pr->limits : NULL;
	unsigned memory_mb = lower(cfg->memory_mb, lim ? lim->memory_mb : 0);
	unsigned max_timeout = lower(cfg->max_timeout_s, lim ? lim->timeout_s : 0);
	unsigned def_timeout = lower(cfg->default_timeout_s, lim ? lim->timeout_s : 0);
	char out_cap[32], in_cap[32], code_cap[32], mem[96] = "", code[64] = "", procs[64] = "";
	char *d, *net = g ? egress_text(g) : NULL;

	human_bytes(cfg->max_output_bytes, out_cap, sizeof(out_cap));
	human_bytes(cfg->max_stdin_bytes, in_cap, sizeof(in_cap));
	human_bytes(cfg->max_code_bytes, code_cap, sizeof(code_cap));
	if (memory_mb)
		snprintf(mem, sizeof(mem),
		         "memory %u MiB and files %u MiB, all processes together; ", memory_mb,
		         cfg->max_disk_mb);
	if (cfg->max_procs)
		snprintf(procs, sizeof(procs), "at most %u processes; ", cfg->max_procs);
	if (cfg->max_code_bytes)
		snprintf(code, sizeof(code), "; code is capped at %s", code_cap);

	if (asprintf(&d,
	             "Run Python 3 code in a locked-down sandbox and return its stdout, stderr and "
	             "exit code. Every call starts a fresh Python process in a new, empty working "
	             "directory: nothing persists between calls (no files, no variables)%s. "
	             "Environment: the Python 3 standard library plus numpy, pandas, matplotlib "
	             "(Agg backend, no display), PyYAML, Jinja2 and Pillow; nothing else can be "
	             "installed. Limits: %s; wall-clock timeout %us by default, at "
	             "most %us (set timeout_s); %s%sstdout and stderr together are capped at %s: "
	             "output beyond that is discarded while the program keeps running to its end, "
	             "and the result has truncated=true with the program's own exit_code; stdin "
	             "is capped at %s%s. Executions run one at a time; others wait in a queue of "
	             "at most %u "
	             "and get a \"server busy\" error beyond that. Print what you want to see. A "
	             "non-zero exit_code (for example an uncaught exception, traceback in stderr) "
	             "or timed_out=true is a normal result, not a tool error.%s",
	             workspaces_for(t, v) ? " unless they name a workspace (below)" : "",
	             g ? "no direct network access (see mcpx.fetch below)" : "no network access",
	             def_timeout, max_timeout, mem, procs, out_cap, in_cap, code, cfg->max_queue,
	             net ? net : "") < 0)
		d = NULL;
	if (g && !net) {
		free(d);
		d = NULL;
	}
	free(net);
	d = d ? with_files_sentence(d, cfg) : NULL;
	d = with_workspace_sentence(d, t, v);
	d = d ? with_languages_sentence(d, t->langs) : NULL;
	d = d ? with_share_sentence(d, lim) : NULL;
	d = with_calls_sentence(d, v);
	return with_upstreams_sentence(d, t, v);
}

static cJSON *prop(cJSON *props, const char *name, const char *type, const char *desc)
{
	cJSON *p = cJSON_CreateObject();

	if (!mcpx_json_add_owned(props, name, p))
		return NULL;
	if (type && !cJSON_AddStringToObject(p, "type", type))
		return NULL;
	if (desc && !cJSON_AddStringToObject(p, "description", desc))
		return NULL;
	return p;
}

/* A property whose value is a string or null (the additive signal and
 * limit). */
static cJSON *prop_nullable(cJSON *props, const char *name, const char *desc)
{
	static const char *const types[] = {"string", "null"};
	cJSON *p = prop(props, name, NULL, NULL);

	if (!p || !mcpx_json_add_owned(p, "type", cJSON_CreateStringArray(types, 2)) ||
	    !cJSON_AddStringToObject(p, "description", desc))
		return NULL;
	return p;
}

/* The `files` argument: [{path, content} | {path, content_base64}]. Which
 * of the two contents is given is checked by the tool, not by a oneOf that
 * some clients' schema handling rejects. */
static cJSON *files_in_schema(cJSON *props, const struct mcpx_config *cfg)
{
	static const char *const req[] = {"path"};
	char desc[400], cap[32];
	cJSON *p, *items, *ip;

	human_bytes(cfg->max_files_in_bytes, cap, sizeof(cap));
	snprintf(desc, sizeof(desc),
	         "input files, written into the working directory before the code runs "
	         "(at most %d files, %s decoded in total). Each is {path, content} for UTF-8 "
	         "text or {path, content_base64} for any bytes. path is relative, e.g. "
	         "data/input.csv: no leading /, no . or .. or empty segments; parent "
	         "directories are created",
	         MCPX_RUNFILES_MAX_IN, cap);
	if (!(p = prop(props, "files", "array", desc)) ||
	    !cJSON_AddNumberToObject(p, "maxItems", MCPX_RUNFILES_MAX_IN) ||
	    !(items = cJSON_AddObjectToObject(p, "items")) ||
	    !cJSON_AddStringToObject(items, "type", "object") ||
	    !(ip = cJSON_AddObjectToObject(items, "properties")) ||
	    !prop(ip, "path", "string", "relative path of the file in the working directory") ||
	    !prop(ip, "content", "string", "the file's text (UTF-8)") ||
	    !prop(ip, "content_base64", "string", "the file's bytes, base64 (RFC 4648)") ||
	    !mcpx_json_add_owned(items, "required", cJSON_CreateStringArray(req, 1)) ||
	    !cJSON_AddFalseToObject(items, "additionalProperties"))
		return NULL;
	return p;
}

/* The `language` argument: an enum of exactly the languages this server
 * found at start-up. */
static cJSON *language_schema(cJSON *props, const struct mcpx_languages *langs)
{
	cJSON *p = prop(props, "language", "string",
	                "the language of code: python (the default), bash (a script run as "
	                "`bash --noprofile --norc main.sh`), javascript (Node.js, an ES module "
	                "main.mjs); only the languages this server runs are listed");
	cJSON *e = p ? cJSON_AddArrayToObject(p, "enum") : NULL;

	for (int l = 0; e && l < MCPX_LANG_COUNT; l++)
		if (mcpx_exec_lang_offered(langs, l) &&
		    !cJSON_AddItemToArray(e, cJSON_CreateString(mcpx_lang_name((enum mcpx_lang)l))))
			return NULL;
	return e && cJSON_AddStringToObject(p, "default", "python") ? p : NULL;
}

/* The `workspace` and `workspace_reset` arguments. */
static bool workspace_schema(cJSON *props)
{
	cJSON *p = prop(props, "workspace", "string",
	                "keep this call's files and Python variables under this name: the next "
	                "call with the same name starts with them (out/ excepted); lowercase "
	                "letters, digits, '_', '.', '-'");

	return p && cJSON_AddStringToObject(p, "pattern", MCPX_EXEC_WORKSPACE_PATTERN) &&
	       cJSON_AddNumberToObject(p, "maxLength", MCPX_EXEC_WORKSPACE_NAME_MAX) &&
	       prop(props, "workspace_reset", "boolean",
	            "start the workspace empty (its saved files and variables are dropped); "
	            "what this call leaves is saved as usual");
}

cJSON *mcpx_exec_input_schema(const struct mcpx_config *cfg, const struct mcpx_languages *langs,
                              bool workspaces)
{
	static const char *const req[] = {"code"};
	cJSON *s = cJSON_CreateObject();
	cJSON *props;
	char tdesc[160], sdesc[96], in_cap[32];

	human_bytes(cfg->max_stdin_bytes, in_cap, sizeof(in_cap));
	snprintf(tdesc, sizeof(tdesc),
	         "wall-clock timeout in seconds (default %u, clamped to [1,%u]); the whole "
	         "process tree is killed when it expires",
	         cfg->default_timeout_s, cfg->max_timeout_s);
	snprintf(sdesc, sizeof(sdesc), "data piped to the program's stdin (max %s)", in_cap);

	if (!cJSON_AddStringToObject(s, "type", "object") ||
	    !(props = cJSON_AddObjectToObject(s, "properties")) ||
	    !prop(props, "code", "string",
	          multilingual(langs)
	              ? "source to execute (required), in `language` (Python by default), run "
	                "as a script: print what you want to see"
	              : "Python source to execute (required), run as a script: print what you "
	                "want to see") ||
	    !prop(props, "timeout_s", "integer", tdesc) || !prop(props, "stdin", "string", sdesc) ||
	    !files_in_schema(props, cfg) || !language_schema(props, langs) ||
	    (workspaces && !workspace_schema(props)) ||
	    !mcpx_json_add_owned(s, "required", cJSON_CreateStringArray(req, 1)) ||
	    !cJSON_AddFalseToObject(s, "additionalProperties")) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

/* structuredContent.files and files_truncated. */
static cJSON *files_out_schema(cJSON *props)
{
	static const char *const req[] = {"path", "bytes", "mime_type", "sha256", "returned"};
	static const char *const reasons[] = {"too large", "too many", "not a regular file",
	                                      "unsafe name"};
	cJSON *p, *items, *ip, *reason;

	if (!(p = prop(props, "files", "array",
	               "every file the run left under out/ in its working directory; each "
	               "returned one also comes as a content block (an image for PNG, JPEG, "
	               "GIF and WebP, else an embedded resource with a file:///out/... uri)")) ||
	    !(items = cJSON_AddObjectToObject(p, "items")) ||
	    !cJSON_AddStringToObject(items, "type", "object") ||
	    !(ip = cJSON_AddObjectToObject(items, "properties")) ||
	    !prop(ip, "path", "string", "relative to the working directory, e.g. out/chart.png") ||
	    !prop(ip, "bytes", "integer", "size of a regular file; 0 for anything else") ||
	    !prop_nullable(ip, "mime_type", "type by content (null when not read)") ||
	    !prop_nullable(ip, "sha256", "hex SHA-256 of the content (null when not read)") ||
	    !prop(ip, "returned", "boolean", "the file is in the result's content") ||
	    !(reason = prop(ip, "reason", "string", "why it was not returned")) ||
	    !mcpx_json_add_owned(reason, "enum", cJSON_CreateStringArray(reasons, 4)) ||
	    !mcpx_json_add_owned(items, "required", cJSON_CreateStringArray(req, 5)) ||
	    !cJSON_AddFalseToObject(items, "additionalProperties"))
		return NULL;
	return prop(props, "files_truncated", "boolean",
	            "out/ held more entries than the listing's limit (" LIST_MAX_TEXT
	            " entries), so some are not listed");
}

/* structuredContent.workspace, present when the call named one. */
static cJSON *workspace_out_schema(cJSON *props)
{
	static const char *const req[] = {"name",  "saved",     "files",
	                                  "bytes", "variables", "not_kept"};
	cJSON *p, *ip, *v;

	if (!(p = prop(props, "workspace", "object",
	               "the workspace the call named, as it is after the call: the run's version "
	               "when saved, else the previous one")) ||
	    !(ip = cJSON_AddObjectToObject(p, "properties")) ||
	    !prop(ip, "name", "string", "the workspace's name") ||
	    !prop(ip, "saved", "boolean",
	          "the run's files and variables are the workspace's now; false: it keeps its "
	          "previous version (reason says why)") ||
	    !prop(ip, "reason", "string", "why it was not saved (only when saved is false)") ||
	    !prop(ip, "files", "integer", "files in the workspace") ||
	    !prop(ip, "bytes", "integer",
	          "bytes of its files and variables (what MCP_EXEC_WORKSPACE_MAX_MB caps)") ||
	    !(v = prop(ip, "variables", "array", "Python variables kept, by name")) ||
	    !cJSON_AddStringToObject(cJSON_AddObjectToObject(v, "items"), "type", "string") ||
	    !(v = prop(ip, "not_kept", "array",
	               "the run's variables that could not be kept (an open file, a socket, a "
	               "generator, a class defined by the code, a value over the cap)")) ||
	    !cJSON_AddStringToObject(cJSON_AddObjectToObject(v, "items"), "type", "string") ||
	    !mcpx_json_add_owned(p, "required", cJSON_CreateStringArray(req, 6)) ||
	    !cJSON_AddFalseToObject(p, "additionalProperties"))
		return NULL;
	return p;
}

static cJSON *output_schema(void)
{
	static const char *const req[] = {"stdout",      "stderr",    "exit_code",
	                                  "duration_ms", "truncated", "timed_out"};
	cJSON *s = cJSON_CreateObject();
	cJSON *props;

	if (!cJSON_AddStringToObject(s, "type", "object") ||
	    !(props = cJSON_AddObjectToObject(s, "properties")) ||
	    !prop(props, "stdout", "string",
	          "captured standard output; invalid UTF-8 replaced with U+FFFD") ||
	    !prop(props, "stderr", "string",
	          "captured standard error; invalid UTF-8 replaced with U+FFFD") ||
	    !prop(props, "exit_code", "integer",
	          "process exit code; -1 when timed out or killed by a signal") ||
	    !prop(props, "duration_ms", "integer", "wall-clock duration of the run") ||
	    !prop(props, "truncated", "boolean",
	          "the combined stdout+stderr cap was hit: later output was discarded while the "
	          "program ran on") ||
	    !prop(props, "timed_out", "boolean",
	          "the wall-clock timeout was hit and the process tree was killed") ||
	    !prop_nullable(props, "signal",
	                   "the signal that ended the program (e.g. \"SIGKILL\"), or null") ||
	    !prop_nullable(props, "limit",
	                   "the limit that ended the run: \"timeout\", \"memory\", \"cpu\", "
	                   "\"disk\", \"processes\", \"file_size\", or null") ||
	    !prop(props, "cpu_ms", "integer",
	          "CPU time used by every process of the run, user plus system") ||
	    !prop(props, "max_rss_kb", "integer", "peak resident memory in KiB") ||
	    !files_out_schema(props) || !workspace_out_schema(props) ||
	    !mcpx_json_add_owned(s, "required", cJSON_CreateStringArray(req, 6)) ||
	    !cJSON_AddFalseToObject(s, "additionalProperties")) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

/* A grant with a method beyond reading lets code change the world. */
static bool grant_writes(const struct mcpx_egress_grant *g)
{
	bool writes = false;

	for (size_t i = 0; g && i < g->n_rules; i++)
		for (size_t m = 0; m < g->rules[i]->n_methods; m++)
			writes |= strcmp(g->rules[i]->methods[m], "GET") != 0 &&
			          strcmp(g->rules[i]->methods[m], "HEAD") != 0 &&
			          strcmp(g->rules[i]->methods[m], "OPTIONS") != 0;
	return writes;
}

/* exec's Tool object as caller sees it (NULL: under the top-level exec
 * section, as a caller no profile matches sees it). */
cJSON *mcpx_exec_describe(const struct mcpx_exec_about *t, const char *caller)
{
	cJSON *d = cJSON_CreateObject();
	cJSON *ann;
	struct exec_view v;
	char *desc;
	const struct mcpx_egress_grant *g;
	const struct mcpx_policy *p;
	bool open_world, writes;
	const char *title = multilingual(t->langs) ? "Run code" : "Run Python code";

	view_for(t, caller, &v);
	desc = description(t, &v);
	g = v.net;
	p = v.p;
	open_world = g != NULL;
	writes = grant_writes(g);
	/* Upstream tools may act on the world, and their effects are theirs. */
	if (v.all && v.all->n_upstreams)
		open_world = writes = true;
	/* The functions code may call reach their own rules on its behalf. */
	for (size_t i = 0; p && i < p->n_functions; i++) {
		if (!callable(&v, i) || !p->functions[i].grant.n_rules)
			continue;
		open_world = true;
		writes |= grant_writes(&p->functions[i].grant);
	}

	if (!desc || !cJSON_AddStringToObject(d, "name", MCPX_EXEC_TOOL_NAME) ||
	    !cJSON_AddStringToObject(d, "title", title) ||
	    !cJSON_AddStringToObject(d, "description", desc) ||
	    !mcpx_json_add_owned(d, "inputSchema",
	                         mcpx_exec_input_schema(t->cfg, t->langs, t->workspaces)) ||
	    !mcpx_json_add_owned(d, "outputSchema", output_schema()) ||
	    !(ann = cJSON_AddObjectToObject(d, "annotations")))
		goto fail;
	/* Hints (server/tools, ToolAnnotations): running code is an action a
	 * client may want confirmed, so not read-only; but it cannot change
	 * anything outside its throw-away sandbox, so it is not destructive,
	 * repeating it has no further effect, and with no network its world is
	 * closed. A policy that lets code fetch URLs (itself, or through a
	 * function it may call) opens the world, and one that allows more than
	 * reading (POST, DELETE, ...) makes a call able to change it, and
	 * repeating it may do so again. */
	if (!cJSON_AddStringToObject(ann, "title", title) ||
	    !cJSON_AddFalseToObject(ann, "readOnlyHint") ||
	    !cJSON_AddBoolToObject(ann, "destructiveHint", writes) ||
	    !cJSON_AddBoolToObject(ann, "idempotentHint", !writes) ||
	    !cJSON_AddBoolToObject(ann, "openWorldHint", open_world))
		goto fail;
	free(desc);
	return d;
fail:
	free(desc);
	cJSON_Delete(d);
	return NULL;
}
