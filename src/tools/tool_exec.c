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

#include "base64.h"
#include "buf.h"
#include "config.h"
#include "jsonrpc.h"
#include "jsonschema.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "policy.h"
#include "runfiles.h"
#include "tool_progress.h"
#include "utf8.h"

#define TOOL_NAME "exec"
#define STR_(x) #x
#define STR(x) STR_(x)
#define LIST_MAX_TEXT STR(MCPX_RUNFILES_LIST_MAX)

struct exec_tool {
	struct mcpx_tool base;
	const struct mcpx_config *cfg;
	struct mcpx_executor *ex;
	struct mcpx_schema *schema;             /* the inputSchema, compiled */
	const struct mcpx_policy_store *policy; /* NULL: no egress */
	const struct mcpx_languages *langs;     /* NULL: python alone */
	/* The lines of the upstreams grant g reaches, or NULL. */
	char *(*upstreams)(void *arg, const struct mcpx_egress_grant *g);
	void *upstreams_arg;
};

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

/* One tools/call in flight; owned by the tool from submit until done or
 * cancel. */
struct exec_run {
	struct exec_tool *t;
	struct mcpx_call *call;
	struct mcpx_job *job;
	bool submitting; /* inside mcpx_executor_submit */
	bool done_early; /* done arrived during submit: free after it returns */
	struct mcpx_progress progress; /* progress.call: NULL once finished */
};

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
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = mcpx_utf8_next(s + i, len - i, &cp);
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

/* One element of `files`: {path, content} or {path, content_base64}. */
static int parse_file(const cJSON *f, size_t i, struct mcpx_runfiles_in *in, char *msg,
                      size_t msglen)
{
	const cJSON *path, *text, *b64, *el, *content;
	struct mcpx_err err = {{0}};
	char repr[48];

	if (!cJSON_IsObject(f)) {
		json_repr(f, repr, sizeof(repr));
		snprintf(
		    msg, msglen,
		    "files[%zu]: %s is not an object {path, content} or {path, content_base64}", i,
		    repr);
		return -EINVAL;
	}
	cJSON_ArrayForEach(el, f)
	{
		if (strcmp(el->string, "path") && strcmp(el->string, "content") &&
		    strcmp(el->string, "content_base64")) {
			snprintf(msg, msglen,
			         "files[%zu]: unexpected property (allowed: path, content, "
			         "content_base64)",
			         i);
			return -EINVAL;
		}
	}
	path = cJSON_GetObjectItemCaseSensitive(f, "path");
	text = cJSON_GetObjectItemCaseSensitive(f, "content");
	b64 = cJSON_GetObjectItemCaseSensitive(f, "content_base64");
	if (!cJSON_IsString(path) || (text && !cJSON_IsString(text)) ||
	    (b64 && !cJSON_IsString(b64))) {
		snprintf(msg, msglen,
		         "files[%zu]: path, content and content_base64 must be strings, and path "
		         "is required",
		         i);
		return -EINVAL;
	}
	if (!text == !b64) {
		snprintf(msg, msglen,
		         "files[%zu]: give exactly one of content (UTF-8 text) and content_base64",
		         i);
		return -EINVAL;
	}
	content = text ? text : b64;
	if (mcpx_runfiles_add(in, path->valuestring, strlen(path->valuestring),
	                      content->valuestring, strlen(content->valuestring), b64 != NULL,
	                      &err) == 0)
		return 0;
	json_repr(path, repr, sizeof(repr));
	snprintf(msg, msglen, "files[%zu] (path %s): %s", i, repr, err.msg);
	return -EINVAL;
}

/* `files` into decoded input files: every path checked, base64 decoded,
 * caps applied. *out stays NULL for an absent or empty list. */
static int parse_files(const cJSON *files, const struct mcpx_config *cfg,
                       struct mcpx_runfiles_in **out, char *msg, size_t msglen)
{
	struct mcpx_runfiles_in *in;
	const cJSON *f;
	size_t i = 0;

