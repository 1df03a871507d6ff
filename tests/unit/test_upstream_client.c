/*
 * test_upstream_client.c - one JSON-RPC message to an upstream MCP server
 * and its answer (upstream_client.h), on real transfers to a loopback
 * server (http_fixture.h) run on the shared curl loop: JSON and event-stream
 * answers (written in pieces, CR line ends, a BOM), the session id (a
 * trailing tab), the credential, a redirect not followed, a connection
 * under allow_cidrs not reused by a request without them, an address
 * refused, a request of the server that is not the response, bytes after
 * the JSON value, the cap counted up to the response whatever the writes
 * (issue 34 item 4), a session the upstream forgot, a timeout, a listening
 * stream whose cap is per event, and a cancelled request that is never
 * reported.
 */
#include "upstream_client.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "curl_lib.h"
#include "curl_loop.h"
#include "http_fixture.h"
#include "json.h"
#include "log.h"
#include "loop.h"

#define RESP "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"n\":9007199254740993}}"
#define NOTE "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"

static struct mcpx_loop *loop;
static char padded[8192], burst[8192];
static struct mcpx_curl_loop *http;
static char statics[8][512];

/* One piece of an answer with a Content-Length header computed for body. */
static const char *with_length(int slot, const char *status, const char *headers, const char *body)
{
	snprintf(statics[slot], sizeof(statics[slot]),
	         "HTTP/1.1 %s\r\n%sContent-Length: %zu\r\n\r\n%s", status, headers, strlen(body),
	         body);
	return statics[slot];
}

static void respond(struct http_fixture *fx, const struct http_fixture_req *req,
                    struct http_fixture_resp *resp)
{
	const char *p = req->path;

