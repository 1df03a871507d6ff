/*
 * http_admit.h - the one gate every HTTP request passes before any body byte
 * is read: route, auth, Origin, Host, draining, MCP-Protocol-Version, and
 * the framing of the body (Content-Length, size).
 *
 * The gate is a pure function of a parsed request head and the server's
 * policy, with no libwebsockets types, so it can be unit-tested and fuzzed
 * on its own. Header values arrive as raw (pointer, length) pairs exactly as
 * the client sent them, NULs and all; the gate trims surrounding whitespace
 * (RFC 9110 section 5.5) and refuses values holding control characters, so
 * no later C-string view of a value can differ from what was checked.
 *
 * The verdict either admits the request to a route (status 0) or carries
 * the complete error response to send. The operations endpoints (/healthz,
 * /readyz, /metrics) need no auth, so probes and scrapers need no secret;
 * every other route needs the token when auth is enabled.
 */
#ifndef MCPX_HTTP_ADMIT_H
#define MCPX_HTTP_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "caller.h"
#include "http.h"
#include "http_field.h" /* mcpx_http_trim, which its callers use */

struct mcpx_auth;

/* One header value as received; len 0 means absent (or empty). */
struct mcpx_http_field {
	const char *p;
	size_t len;
};

struct mcpx_http_head {
	enum mcpx_http_method method;
	const char *path;   /* NUL-terminated, without the query */
	bool session_query; /* a sessionId= or sessionid= query argument is present */
	bool too_large;     /* a header the server reads was longer than it accepts */
	struct mcpx_http_field host, origin, authorization, x_mcp_auth;
	struct mcpx_http_field content_length, transfer_encoding, expect;
	struct mcpx_http_field accept, content_type;
	struct mcpx_http_field session_id, protocol_version, mcp_method, mcp_name, last_event_id;
};

struct mcpx_admit_policy {
	struct mcpx_auth *auth;      /* NULL or disabled: no token needed */
	const char *allowed_origins; /* MCP_EXEC_ALLOWED_ORIGINS */
	bool loopback_listener;      /* the Host header must then be loopback too */
	bool sse_mode;               /* MCP_EXEC_TRANSPORT=sse: legacy SSE on any path */
	/* GET /mcp opens a session's stream of server-initiated messages: the
	 * tool list can change (a policy file is configured). Without it GET
	 * /mcp is 405, as the server then never initiates messages. */
	bool mcp_stream;
	bool draining;
	size_t max_body_bytes;
	time_t now; /* for the token file's reload check */
};

enum mcpx_http_route {
	MCPX_ROUTE_NONE,
	MCPX_ROUTE_HEALTHZ,
	MCPX_ROUTE_READYZ,
	MCPX_ROUTE_METRICS,
	MCPX_ROUTE_MCP,
	MCPX_ROUTE_SSE_OPEN,
	MCPX_ROUTE_SSE_POST,
};

struct mcpx_admit {
	enum mcpx_http_route route;
	int status;                /* 0: admitted; otherwise the HTTP status to answer */
	const char *content_type;  /* of body */
	const char *extra_headers; /* NULL or "Name: value\r\n" lines (static text) */
	char body[768];
	size_t body_len;
	size_t content_length; /* the body bytes that follow the head */
	bool body_follows;     /* a POST with a valid, non-zero Content-Length,
	                        * admitted or not: the server reads (or drops) it */
	bool authenticated;    /* the token was presented and matched */
	bool wants_id;         /* body is a JSON-RPC error with "id": null that
	                        * should carry the request's id: the server reads
	                        * the body and calls mcpx_admit_set_id first */
	/* Who: the caller the token belongs to; "" when auth is disabled. */
	char caller[MCPX_CALLER_MAX];
	/* Which of the server's tokens it was (auth.h, mcpx_auth_cred_live);
	 * 0 for none (auth disabled, a ServiceAccount). */
	unsigned long cred;
	/* Admitted on condition: the Bearer token must pass a TokenReview
	 * (auth.h) before the request is dispatched; caller is "" until then. */
	bool review;
};

/* Decides about one request head; always fills *out. Returns out->status. */
int mcpx_http_admit(const struct mcpx_http_head *h, const struct mcpx_admit_policy *p,
                    struct mcpx_admit *out);

/* Puts the id of the JSON-RPC request in body (len bytes, the refused
 * request's body) into out's error body in place of null, when body is one
 * request with a valid id and the result fits; otherwise out stays as it
 * is. For a refusal with wants_id (an unsupported MCP-Protocol-Version:
 * the error must carry the request's id). */
void mcpx_admit_set_id(struct mcpx_admit *out, const char *body, size_t len);

/* True when the value holds no control character (HTAB inside excepted). */
bool mcpx_http_value_ok(const char *p, size_t len);

#endif
