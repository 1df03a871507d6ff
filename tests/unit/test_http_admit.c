/*
 * test_http_admit.c - the admission gate every HTTP request passes: routes
 * and methods (GET /mcp only with a stream to offer), auth (with a NUL inside the header, and
 * surrounding whitespace), Origin and Host, draining, the MCP-Protocol-Version errors of both
 * protocol eras, body framing, and the order of the checks.
 */
#include <string.h>

#include "auth.h"
#include "check.h"
#include "http_admit.h"
#include "log.h"

#define TOKEN "gate-token-0123"

static struct mcpx_auth *auth;

static struct mcpx_http_field f(const char *s)
{
	return (struct mcpx_http_field){s, s ? strlen(s) : 0};
}

/* A well-formed, authenticated POST /mcp with a small body. */
static struct mcpx_http_head post_mcp(void)
{
	struct mcpx_http_head h;

	memset(&h, 0, sizeof(h));
	h.method = MCPX_HTTP_POST;
	h.path = "/mcp";
	h.host = f("127.0.0.1:8080");
	h.x_mcp_auth = f(TOKEN);
	h.content_length = f("42");
	h.content_type = f("application/json");
	return h;
}

static struct mcpx_admit_policy policy(void)
{
	struct mcpx_admit_policy p;

	memset(&p, 0, sizeof(p));
	p.auth = auth;
	p.allowed_origins = "https://app.example.com";
	p.loopback_listener = true;
	p.max_body_bytes = 1000;
	p.now = 1700000000;
	return p;
}

static int admit(const struct mcpx_http_head *h, const struct mcpx_admit_policy *p,
                 struct mcpx_admit *v)
{
	return mcpx_http_admit(h, p, v);
}

static void test_routes(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_MCP);
	CHECK_INT((int)v.content_length, 42);
	CHECK(v.body_follows && v.authenticated);

	h.method = MCPX_HTTP_GET;
	h.content_length = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 405);
	CHECK_STR(v.extra_headers, "Allow: POST, DELETE\r\n");
	h.method = MCPX_HTTP_DELETE;
	CHECK_INT(admit(&h, &p, &v), 0);

	h.path = "/healthz";
	h.x_mcp_auth = f(NULL); /* operations endpoints need no token */
	h.method = MCPX_HTTP_GET;
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_HEALTHZ);
	CHECK(!v.authenticated);
	h.method = MCPX_HTTP_POST;
	CHECK_INT(admit(&h, &p, &v), 405);

	h = post_mcp();
	h.method = MCPX_HTTP_GET;
	h.content_length = f(NULL);
	h.path = "/sse";
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_SSE_OPEN);
	h.path = "/";
	CHECK_INT(admit(&h, &p, &v), 404);
	p.sse_mode = true; /* the Go server's any-path legacy SSE */
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_SSE_OPEN);
	h.path = "/metrics"; /* reserved paths keep their meaning */
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_METRICS);

	h = post_mcp();
	h.path = "/messages";
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_SSE_POST);
	h.path = "/anything";
	CHECK_INT(admit(&h, &p, &v), 404); /* sse mode needs ?sessionid= */
	h.session_query = true;
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_SSE_POST);
}

/* GET /mcp: a stream of server-initiated messages only where the tool list
 * can change (mcp_stream); it passes every other check a POST does, and
 * other methods than GET, POST and DELETE stay 405. */
static void test_mcp_stream(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	h.method = MCPX_HTTP_GET;
	h.content_length = f(NULL);
	h.accept = f("text/event-stream");
	h.session_id = f("some-session");
	CHECK_INT(admit(&h, &p, &v), 405);
	CHECK_STR(v.extra_headers, "Allow: POST, DELETE\r\n");

	p.mcp_stream = true;
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK_INT(v.route, MCPX_ROUTE_MCP);
	CHECK(v.authenticated && !v.body_follows);

	/* The gate's other checks still apply to it, in their order. */
	h.x_mcp_auth = f("wrong");
	CHECK_INT(admit(&h, &p, &v), 401);
	h.x_mcp_auth = f(TOKEN);
	h.origin = f("https://evil.example.com");
	CHECK_INT(admit(&h, &p, &v), 403);
	h.origin = f(NULL);
	h.protocol_version = f("1999-01-01");
	CHECK_INT(admit(&h, &p, &v), 400);
	CHECK(strstr(v.body, "Unsupported MCP-Protocol-Version") != NULL);
	h.protocol_version = f("2025-11-25");
	CHECK_INT(admit(&h, &p, &v), 0);
	h.content_length = f("5"); /* a GET carries no body */
	CHECK_INT(admit(&h, &p, &v), 400);
	h.content_length = f(NULL);
	p.draining = true;
	CHECK_INT(admit(&h, &p, &v), 503);
	p.draining = false;

	/* Other methods name GET among those allowed; POST and DELETE are
	 * unchanged. */
	h.method = MCPX_HTTP_OTHER;
	CHECK_INT(admit(&h, &p, &v), 405);
	CHECK_STR(v.extra_headers, "Allow: GET, POST, DELETE\r\n");
	h = post_mcp();
	CHECK_INT(admit(&h, &p, &v), 0);
	h.method = MCPX_HTTP_DELETE;
	h.content_length = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 0);

	/* The flag opens nothing else: GET on the other MCP paths. */
	h.method = MCPX_HTTP_GET;
	h.path = "/messages";
	CHECK_INT(admit(&h, &p, &v), 404);
}