	*out = NULL;
	if (!files || cJSON_GetArraySize(files) == 0)
		return 0;
	in = malloc(sizeof(*in));
	if (!in) {
		snprintf(msg, msglen, "internal error: out of memory");
		return -EINVAL;
	}
	mcpx_runfiles_in_init(in, cfg->max_files_in_bytes);
	cJSON_ArrayForEach(f, files)
	{
		if (parse_file(f, i++, in, msg, msglen) < 0) {
			mcpx_runfiles_in_free(in);
			free(in);
			return -EINVAL;
		}
	}
	*out = in;
	return 0;
}

/* Lists properties other than code, timeout_s and stdin in msg, as go-sdk's
 * additionalProperties check words it. Returns -EINVAL when there are any. */
static int check_extra(const cJSON *args, char *msg, size_t msglen)
{
	char extra[256] = "";
	unsigned n_extra = 0;
	const cJSON *el;

	cJSON_ArrayForEach(el, args)
	{
		if (strcmp(el->string, "code") == 0 || strcmp(el->string, "timeout_s") == 0 ||
		    strcmp(el->string, "stdin") == 0 || strcmp(el->string, "files") == 0 ||
		    strcmp(el->string, "language") == 0)
			continue;
		if (n_extra++)
			strncat(extra, " ", sizeof(extra) - strlen(extra) - 1);
		append_quoted(extra, sizeof(extra), el->string);
	}
	if (!n_extra)
		return 0;
	snprintf(msg, msglen,
	         "validating \"arguments\": validating root: unexpected additional "
	         "properties [%s] (allowed: code, timeout_s, stdin, files, language)",
	         extra);
	return -EINVAL;
}

/* 0 or absent means the default; everything else is clamped, never
 * rejected, as in the Go server. */
static unsigned clamp_timeout(const cJSON *timeout, const struct mcpx_config *cfg)
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
	return t > max ? max : t;
}

/* The code's own rules, which no schema says: not blank, no NUL, not too long. */
static int check_code(const cJSON *code, const struct mcpx_config *cfg, char *msg, size_t msglen)
{
	size_t len = strlen(code->valuestring);

	if (blank(code->valuestring, len)) {
		snprintf(msg, msglen, "code must not be empty");
		return -EINVAL;
	}
	/* Python refuses source with a NUL byte ("source code string cannot
	 * contain null bytes"); saying so here is clearer than its traceback,
	 * and the code travels on as a C string. */
	if (mcpx_json_has_nul(code)) {
		snprintf(msg, msglen, "code must not contain NUL characters (U+0000)");
		return -EINVAL;
	}
	if (cfg->max_code_bytes && len > cfg->max_code_bytes) {
		snprintf(msg, msglen, "code exceeds limit of %zu bytes", cfg->max_code_bytes);
		return -EINVAL;
	}
	return 0;
}

/*
 * The shape of exec's arguments in the Go server's words: the root's type,
 * the properties' types, additionalProperties, then required, in the order
 * its schema check reports them. The schema (exec_args) decides whether
 * the shape is right; this runs only to word a refusal, and for
 * mcpx_exec_parse_args. Returns -EINVAL with msg set, or 0 when it finds
 * nothing to say.
 */
static int word_shape(const cJSON *args, char *msg, size_t msglen)
{
	const cJSON *code, *timeout, *in, *files, *lang;
	int rc;

	/* No "arguments" at all reads as {}, so the client hears that code is
	 * missing rather than something about null. */
	if (args && !cJSON_IsObject(args))
		return type_error(msg, msglen, "root", args, "object");

	code = args ? cJSON_GetObjectItemCaseSensitive(args, "code") : NULL;
	timeout = args ? cJSON_GetObjectItemCaseSensitive(args, "timeout_s") : NULL;
	in = args ? cJSON_GetObjectItemCaseSensitive(args, "stdin") : NULL;
	files = args ? cJSON_GetObjectItemCaseSensitive(args, "files") : NULL;
	lang = args ? cJSON_GetObjectItemCaseSensitive(args, "language") : NULL;

	if (code && !cJSON_IsString(code))
		return type_error(msg, msglen, "/properties/code", code, "string");
	if (timeout && !is_integer(timeout))
		return type_error(msg, msglen, "/properties/timeout_s", timeout, "integer");
	if (in && !cJSON_IsString(in))
		return type_error(msg, msglen, "/properties/stdin", in, "string");
	if (files && !cJSON_IsArray(files))
		return type_error(msg, msglen, "/properties/files", files, "array");
	if (lang && !cJSON_IsString(lang))
		return type_error(msg, msglen, "/properties/language", lang, "string");
	if (args && (rc = check_extra(args, msg, msglen)) < 0)
		return rc;
	if (!code) {
		snprintf(msg, msglen,
		         "validating \"arguments\": validating root: required: missing properties: "
		         "[\"code\"]");
		return -EINVAL;
	}
	return 0;
}

