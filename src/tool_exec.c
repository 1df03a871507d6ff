/*
 * tool_exec.c - the `exec` tool: the mcp-exec (Go) contract on top of the
 * executor.
 *
 * It describes the tool (input and output schemas, a description that states
 * the configured limits), validates arguments the way the Go server's go-sdk
 * schema check and handler do (same messages where the Go server has one),
 * submits the job, relays queue/start events as MCP log messages and output
 * as rate-limited progress, and encodes the finished run as a CallToolResult:
 * structuredContent plus the same JSON in a text block.
 *
 * It does not run anything itself, know about processes or time limits (the
 * executor and the sandbox do), or speak JSON-RPC (the core does).
 */
#include "tool_exec.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "loop.h"
#include "utf8.h"

#define TOOL_NAME "exec"

/* Progress notifications at most every 250 ms (about 4 per second): enough to
 * show a long run is alive, few enough not to flood the client ("Both
 * parties SHOULD implement rate limiting", basic/utilities/progress). */
#define PROGRESS_INTERVAL_US 250000
/* How much of the latest output a progress message carries. */
#define PROGRESS_TAIL_BYTES 200

struct exec_tool {
	struct mcpx_tool base;
	const struct mcpx_config *cfg;
	struct mcpx_executor *ex;
};

/* One tools/call in flight; owned by the tool from submit until done or
 * cancel. */
struct exec_run {
	struct exec_tool *t;
	struct mcpx_call *call;
	struct mcpx_job *job;
	bool submitting; /* inside mcpx_executor_submit */
	bool done_early; /* done arrived during submit: free after it returns */
	uint64_t last_progress_us;
	size_t last_progress_bytes;
};

/* Adds item to obj under key, or frees it: the caller's item is never
 * leaked, whichever step ran out of memory. */
static bool add_owned(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return false;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

/* ---- argument validation ---------------------------------------------- */

/* A finite number without a fraction. Doubles of 2^63 and beyond have no
 * fraction bits at all; below, the long long round trip is exact. */
static bool is_integral(double d)
{
	double a = d < 0 ? -d : d;

	if (!isfinite(d))
		return false;
	return a >= 9.2e18 || d == (double)(long long)d;
}

/* The JSON Schema type of a value; a number with no fraction is an
 * "integer", as JSON Schema 2020-12 (and go-sdk's validator) count it. */
static const char *json_type(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "array";
	if (cJSON_IsObject(v))
		return "object";
	if (cJSON_IsNumber(v))
		return is_integral(v->valuedouble) ? "integer" : "number";
	return "unknown";
}

/* A short rendering of a value for an error message; strings and containers
 * are not echoed in full (they can be megabytes of code). */
static void json_repr(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if ((d < 0 ? -d : d) < 1e15 && is_integral(d))
			snprintf(buf, cap, "%.0f", d);
		else
			snprintf(buf, cap, "%g", d);
	} else if (cJSON_IsBool(v)) {
		snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsNull(v)) {
		snprintf(buf, cap, "null");
	} else if (cJSON_IsString(v)) {
		size_t n = strlen(v->valuestring);
		bool plain = n <= 32;
		for (size_t i = 0; plain && i < n; i++) {
			unsigned char ch = (unsigned char)v->valuestring[i];
			plain = ch >= 0x20 && ch < 0x7F && ch != '"' && ch != '\\';
		}
		if (plain)
			snprintf(buf, cap, "\"%s\"", v->valuestring);
		else
			snprintf(buf, cap, "a string");
	} else if (cJSON_IsArray(v)) {
		snprintf(buf, cap, "[...]");
	} else {
		snprintf(buf, cap, "{...}");
	}
}

/* Mirrors go-sdk's wording: `validating "arguments": validating <where>: ...`. */
static int type_error(char *msg, size_t msglen, const char *where, const cJSON *v, const char *want)
{
	char repr[48];

	json_repr(v, repr, sizeof(repr));
	snprintf(msg, msglen,
	         "validating \"arguments\": validating %s: type: %s has type \"%s\", want \"%s\"",
	         where, repr, json_type(v), want);
	return -EINVAL;
}

static bool is_integer(const cJSON *v)
{
	return cJSON_IsNumber(v) && strcmp(json_type(v), "integer") == 0;
}