static void test_auth(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	/* Every route but the operations endpoints, /messages included. */
	h.x_mcp_auth = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 401);
	CHECK_STR(v.body, "unauthorized\n");
	h.path = "/messages";
	CHECK_INT(admit(&h, &p, &v), 401);
	h.path = "/sse";
	h.method = MCPX_HTTP_GET;
	h.content_length = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 401);

	h = post_mcp();
	h.x_mcp_auth = f("wrong");
	CHECK_INT(admit(&h, &p, &v), 401);
	h.x_mcp_auth = f(NULL);
	h.authorization = f("Bearer " TOKEN);
	CHECK_INT(admit(&h, &p, &v), 0);

	/* Surrounding whitespace is not part of a header value (RFC 9110). */
	h.authorization = f(NULL);
	h.x_mcp_auth = f(" \t" TOKEN "  ");
	CHECK_INT(admit(&h, &p, &v), 0);

	/* A NUL inside the value: the token followed by junk is not the
	 * token, and the value is refused outright. */
	h.x_mcp_auth = (struct mcpx_http_field){TOKEN "\0junk", sizeof(TOKEN) + 4};
	CHECK_INT(admit(&h, &p, &v), 400);
	CHECK_STR(v.body, "invalid header value\n");
	h.x_mcp_auth = (struct mcpx_http_field){TOKEN "\r\nX: y", sizeof(TOKEN) + 5};
	CHECK_INT(admit(&h, &p, &v), 400);

	/* Auth disabled: no token needed, and none is "presented". */
	h = post_mcp();
	h.x_mcp_auth = f(NULL);
	p.auth = NULL;
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK(!v.authenticated);
}

static void test_origin_host_drain(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	h.origin = f("http://evil.example.com");
	CHECK_INT(admit(&h, &p, &v), 403);
	CHECK_STR(v.body, "forbidden origin\n");
	h.origin = f("https://app.example.com");
	CHECK_INT(admit(&h, &p, &v), 0);
	h.origin = f("http://localhost:3000");
	CHECK_INT(admit(&h, &p, &v), 0);

	h = post_mcp();
	h.host = f("evil.example.com");
	CHECK_INT(admit(&h, &p, &v), 403);
	CHECK_STR(v.body, "forbidden host\n");
	p.loopback_listener = false; /* Host is checked on loopback only */
	CHECK_INT(admit(&h, &p, &v), 0);

	/* Auth comes first: a stranger learns nothing about the rest. */
	h.x_mcp_auth = f(NULL);
	p.loopback_listener = true;
	CHECK_INT(admit(&h, &p, &v), 401);

	h = post_mcp();
	p.draining = true;
	CHECK_INT(admit(&h, &p, &v), 503);
	CHECK_STR(v.extra_headers, "Retry-After: 1\r\n");
	h.path = "/readyz";
	h.method = MCPX_HTTP_GET;
	h.content_length = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 0); /* probes still answered */
}