/*
 * Arguments of the right shape (the schema's, or word_shape's, verdict)
 * into out, with what no schema says: the code not blank, without NUL and
 * within its cap, stdin within its cap, and each input file's path and
 * content (runfiles.h). Returns 0 (free out with mcpx_exec_args_free), or
 * -EINVAL (-ENOMEM) with msg set and nothing to free.
 */
static int take_args(const cJSON *args, const struct mcpx_config *cfg, struct mcpx_exec_args *out,
                     char *msg, size_t msglen)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(args, "code");
	const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(args, "timeout_s");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(args, "stdin");
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(args, "files");
	const cJSON *lang = cJSON_GetObjectItemCaseSensitive(args, "language");
	int rc;

	if ((rc = check_code(code, cfg, msg, msglen)) < 0)
		return rc;
	/* stdin is data: its exact bytes, NULs included. Its length is the
	 * parsed string's, where each U+0000 counts as its one byte. */
	if (in && strlen(in->valuestring) > cfg->max_stdin_bytes) {
		snprintf(msg, msglen, "stdin exceeds limit of %zu bytes", cfg->max_stdin_bytes);
		return -EINVAL;
	}
	if (in && !(out->stdin_data = mcpx_json_bytes(in, &out->stdin_len))) {
		snprintf(msg, msglen, "internal error: out of memory");
		return -ENOMEM;
	}
	out->code = code->valuestring;
	out->code_len = strlen(code->valuestring);
	out->timeout_s = clamp_timeout(timeout, cfg);
	out->language = lang ? lang->valuestring : NULL;
	/* Last: input files are decoded into memory of their own. */
	rc = parse_files(files, cfg, &out->files, msg, msglen);
	if (rc < 0)
		mcpx_exec_args_free(out);
	return rc;
}

int mcpx_exec_parse_args(const cJSON *args, const struct mcpx_config *cfg,
                         struct mcpx_exec_args *out, char *msg, size_t msglen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	msg[0] = '\0';
	rc = word_shape(args, msg, msglen);
	return rc < 0 ? rc : take_args(args, cfg, out, msg, msglen);
}

/* Python alone when the tool was given no languages. */
static bool lang_available(const struct mcpx_languages *langs, int l)
{
	return langs ? (langs->mask & (1u << l)) != 0 : l == MCPX_LANG_PYTHON;
}

/* More than Python on offer: the tool's texts name the languages. */
static bool multilingual(const struct mcpx_languages *langs)
{
	return langs && (langs->mask & ~(1u << MCPX_LANG_PYTHON)) != 0;
}

/* "python, bash, javascript": the languages on offer. */
static void lang_list(const struct mcpx_languages *langs, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int l = 0; l < MCPX_LANG_COUNT; l++)
		if (lang_available(langs, l) && o < cap)
			o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? ", " : "",
			                      mcpx_lang_name((enum mcpx_lang)l));
}

int mcpx_exec_language(const struct mcpx_exec_args *a, const struct mcpx_languages *langs,
                       char *msg, size_t msglen)
{
	char repr[48] = "a string", list[64];
	int l;

	if (!a->language)
		return MCPX_LANG_PYTHON;
	l = mcpx_lang_from_name(a->language, strlen(a->language));
	if (l >= 0 && lang_available(langs, l)) {
		/* The code's own file, as main.py is for Python (runfiles.c). */
		for (size_t i = 0; a->files && i < a->files->n; i++)
			if (strcmp(a->files->v[i].path, mcpx_lang_main_file((enum mcpx_lang)l)) == 0) {
				snprintf(msg, msglen, "files[%zu] (path \"%s\"): %s is where the code goes",
					 i, a->files->v[i].path, a->files->v[i].path);
				return -EINVAL;
			}
		return l;
	}
	{
		cJSON tmp = {.type = cJSON_String, .valuestring = (char *)a->language};
		json_repr(&tmp, repr, sizeof(repr));
	}
	lang_list(langs, list, sizeof(list));
	snprintf(msg, msglen, "language %s is not available on this server (available: %s)", repr,
	         list);
	return -EINVAL;
}