/* Decodes one UTF-8 character at s (valid input assumed, invalid bytes read
 * as themselves); returns its length. */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
	if (s[0] < 0x80 || len < 2) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xE0) == 0xC0) {
		*cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
		return 2;
	}
	if ((s[0] & 0xF0) == 0xE0 && len >= 3) {
		*cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) |
		      (s[2] & 0x3F);
		return 3;
	}
	*cp = s[0];
	return 1;
}

/* Go's unicode.IsSpace, which strings.TrimSpace (the Go server's emptiness
 * test) uses: ASCII whitespace, NEL, NBSP and Unicode's other spaces. */
static bool is_space(uint32_t c)
{
	switch (c) {
	case '\t':
	case '\n':
	case '\v':
	case '\f':
	case '\r':
	case ' ':
	case 0x85:
	case 0xA0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202F:
	case 0x205F:
	case 0x3000:
		return true;
	default:
		return c >= 0x2000 && c <= 0x200A;
	}
}

static bool blank(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = utf8_next(p + i, len - i, &cp);
		if (!is_space(cp))
			return false;
		i += n;
	}
	return true;
}

/* Appends a Go-%q-like quoted name to buf. */
static void append_quoted(char *buf, size_t cap, const char *name)
{
	size_t o = strlen(buf);

	if (o + 1 < cap)
		buf[o++] = '"';
	for (const char *p = name; *p && o + 3 < cap; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch >= 0x20 && ch != 0x7F) {
			buf[o++] = (char)ch;
		}
	}
	if (o + 1 < cap)
		buf[o++] = '"';
	buf[o] = '\0';
}

int mcpx_exec_parse_args(const cJSON *args, const struct mcpx_config *cfg,
                         struct mcpx_exec_args *out, char *msg, size_t msglen)
{
	const cJSON *code, *timeout, *in, *el;
	char extra[256] = "";
	unsigned n_extra = 0;

	memset(out, 0, sizeof(*out));
	msg[0] = '\0';

	/* No "arguments" at all reads as {}, so the client hears that code is
	 * missing rather than something about null. */
	if (args && !cJSON_IsObject(args))
		return type_error(msg, msglen, "root", args, "object");

	code = args ? cJSON_GetObjectItemCaseSensitive(args, "code") : NULL;
	timeout = args ? cJSON_GetObjectItemCaseSensitive(args, "timeout_s") : NULL;
	in = args ? cJSON_GetObjectItemCaseSensitive(args, "stdin") : NULL;

	/* Same order as the Go server's schema check: property types, then
	 * additionalProperties, then required. */
	if (code && !cJSON_IsString(code))
		return type_error(msg, msglen, "/properties/code", code, "string");
	if (timeout && !is_integer(timeout))
		return type_error(msg, msglen, "/properties/timeout_s", timeout, "integer");
	if (in && !cJSON_IsString(in))
		return type_error(msg, msglen, "/properties/stdin", in, "string");

	if (args) {
		cJSON_ArrayForEach(el, args)
		{
			if (strcmp(el->string, "code") == 0 ||
			    strcmp(el->string, "timeout_s") == 0 ||
			    strcmp(el->string, "stdin") == 0)
				continue;
			if (n_extra++)
				strncat(extra, " ", sizeof(extra) - strlen(extra) - 1);
			append_quoted(extra, sizeof(extra), el->string);
		}
	}
	if (n_extra) {
		snprintf(msg, msglen,
		         "validating \"arguments\": validating root: unexpected additional "
		         "properties [%s] (allowed: code, timeout_s, stdin)",
		         extra);
		return -EINVAL;
	}
	if (!code) {
		snprintf(msg, msglen,
		         "validating \"arguments\": validating root: required: missing properties: "
		         "[\"code\"]");
		return -EINVAL;
	}

