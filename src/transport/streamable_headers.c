/*
 * streamable_headers.c - MCP-Protocol-Version, Mcp-Method and Mcp-Name
 * checked against a 2026-07-28 request's body (streamable_headers.h).
 *
 * What it does: the header value's characters (RFC 9110), the comparisons
 * the transport section asks for, and the decoding of Mcp-Name's
 * "=?base64?...?=" sentinel form. What it does not do: decide whether a
 * request is a 2026-07-28 one, or answer it (the core, mcp.c).
 */
#include "streamable_headers.h"

#include <stdlib.h>
#include <string.h>

#include "base64.h"

/* Header values must be visible ASCII, space or tab (RFC 9110, as
 * streamable-http "Value Encoding" restates). */
static bool header_chars_ok(const char *v)
{
	for (; *v; v++) {
		unsigned char ch = (unsigned char)*v;
		if (!(ch == '\t' || (ch >= 0x20 && ch <= 0x7E)))
			return false;
	}
	return true;
}

/* Compares Mcp-Name with the body value, decoding the "=?base64?...?="
 * sentinel form first ("servers MUST decode an encoded Mcp-Name ... before
 * comparing it to the corresponding request body value"). */
static bool header_name_matches(const char *hdr, const char *body)
{
	size_t hl = strlen(hdr);
	static const char pre[] = "=?base64?", suf[] = "?=";

	if (hl >= sizeof(pre) - 1 + sizeof(suf) - 1 && strncmp(hdr, pre, sizeof(pre) - 1) == 0 &&
	    strcmp(hdr + hl - (sizeof(suf) - 1), suf) == 0) {
		size_t enc = hl - (sizeof(pre) - 1) - (sizeof(suf) - 1);
		size_t cap = enc / 4 * 3 + 3;
		char *buf = malloc(cap);
		ssize_t n;
		bool eq;

		if (!buf)
			return false;
		n = mcpx_base64_decode(hdr + sizeof(pre) - 1, enc, buf, cap);
		eq = n >= 0 && (size_t)n == strlen(body) && memcmp(buf, body, (size_t)n) == 0;
		free(buf);
		return eq;
	}
	return strcmp(hdr, body) == 0;
}

static const cJSON *member(const cJSON *obj, const char *name)
{
	return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
}

void mcpx_streamable_headers_init(struct mcpx_req_headers *h, const char *protocol_version,
                                  const char *method, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->protocol_version = protocol_version && protocol_version[0] ? protocol_version : NULL;
	h->method = method && method[0] ? method : NULL;
	h->name = name && name[0] ? name : NULL;
	h->mismatch = mcpx_streamable_header_mismatch;
	h->protocol_version_invalid = h->protocol_version && !header_chars_ok(h->protocol_version);
}

/*
 * Streamable HTTP "Server Validation" (2026-07-28 basic/transports/
 * streamable-http): MCP-Protocol-Version must match _meta's version,
 * Mcp-Method the method, Mcp-Name params.name (or params.uri) for the methods
 * that name something, and params.taskId for the tasks extension's methods
 * (SEP-2663, "Streamable HTTP: Routing Headers": the client "MUST set the
 * Mcp-Name header ... to the value of params.taskId", so that a load
 * balancer can route by task).
 */
const char *mcpx_streamable_header_mismatch(const struct mcpx_req_headers *h,
                                            const char *body_version, const char *method,
                                            const cJSON *params)
{
	const char *named;
	const cJSON *v;

	if (!h->protocol_version)
		return "Header mismatch: the MCP-Protocol-Version header is missing";
	if (!header_chars_ok(h->protocol_version) || strcmp(h->protocol_version, body_version) != 0)
		return "Header mismatch: MCP-Protocol-Version does not match "
		       "_meta io.modelcontextprotocol/protocolVersion";
	if (!h->method)
		return "Header mismatch: the Mcp-Method header is missing";
	if (!header_chars_ok(h->method) || strcmp(h->method, method) != 0)
		return "Header mismatch: Mcp-Method does not match the request method";

	if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
		named = "name";
	else if (strcmp(method, "resources/read") == 0)
		named = "uri";
	else if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
	         strcmp(method, "tasks/cancel") == 0)
		named = "taskId";
	else
		return NULL;
	if (!h->name)
		return "Header mismatch: the Mcp-Name header is missing";
	v = member(params, named);
	if (!header_chars_ok(h->name) || !cJSON_IsString(v) ||
	    !header_name_matches(h->name, v->valuestring))
		return "Header mismatch: Mcp-Name does not match the request body";
	return NULL;
}