	if (!strcmp(p, "/json")) {
		resp->piece[0] = with_length(
		    0, "200 OK", "Content-Type: application/json\r\nMcp-Session-Id: s-1\t\r\n",
		    RESP);
	} else if (!strcmp(p, "/auth")) {
		resp->piece[0] =
		    with_length(0, "200 OK", "Content-Type: application/json\r\n",
		                strstr(req->headers, "\r\nAuthorization: Bearer tok\r\n")
		                    ? "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"auth\":true}}"
		                    : "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"auth\":false}}");
	} else if (!strcmp(p, "/sse")) {
		/* Close-delimited, in pieces, CR line ends after a BOM. */
		resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		                 "Connection: close\r\n\r\n\xEF\xBB";
		resp->piece[1] = "\xBF: hello\rdata: " NOTE "\r";
		resp->piece[2] = "\rdata: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\r\r";
		resp->piece[3] = "data: " RESP "\r";
		resp->piece[4] = "\r";
		resp->close = true;
	} else if (!strcmp(p, "/redirect")) {
		snprintf(statics[1], sizeof(statics[1]),
		         "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%d/json\r\n"
		         "Content-Length: 0\r\n\r\n",
		         fx->port);
		resp->piece[0] = statics[1];
	} else if (!strcmp(p, "/request")) {
		resp->piece[0] = with_length(0, "200 OK", "Content-Type: application/json\r\n",
		                             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"sampling/"
		                             "createMessage\",\"result\":{}}");
	} else if (!strcmp(p, "/trailing")) {
		resp->piece[0] =
		    with_length(0, "200 OK", "Content-Type: application/json\r\n", RESP " x");
	} else if (!strcmp(p, "/padded")) {
		/* The response, then 5000 bytes of a comment, in one write:
		 * the cap (4096) is not reached before the response is in. */
		resp->piece[0] = padded;
		resp->close = true;
	} else if (!strcmp(p, "/burst")) {
		/* 120 small events in one write (4.7 kB), more than the per-event cap
		 * together, the last one list_changed. */
		resp->piece[0] = burst;
		resp->close = true;
	} else if (!strcmp(p, "/gone")) {
		resp->piece[0] = with_length(0, "404 Not Found", "", "");
	} else if (!strcmp(p, "/hang")) {
		resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{";
	} else if (!strcmp(p, "/listen")) {
		resp->piece[0] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		                 "Connection: close\r\n\r\ndata: " NOTE "\n\n: ping\n\n";
		resp->piece[1] = "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\ndata: [1]\n\n";
		resp->close = true;
	} else {
		resp->piece[0] = with_length(0, "404 Not Found", "", "");
	}
}

struct outcome {
	bool done;
	struct mcpx_upc_result res;
	char *response; /* printed */
	unsigned messages;
};

static void on_done(void *arg, struct mcpx_upc_result *res)
{
	struct outcome *o = arg;

	o->done = true;
	o->res = *res;
	o->res.response = NULL;
	o->response = res->response ? mcpx_json_print_exact(res->response) : NULL;
}

static void on_message(void *arg, const cJSON *msg)
{
	struct outcome *o = arg;

	(void)msg;
	o->messages++;
}

static struct mcpx_cidr lo;

/* POSTs to path on the fixture (host: "127.0.0.1" or "localhost"); with
 * allow: loopback allowed. */
static void post(struct outcome *o, struct http_fixture *fx, const char *host, const char *path,
                 bool allow, const char *session, uint64_t timeout_ms)
{
	char url[128];
	struct mcpx_upc_target t = {.url = url,
	                            .allow = allow ? &lo : NULL,
	                            .n_allow = allow ? 1 : 0,
	                            .session_id = session,
	                            .protocol_version = "2025-06-18",
	                            .max_bytes = 4096,
	                            .timeout_ms = timeout_ms};
	struct mcpx_upc_req *r = NULL;

	if (!strcmp(path, "/auth")) {
		t.cred_header = "Authorization";
		t.cred_value = "Bearer tok";
	}
	memset(o, 0, sizeof(*o));
	snprintf(url, sizeof(url), "http://%s:%d%s", host, fx->port, path);
	REQUIRE_INT(mcpx_upc_post(http, &t, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\"}", 5,
	                          on_done, o, &r),
	            0);
	for (int i = 0; i < 400000 && !o->done; i++)
		mcpx_loop_turn(loop);
	CHECK(o->done);
}

static void test_answers(struct http_fixture *fx)
{
	struct outcome o;
	struct http_fixture_req *req;

	post(&o, fx, "127.0.0.1", "/json", true, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_OK);
	CHECK_STR(o.response, RESP);
	/* A trailing tab is whitespace, not part of the id. */
	CHECK_STR(o.res.session_id, "s-1");
	free(o.response);
	/* What the request carried. */
	req = http_fixture_req(fx, http_fixture_count(fx, NULL) - 1);
	REQUIRE(req != NULL);
	CHECK(strstr(req->headers, "MCP-Protocol-Version: 2025-06-18\r\n") != NULL);
	CHECK(strstr(req->headers, "Accept: application/json, text/event-stream\r\n") != NULL);
	CHECK(strstr(req->body, "\"method\":\"x\"") != NULL);
	free(req);

	post(&o, fx, "127.0.0.1", "/sse", true, "s-1", 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_OK);
	CHECK_STR(o.response, RESP);
	CHECK(o.res.list_changed);
	free(o.response);

	post(&o, fx, "127.0.0.1", "/auth", true, NULL, 10000);
	CHECK_STR(o.response, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"auth\":true}}");
	free(o.response);

	post(&o, fx, "127.0.0.1", "/request", true, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_PROTOCOL);
	CHECK(o.response == NULL);

	post(&o, fx, "127.0.0.1", "/trailing", true, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_PROTOCOL);
	CHECK(o.response == NULL);

	post(&o, fx, "127.0.0.1", "/padded", true, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_OK);
	CHECK_STR(o.response, RESP);
	free(o.response);

	post(&o, fx, "127.0.0.1", "/gone", true, "s-1", 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_SESSION_GONE);
	post(&o, fx, "127.0.0.1", "/gone", true, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_HTTP);
	CHECK_INT(o.res.status, 404);

	post(&o, fx, "127.0.0.1", "/hang", true, NULL, 300);
	CHECK_INT(o.res.kind, MCPX_UPC_TIMEOUT);
}

/* The upstream's redirect is an HTTP answer like any other: nothing is
 * asked of its target. */
static void test_redirect_not_followed(struct http_fixture *fx)
{
	int before = http_fixture_count(fx, "/json");
	struct outcome o;

	post(&o, fx, "127.0.0.1", "/redirect", true, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_HTTP);
	CHECK_INT(o.res.status, 307);
	CHECK_INT(http_fixture_count(fx, "/json") - before, 0);
}

/* Under allow_cidrs every request has a connection of its own, so one
 * without them to the same host and port meets the address check. */
static void test_private_connection_not_reused(struct http_fixture *fx)
{
	int conns = http_fixture_conns(fx), before = http_fixture_count(fx, "/json");
	struct outcome o;

	for (int i = 0; i < 2; i++) {
		post(&o, fx, "localhost", "/json", true, NULL, 10000);
		CHECK_INT(o.res.kind, MCPX_UPC_OK);
		free(o.response);
	}
	CHECK_INT(http_fixture_conns(fx) - conns, 2);
	post(&o, fx, "localhost", "/json", false, NULL, 10000);
	CHECK_INT(o.res.kind, MCPX_UPC_ADDRESS);
	CHECK(strstr(o.res.msg, "loopback") != NULL);
	CHECK_INT(http_fixture_count(fx, "/json") - before, 2);
}

static void test_listen_and_cancel(struct http_fixture *fx)
{
	struct mcpx_upc_target t = {.allow = &lo, .n_allow = 1, .max_bytes = 4096};
	struct mcpx_upc_req *r = NULL;
	struct outcome o;
	char url[128];

	memset(&o, 0, sizeof(o));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/listen", fx->port);
	t.url = url;
	REQUIRE_INT(mcpx_upc_listen(http, &t, on_message, on_done, &o, &r), 0);
	for (int i = 0; i < 400000 && !o.done; i++)
		mcpx_loop_turn(loop);
	CHECK(o.done);
	/* Two objects; a comment and an array are not messages. */
	CHECK_INT(o.messages, 2);
	CHECK_INT(o.res.kind, MCPX_UPC_OK);

	/* Many small events in one write: each is within the cap. */
	memset(&o, 0, sizeof(o));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/burst", fx->port);
	REQUIRE_INT(mcpx_upc_listen(http, &t, on_message, on_done, &o, &r), 0);
	for (int i = 0; i < 400000 && !o.done; i++)
		mcpx_loop_turn(loop);
	CHECK(o.done);
	CHECK_INT(o.messages, 121);
	CHECK_INT(o.res.kind, MCPX_UPC_OK);

	/* A cancelled request is never reported. */
	memset(&o, 0, sizeof(o));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hang", fx->port);
	t.timeout_ms = 100;
	REQUIRE_INT(mcpx_upc_post(http, &t, "{}", 5, on_done, &o, &r), 0);
	for (int i = 0; i < 50; i++)
		mcpx_loop_turn(loop);
	mcpx_upc_cancel(r);
	for (int i = 0; i < 2000; i++)
		mcpx_loop_turn(loop);
	CHECK(!o.done);
}

/* The long answers, made once. */
static void make_answers(void)
{
	int n = snprintf(padded, sizeof(padded),
	                 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	                 "Connection: close\r\n\r\ndata: " RESP "\n\n: ");

	memset(padded + n, 'p', 5000);
	snprintf(padded + n + 5000, sizeof(padded) - (size_t)n - 5000, "\n\n");
	n = snprintf(burst, sizeof(burst),
	             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	             "Connection: close\r\n\r\n");
	for (int i = 0; i < 120; i++)
		n += snprintf(burst + n, sizeof(burst) - (size_t)n,
		              "data: {\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n\n");
	snprintf(burst + n, sizeof(burst) - (size_t)n, "data: " NOTE "\n\n");
}

int main(void)
{
	struct http_fixture fx;
	char why[128];

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	if (!mcpx_curl_available()) {
		fprintf(stderr, "libcurl cannot be loaded: skipped\n");
		return 77;
	}
	CHECK_INT(mcpx_cidr_parse("127.0.0.0/8", &lo, why, sizeof(why)), 0);
	make_answers();
	loop = mcpx_loop_new();
	http = loop ? mcpx_curl_loop_new(loop, "test") : NULL;
	if (!http || !http_fixture_start(&fx, respond, NULL)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	test_answers(&fx);
	test_redirect_not_followed(&fx);
	test_private_connection_not_reused(&fx);
	test_listen_and_cancel(&fx);
	http_fixture_stop(&fx);
	mcpx_curl_loop_free(http);
	mcpx_loop_free(loop);
	CHECK_DONE();
}