	out->code = code->valuestring;
	out->code_len = strlen(code->valuestring);
	if (blank(out->code, out->code_len)) {
		snprintf(msg, msglen, "code must not be empty");
		return -EINVAL;
	}
	if (cfg->max_code_bytes && out->code_len > cfg->max_code_bytes) {
		snprintf(msg, msglen, "code exceeds limit of %zu bytes", cfg->max_code_bytes);
		return -EINVAL;
	}
	if (in) {
		out->stdin_data = in->valuestring;
		out->stdin_len = strlen(in->valuestring);
		if (out->stdin_len > cfg->max_stdin_bytes) {
			snprintf(msg, msglen, "stdin exceeds limit of %zu bytes",
			         cfg->max_stdin_bytes);
			return -EINVAL;
		}
	}

	/* 0 or absent means the default; everything else is clamped, never
	 * rejected, as in the Go server. */
	{
		double want = timeout ? timeout->valuedouble : 0;
		unsigned max = cfg->max_timeout_s ? cfg->max_timeout_s : 1;
		unsigned t;

		if (want == 0)
			t = cfg->default_timeout_s;
		else if (want < 1)
			t = 1;
		else if (want > max)
			t = max;
		else
			t = (unsigned)want;
		if (t < 1)
			t = 1;
		if (t > max)
			t = max;
		out->timeout_s = t;
	}
	return 0;
}

/* ---- result encoding -------------------------------------------------- */

/* A JSON string literal for bytes that may contain NUL, which a cJSON string
 * cannot hold: written by hand and inserted as raw JSON. */
static cJSON *raw_string(const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char *buf, *o;
	cJSON *item;

	if (len > (SIZE_MAX - 3) / 6)
		return NULL;
	buf = malloc(len * 6 + 3);
	if (!buf)
		return NULL;
	o = buf;
	*o++ = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		switch (ch) {
		case '"':
			*o++ = '\\';
			*o++ = '"';
			break;
		case '\\':
			*o++ = '\\';
			*o++ = '\\';
			break;
		case '\b':
			*o++ = '\\';
			*o++ = 'b';
			break;
		case '\f':
			*o++ = '\\';
			*o++ = 'f';
			break;
		case '\n':
			*o++ = '\\';
			*o++ = 'n';
			break;
		case '\r':
			*o++ = '\\';
			*o++ = 'r';
			break;
		case '\t':
			*o++ = '\\';
			*o++ = 't';
			break;
		default:
			if (ch < 0x20) {
				memcpy(o, "\\u00", 4);
				o += 4;
				*o++ = hex[ch >> 4];
				*o++ = hex[ch & 0xF];
			} else {
				*o++ = (char)ch;
			}
		}
	}
	*o++ = '"';
	*o = '\0';
	item = cJSON_CreateRaw(buf);
	free(buf);
	return item;
}

/* stdout/stderr as a JSON string: invalid UTF-8 becomes U+FFFD (the Go
 * server's strings.ToValidUTF8, per maximal subpart here), NUL bytes are
 * kept as \u0000. */
static cJSON *output_string(const char *buf, size_t len)
{
	size_t n;
	char *s = mcpx_utf8_sanitize(buf ? buf : "", buf ? len : 0, &n);
	cJSON *item;

	if (!s)
		return NULL;
	item = memchr(s, '\0', n) ? raw_string(s, n) : cJSON_CreateString(s);
	free(s);
	return item;
}

static cJSON *error_result(const char *text)
{
	return mcpx_text_result(text, true);
}