static void test_protocol_header(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	h.protocol_version = f("2025-11-25");
	CHECK_INT(admit(&h, &p, &v), 0);
	h.protocol_version = f(" 2026-07-28\t");
	CHECK_INT(admit(&h, &p, &v), 0);

	/* No session: only 2026-07-28 rules can apply, and they name the
	 * error, UnsupportedProtocolVersionError. */
	h.protocol_version = f("1999-01-01");
	CHECK_INT(admit(&h, &p, &v), 400);
	CHECK_STR(v.content_type, "application/json");
	CHECK_STR(v.body, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32022,"
	                  "\"message\":\"Unsupported protocol version\",\"data\":{\"supported\":["
	                  "\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\","
	                  "\"2024-11-05\"],\"requested\":\"1999-01-01\"}}}");
	/* The error carries the request's id once the body is read. */
	CHECK(v.wants_id);
	{
		static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\","
		                          "\"method\":\"server/discover\"}";
		struct mcpx_admit w = v;

		mcpx_admit_set_id(&w, req, sizeof(req) - 1);
		CHECK(strncmp(w.body, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"error\":{",
		              33) == 0);
		CHECK_INT(w.body_len, strlen(w.body));
		w = v;
		mcpx_admit_set_id(&w, "{\"id\":7}", 8);
		CHECK(strncmp(w.body, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\"", 31) == 0);
		/* No request, no id, an invalid id or a batch: null stays. */
		w = v;
		mcpx_admit_set_id(&w, "{\"id\":null}", 11);
		CHECK_STR(w.body, v.body);
		mcpx_admit_set_id(&w, "[{\"id\":1}]", 10);
		CHECK_STR(w.body, v.body);
		mcpx_admit_set_id(&w, "{\"id\":", 6);
		CHECK_STR(w.body, v.body);
	}
	/* What the client sent is echoed only when it is plainly printable. */
	h.protocol_version = f("2025-11-25\xc3\xa9");
	CHECK_INT(admit(&h, &p, &v), 400);
	CHECK(strstr(v.body, "\"requested\":\"(invalid)\"") != NULL);

	/* Inside a session the earlier revisions apply: 400, plain error. */
	h.protocol_version = f("1999-01-01");
	h.session_id = f("m1.whatever");
	CHECK_INT(admit(&h, &p, &v), 400);
	CHECK_STR(v.body, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                  "\"message\":\"Bad Request: Unsupported MCP-Protocol-Version\"}}");

	/* Only /mcp speaks MCP over headers. */
	h.path = "/messages";
	CHECK_INT(admit(&h, &p, &v), 0);
}

static void test_framing(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	h.content_length = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 411);
	h.content_length = f("42");
	h.transfer_encoding = f("chunked");
	CHECK_INT(admit(&h, &p, &v), 411);
	CHECK(!v.body_follows); /* lws does not decode it: nothing to drop */
	h.transfer_encoding = f(NULL);

	static const char *const bad[] = {
	    "-1", "+5", "4 2", "0x10", "1e3", "5,5", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h.content_length = f(bad[i]);
		CHECK_INT(admit(&h, &p, &v), 400);
		CHECK(!v.body_follows);
	}
	h.content_length = f(" 1000 ");
	CHECK_INT(admit(&h, &p, &v), 0);
	h.content_length = f("1001");
	CHECK_INT(admit(&h, &p, &v), 413);
	/* Refused, but the body still follows: the server reads and drops it
	 * so the client can finish sending and see the answer. */
	CHECK(v.body_follows);
	CHECK_INT((int)v.content_length, 1001);
	h.x_mcp_auth = f(NULL);
	CHECK_INT(admit(&h, &p, &v), 401);
	CHECK(v.body_follows);

	h = post_mcp();
	h.content_length = f("0");
	CHECK_INT(admit(&h, &p, &v), 0);
	CHECK(!v.body_follows);

	h.method = MCPX_HTTP_DELETE;
	h.content_length = f("5");
	CHECK_INT(admit(&h, &p, &v), 400);
	h.content_length = f("0");
	CHECK_INT(admit(&h, &p, &v), 0);
}

static void test_shape(void)
{
	struct mcpx_admit_policy p = policy();
	struct mcpx_http_head h = post_mcp();
	struct mcpx_admit v;

	h.too_large = true;
	CHECK_INT(admit(&h, &p, &v), 431);
	h.too_large = false;
	h.session_id = (struct mcpx_http_field){"m1.a\0b", 6};
	CHECK_INT(admit(&h, &p, &v), 400);
	h.session_id = f(NULL);
	h.mcp_name = f("exec\x7f");
	CHECK_INT(admit(&h, &p, &v), 400);
	h.mcp_name = f("exec\there"); /* HTAB inside is allowed */
	CHECK_INT(admit(&h, &p, &v), 0);
	h.path = NULL;
	CHECK_INT(admit(&h, &p, &v), 404);
}

static void test_helpers(void)
{
	const char *s = " \t a b\t ";
	size_t n = strlen(s);

	mcpx_http_trim(&s, &n);
	CHECK_INT((int)n, 3);
	CHECK(strncmp(s, "a b", 3) == 0);
	s = "   ";
	n = 3;
	mcpx_http_trim(&s, &n);
	CHECK_INT((int)n, 0);
	CHECK(mcpx_http_value_ok("a\tb", 3));
	CHECK(!mcpx_http_value_ok("a\nb", 3));
	CHECK(!mcpx_http_value_ok("a\0b", 3));
}

int main(void)
{
	struct mcpx_err err = {{0}};
	char *tok = strdup(TOKEN);

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	CHECK_INT(mcpx_auth_new(&auth, &tok, "", &err), 0);
	test_routes();
	test_mcp_stream();
	test_auth();
	test_origin_host_drain();
	test_protocol_header();
	test_framing();
	test_shape();
	test_helpers();
	mcpx_auth_free(auth);
	CHECK_DONE();
}
