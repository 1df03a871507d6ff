/*
 * fuzz_http.c - the HTTP request path before any MCP processing: the
 * server's one admission gate (mcpx_http_admit: route, auth, Origin, Host,
 * draining, MCP-Protocol-Version, body framing) over a request head built
 * from the fuzz input, header values as raw bytes (NULs and all), and the
 * session id's verification that the Streamable HTTP transport does next.
 *
 * Beyond the sanitizers it checks what must never happen: a request to an
 * MCP route admitted with a credential that is not exactly the configured
 * token; an admitted body larger than the cap; a verdict whose body
 * overruns its buffer; a session id accepted that is not, byte for byte, the
 * one the server minted; a GET /mcp admitted when the server has no stream
 * to offer (mcp_stream off), or admitted with a body; an unsupported-version
 * error that, given the request's body (the last field stands for it),
 * stops being one JSON object with its error intact.
 *
 * Input: byte 0 holds flags (bit 0 loopback listener, bit 1 sse mode, bit 2
 * draining, bits 3-4 the method, bit 5 a sessionId query, bit 6 auth off,
 * bit 7 mcp_stream: GET /mcp opens a stream),
 * byte 1 picks the path; then fields separated by "\n": host, origin,
 * authorization, x-mcp-auth, content-length, transfer-encoding, expect,
 * accept, content-type, mcp-session-id, mcp-protocol-version, mcp-method,
 * mcp-name, last-event-id, allowed-origins. A session id starting with "@"
 * is the minted id with the rest of the field XORed over it, so near-valid
 * ids are explored too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "auth.h"
#include "http_admit.h"
#include "session.h"

#define TOKEN "fuzz-token-0123456789"
#define NOW ((time_t)1800000000)
#define MAX_BODY 4096
#define N_FIELDS 15

static struct mcpx_auth *auth;
static struct mcpx_sessions *sessions;
static char minted[MCPX_SESSION_ID_MAX];

static void init_once(void)
{
	struct mcpx_err err = {{0}};
	char *token;

	if (auth)
		return;
	/* mcpx_auth_new takes the token over (and wipes it). */
	token = strdup(TOKEN);
	if (mcpx_auth_new(&auth, &token, "", &err) < 0)
		abort();
	sessions = mcpx_sessions_new("fuzz-session-key-0123456789", NULL, 3600);
	if (!sessions || mcpx_session_mint(sessions, "2025-11-25", NOW, minted) < 0)
		abort();
}

static bool equals_token(struct mcpx_http_field f)
{
	mcpx_http_trim(&f.p, &f.len);
	return f.len == strlen(TOKEN) && memcmp(f.p, TOKEN, f.len) == 0;
}

/* True when a presented credential is exactly the token. */
static bool token_is_exact(const struct mcpx_http_head *h)
{
	struct mcpx_http_field a = h->authorization;

	if (equals_token(h->x_mcp_auth))
		return true;
	mcpx_http_trim(&a.p, &a.len);
	if (a.len < 7 || strncasecmp(a.p, "Bearer ", 7) != 0)
		return false;
	a.p += 7;
	a.len -= 7;
	return equals_token(a);
}

