/*
 * jsonrpc.c - JSON-RPC 2.0 message building blocks for the MCP core.
 *
 * Every inbound message is parsed here and every outbound message is
 * assembled and printed here, so the envelope ("jsonrpc":"2.0", the id echo,
 * the error object) is written in one place. The JSON itself is read and
 * written by json.h (strict parsing, U+0000 inside strings, exact
 * numbers); this file gives its refusals their JSON-RPC words. Nothing
 * here decides which JSON-RPC error applies to a message; that is
 * mcp.c's job.
 */
#include "jsonrpc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "utf8.h"

bool mcpx_jsonrpc_id_valid(const cJSON *id)
{
	/* MCP narrows JSON-RPC: "Requests MUST include a string or integer ID"
	 * and "the ID MUST NOT be null" (basic/index, Requests). Numbers that
	 * are not integers are accepted because the schema types RequestId as
	 * string | number, and echoing them back is harmless. */
	return id && (cJSON_IsString(id) || (cJSON_IsNumber(id) && isfinite(id->valuedouble)));
}

bool mcpx_jsonrpc_id_equal(const cJSON *a, const cJSON *b)
{
	if (!mcpx_jsonrpc_id_valid(a) || !mcpx_jsonrpc_id_valid(b))
		return false;
	if (cJSON_IsString(a) && cJSON_IsString(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	/* A string "1" and a number 1 are different ids. */
	if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
		return a->valuedouble == b->valuedouble;
	return false;
}

void mcpx_utf8_copy_trunc(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (cap == 0)
		return;
	n = strlen(src);
	if (n >= cap) {
		n = cap - 1;
		/* Back up over continuation bytes (10xxxxxx) so we never end in
		 * the middle of a multi-byte character. */
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Copies a parsed string (valid UTF-8 plus marks) for display: each mark
 * becomes the text \u0000, and a copy cut short never ends inside a
 * character (as in mcpx_utf8_copy_trunc) or inside that text. */
static void copy_display(char *dst, size_t cap, const char *src)
{
	const char *p = src;
	size_t o = 0;

	for (; *p; p++) {
		bool mark = (unsigned char)*p == MCPX_JSON_NUL_MARK;
		size_t n = mark ? 6 : 1;

		if (o + n >= cap)
			break;
		memcpy(dst + o, mark ? "\\u0000" : p, n);
		o += n;
	}
	/* Stopped before a continuation byte: drop the partial character. */
	if (((unsigned char)*p & 0xC0) == 0x80) {
		while (o > 0 && ((unsigned char)dst[o - 1] & 0xC0) == 0x80)
			o--;
		if (o > 0)
			o--;
	}
	dst[o] = '\0';
}

void mcpx_jsonrpc_id_text(const cJSON *id, char *buf, size_t cap)
{
	if (cap == 0)
		return;
	if (cJSON_IsString(id)) {
		copy_display(buf, cap, id->valuestring);
	} else if (cJSON_IsNumber(id) && isfinite(id->valuedouble)) {
		double d = id->valuedouble;
		/* Integers (the usual id) print without a fraction or exponent. */
		/* Below 1e15 the value fits a long long exactly; the cast is
		 * the integer test (no libm needed). */
		if ((d < 0 ? -d : d) < 1e15 && d == (double)(long long)d)
			snprintf(buf, cap, "%.0f", d);
		else
			snprintf(buf, cap, "%.17g", d);
	} else {
		snprintf(buf, cap, "null");
	}
}

static cJSON *envelope(const cJSON *id)
{
	cJSON *msg = cJSON_CreateObject();
	cJSON *idc = id ? cJSON_Duplicate(id, true) : cJSON_CreateNull();

	if (!msg || !idc || !cJSON_AddStringToObject(msg, "jsonrpc", "2.0") ||
	    !cJSON_AddItemToObject(msg, "id", idc)) {
		if (!cJSON_GetObjectItemCaseSensitive(msg, "id"))
			cJSON_Delete(idc);
		cJSON_Delete(msg);
		return NULL;
	}
	return msg;
}

cJSON *mcpx_jsonrpc_result(const cJSON *id, cJSON *result)
{
	cJSON *msg;

	if (!result)
		return NULL;
	msg = envelope(id);
	if (!msg || !cJSON_AddItemToObject(msg, "result", result)) {
		cJSON_Delete(msg);
		cJSON_Delete(result);
		return NULL;
	}
	return msg;
}

cJSON *mcpx_jsonrpc_error(const cJSON *id, int code, const char *message, cJSON *data)
{
	cJSON *msg = envelope(id);
	cJSON *err = cJSON_CreateObject();

	if (!msg || !err || !cJSON_AddNumberToObject(err, "code", code) ||
	    !cJSON_AddStringToObject(err, "message", message) ||
	    (data && !cJSON_AddItemToObject(err, "data", data)) ||
	    !cJSON_AddItemToObject(msg, "error", err)) {
		if (data && !cJSON_GetObjectItemCaseSensitive(err, "data"))
			cJSON_Delete(data);
		if (!cJSON_GetObjectItemCaseSensitive(msg, "error"))
			cJSON_Delete(err);
		cJSON_Delete(msg);
		return NULL;
	}
	return msg;
}

cJSON *mcpx_jsonrpc_notification(const char *method, cJSON *params)
{
	cJSON *msg = cJSON_CreateObject();

	if (!msg || !cJSON_AddStringToObject(msg, "jsonrpc", "2.0") ||
	    !cJSON_AddStringToObject(msg, "method", method) ||
	    (params && !cJSON_AddItemToObject(msg, "params", params))) {
		if (params && !cJSON_GetObjectItemCaseSensitive(msg, "params"))
			cJSON_Delete(params);
		cJSON_Delete(msg);
		return NULL;
	}
	return msg;
}

/* ---- inbound: parsing ------------------------------------------------- */

cJSON *mcpx_jsonrpc_parse(const char *msg, size_t len, const char **why)
{
	cJSON *root = NULL;
	int rc = mcpx_json_parse(msg, len, &root);

	/* All messages MUST be UTF-8 (2025-03-26+ basic): checked first, so
	 * every string the core echoes back is valid UTF-8. */
	if (rc == -EILSEQ)
		*why = "Parse error: message is not valid UTF-8";
	else if (rc == -EBADMSG)
		*why = "Parse error: unescaped control character";
	else if (rc == -ENOMEM)
		*why = "Parse error: out of memory";
	else if (rc < 0)
		*why = "Parse error";
	return root;
}

bool mcpx_json_add_owned(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return false;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

bool mcpx_json_has_nul(const cJSON *str)
{
	return cJSON_IsString(str) && strchr(str->valuestring, MCPX_JSON_NUL_MARK);
}

char *mcpx_json_bytes(const cJSON *str, size_t *len)
{
	size_t n;
	char *out;

	if (!cJSON_IsString(str))
		return NULL;
	n = strlen(str->valuestring);
	out = malloc(n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i <= n; i++)
		out[i] =
		    str->valuestring[i] == (char)MCPX_JSON_NUL_MARK ? '\0' : str->valuestring[i];
	*len = n;
	return out;
}

/* ---- outbound: printing ----------------------------------------------- */

/* Repairs of outgoing text (utf8_backstop), for the fuzz harnesses. */
static unsigned long repairs;

unsigned long mcpx_jsonrpc_repairs(void)
{
	return repairs;
}

/* Every message leaves as valid UTF-8 (2025-03-26+ basic: "MUST be UTF-8
 * encoded"). Text that is not is a bug before this point (a message cut
 * inside a character, a tool's text not sanitised): the bytes printed
 * since from are repaired, each ill-formed sequence becoming U+FFFD (the
 * printer writes structure in ASCII, so only string contents change), the
 * repair counted and logged once. */
static int utf8_backstop(struct mcpx_buf *out, size_t from)
{
	size_t n = out->len - from, fixed_len = 0;
	char *fixed;
	int rc;

	if (mcpx_utf8_valid(out->data + from, n))
		return 0;
	fixed = mcpx_utf8_sanitize(out->data + from, n, &fixed_len);
	if (!fixed)
		return -ENOMEM;
	out->len = from;
	rc = mcpx_buf_add(out, fixed, fixed_len);
	free(fixed);
	if (!repairs++)
		mcpx_warn("an outgoing message held text that is not UTF-8; it was repaired with "
		          "U+FFFD (a bug: please report it)");
	return rc;
}

int mcpx_jsonrpc_print(const cJSON *msg, struct mcpx_buf *out)
{
	size_t from = out->len;
	int rc = mcpx_json_print(msg, out);

	return rc ? rc : utf8_backstop(out, from);
}