void mcpx_exec_args_free(struct mcpx_exec_args *a)
{
	free(a->stdin_data);
	a->stdin_data = NULL;
	if (a->files) {
		mcpx_runfiles_in_free(a->files);
		free(a->files);
		a->files = NULL;
	}
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

/* ---- files from out/ --------------------------------------------------- */

/* A base64 JSON string of (data, len); NULL when out of memory. */
static cJSON *base64_string(const char *data, size_t len)
{
	char *enc = malloc(mcpx_base64_encoded_len(len) + 1);
	cJSON *item;

	if (!enc)
		return NULL;
	mcpx_base64_encode(data, len, enc);
	item = cJSON_CreateString(enc);
	free(enc);
	return item;
}

/* file:///out/... with every byte outside RFC 3986's unreserved set and "/"
 * percent-encoded (names are the run's bytes, not necessarily UTF-8). */
static cJSON *file_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	char *uri = malloc(8 + n * 3 + 1), *o;
	cJSON *item;

	if (!uri)
		return NULL;
	o = uri + sprintf(uri, "file:///");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	item = cJSON_CreateString(uri);
	free(uri);
	return item;
}

/* One structuredContent.files entry; reason only when not returned, and
 * mime_type and sha256 null for a file the server did not read. */
static cJSON *file_entry(const struct mcpx_runfile_out *f)
{
	bool got = f->status == MCPX_RUNFILE_RETURNED;
	cJSON *e = cJSON_CreateObject();

	if (!mcpx_json_add_owned(e, "path", output_string(f->path, strlen(f->path))) ||
	    !cJSON_AddNumberToObject(e, "bytes", (double)f->bytes) ||
	    !mcpx_json_add_owned(e, "mime_type", nullable_string(got ? f->mime : NULL)) ||
	    !mcpx_json_add_owned(e, "sha256", nullable_string(got ? f->sha256 : NULL)) ||
	    !cJSON_AddBoolToObject(e, "returned", got) ||
	    (!got && !cJSON_AddStringToObject(e, "reason", mcpx_runfiles_reason(f->status)))) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

static cJSON *file_list(const struct mcpx_runfiles_out *files)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; list && files && i < files->n; i++) {
		cJSON *e = file_entry(&files->v[i]);
		if (!e || !cJSON_AddItemToArray(list, e)) {
			cJSON_Delete(e);
			cJSON_Delete(list);
			return NULL;
		}
	}
	return list;
}

/* The content block of a returned file: an image (PNG, JPEG, GIF, WebP by
 * content) or an embedded resource, its text or its bytes as a blob. Both
 * exist in every protocol version we speak (2024-11-05 on). */
static cJSON *file_block(const struct mcpx_runfile_out *f)
{
	cJSON *b = cJSON_CreateObject(), *r;
	bool ok;

	if (f->kind == MCPX_RUNFILE_IMAGE) {
		ok = cJSON_AddStringToObject(b, "type", "image") &&
		     mcpx_json_add_owned(b, "data", base64_string(f->data, f->len)) &&
		     cJSON_AddStringToObject(b, "mimeType", f->mime);
	} else {
		ok = cJSON_AddStringToObject(b, "type", "resource") &&
		     (r = cJSON_AddObjectToObject(b, "resource")) &&
		     mcpx_json_add_owned(r, "uri", file_uri(f->path)) &&
		     cJSON_AddStringToObject(r, "mimeType", f->mime) &&
		     (f->kind == MCPX_RUNFILE_TEXT
		          ? cJSON_AddStringToObject(r, "text", f->data) != NULL
		          : mcpx_json_add_owned(r, "blob", base64_string(f->data, f->len)));
	}
	if (!ok) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}