static void check_session(struct mcpx_http_field f)
{
	char id[MCPX_SESSION_ID_MAX + 64], version[16];
	size_t n = strlen(minted);

	if (!f.len || f.len >= sizeof(id))
		return;
	if (f.p[0] == '@') {
		/* "@" + bytes XORed over the minted id (1 leaves a byte as it is). */
		memcpy(id, minted, n + 1);
		for (size_t i = 1; i < f.len && i - 1 < n; i++)
			id[i - 1] ^= f.p[i] == 1 ? 0 : (char)(f.p[i] & 0x7f);
	} else {
		memcpy(id, f.p, f.len);
		n = f.len;
		id[n] = '\0';
	}
	if (mcpx_session_verify(sessions, id, n, NOW, version) == 0 &&
	    (n != strlen(minted) || memcmp(id, minted, n) != 0 ||
	     strcmp(version, "2025-11-25") != 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {"/mcp",    "/sse",     "/messages", "/healthz",
	                                    "/readyz", "/metrics", "/other",    "/"};
	struct mcpx_http_field f[N_FIELDS] = {{0}};
	struct mcpx_http_head h = {0};
	struct mcpx_admit_policy pol = {0};
	struct mcpx_admit out;
	const char *p, *end;
	char *allowed;
	size_t i = 0;

	init_once();
	if (size < 2)
		return 0;
	p = (const char *)data + 2;
	end = (const char *)data + size;
	for (; p <= end && i < N_FIELDS; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		f[i].p = p;
		f[i].len = (size_t)((nl ? nl : end) - p);
		p = nl ? nl + 1 : end + 1;
	}
	h.method = (enum mcpx_http_method)((data[0] >> 3) & 3);
	h.path = paths[data[1] & 7];
	h.session_query = data[0] & 0x20;
	h.host = f[0], h.origin = f[1], h.authorization = f[2], h.x_mcp_auth = f[3];
	h.content_length = f[4], h.transfer_encoding = f[5], h.expect = f[6], h.accept = f[7];
	h.content_type = f[8], h.session_id = f[9], h.protocol_version = f[10];
	h.mcp_method = f[11], h.mcp_name = f[12], h.last_event_id = f[13];
	/* The allowed-origins setting is a C string, as configuration is. */
	allowed = strndup(f[14].p ? f[14].p : "", f[14].len);
	if (!allowed)
		return 0;
	pol.auth = data[0] & 0x40 ? NULL : auth;
	pol.allowed_origins = allowed;
	pol.loopback_listener = data[0] & 1;
	pol.sse_mode = data[0] & 2;
	pol.draining = data[0] & 4;
	pol.mcp_stream = data[0] & 0x80;
	pol.max_body_bytes = MAX_BODY;
	pol.now = NOW;

	if (mcpx_http_admit(&h, &pol, &out) != out.status || out.body_len > sizeof(out.body))
		abort();
	if (out.status == 0 && pol.auth &&
	    (out.route == MCPX_ROUTE_MCP || out.route == MCPX_ROUTE_SSE_OPEN ||
	     out.route == MCPX_ROUTE_SSE_POST) &&
	    !token_is_exact(&h))
		abort();
	if (out.status == 0 && out.body_follows && out.content_length > MAX_BODY)
		abort();
	/* GET /mcp only where there is a stream to offer, and never with a
	 * body; with one, only POST, DELETE and GET reach the transport. */
	if (out.status == 0 && out.route == MCPX_ROUTE_MCP && h.method == MCPX_HTTP_GET &&
	    (!pol.mcp_stream || out.body_follows || out.content_length))
		abort();
	if (out.status == 0 && out.route == MCPX_ROUTE_MCP && h.method == MCPX_HTTP_OTHER)
		abort();
	if (out.status == 405 && out.route == MCPX_ROUTE_MCP &&
	    (h.method == MCPX_HTTP_POST || h.method == MCPX_HTTP_DELETE ||
	     (h.method == MCPX_HTTP_GET && pol.mcp_stream)))
		abort();
	/* A refusal that names the request's id: the last field stands for the
	 * body. The error stays one JSON object within its buffer, with an id
	 * that is the body's (or null) and the same error. */
	if (out.wants_id) {
		struct mcpx_admit w = out;
		cJSON *before = cJSON_ParseWithLength(out.body, out.body_len), *after;

		mcpx_admit_set_id(&w, f[14].p ? f[14].p : "", f[14].len);
		if (w.body_len >= sizeof(w.body) || w.body[w.body_len] != '\0' ||
		    strlen(w.body) != w.body_len)
			abort();
		after = cJSON_ParseWithLength(w.body, w.body_len);
		if (!before || !after ||
		    !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(before, "error"),
		                   cJSON_GetObjectItemCaseSensitive(after, "error"), true) ||
		    !cJSON_GetObjectItemCaseSensitive(after, "id"))
			abort();
		cJSON_Delete(before);
		cJSON_Delete(after);
	}
	check_session(h.session_id);
	free(allowed);
	return 0;
}
