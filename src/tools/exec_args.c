/*
 * exec_args.c - the `exec` tool's arguments: their shape worded as the Go
 * server's go-sdk schema check words it, what no schema says (the code not
 * blank, no NUL, the caps, stdin, the input files), the language on offer,
 * and the one check a call goes through (the validator against exec's own
 * published inputSchema, then the rest).
 *
 * It does not publish the schema (exec_describe.c), submit anything or
 * build a result: its product is a struct mcpx_exec_args or a message for
 * the client.
 */
#include "exec_args.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jsonrpc.h"
#include "jsonschema.h"
#include "runfiles.h"
#include "utf8.h"

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

/* Appends a Go-%q-like quoted name to buf. A name too long for the room
 * left is cut between characters, never inside one: the message goes out
 * in a JSON string, which must be UTF-8 (a cut inside "é" was what
 * fuzz_mcp's extra_key_cut found). */
static void append_quoted(char *buf, size_t cap, const char *name)
{
	size_t o = strlen(buf), rest = strlen(name);

	if (o + 1 < cap)
		buf[o++] = '"';
	for (const char *p = name; *p;) {
		unsigned char ch = (unsigned char)*p;
		uint32_t cp;
		size_t n = mcpx_utf8_next(p, rest, &cp);
		bool esc = ch == '"' || ch == '\\', keep = esc || (ch >= 0x20 && ch != 0x7F);

		/* Room for the character, the closing quote and the NUL. */
		if (keep && o + (esc ? 2 : n) + 2 > cap)
			break;
		if (esc)
			buf[o++] = '\\';
		if (keep) {
			memcpy(buf + o, p, n);
			o += n;
		}
		p += n;
		rest -= n;
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

/* exec's arguments and their JSON Schema types, in the order the Go
 * server's schema check reports a wrong type; what the inputSchema
 * (exec_describe.c) publishes. A new argument is one row here. */
static const struct arg_prop {
	const char *name;
	const char *type;
} arg_props[] = {
    {"code", "string"},
    {"timeout_s", "integer"},
    {"stdin", "string"},
    {"files", "array"},
    {"language", "string"},
    {"workspace", "string"},
    {"workspace_reset", "boolean"},
};

#define N_ARG_PROPS (sizeof(arg_props) / sizeof(arg_props[0]))

static bool known_prop(const char *name)
{
	for (size_t i = 0; i < N_ARG_PROPS; i++)
		if (strcmp(name, arg_props[i].name) == 0)
			return true;
	return false;
}

/* Lists the properties arg_props does not name in msg, as go-sdk's
 * additionalProperties check words it. Returns -EINVAL when there are any. */
static int check_extra(const cJSON *args, char *msg, size_t msglen)
{
	char extra[256] = "", allowed[128] = "";
	unsigned n_extra = 0;
	const cJSON *el;

	cJSON_ArrayForEach(el, args)
	{
		if (known_prop(el->string))
			continue;
		if (n_extra++)
			strncat(extra, " ", sizeof(extra) - strlen(extra) - 1);
		append_quoted(extra, sizeof(extra), el->string);
	}
	if (!n_extra)
		return 0;
	for (size_t i = 0, o = 0; i < N_ARG_PROPS && o < sizeof(allowed); i++)
		o += (size_t)snprintf(allowed + o, sizeof(allowed) - o, "%s%s", i ? ", " : "",
		                      arg_props[i].name);
	snprintf(msg, msglen,
	         "validating \"arguments\": validating root: unexpected additional "
	         "properties [%s] (allowed: %s)",
	         extra, allowed);
	return -EINVAL;
}

/* A workspace's name: ^[a-z0-9][a-z0-9_.-]{0,63}$, as the inputSchema's
 * pattern says (the schema is not published when workspaces are off, so
 * this holds on its own). */
static int check_workspace(const cJSON *ws, char *msg, size_t msglen)
{
	const char *s = ws->valuestring;
	size_t n = strlen(s);
	bool ok = n >= 1 && n <= MCPX_EXEC_WORKSPACE_NAME_MAX && !mcpx_json_has_nul(ws);

	for (size_t i = 0; ok && i < n; i++) {
		char c = s[i];
		ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		     (i > 0 && (c == '_' || c == '.' || c == '-'));
	}
	if (ok)
		return 0;
	snprintf(msg, msglen,
	         "workspace must be 1 to %d characters of a-z, 0-9, '_', '.' and '-', starting "
	         "with a letter or digit (^[a-z0-9][a-z0-9_.-]{0,63}$)",
	         MCPX_EXEC_WORKSPACE_NAME_MAX);
	return -EINVAL;
}

/* 0 or absent means the default; everything else is clamped, never
 * rejected, as in the Go server. */
static unsigned clamp_to(const cJSON *timeout, const struct mcpx_config *cfg, unsigned max)
{
	double want = timeout ? timeout->valuedouble : 0;
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

static unsigned clamp_timeout(const cJSON *timeout, const struct mcpx_config *cfg)
{
	return clamp_to(timeout, cfg, cfg->max_timeout_s ? cfg->max_timeout_s : 1);
}

unsigned mcpx_exec_task_timeout(const cJSON *args, const struct mcpx_config *cfg)
{
	const cJSON *timeout = args ? cJSON_GetObjectItemCaseSensitive(args, "timeout_s") : NULL;
	unsigned max = cfg->task_max_timeout_s > cfg->max_timeout_s ? cfg->task_max_timeout_s
	                                                             : cfg->max_timeout_s;

	return clamp_to(cJSON_IsNumber(timeout) ? timeout : NULL, cfg, max ? max : 1);
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
	int rc;

	/* No "arguments" at all reads as {}, so the client hears that code is
	 * missing rather than something about null. */
	if (args && !cJSON_IsObject(args))
		return type_error(msg, msglen, "root", args, "object");
	for (size_t i = 0; args && i < N_ARG_PROPS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, arg_props[i].name);
		char where[64];

		if (!v || strcmp(json_type(v), arg_props[i].type) == 0)
			continue;
		snprintf(where, sizeof(where), "/properties/%s", arg_props[i].name);
		return type_error(msg, msglen, where, v, arg_props[i].type);
	}
	if (args && (rc = check_extra(args, msg, msglen)) < 0)
		return rc;
	if (!args || !cJSON_GetObjectItemCaseSensitive(args, "code")) {
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
	const cJSON *ws = cJSON_GetObjectItemCaseSensitive(args, "workspace");
	const cJSON *reset = cJSON_GetObjectItemCaseSensitive(args, "workspace_reset");
	int rc;

	if ((rc = check_code(code, cfg, msg, msglen)) < 0)
		return rc;
	if (ws && (rc = check_workspace(ws, msg, msglen)) < 0)
		return rc;
	if (reset && cJSON_IsTrue(reset) && !ws) {
		snprintf(msg, msglen, "workspace_reset needs a workspace");
		return -EINVAL;
	}
	out->workspace = ws ? ws->valuestring : NULL;
	out->workspace_reset = reset && cJSON_IsTrue(reset);
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
bool mcpx_exec_lang_offered(const struct mcpx_languages *langs, int l)
{
	return langs ? (langs->mask & (1u << l)) != 0 : l == MCPX_LANG_PYTHON;
}

/* "python, bash, javascript": the languages on offer. */
static void lang_list(const struct mcpx_languages *langs, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int l = 0; l < MCPX_LANG_COUNT; l++)
		if (mcpx_exec_lang_offered(langs, l) && o < cap)
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
	if (l >= 0 && mcpx_exec_lang_offered(langs, l)) {
		/* The code's own file, as main.py is for Python (runfiles.c). */
		for (size_t i = 0; a->files && i < a->files->n; i++)
			if (strcmp(a->files->v[i].path, mcpx_lang_main_file((enum mcpx_lang)l)) ==
			    0) {
				snprintf(msg, msglen,
				         "files[%zu] (path \"%s\"): %s is where the code goes", i,
				         a->files->v[i].path, a->files->v[i].path);
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

/*
 * exec's arguments, checked once: by the validator against the inputSchema
 * exec publishes (so what the schema says is what holds, the later values
 * of a key an object repeats included), then for what no schema says
 * (take_args, the language on offer). A refusal is worded as before the
 * validator existed, by the same checks in the same order (the Go server's
 * messages where it has them, and the language on offer named), and in the
 * validator's words where none of them finds the fault.
 */
int mcpx_exec_args_check(const struct mcpx_schema *schema, const struct mcpx_config *cfg,
                         const struct mcpx_languages *langs, const cJSON *args,
                         struct mcpx_exec_args *a, enum mcpx_lang *lang, char *msg, size_t msglen)
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
	rc = verdict = mcpx_schema_validate(schema, args, &errs);
	if (rc == -ENOMEM && errs.count == 0) {
		snprintf(msg, msglen, "internal error: out of memory validating the arguments");
		goto out;
	}
	rc = verdict == 0 ? take_args(args, cfg, a, msg, msglen)
	                  : mcpx_exec_parse_args(args, cfg, a, msg, msglen);
	if (rc == 0) {
		/* Before the validator's words for an enum: it names the
		 * languages on offer. */
		rc = mcpx_exec_language(a, langs, msg, msglen);
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