static bool add_file_blocks(cJSON *content, const struct mcpx_runfiles_out *files)
{
	for (size_t i = 0; files && i < files->n; i++) {
		cJSON *b;

		if (files->v[i].status != MCPX_RUNFILE_RETURNED)
			continue;
		b = file_block(&files->v[i]);
		if (!b || !cJSON_AddItemToArray(content, b)) {
			cJSON_Delete(b);
			return false;
		}
	}
	return true;
}

/* ---- the result ----------------------------------------------------------- */

/* A tool error for a job that did not run (or whose files could not be
 * read). */
static cJSON *unrun_result(const struct mcpx_job_result *res)
{
	switch (res->status) {
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
	case MCPX_JOB_DONE:
	default:
		return error_result(res->message[0]
		                        ? res->message
		                        : "server is shutting down: the execution did not run");
	}
}

/* The structuredContent of a finished run; NULL when out of memory. Field
 * order follows the Go server's ExecResult (the six required fields), then
 * our additive ones. */
static cJSON *structured_result(const struct mcpx_job_result *res)
{
	cJSON *sc = cJSON_CreateObject();
	const char *signame = res->signal > 0 ? sigabbrev_np(res->signal) : NULL;
	char sig[32];

	if (res->signal > 0) {
		if (signame)
			snprintf(sig, sizeof(sig), "SIG%s", signame);
		else
			snprintf(sig, sizeof(sig), "SIG%d", res->signal);
	}
	if (!mcpx_json_add_owned(sc, "stdout", output_string(res->stdout_buf, res->stdout_len)) ||
	    !mcpx_json_add_owned(sc, "stderr", output_string(res->stderr_buf, res->stderr_len)) ||
	    !cJSON_AddNumberToObject(sc, "exit_code", res->exit_code) ||
	    !cJSON_AddNumberToObject(sc, "duration_ms", (double)res->duration_ms) ||
	    !cJSON_AddBoolToObject(sc, "truncated", res->truncated) ||
	    !cJSON_AddBoolToObject(sc, "timed_out", res->timed_out) ||
	    !mcpx_json_add_owned(sc, "signal", nullable_string(res->signal > 0 ? sig : NULL)) ||
	    !mcpx_json_add_owned(sc, "limit", nullable_string(res->limit)) ||
	    !cJSON_AddNumberToObject(sc, "cpu_ms", (double)res->cpu_ms) ||
	    !cJSON_AddNumberToObject(sc, "max_rss_kb", (double)res->max_rss_kb) ||
	    !mcpx_json_add_owned(sc, "files", file_list(res->files)) ||
	    !cJSON_AddBoolToObject(sc, "files_truncated", res->files && res->files->truncated)) {
		cJSON_Delete(sc);
		return NULL;
	}
	return sc;
}

cJSON *mcpx_exec_result(const struct mcpx_job_result *res)
{
	cJSON *sc, *out, *content, *block;
	char *text;

	if (res->status != MCPX_JOB_DONE)
		return unrun_result(res);
	sc = structured_result(res);
	if (!sc)
		return NULL;

	/* "A tool that returns structured content SHOULD also return the
	 * serialized JSON in a TextContent block" (server/tools, 2025-06-18+),
	 * which is also what the Go server does. It comes first; the files
	 * returned from out/ follow. */
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
	    !add_file_blocks(content, res->files) ||
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
 * allows (functions.c refuses the others). */
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
static char *with_upstreams_sentence(char *d, const struct exec_tool *t, const struct exec_view *v)
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
static void view_for(const struct exec_tool *t, const char *caller, struct exec_view *v)
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
		&b,
		" Network: `import mcpx`, then `r = mcpx.fetch(url, method=\"GET\", headers=None, "
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

static char *description(const struct exec_tool *t, const struct exec_view *v)
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
	             "directory: nothing persists between calls (no files, no variables). "
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
		if (lang_available(langs, l) &&
		    !cJSON_AddItemToArray(e, cJSON_CreateString(mcpx_lang_name((enum mcpx_lang)l))))
			return NULL;
	return e && cJSON_AddStringToObject(p, "default", "python") ? p : NULL;
}

