/*
 * exec_result.c - the `exec` tool's result: a finished run encoded as a
 * CallToolResult (structuredContent plus the same JSON in a text block, its
 * output made valid UTF-8 the way the Go server does, NUL bytes kept), the
 * files returned from out/ as image or embedded-resource blocks, and the
 * tool error of a job that did not run.
 *
 * It does not read out/ (runfiles_output.c does, into the job's result) nor decide
 * a run's outcome (the executor does): it only writes down what it is given.
 */
#include "exec_result.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "jsonrpc.h"
#include "runfiles.h"
#include "tool.h"
#include "utf8.h"

/* ---- result encoding -------------------------------------------------- */

/* The letter of JSON's two-character escape for ch ("\\n" for a newline),
 * or 0 when it has none. */
static char short_escape(unsigned char ch)
{
	switch (ch) {
	case '"':
		return '"';
	case '\\':
		return '\\';
	case '\b':
		return 'b';
	case '\f':
		return 'f';
	case '\n':
		return 'n';
	case '\r':
		return 'r';
	case '\t':
		return 't';
	default:
		return 0;
	}
}

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
		char e = short_escape(ch);

		if (e) {
			*o++ = '\\';
			*o++ = e;
		} else if (ch < 0x20) {
			memcpy(o, "\\u00", 4);
			o += 4;
			*o++ = hex[ch >> 4];
			*o++ = hex[ch & 0xF];
		} else {
			*o++ = (char)ch;
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
	text = mcpx_json_print_exact(sc);
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

int mcpx_exec_result_add_workspace(cJSON *result, cJSON *workspace)
{
	cJSON *sc = cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
	cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
	cJSON *block = cJSON_GetArrayItem(content, 0);
	char *text;

	if (!workspace || !cJSON_IsObject(sc) || !cJSON_IsObject(block))
		return -EINVAL;
	if (!cJSON_AddItemToObject(sc, "workspace", workspace))
		return -ENOMEM;
	/* The text block is structuredContent serialised: again, with it. */
	text = cJSON_PrintUnformatted(sc);
	if (!text ||
	    !cJSON_ReplaceItemInObjectCaseSensitive(block, "text", cJSON_CreateString(text))) {
		cJSON_free(text);
		return 0; /* the text block keeps the run's part */
	}
	cJSON_free(text);
	return 0;
}