static cJSON *nullable_string(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

cJSON *mcpx_exec_result(const struct mcpx_job_result *res)
{
	cJSON *sc, *out, *content, *block;
	char sig[32], *text;
	const char *signame;

	switch (res->status) {
	case MCPX_JOB_DONE:
		break;
	case MCPX_JOB_FAILED:
		return error_result(res->message[0]
		                        ? res->message
		                        : "execution failed: the sandbox could not start");
	case MCPX_JOB_EXPIRED:
		return error_result(res->message[0]
		                        ? res->message
		                        : "server busy: the execution waited too long in "
		                          "the queue; try again later");
	case MCPX_JOB_SHUTDOWN:
	default:
		return error_result(res->message[0]
		                        ? res->message
		                        : "server is shutting down: the execution did not run");
	}

	/* Field order follows the Go server's ExecResult (the six required
	 * fields), then our additive ones. */
	sc = cJSON_CreateObject();
	signame = res->signal > 0 ? sigabbrev_np(res->signal) : NULL;
	if (res->signal > 0) {
		if (signame)
			snprintf(sig, sizeof(sig), "SIG%s", signame);
		else
			snprintf(sig, sizeof(sig), "SIG%d", res->signal);
	}
	if (!add_owned(sc, "stdout", output_string(res->stdout_buf, res->stdout_len)) ||
	    !add_owned(sc, "stderr", output_string(res->stderr_buf, res->stderr_len)) ||
	    !cJSON_AddNumberToObject(sc, "exit_code", res->exit_code) ||
	    !cJSON_AddNumberToObject(sc, "duration_ms", (double)res->duration_ms) ||
	    !cJSON_AddBoolToObject(sc, "truncated", res->truncated) ||
	    !cJSON_AddBoolToObject(sc, "timed_out", res->timed_out) ||
	    !add_owned(sc, "signal", nullable_string(res->signal > 0 ? sig : NULL)) ||
	    !add_owned(sc, "limit", nullable_string(res->limit)) ||
	    !cJSON_AddNumberToObject(sc, "cpu_ms", (double)res->cpu_ms) ||
	    !cJSON_AddNumberToObject(sc, "max_rss_kb", (double)res->max_rss_kb)) {
		cJSON_Delete(sc);
		return NULL;
	}

	/* "A tool that returns structured content SHOULD also return the
	 * serialized JSON in a TextContent block" (server/tools, 2025-06-18+),
	 * which is also what the Go server does. */
	text = cJSON_PrintUnformatted(sc);
	out = cJSON_CreateObject();
	content = cJSON_AddArrayToObject(out, "content");
	block = cJSON_CreateObject();
	if (!text || !content || !block || !cJSON_AddItemToArray(content, block)) {
		cJSON_Delete(block);
		goto oom;
	}
	if (!cJSON_AddStringToObject(block, "type", "text") ||
	    !cJSON_AddStringToObject(block, "text", text) ||
	    !cJSON_AddItemToObject(out, "structuredContent", sc)) {
		goto oom;
	}
	sc = NULL;
	if (!cJSON_AddFalseToObject(out, "isError"))
		goto oom;
	cJSON_free(text);
	return out;
oom:
	cJSON_free(text);
	cJSON_Delete(sc);
	cJSON_Delete(out);
	return NULL;
}

/* ---- description ------------------------------------------------------ */

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

static char *description(const struct mcpx_config *cfg)
{
	char out_cap[32], in_cap[32], code_cap[32], mem[96] = "", code[64] = "", procs[64] = "";
	char *d;

	human_bytes(cfg->max_output_bytes, out_cap, sizeof(out_cap));
	human_bytes(cfg->max_stdin_bytes, in_cap, sizeof(in_cap));
	human_bytes(cfg->max_code_bytes, code_cap, sizeof(code_cap));
	if (cfg->memory_mb)
		snprintf(mem, sizeof(mem), "memory %u MiB and files %u MiB, all processes together; ",
			 cfg->memory_mb, cfg->max_disk_mb);
	if (cfg->max_procs)
		snprintf(procs, sizeof(procs), "at most %u processes; ", cfg->max_procs);
	if (cfg->max_code_bytes)
		snprintf(code, sizeof(code), "; code is capped at %s", code_cap);

	if (asprintf(&d,
	             "Run Python 3 code in a locked-down sandbox and return its stdout, stderr and "
	             "exit code. Every call starts a fresh Python process in a new, empty working "
	             "directory: nothing persists between calls (no files, no variables). "
	             "Environment: the Python 3 standard library plus numpy, pandas, matplotlib "
	             "(Agg backend, no display), PyYAML, Jinja2 and Pillow; nothing else can be "
	             "installed. Limits: no network access; wall-clock timeout %us by default, at "
	             "most %us (set timeout_s); %s%sstdout and stderr together are capped at %s: "
	             "output beyond that is discarded while the program keeps running to its end, "
	             "and the result has truncated=true with the program's own exit_code; stdin "
	             "is capped at %s%s. Executions run one at a time; others wait in a queue of at most %u "
	             "and get a \"server busy\" error beyond that. Print what you want to see. A "
	             "non-zero exit_code (for example an uncaught exception, traceback in stderr) "
	             "or timed_out=true is a normal result, not a tool error.",
	             cfg->default_timeout_s, cfg->max_timeout_s, mem, procs, out_cap, in_cap, code,
	             cfg->max_queue) < 0)
		return NULL;
	return d;
}

static cJSON *prop(cJSON *props, const char *name, const char *type, const char *desc)
{
	cJSON *p = cJSON_CreateObject();

	if (!add_owned(props, name, p))
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

	if (!p || !add_owned(p, "type", cJSON_CreateStringArray(types, 2)) ||
	    !cJSON_AddStringToObject(p, "description", desc))
		return NULL;
	return p;
}

static cJSON *input_schema(const struct mcpx_config *cfg)
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
	          "Python source to execute (required), run as a script: print what you want "
	          "to see") ||
	    !prop(props, "timeout_s", "integer", tdesc) || !prop(props, "stdin", "string", sdesc) ||
	    !add_owned(s, "required", cJSON_CreateStringArray(req, 1)) ||
	    !cJSON_AddFalseToObject(s, "additionalProperties")) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
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
	    !add_owned(s, "required", cJSON_CreateStringArray(req, 6)) ||
	    !cJSON_AddFalseToObject(s, "additionalProperties")) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