static cJSON *input_schema(const struct mcpx_config *cfg, const struct mcpx_languages *langs)
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
	    !files_out_schema(props) ||
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
static cJSON *exec_describe_for(const struct mcpx_tool *tool, const char *caller)
{
	const struct exec_tool *t = tool->ctx;
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

	if (!desc || !cJSON_AddStringToObject(d, "name", TOOL_NAME) ||
	    !cJSON_AddStringToObject(d, "title", title) ||
	    !cJSON_AddStringToObject(d, "description", desc) ||
	    !mcpx_json_add_owned(d, "inputSchema", input_schema(t->cfg, t->langs)) ||
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

static cJSON *exec_describe(const struct mcpx_tool *tool)
{
	return exec_describe_for(tool, NULL);
}

/* ---- running ---------------------------------------------------------- */

static void on_done(void *arg, const struct mcpx_job_result *res)
{
	struct exec_run *run = arg;

	/* mcpx_call_finish frees the call; the run goes right after, or after
	 * submit returns when the executor answered from inside it. */
	mcpx_metrics_tool_call(TOOL_NAME, res->status == MCPX_JOB_DONE     ? "ok"
	                                  : res->status == MCPX_JOB_FAILED ? "failed"
	                                                                   : "busy");
	mcpx_call_finish(run->progress.call, mcpx_exec_result(res));
	run->progress.call = NULL;
	if (run->submitting)
		run->done_early = true;
	else
		free(run);
}

static void on_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct exec_run *run = arg;

	mcpx_progress_event(&run->progress, run->job, ev, pos);
}

/* The tool error for a job the executor refused. */
static void submit_error(const struct exec_tool *t, int rc, char *msg, size_t len)
{
	struct mcpx_executor_stats st;

	if (rc == -EBUSY) {
		mcpx_executor_stats(t->ex, &st);
		snprintf(msg, len, "server busy: %zu executions already queued (limit %u); try again later",
		         st.queue_depth, t->cfg->max_queue);
	} else if (rc == -EUSERS || rc == -EAGAIN) {
		mcpx_executor_share_text(t->ex, msg, len);
	} else if (rc == -ESHUTDOWN) {
		snprintf(msg, len, "server is shutting down: not accepting new executions");
	} else {
		snprintf(msg, len, "internal error: could not queue the execution (%s)",
		         strerror(-rc));
	}
}

/*
 * exec's arguments, checked once: by the validator against the inputSchema
 * exec publishes (so what the schema says is what holds, the later values
 * of a key an object repeats included), then for what no schema says
 * (take_args, the language on offer). A refusal is worded as before the
 * validator existed, by the same checks in the same order (the Go server's
 * messages where it has them, and the language on offer named), and in the
 * validator's words where none of them finds the fault.
 */
static int exec_args(const struct exec_tool *t, const cJSON *args, struct mcpx_exec_args *a,
                     enum mcpx_lang *lang, char *msg, size_t msglen)
{
	struct mcpx_schema_errors errs;
	cJSON *none = NULL;
	int rc, verdict;

	memset(a, 0, sizeof(*a));
	msg[0] = '\0';
	/* No "arguments" at all is validated as {}. */
	if (!args && !(args = none = cJSON_CreateObject())) {
		snprintf(msg, msglen, "internal error: out of memory");
		return -ENOMEM;
	}
	rc = verdict = mcpx_schema_validate(t->schema, args, &errs);
	if (rc == -ENOMEM && errs.count == 0) {
		snprintf(msg, msglen, "internal error: out of memory validating the arguments");
		goto out;
	}
	rc = verdict == 0 ? take_args(args, t->cfg, a, msg, msglen)
	                  : mcpx_exec_parse_args(args, t->cfg, a, msg, msglen);
	if (rc == 0) {
		/* Before the validator's words for an enum: it names the
		 * languages on offer. */
		rc = mcpx_exec_language(a, t->langs, msg, msglen);
		if (rc >= 0 && verdict < 0) {
			mcpx_schema_errors_format(&errs, "invalid arguments", msg, msglen);
			rc = verdict;
		}
		if (rc < 0)
			mcpx_exec_args_free(a);
		else
			*lang = (enum mcpx_lang)rc;
	}
out:
	cJSON_Delete(none);
	return rc < 0 ? rc : 0;
}

static void exec_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	struct exec_tool *t = tool->ctx;
	struct mcpx_exec_args a;
	struct mcpx_job_spec spec;
	struct mcpx_job_callbacks cb;
	const struct mcpx_profile *pr;
	struct exec_run *run;
	char msg[MCPX_SCHEMA_ERRORS_TEXT + 256];
	enum mcpx_lang lang = MCPX_LANG_PYTHON;
	int rc;

	if (exec_args(t, args, &a, &lang, msg, sizeof(msg)) < 0) {
		mcpx_metrics_tool_call(TOOL_NAME, "invalid_arguments");
		mcpx_call_fail(call, msg);
		return;
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		mcpx_exec_args_free(&a);
		mcpx_call_fail(call, "internal error: out of memory");
		return;
	}
	run->t = t;
	run->progress.call = call;
	mcpx_call_set_data(call, run);

	pr = mcpx_policy_profile_for(mcpx_policy_store_current(t->policy), mcpx_call_caller(call));
	spec = (struct mcpx_job_spec){
	    .code = a.code,
	    .code_len = a.code_len,
	    .stdin_data = a.stdin_data,
	    .stdin_len = a.stdin_len,
	    .timeout_s = a.timeout_s,
	    .request_id = mcpx_call_id_text(call),
	    .caller = mcpx_call_caller(call),
	    .profile = pr ? pr->name : NULL,
	    .limits = pr ? &pr->limits : NULL,
	    .client = mcpx_call_client(call),
	    .files = a.files,
	    .language = lang,
	};
	cb = (struct mcpx_job_callbacks){.done = on_done, .event = on_event, .arg = run};

	run->submitting = true;
	rc = mcpx_executor_submit(t->ex, &spec, &cb, &run->job);
	run->submitting = false;
	/* Submit copied stdin; an accepted job took the files, a rejected one
	 * left them to us. */
	if (rc == 0)
		a.files = NULL;
	mcpx_exec_args_free(&a);

	if (rc < 0) {
		/* A rejected job never calls back, so the call is still ours. */
		mcpx_call_set_data(call, NULL);
		free(run);
		submit_error(t, rc, msg, sizeof(msg));
		mcpx_metrics_tool_call(TOOL_NAME, rc == -ENOMEM ? "failed" : "busy");
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
	mcpx_metrics_tool_call(TOOL_NAME, "cancelled");
	if (run->job)
		mcpx_executor_cancel(t->ex, run->job);
	mcpx_call_set_data(call, NULL);
	free(run);
}

struct mcpx_tool *mcpx_tool_exec_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                     const struct mcpx_languages *langs)
{
	struct exec_tool *t = calloc(1, sizeof(*t));
	cJSON *schema = input_schema(cfg, langs);
	struct mcpx_err err = {{0}};