static cJSON *exec_describe(const struct mcpx_tool *tool)
{
	const struct exec_tool *t = tool->ctx;
	cJSON *d = cJSON_CreateObject();
	cJSON *ann;
	char *desc = description(t->cfg);

	if (!desc || !cJSON_AddStringToObject(d, "name", TOOL_NAME) ||
	    !cJSON_AddStringToObject(d, "title", "Run Python code") ||
	    !cJSON_AddStringToObject(d, "description", desc) ||
	    !add_owned(d, "inputSchema", input_schema(t->cfg)) ||
	    !add_owned(d, "outputSchema", output_schema()) ||
	    !(ann = cJSON_AddObjectToObject(d, "annotations")))
		goto fail;
	/* Hints (server/tools, ToolAnnotations): running code is an action a
	 * client may want confirmed, so not read-only; but it cannot change
	 * anything outside its throw-away sandbox, so it is not destructive,
	 * repeating it has no further effect, and with no network its world is
	 * closed. */
	if (!cJSON_AddStringToObject(ann, "title", "Run Python code") ||
	    !cJSON_AddFalseToObject(ann, "readOnlyHint") ||
	    !cJSON_AddFalseToObject(ann, "destructiveHint") ||
	    !cJSON_AddTrueToObject(ann, "idempotentHint") ||
	    !cJSON_AddFalseToObject(ann, "openWorldHint"))
		goto fail;
	free(desc);
	return d;
fail:
	free(desc);
	cJSON_Delete(d);
	return NULL;
}

/* ---- running ---------------------------------------------------------- */

static void on_done(void *arg, const struct mcpx_job_result *res)
{
	struct exec_run *run = arg;

	/* mcpx_call_finish frees the call; the run goes right after, or after
	 * submit returns when the executor answered from inside it. */
	mcpx_call_finish(run->call, mcpx_exec_result(res));
	run->call = NULL;
	if (run->submitting)
		run->done_early = true;
	else
		free(run);
}

/* The progress message: valid UTF-8, and NUL bytes (which would cut a C
 * string short) shown as U+FFFD. Caller frees; NULL when out of memory. */
static char *progress_text(const char *buf, size_t len)
{
	size_t n, nuls = 0, o = 0;
	char *s = mcpx_utf8_sanitize(buf, len, &n), *t;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		nuls += s[i] == '\0';
	if (!nuls)
		return s;
	t = malloc(n + nuls * 2 + 1);
	if (t) {
		for (size_t i = 0; i < n; i++) {
			if (s[i] == '\0') {
				memcpy(t + o, "\xEF\xBF\xBD", 3);
				o += 3;
			} else {
				t[o++] = s[i];
			}
		}
		t[o] = '\0';
	}
	free(s);
	return t;
}

static void relay_progress(struct exec_run *run, size_t bytes)
{
	const char *out = NULL;
	size_t n, start;
	uint64_t now;
	char *tail;

	if (!mcpx_call_has_progress(run->call) || !run->job)
		return;
	now = mcpx_now_us();
	if (run->last_progress_us && now - run->last_progress_us < PROGRESS_INTERVAL_US)
		return;
	if (bytes <= run->last_progress_bytes)
		return;

	n = mcpx_job_output(run->job, &out);
	start = n > PROGRESS_TAIL_BYTES ? n - PROGRESS_TAIL_BYTES : 0;
	/* Start on a character boundary, not inside a multi-byte one. */
	while (start < n && start > 0 && ((unsigned char)out[start] & 0xC0) == 0x80)
		start++;
	tail = progress_text(out ? out + start : "", out ? n - start : 0);
	/* The byte count only grows, which is what progress must do. */
	mcpx_call_progress(run->call, (double)bytes, tail ? tail : "");
	free(tail);
	run->last_progress_us = now;
	run->last_progress_bytes = bytes;
}

static void on_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct exec_run *run = arg;
	char msg[64];

	if (!run->call)
		return;
	switch (ev) {
	case MCPX_JOB_QUEUED:
		snprintf(msg, sizeof(msg), "queued at position %zu", pos);
		mcpx_call_log(run->call, MCPX_LEVEL_INFO, msg);
		break;
	case MCPX_JOB_STARTED:
		mcpx_call_log(run->call, MCPX_LEVEL_INFO, "execution started");
		break;
	case MCPX_JOB_OUTPUT:
		relay_progress(run, pos);
		break;
	}
}

static void exec_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	struct exec_tool *t = tool->ctx;
	struct mcpx_exec_args a;
	struct mcpx_job_spec spec;
	struct mcpx_job_callbacks cb;
	struct exec_run *run;
	char msg[512];
	int rc;

	if (mcpx_exec_parse_args(args, t->cfg, &a, msg, sizeof(msg)) < 0) {
		mcpx_call_fail(call, msg);
		return;
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		mcpx_call_fail(call, "internal error: out of memory");
		return;
	}
	run->t = t;
	run->call = call;
	mcpx_call_set_data(call, run);

	spec = (struct mcpx_job_spec){
	    .code = a.code,
	    .code_len = a.code_len,
	    .stdin_data = a.stdin_data,
	    .stdin_len = a.stdin_len,
	    .timeout_s = a.timeout_s,
	    .request_id = mcpx_call_id_text(call),
	    .caller = mcpx_call_caller(call),
	};
	cb = (struct mcpx_job_callbacks){.done = on_done, .event = on_event, .arg = run};

	run->submitting = true;
	rc = mcpx_executor_submit(t->ex, &spec, &cb, &run->job);
	run->submitting = false;

	if (rc < 0) {
		/* A rejected job never calls back, so the call is still ours. */
		mcpx_call_set_data(call, NULL);
		free(run);
		if (rc == -EBUSY) {
			struct mcpx_executor_stats st;
			mcpx_executor_stats(t->ex, &st);
			snprintf(msg, sizeof(msg),
			         "server busy: %zu executions already queued (limit %u); try again "
			         "later",
			         st.queue_depth, t->cfg->max_queue);
		} else if (rc == -ESHUTDOWN) {
			snprintf(msg, sizeof(msg),
			         "server is shutting down: not accepting new executions");
		} else {
			snprintf(msg, sizeof(msg),
			         "internal error: could not queue the execution (%s)",
			         strerror(-rc));
		}
		mcpx_call_fail(call, msg);
		return;
	}
	if (run->done_early)
		free(run);
}

static void exec_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	struct exec_tool *t = tool->ctx;
	struct exec_run *run = mcpx_call_data(call);

	if (!run)
		return;
	if (run->job)
		mcpx_executor_cancel(t->ex, run->job);
	mcpx_call_set_data(call, NULL);
	free(run);
}

struct mcpx_tool *mcpx_tool_exec_new(const struct mcpx_config *cfg, struct mcpx_executor *ex)
{
	struct exec_tool *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cfg = cfg;
	t->ex = ex;
	t->base.name = TOOL_NAME;
	t->base.describe = exec_describe;
	t->base.call = exec_call;
	t->base.cancel = exec_cancel;
	t->base.ctx = t;
	return &t->base;
}

void mcpx_tool_exec_free(struct mcpx_tool *tool)
{
	if (tool)
		free(tool->ctx);
}