	/* The schema exec publishes is compiled like a function's: a keyword
	 * the validator does not know would be a bug here, so no start. */
	if (!t || !schema || mcpx_schema_compile(schema, &t->schema, &err) < 0) {
		if (err.msg[0])
			mcpx_error("exec's own inputSchema: %s", err.msg);
		cJSON_Delete(schema);
		free(t);
		return NULL;
	}
	cJSON_Delete(schema);
	t->cfg = cfg;
	t->ex = ex;
	t->langs = langs;
	t->base.name = TOOL_NAME;
	t->base.describe = exec_describe;
	t->base.describe_for = exec_describe_for;
	t->base.call = exec_call;
	t->base.cancel = exec_cancel;
	t->base.ctx = t;
	return &t->base;
}

void mcpx_tool_exec_set_policy(struct mcpx_tool *tool, const struct mcpx_policy_store *policy)
{
	struct exec_tool *t = tool->ctx;

	t->policy = policy;
}

void mcpx_tool_exec_set_upstreams(struct mcpx_tool *tool,
                                  char *(*fn)(void *arg, const struct mcpx_egress_grant *g),
                                  void *arg)
{
	struct exec_tool *t = tool->ctx;

	t->upstreams = fn;
	t->upstreams_arg = arg;
}

void mcpx_tool_exec_free(struct mcpx_tool *tool)
{
	struct exec_tool *t = tool ? tool->ctx : NULL;

	if (!t)
		return;
	mcpx_schema_free(t->schema);
	free(t);
}
