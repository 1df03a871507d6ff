/*
 * test_mcp.c - the protocol core driven with JSON strings, through a sink that
 * records every outbound message, and a fake tool that finishes now or later,
 * logs, reports progress and records cancellation. Responses are compared as
 * exact strings: the wire format is the contract.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "streamable_headers.h"
#include "tool.h"

/* ---- a recording sink ------------------------------------------------- */

#define MAXMSG 32

struct rec_sink {
	struct mcpx_sink base; /* first: the core hands us &base */
	char *msg[MAXMSG];
	bool response[MAXMSG];
	unsigned pending_at_send[MAXMSG];
	int n;
	int unanswered;
};

static void rec_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct rec_sink *r = (struct rec_sink *)sink;

	if (r->n >= MAXMSG)
		abort();
	r->msg[r->n] = strndup(json, len);
	r->response[r->n] = response;
	r->pending_at_send[r->n] = sink->pending;
	r->n++;
}

static void rec_unanswered(struct mcpx_sink *sink)
{
	((struct rec_sink *)sink)->unanswered++;
}

static void rec_init(struct rec_sink *r)
{
	memset(r, 0, sizeof(*r));
	r->base.send = rec_send;
	r->base.unanswered = rec_unanswered;
}

static void rec_clear(struct rec_sink *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->msg[i]);
	r->n = 0;
	memset(r->msg, 0, sizeof(r->msg));
}

/* ---- a fake tool ------------------------------------------------------ */

static struct mcpx_call *held; /* the call the fake tool keeps for later */
static int cancels;            /* cancel callbacks seen */
static char held_version[16];  /* version the last call saw */

static cJSON *text(const char *t)
{
	cJSON *res = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(res, "content");
	cJSON *block = cJSON_CreateObject();
	cJSON_AddStringToObject(block, "type", "text");
	cJSON_AddStringToObject(block, "text", t);
	cJSON_AddItemToArray(content, block);
	return res;
}

static cJSON *fake_describe(const struct mcpx_tool *tool)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", "fake");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(d, "inputSchema"), "type", "object");
	return d;
}

/* args.mode picks the behaviour: "now", "fail", "log", "progress", else
 * the call is held to be finished (or cancelled) later. */
static void fake_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(args, "mode");
	const char *m = cJSON_IsString(mode) ? mode->valuestring : "hold";

	snprintf(held_version, sizeof(held_version), "%s", mcpx_call_version(call));
	if (strcmp(m, "now") == 0) {
		mcpx_call_finish(call, text("done"));
	} else if (strcmp(m, "fail") == 0) {
		mcpx_call_fail(call, "bad input");
	} else if (strcmp(m, "log") == 0) {
		mcpx_call_log(call, MCPX_LEVEL_DEBUG, "d");
		mcpx_call_log(call, MCPX_LEVEL_INFO, "i");
		mcpx_call_log(call, MCPX_LEVEL_WARNING, "w");
		mcpx_call_log(call, MCPX_LEVEL_ERROR, "e");
		mcpx_call_finish(call, text("logged"));
	} else if (strcmp(m, "progress") == 0) {
		mcpx_call_progress(call, 1, "one");
		mcpx_call_progress(call, 1, "again");  /* not an increase: dropped */
		mcpx_call_progress(call, 0.5, "less"); /* dropped */
		mcpx_call_progress(call, 2.5, "two");
		mcpx_call_finish(call, text(mcpx_call_has_progress(call) ? "with" : "without"));
	} else {
		held = call;
	}
}

static void fake_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	cancels++;
	if (call == held)
		held = NULL;
}

static struct mcpx_tool fake_tool = {
    .name = "fake",
    .describe = fake_describe,
    .call = fake_call,
    .cancel = fake_cancel,
};

/* ---- helpers ---------------------------------------------------------- */

static struct mcpx_core *core;
static struct mcpx_handle_info info;

static void send_msg(struct mcpx_session *s, struct rec_sink *r, const char *json)
{
	mcpx_core_handle(core, s, &r->base, json, strlen(json), &info);
}

static void new_session(struct mcpx_session *s, const char *key)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->key, sizeof(s->key), "%s", key);
	snprintf(s->caller, sizeof(s->caller), "%s", key);
	s->allow_stateless = true;
	s->log_level = MCPX_LEVEL_DEBUG;
}

/* Initializes s with version v and checks the negotiated answer. */
static void init_session(struct mcpx_session *s, struct rec_sink *r, const char *v)
{
	char buf[256];
	snprintf(buf, sizeof(buf),
	         "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
	         "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
	         "\"version\":\"1\"}}}",
	         v);
	send_msg(s, r, buf);
	CHECK(s->initialized);
	CHECK_STR(s->version, v);
	rec_clear(r);
}

#define CAPS "\"capabilities\":{\"tools\":{\"listChanged\":false},\"logging\":{}}"
#define SERVER "{\"name\":\"mcp-exec\",\"version\":\"9.9.9\"}"
#define META2026                                                                                   \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                   \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define RMETA "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":" SERVER "}"
#define ALLV "[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\",\"2024-11-05\"]"

/* ---- tests ------------------------------------------------------------ */

static void test_negotiation(void)
{
	static const char *const same[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
	struct mcpx_session s;
	struct rec_sink r;
	char want[512], req[256];

	rec_init(&r);
	/* A supported version is answered with itself. */
	for (size_t i = 0; i < 4; i++) {
		new_session(&s, "stdio");
		snprintf(req, sizeof(req),
		         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		         "\"protocolVersion\":\"%s\",\"capabilities\":{}}}",
		         same[i]);
		send_msg(&s, &r, req);
		snprintf(
		    want, sizeof(want),
		    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"%s\"," CAPS
		    ",\"serverInfo\":" SERVER ",\"instructions\":\"Call exec.\"}}",
		    same[i]);
		CHECK_INT(r.n, 1);
		CHECK_STR(r.msg[0], want);
		CHECK(r.response[0]);
		CHECK(info.initialized_now);
		CHECK_INT(info.requests, 1);
		CHECK_STR(info.method, "initialize");
		CHECK_STR(s.version, same[i]);
		CHECK(s.initialized);
		rec_clear(&r);
	}

	/* An unknown version, and the stateless one (which initialize does not
	 * negotiate), get the latest session-based version. */
	{
		static const char *const other[] = {"2099-01-01", "2026-07-28", "1.0"};
		for (size_t i = 0; i < 3; i++) {
			new_session(&s, "stdio");
			snprintf(req, sizeof(req),
			         "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"initialize\","
			         "\"params\":{\"protocolVersion\":\"%s\"}}",
			         other[i]);
			send_msg(&s, &r, req);
			CHECK_INT(r.n, 1);
			CHECK(r.n == 1 &&
			      strstr(r.msg[0], "\"id\":\"x\",\"result\":{\"protocolVersion\":"
			                       "\"2025-11-25\""));
			CHECK_STR(s.version, "2025-11-25");
			rec_clear(&r);
		}
	}

	/* protocolVersion missing: invalid params, session untouched. */
	new_session(&s, "stdio");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Invalid params: initialize requires a string protocolVersion\"}}");
	CHECK(!s.initialized);
	CHECK(!info.initialized_now);
	CHECK_INT(info.error_code, -32602);
	rec_clear(&r);

	/* A second initialize on the same session is refused. */
	init_session(&s, &r, "2025-06-18");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{"
	         "\"protocolVersion\":\"2025-03-26\"}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32600,\"message\":"
	                    "\"Invalid Request: the session is already initialized\"}}");
	CHECK_STR(s.version, "2025-06-18");
	rec_clear(&r);
}

static void test_lifecycle_gate(void)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio");
	/* Before initialize: ping works, other requests are refused. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	CHECK_STR(r.msg[1],
	          "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32600,\"message\":\"Invalid "
	          "Request: the session is not initialized; send initialize first, or use protocol "
	          "version 2026-07-28 with _meta io.modelcontextprotocol/protocolVersion\"}}");
	CHECK_INT(info.error_code, -32600);
	CHECK_INT(info.requests, 1);
	rec_clear(&r);

	/* Without stateless support the hint is shorter. */
	s.allow_stateless = false;
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\"}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32600,\"message\":"
	                    "\"Invalid Request: the session is not initialized; send initialize "
	                    "first\"}}");
	rec_clear(&r);
}

static void test_parse_and_invalid(void)
{
	struct mcpx_session s;
	struct rec_sink r;
	static const char parse_err[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse "
	    "error\"}}";

	rec_init(&r);
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-11-25");

	/* Not JSON: -32700 with id null, and the core keeps going. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], parse_err);
	CHECK(info.parse_error);
	CHECK_INT(info.requests, 0);
	CHECK_INT(r.base.pending, 0);
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	CHECK(!info.parse_error);
	/* Trailing garbage after a valid value is not a valid message. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x");
	CHECK_STR(r.msg[2], parse_err);
	/* Trailing whitespace is fine. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\r\n");
	CHECK_STR(r.msg[3], "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}");
	/* Invalid UTF-8 is a parse error too (messages MUST be UTF-8). */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}");
	CHECK_STR(r.msg[4], "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
	                    "\"message\":\"Parse error: message is not valid UTF-8\"}}");
	rec_clear(&r);

	/* Valid JSON that is not a JSON-RPC request. */
	send_msg(&s, &r, "{\"id\":5,\"method\":\"ping\"}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32600,\"message\":"
	                    "\"Invalid Request: \\\"jsonrpc\\\" must be \\\"2.0\\\"\"}}");
	CHECK(info.invalid);
	CHECK_INT(info.error_code, -32600);
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                    "\"message\":\"Invalid Request: \\\"id\\\" must be a string or a "
	                    "number\"}}");
	send_msg(&s, &r, "\"ping\"");
	CHECK_STR(r.msg[2],
	          "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	          "\"message\":\"Invalid Request: a JSON-RPC message must be an object\"}}");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":6}");
	CHECK_STR(r.msg[3], "{\"jsonrpc\":\"2.0\",\"id\":6,\"error\":{\"code\":-32600,\"message\":"
	                    "\"Invalid Request: \\\"method\\\" is missing\"}}");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":7}");
	CHECK_STR(r.msg[4], "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32600,\"message\":"
	                    "\"Invalid Request: \\\"method\\\" must be a string\"}}");
	/* params must be an object in MCP. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":[1]}");
	CHECK_STR(r.msg[5], "{\"jsonrpc\":\"2.0\",\"id\":8,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Invalid params: params must be an object\"}}");
	CHECK_INT(r.n, 6);
	CHECK_INT(r.base.pending, 0);
	rec_clear(&r);

	/* Unknown method. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"resources/list\"}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32601,\"message\":"
	                    "\"Method not found\"}}");
	CHECK_INT(info.error_code, -32601);
	CHECK_INT(info.http_status, 0); /* only 2026-07-28 mandates 404 */
	rec_clear(&r);
}

/* RFC 8259: control characters must be escaped inside strings, and only
 * space, tab, CR and LF separate tokens. cJSON 1.7.15 accepts both, the core
 * must not. \u0000 is legal and must neither cut a string short nor make it
 * equal to a shorter one. */
static void test_control_and_nul(void)
{
	static const char ctl_err[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse "
	    "error: unescaped control character\"}}";
	static const char raw_nul[] = "{\"jsonrpc\":\"2.0\",\"id\":\"a\0b\",\"method\":\"ping\"}";
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-11-25");

	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"ping\"}");
	CHECK_STR(r.msg[0], ctl_err);
	CHECK(info.parse_error);
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\x1fng\"}");
	CHECK_STR(r.msg[1], ctl_err);
	mcpx_core_handle(core, &s, &r.base, raw_nul, sizeof(raw_nul) - 1, &info);
	CHECK_STR(r.msg[2], ctl_err);
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\x01\"id\":1,\"method\":\"ping\"}");
	CHECK_STR(r.msg[3], ctl_err);
	/* An escaped control character, and whitespace between tokens, are fine. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\t\"id\":\"a\\tb\",\r\n\"method\":\"ping\"}");
	CHECK_STR(r.msg[4], "{\"jsonrpc\":\"2.0\",\"id\":\"a\\tb\",\"result\":{}}");
	CHECK_INT(r.n, 5);
	rec_clear(&r);

	/* An id carrying U+0000 is echoed exactly, NUL and all. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"ping\"}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"result\":{}}");
	/* "ping\u0000x" is not ping, and an escaped backslash before u0000 is
	 * not a NUL. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\\u0000x\"}");
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":"
	                    "\"Method not found\"}}");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":\"\\\\u0000\",\"method\":\"ping\"}");
	CHECK_STR(r.msg[2], "{\"jsonrpc\":\"2.0\",\"id\":\"\\\\u0000\",\"result\":{}}");
	/* Nor is a tool whose name only starts with a known one. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\\u0000\",\"arguments\":{\"mode\":\"now\"}}}");
	CHECK_STR(r.msg[3], "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Unknown tool: fake\\u0000\"}}");
	CHECK_INT(r.n, 4);
	rec_clear(&r);
}

static void test_json_bytes(void)
{
	const char *why = NULL;
	static const char msg[] = "{\"s\":\"a\\u0000\\u0000b\\u00e9\",\"t\":\"plain\",\"n\":1}";
	cJSON *root = mcpx_jsonrpc_parse(msg, sizeof(msg) - 1, &why);
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "s");
	char idt[8];
	size_t len = 0;
	char *b;

	CHECK(root != NULL);
	CHECK(mcpx_json_has_nul(sv));
	CHECK(!mcpx_json_has_nul(cJSON_GetObjectItemCaseSensitive(root, "t")));
	CHECK(!mcpx_json_has_nul(cJSON_GetObjectItemCaseSensitive(root, "n")));
	b = mcpx_json_bytes(sv, &len);
	CHECK_INT(len, 6);
	CHECK(b && memcmp(b, "a\0\0b\xc3\xa9", 6) == 0);
	free(b);
	CHECK(mcpx_json_bytes(cJSON_GetObjectItemCaseSensitive(root, "n"), &len) == NULL);
	/* The display form of an id shows the NUL as text and never splits a
	 * character or the escape. */
	mcpx_jsonrpc_id_text(sv, idt, sizeof(idt));
	CHECK_STR(idt, "a\\u0000");
	mcpx_jsonrpc_id_text(sv, idt, 7);
	CHECK_STR(idt, "a");
	cJSON_Delete(root);
	/* A cut inside a multi-byte character drops the whole character. */
	root = mcpx_jsonrpc_parse("\"ab\\u20ac\"", 10, &why);
	mcpx_jsonrpc_id_text(root, idt, 5);
	CHECK_STR(idt, "ab");
	mcpx_jsonrpc_id_text(root, idt, 6);
	CHECK_STR(idt, "ab\xe2\x82\xac");
	cJSON_Delete(root);
	/* Truncated input and a lone backslash never read past the end. */
	CHECK(mcpx_jsonrpc_parse("\"\\u000", 6, &why) == NULL);
	CHECK(mcpx_jsonrpc_parse("\"\\", 2, &why) == NULL);
	CHECK_STR(why, "Parse error");
}

static void test_tools(void)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-06-18");

	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	CHECK_STR(r.msg[0],
	          "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"fake\","
	          "\"inputSchema\":{\"type\":\"object\"}}]}}");
	/* We never issue cursors, so every cursor is unknown. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{"
	         "\"cursor\":\"\"}}");
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Invalid params: unknown cursor\"}}");
	/* Unknown tool: a JSON-RPC error, as the spec's tools page shows. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"nope\",\"arguments\":{}}}");
	CHECK_STR(r.msg[2], "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Unknown tool: nope\"}}");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{}}");
	CHECK_STR(r.msg[3], "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Invalid params: tools/call requires a string name\"}}");
	/* A tool that answers at once, and one that fails. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"now\"}}}");
	CHECK_STR(r.msg[4], "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":"
	                    "\"text\",\"text\":\"done\"}]}}");
	CHECK_STR(held_version, "2025-06-18");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"fail\"}}}");
	CHECK_STR(r.msg[5], "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"content\":[{\"type\":"
	                    "\"text\",\"text\":\"bad input\"}],\"isError\":true}}");
	CHECK_INT(r.n, 6);
	CHECK_INT(mcpx_core_inflight(core), 0);
	rec_clear(&r);

	/* A call that finishes later: nothing is sent until it does, pending
	 * tells the transport a response is outstanding, and pending is back
	 * to 0 when the response is sent. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":\"later\",\"method\":\"tools/call\","
	         "\"params\":{\"name\":\"fake\",\"arguments\":{}}}");
	CHECK_INT(r.n, 0);
	CHECK(held != NULL);
	CHECK_INT(r.base.pending, 1);
	CHECK_INT(mcpx_core_inflight(core), 1);
	CHECK_STR(mcpx_call_id_text(held), "later");
	CHECK_STR(mcpx_call_caller(held), "stdio");
	/* The same id again while in flight is refused. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":\"later\",\"method\":\"tools/call\","
	         "\"params\":{\"name\":\"fake\",\"arguments\":{}}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":\"later\",\"error\":{\"code\":-32600,"
	                    "\"message\":\"Invalid Request: a request with this id is still in "
	                    "progress\"}}");
	CHECK_INT(r.base.pending, 1);
	mcpx_call_finish(held, text("late"));
	held = NULL;
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":\"later\",\"result\":{\"content\":[{"
	                    "\"type\":\"text\",\"text\":\"late\"}]}}");
	CHECK_INT(r.pending_at_send[1], 0);
	CHECK_INT(r.base.pending, 0);
	CHECK_INT(mcpx_core_inflight(core), 0);
	rec_clear(&r);
}

static void test_batches(void)
{
	struct mcpx_session s;
	struct rec_sink r;
	static const char two_pings[] = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	                                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]";
	static const char refused[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid "
	    "Request: JSON-RPC batches are only supported with protocol version 2025-03-26\"}}";

	rec_init(&r);
	/* Refused under every other version, and before initialize. */
	new_session(&s, "stdio");
	send_msg(&s, &r, two_pings);
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], refused);
	CHECK(info.batch && info.invalid);
	rec_clear(&r);
	{
		static const char *const v[] = {"2024-11-05", "2025-06-18", "2025-11-25"};
		for (int i = 0; i < 3; i++) {
			new_session(&s, "stdio");
			init_session(&s, &r, v[i]);
			send_msg(&s, &r, two_pings);
			CHECK_INT(r.n, 1);
			CHECK_STR(r.msg[0], refused);
			rec_clear(&r);
		}
	}

	/* Accepted under 2025-03-26: one array holding every response. */
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-03-26");
	send_msg(&s, &r, two_pings);
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},"
	                    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}]");
	CHECK(r.response[0]);
	CHECK(info.batch && !info.invalid);
	CHECK_INT(info.requests, 2);
	CHECK_STR(info.method, "ping");
	CHECK_INT(r.base.pending, 0);
	rec_clear(&r);
	/* initialize MUST NOT be in a batch; a bad element does not spoil the
	 * others; notifications in it get nothing. */
	send_msg(&s, &r,
	         "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
	         "\"protocolVersion\":\"2025-03-26\"}},5,"
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]");
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "[{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,\"message\":"
	                    "\"Invalid Request: initialize must not be part of a batch\"}},"
	                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                    "\"message\":\"Invalid Request: a JSON-RPC message must be an object\"}},"
	                    "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}]");
	CHECK_INT(info.requests, 2);
	CHECK_INT(info.notifications, 1);
	rec_clear(&r);
	/* Only invalid elements: still an array, one error each. */
	send_msg(&s, &r, "[1]");
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "[{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                    "\"message\":\"Invalid Request: a JSON-RPC message must be an object\"}}]");
	CHECK(info.invalid);
	CHECK_INT(info.requests, 0);
	rec_clear(&r);
	/* Only notifications: nothing to send (HTTP answers 202). */
	send_msg(&s, &r,
	         "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/other\"}]");
	CHECK_INT(r.n, 0);
	CHECK_INT(info.requests, 0);
	CHECK_INT(info.notifications, 2);
	CHECK_INT(r.base.pending, 0);
	/* An empty array is a single Invalid Request, not an array. */
	send_msg(&s, &r, "[]");
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                    "\"message\":\"Invalid Request: empty batch\"}}");
	rec_clear(&r);
}

/* A batch with a tool call still running is answered when the call ends:
 * one array, after the notifications the call sent. */
static void test_batch_async(void)
{
	static const char held_and_ping[] =
	    "[{\"jsonrpc\":\"2.0\",\"id\":\"h\",\"method\":\"tools/call\",\"params\":{"
	    "\"name\":\"fake\",\"_meta\":{\"progressToken\":1}}},"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]";
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "batch");
	init_session(&s, &r, "2025-03-26");
	cancels = 0;
	send_msg(&s, &r, held_and_ping);
	CHECK_INT(r.n, 0);
	CHECK_INT(r.base.pending, 1); /* the batch counts as one */
	CHECK(held != NULL);
	if (held) {
		mcpx_call_progress(held, 1, "half");
		mcpx_call_finish(held, text("late"));
	}
	held = NULL;
	CHECK_INT(r.n, 2);
	CHECK(r.n == 2 && !r.response[0] && strstr(r.msg[0], "notifications/progress"));
	CHECK_STR(r.msg[1], "[{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}},"
	                    "{\"jsonrpc\":\"2.0\",\"id\":\"h\",\"result\":{\"content\":[{\"type\":"
	                    "\"text\",\"text\":\"late\"}]}}]");
	CHECK_INT(r.pending_at_send[1], 0);
	CHECK_INT(r.base.pending, 0);
	rec_clear(&r);

	/* A cancelled call is left out; the rest still comes as one array. */
	send_msg(&s, &r, held_and_ping);
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":\"h\"}}");
	CHECK_INT(cancels, 1);
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "[{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}]");
	CHECK_INT(r.unanswered, 0);
	CHECK_INT(r.base.pending, 0);
	rec_clear(&r);

	/* Every request cancelled: nothing is sent, the sink hears that the
	 * batch stays unanswered (an HTTP POST must still end). */
	send_msg(&s, &r,
	         "[{\"jsonrpc\":\"2.0\",\"id\":\"h\",\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\"}}]");
	CHECK_INT(r.base.pending, 1);
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":\"h\"}}");
	CHECK_INT(r.n, 0);
	CHECK_INT(r.unanswered, 1);
	CHECK_INT(r.base.pending, 0);
	held = NULL;

	/* The sink goes away: the call is cancelled, nothing is written. */
	send_msg(&s, &r, held_and_ping);
	mcpx_core_sink_gone(core, &r.base);
	CHECK_INT(cancels, 3);
	CHECK_INT(r.n, 0);
	CHECK_INT(mcpx_core_inflight(core), 0);
	held = NULL;
	rec_clear(&r);

	/* A cancellation inside the batch itself. */
	rec_init(&r);
	send_msg(&s, &r,
	         "[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\"}},{\"jsonrpc\":\"2.0\",\"method\":"
	         "\"notifications/cancelled\",\"params\":{\"requestId\":5}},"
	         "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"now\"}}}]");
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "[{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"content\":[{\"type\":"
	                    "\"text\",\"text\":\"done\"}]}}]");
	CHECK_INT(r.base.pending, 0);
	held = NULL;
	rec_clear(&r);
}

static void test_notifications_and_responses(void)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-11-25");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\",\"params\":7}");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":null}}");
	CHECK_INT(r.n, 0);
	CHECK_INT(info.notifications, 1);
	CHECK_INT(info.requests, 0);
	/* A response from the client is ignored. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}");
	CHECK_INT(r.n, 0);
	CHECK_INT(info.responses, 1);
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":1,\"message\":\"x\"}}");
	CHECK_INT(r.n, 0);
	CHECK_INT(info.responses, 1);
	/* Notifications before initialize are ignored as well. */
	new_session(&s, "stdio");
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	CHECK_INT(r.n, 0);
}

static void test_cancellation(void)
{
	struct mcpx_session s, other;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "session-a");
	new_session(&other, "session-b");
	init_session(&s, &r, "2025-11-25");
	init_session(&other, &r, "2025-11-25");
	cancels = 0;

	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\"}}");
	CHECK(held != NULL);
	CHECK_INT(r.base.pending, 1);
	/* Another session's notification, or an id of another type, does not
	 * match. */
	send_msg(&other, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	         "\"params\":{\"requestId\":7}}");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":\"7\"}}");
	CHECK_INT(cancels, 0);
	CHECK_INT(mcpx_core_inflight(core), 1);
	/* The matching one cancels: the tool hears it, nothing is sent, the
	 * sink learns the request stays unanswered. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":7,\"reason\":\"user\"}}");
	CHECK_INT(cancels, 1);
	CHECK(held == NULL);
	CHECK_INT(r.n, 0);
	CHECK_INT(r.base.pending, 0);
	CHECK_INT(r.unanswered, 1);
	CHECK_INT(mcpx_core_inflight(core), 0);
	/* Cancelling it again (or an unknown id) is ignored. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":7}}");
	CHECK_INT(cancels, 1);
	CHECK_INT(r.n, 0);

	/* A sink that goes away cancels its calls and is never written again. */
	{
		struct rec_sink r2;
		rec_init(&r2);
		send_msg(&s, &r2,
		         "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\","
		         "\"params\":{\"name\":\"fake\"}}");
		send_msg(&s, &r,
		         "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
		         "\"params\":{\"name\":\"fake\"}}");
		CHECK_INT(mcpx_core_inflight(core), 2);
		mcpx_core_sink_gone(core, &r2.base);
		CHECK(r2.base.gone);
		CHECK_INT(cancels, 2);
		CHECK_INT(r2.unanswered, 0);
		CHECK_INT(r2.n, 0);
		CHECK_INT(mcpx_core_inflight(core), 1);
		/* The other sink's call is untouched and still answerable. */
		CHECK(held != NULL);
		if (held)
			mcpx_call_finish(held, text("ok"));
		held = NULL;
		CHECK_INT(r.n, 1);
		CHECK(r.n == 1 && strstr(r.msg[0], "\"id\":9,\"result\""));
	}
	rec_clear(&r);
}

static void test_logging(void)
{
	struct mcpx_session s;
	struct rec_sink r;
	static const char call[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"fake\",\"arguments\":{\"mode\":\"log\"}}}";

	rec_init(&r);
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-11-25");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":{"
	         "\"level\":\"warning\"}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	CHECK_INT(s.log_level, MCPX_LEVEL_WARNING);
	send_msg(&s, &r, call);
	CHECK_INT(r.n, 4);
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{"
	                    "\"level\":\"warning\",\"logger\":\"fake\",\"data\":\"w\"}}");
	CHECK(!r.response[1]);
	CHECK_STR(r.msg[2], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{"
	                    "\"level\":\"error\",\"logger\":\"fake\",\"data\":\"e\"}}");
	CHECK(r.n == 4 && strstr(r.msg[3], "\"id\":2,\"result\""));
	rec_clear(&r);

	/* debug lets everything through. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\",\"params\":{"
	         "\"level\":\"debug\"}}");
	send_msg(&s, &r, call);
	CHECK_INT(r.n, 6);
	CHECK(r.n == 6 && strstr(r.msg[1], "\"level\":\"debug\""));
	rec_clear(&r);

	/* An unknown level is invalid params and changes nothing. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"logging/setLevel\",\"params\":{"
	         "\"level\":\"verbose\"}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Invalid params: level must be one of debug, info, notice, warning, "
	                    "error, critical, alert, emergency\"}}");
	CHECK_INT(s.log_level, MCPX_LEVEL_DEBUG);
	rec_clear(&r);
}

static void test_progress(void)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-11-25");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"progress\"},\"_meta\":{"
	         "\"progressToken\":\"tok\"}}}");
	CHECK_INT(r.n, 3);
	CHECK_STR(r.msg[0],
	          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	          "\"progressToken\":\"tok\",\"progress\":1,\"message\":\"one\"}}");
	CHECK_STR(r.msg[1],
	          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	          "\"progressToken\":\"tok\",\"progress\":2.5,\"message\":\"two\"}}");
	CHECK(r.n == 3 && strstr(r.msg[2], "\"text\":\"with\""));
	rec_clear(&r);

	/* Integer tokens are echoed as integers. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"progress\"},\"_meta\":{"
	         "\"progressToken\":42}}}");
	CHECK(r.n == 3 && strstr(r.msg[0], "\"progressToken\":42,\"progress\":1,"));
	rec_clear(&r);

	/* No token (or one of a type MCP does not allow): no progress. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"progress\"},\"_meta\":{"
	         "\"progressToken\":{}}}}");
	CHECK_INT(r.n, 1);
	CHECK(r.n == 1 && strstr(r.msg[0], "\"text\":\"without\""));
	rec_clear(&r);

	/* 2024-11-05's ProgressNotification has no message field. */
	new_session(&s, "stdio");
	init_session(&s, &r, "2024-11-05");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"progress\"},\"_meta\":{"
	         "\"progressToken\":\"t\"}}}");
	CHECK_STR(r.msg[0],
	          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	          "\"progressToken\":\"t\",\"progress\":1}}");
	rec_clear(&r);
}

static void test_stateless(void)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio"); /* never initialized */

	/* server/discover: versions, capabilities, identity, cache hints. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\","
	         "\"params\":{" META2026 "}}");
	CHECK_STR(r.msg[0],
	          "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"result\":{\"supportedVersions\":" ALLV
	          "," CAPS ",\"instructions\":\"Call exec.\",\"ttlMs\":300000,\"cacheScope\":"
	          "\"public\",\"resultType\":\"complete\"," RMETA "}}");
	CHECK(info.stateless);
	CHECK_INT(info.http_status, 0);
	CHECK(!s.initialized);
	CHECK_STR(s.version, "");

	/* tools/list and tools/call are served without initialize, with
	 * resultType and serverInfo on every result. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META2026
	         "}}");
	CHECK_STR(r.msg[1],
	          "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"fake\","
	          "\"inputSchema\":{\"type\":\"object\"}}],\"ttlMs\":300000,\"cacheScope\":"
	          "\"public\",\"resultType\":\"complete\"," RMETA "}}");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"log\"}," META2026 "}}");
	/* No logLevel in _meta: no notifications/message at all. */
	CHECK_INT(r.n, 3);
	CHECK_STR(r.msg[2],
	          "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\","
	          "\"text\":\"logged\"}],\"resultType\":\"complete\"," RMETA "}}");
	CHECK_STR(held_version, "2026-07-28");
	rec_clear(&r);

	/* With logLevel: filtered by it. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\",\"arguments\":{\"mode\":\"log\"},\"_meta\":{"
	         "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
	         "\"io.modelcontextprotocol/clientCapabilities\":{},"
	         "\"io.modelcontextprotocol/logLevel\":\"error\"}}}");
	CHECK_INT(r.n, 2);
	CHECK(r.n == 2 && strstr(r.msg[0], "\"level\":\"error\""));
	rec_clear(&r);

	/* A version we do not speak: UnsupportedProtocolVersionError. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{"
	         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"1900-01-01\","
	         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32022,\"message\":"
	                    "\"Unsupported protocol version\",\"data\":{\"supported\":" ALLV
	                    ",\"requested\":\"1900-01-01\"}}}");
	CHECK_INT(info.http_status, 400);
	CHECK_INT(info.error_code, -32022);
	CHECK(info.stateless);
	/* Also a future one. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"server/discover\",\"params\":{"
	         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2027-01-01\","
	         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
	CHECK(r.n == 2 && strstr(r.msg[1], "\"code\":-32022"));
	rec_clear(&r);

	/* Missing required _meta fields: -32602 and 400. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\",\"params\":{"
	         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
	CHECK_STR(r.msg[0],
	          "{\"jsonrpc\":\"2.0\",\"id\":6,\"error\":{\"code\":-32602,\"message\":"
	          "\"Invalid params: _meta io.modelcontextprotocol/clientCapabilities (an "
	          "object) is required\"}}");
	CHECK_INT(info.http_status, 400);
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\"}");
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Invalid params: _meta io.modelcontextprotocol/protocolVersion (a "
	                    "string) is required\"}}");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\",\"params\":{"
	         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
	         "\"io.modelcontextprotocol/clientCapabilities\":{},"
	         "\"io.modelcontextprotocol/logLevel\":\"loud\"}}}");
	CHECK(r.n == 3 && strstr(r.msg[2], "\"code\":-32602"));
	rec_clear(&r);

	/* ping and logging/setLevel do not exist in 2026-07-28: -32601, 404. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{" META2026 "}}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32601,\"message\":"
	                    "\"Method not found\"}}");
	CHECK_INT(info.http_status, 404);
	/* Unknown tool is still -32602 (a protocol error, 200 on HTTP). */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"nope\"," META2026 "}}");
	CHECK_STR(r.msg[1], "{\"jsonrpc\":\"2.0\",\"id\":10,\"error\":{\"code\":-32602,\"message\":"
	                    "\"Unknown tool: nope\"}}");
	CHECK_INT(info.http_status, 0);
	rec_clear(&r);

	/* Cancellation by id works for stateless calls too (stdio). */
	cancels = 0;
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{"
	         "\"name\":\"fake\"," META2026 "}}");
	CHECK(held != NULL);
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":11}}");
	CHECK_INT(cancels, 1);
	CHECK_INT(r.n, 0);

	/* A transport that does not allow stateless requests treats them as
	 * legacy ones. */
	s.allow_stateless = false;
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/list\",\"params\":{" META2026
	         "}}");
	CHECK(r.n == 1 && strstr(r.msg[0], "\"code\":-32600"));
	CHECK(!info.stateless);
	rec_clear(&r);

	/* A legacy session keeps working, and serves modern requests next to
	 * its own. */
	new_session(&s, "stdio");
	init_session(&s, &r, "2025-11-25");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/list\",\"params\":{" META2026
	         "}}");
	CHECK(r.n == 1 && strstr(r.msg[0], "\"resultType\":\"complete\""));
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/list\"}");
	CHECK_STR(r.msg[1],
	          "{\"jsonrpc\":\"2.0\",\"id\":14,\"result\":{\"tools\":[{\"name\":\"fake\","
	          "\"inputSchema\":{\"type\":\"object\"}}]}}");
	rec_clear(&r);
}

static void http(struct mcpx_session *s, struct rec_sink *r, const struct mcpx_req_headers *h,
                 const char *json)
{
	mcpx_core_handle_http(core, s, &r->base, json, strlen(json), h, &info);
}

static void test_http_headers(void)
{
	struct mcpx_session s;
	struct rec_sink r;
	static const char call[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"fake\",\"arguments\":{\"mode\":\"now\"}," META2026 "}}";
	/* The Streamable HTTP transport's check (streamable_headers.c), as it
	 * hands it to the core. */
	struct mcpx_req_headers h = {.protocol_version = "2026-07-28",
	                             .method = "tools/call",
	                             .name = "fake",
	                             .mismatch = mcpx_streamable_header_mismatch};

	rec_init(&r);
	new_session(&s, "1.2.3.4");
	http(&s, &r, &h, call);
	CHECK(r.n == 1 && strstr(r.msg[0], "\"text\":\"done\""));
	CHECK_INT(info.http_status, 0);
	rec_clear(&r);

	/* Base64 sentinel form of Mcp-Name ("fake"). */
	h.name = "=?base64?ZmFrZQ==?=";
	http(&s, &r, &h, call);
	CHECK(r.n == 1 && strstr(r.msg[0], "\"text\":\"done\""));
	rec_clear(&r);

	h.name = "other";
	http(&s, &r, &h, call);
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32020,\"message\":"
	                    "\"Header mismatch: Mcp-Name does not match the request body\"}}");
	CHECK_INT(info.http_status, 400);
	h.name = NULL;
	http(&s, &r, &h, call);
	CHECK(r.n == 2 && strstr(r.msg[1], "Mcp-Name header is missing"));
	h.name = "fake";
	h.method = "tools/list";
	http(&s, &r, &h, call);
	CHECK(r.n == 3 && strstr(r.msg[2], "Mcp-Method does not match"));
	h.method = "tools/call";
	h.protocol_version = NULL;
	http(&s, &r, &h, call);
	CHECK(r.n == 4 && strstr(r.msg[3], "MCP-Protocol-Version header is missing"));
	CHECK_INT(mcpx_core_inflight(core), 0);
	rec_clear(&r);

	/* A 2026-07-28 header on a body without _meta: malformed, 400. */
	h.protocol_version = "2026-07-28";
	h.method = "tools/list";
	http(&s, &r, &h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	CHECK(r.n == 1 && strstr(r.msg[0], "\"code\":-32602"));
	CHECK_INT(info.http_status, 400);
	rec_clear(&r);

	/* An unsupported header version on a legacy request: -32022, 400. */
	h.protocol_version = "1999-01-01";
	init_session(&s, &r, "2025-11-25");
	http(&s, &r, &h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	CHECK(r.n == 1 && strstr(r.msg[0], "\"code\":-32022") &&
	      strstr(r.msg[0], "\"requested\":\"1999-01-01\""));
	CHECK_INT(info.http_status, 400);
	rec_clear(&r);
	/* A supported legacy header passes through to the session. */
	h.protocol_version = "2025-11-25";
	http(&s, &r, &h, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
	CHECK(r.n == 1 && strstr(r.msg[0], "\"result\":{\"tools\""));
	rec_clear(&r);
}

/* ---- tools that change: a provider, listeners, subscriptions ---------- */

static const char *dyn_names[2] = {"dyn-a", NULL}; /* the provider's tools now */
static char dyn_called[64];                        /* the name a call was made with */

static cJSON *dyn_describe(const struct mcpx_tool *tool)
{
	(void)tool;
	return NULL; /* listed by the provider */
}

static void dyn_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	(void)tool;
	(void)args;
	snprintf(dyn_called, sizeof(dyn_called), "%s", mcpx_call_tool_name(call));
	mcpx_call_log(call, MCPX_LEVEL_ERROR, "from dyn");
	mcpx_call_finish(call, text("dyn"));
}

static struct mcpx_tool dyn_tool = {.name = "(dyn)", .describe = dyn_describe, .call = dyn_call};

static int dyn_list(void *ctx, cJSON *arr)
{
	(void)ctx;
	for (int i = 0; i < 2 && dyn_names[i]; i++) {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", dyn_names[i]);
		cJSON_AddItemToArray(arr, d);
	}
	return 0;
}

static const struct mcpx_tool *dyn_find(void *ctx, const char *name)
{
	(void)ctx;
	for (int i = 0; i < 2 && dyn_names[i]; i++)
		if (strcmp(dyn_names[i], name) == 0)
			return &dyn_tool;
	return NULL;
}

#define LISTEN(id, filter)                                                                         \
	"{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"subscriptions/listen\",\"params\":{"     \
	"\"notifications\":" filter "," META2026 "}}"
#define SUBMETA(id) "\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":" id "}"

static void test_provider(struct mcpx_core *c2)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "stdio");
	core = c2;
	init_session(&s, &r, "2025-11-25");
	/* The provider's tools follow the fixed ones, and a call reaches the
	 * provider's tool under the name the client used. */
	send_msg(&s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"fake\","
	                    "\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"dyn-a\"}]}}");
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"dyn-a\"}}");
	CHECK_STR(dyn_called, "dyn-a");
	CHECK(r.n == 3 && strstr(r.msg[1], "\"logger\":\"dyn-a\""));
	dyn_names[0] = "dyn-b";
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"dyn-a\"}}");
	CHECK(strstr(r.msg[r.n - 1], "Unknown tool: dyn-a") != NULL);
	dyn_names[0] = "dyn-a";
	rec_clear(&r);
	mcpx_core_sink_gone(c2, &r.base);
}

static void test_list_changed(struct mcpx_core *c2)
{
	struct mcpx_session s, sub;
	struct rec_sink r, rs;

	rec_init(&r);
	rec_init(&rs);
	new_session(&s, "stdio");
	new_session(&sub, "sub");
	core = c2;
	/* A session-wide listener hears nothing before initialize. */
	CHECK_INT(mcpx_core_listen(c2, &r.base, &s), 0);
	mcpx_core_tools_changed(c2);
	CHECK_INT(r.n, 0);
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
	         "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
	         "\"name\":\"t\",\"version\":\"1\"}}}");
	CHECK(r.n == 1 && strstr(r.msg[0], "\"tools\":{\"listChanged\":true}"));
	rec_clear(&r);
	mcpx_core_tools_changed(c2);
	CHECK_INT(r.n, 1);
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
	CHECK(!r.response[0]);
	rec_clear(&r);
	/* A session cannot open a 2026-07-28 subscription. */
	send_msg(&s, &r,
	         "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"subscriptions/listen\",\"params\":{"
	         "\"notifications\":{}}}");
	CHECK(strstr(r.msg[0], "-32601") != NULL);
	rec_clear(&r);

	/* subscriptions/listen: acknowledged with what is honoured, then the
	 * request stays open (pending) and its notifications carry its id. */
	send_msg(&sub, &rs, LISTEN("\"L\"", "{\"toolsListChanged\":true,\"promptsListChanged\":true}"));
	CHECK_INT(rs.n, 1);
	CHECK_STR(rs.msg[0], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/"
	                     "acknowledged\",\"params\":{\"notifications\":{\"toolsListChanged\":"
	                     "true}," SUBMETA("\"L\"") "}}");
	CHECK_INT(rs.base.pending, 1);
	send_msg(&sub, &rs, LISTEN("9", "{}"));
	CHECK_INT(rs.n, 2);
	CHECK_STR(rs.msg[1], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/"
	                     "acknowledged\",\"params\":{\"notifications\":{}," SUBMETA("9") "}}");
	CHECK_INT(rs.base.pending, 2);
	send_msg(&sub, &rs, LISTEN("\"L\"", "{}"));
	CHECK(rs.n == 3 && strstr(rs.msg[2], "still in progress"));
	send_msg(&sub, &rs, LISTEN("10", "[]"));
	CHECK(rs.n == 4 && strstr(rs.msg[3], "-32602"));
	rec_clear(&rs);
	mcpx_core_tools_changed(c2);
	/* Only the one that asked for it; the session listener too. */
	CHECK_INT(rs.n, 1);
	CHECK_STR(rs.msg[0], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\","
	                     "\"params\":{" SUBMETA("\"L\"") "}}");
	CHECK_INT(r.n, 1);
	rec_clear(&rs);
	rec_clear(&r);
	/* Cancelled by the client: no answer, the sink is told. */
	send_msg(&sub, &rs,
	         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":9}}");
	CHECK_INT(rs.n, 0);
	CHECK_INT(rs.unanswered, 1);
	CHECK_INT(rs.base.pending, 1);
	/* Draining: the rest end with their completion result. */
	mcpx_core_end_subscriptions(c2);
	CHECK_INT(rs.n, 1);
	CHECK_STR(rs.msg[0], "{\"jsonrpc\":\"2.0\",\"id\":\"L\",\"result\":{\"_meta\":{"
	                     "\"io.modelcontextprotocol/subscriptionId\":\"L\","
	                     "\"io.modelcontextprotocol/serverInfo\":" SERVER "},"
	                     "\"resultType\":\"complete\"}}");
	CHECK(rs.response[0]);
	CHECK_INT(rs.base.pending, 0);
	rec_clear(&rs);
	/* A sink that goes drops its subscriptions without a word. */
	send_msg(&sub, &rs, LISTEN("11", "{\"toolsListChanged\":true}"));
	mcpx_core_sink_gone(c2, &rs.base);
	rec_clear(&rs);
	mcpx_core_tools_changed(c2);
	CHECK_INT(rs.n, 0);
	rec_clear(&r);
	mcpx_core_sink_gone(c2, &r.base);

	/* A core whose list never changes declares so, and says nothing. */
	core = NULL;
}

static void test_list_fixed(struct mcpx_core *fixed)
{
	struct mcpx_session s;
	struct rec_sink r;

	rec_init(&r);
	new_session(&s, "sub");
	core = fixed;
	CHECK(!mcpx_core_tools_can_change(fixed));
	send_msg(&s, &r, LISTEN("1", "{\"toolsListChanged\":true}"));
	CHECK_STR(r.msg[0], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/"
	                    "acknowledged\",\"params\":{\"notifications\":{}," SUBMETA("1") "}}");
	CHECK_INT(mcpx_core_listen(fixed, &r.base, NULL), 0);
	mcpx_core_tools_changed(fixed);
	CHECK_INT(r.n, 1);
	rec_clear(&r);
	mcpx_core_sink_gone(fixed, &r.base);
}

int main(void)
{
	struct mcpx_tool *tools[] = {&fake_tool};
	struct mcpx_core_opts opts = {.server_name = "mcp-exec",
	                              .server_version = "9.9.9",
	                              .instructions = "Call exec.",
	                              .tools = tools,
	                              .ntools = 1};

	CHECK(mcpx_version_supported("2025-03-26"));
	CHECK(mcpx_version_supported("2026-07-28"));
	CHECK(!mcpx_version_supported("2024-10-07"));
	CHECK(mcpx_version_stateless("2026-07-28"));
	CHECK(mcpx_version_stateless("2027-01-01"));
	CHECK(!mcpx_version_stateless("2025-11-25"));
	CHECK(!mcpx_version_stateless("zzzz"));

	core = mcpx_core_new(&opts);
	CHECK(core != NULL);
	if (!core)
		return 1;
	test_negotiation();
	test_lifecycle_gate();
	test_parse_and_invalid();
	test_control_and_nul();
	test_json_bytes();
	test_tools();
	test_batches();
	test_batch_async();
	test_notifications_and_responses();
	test_cancellation();
	test_logging();
	test_progress();
	test_stateless();
	test_http_headers();
	{
		struct mcpx_tool_provider pr = {.list = dyn_list, .find = dyn_find};
		struct mcpx_core_opts o2 = opts;
		struct mcpx_core *c2, *fixed = core;

		o2.provider = &pr;
		o2.tools_list_changed = true;
		c2 = mcpx_core_new(&o2);
		CHECK(c2 && mcpx_core_tools_can_change(c2));
		if (c2) {
			test_provider(c2);
			test_list_changed(c2);
			mcpx_core_free(c2);
		}
		test_list_fixed(fixed);
		core = fixed;
	}

	/* Freeing the core with a call in flight cancels it (ASan checks that
	 * nothing leaks). */
	{
		struct mcpx_session s;
		struct rec_sink r;
		rec_init(&r);
		new_session(&s, "stdio");
		init_session(&s, &r, "2025-11-25");
		cancels = 0;
		send_msg(&s, &r,
		         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		         "\"params\":{\"name\":\"fake\"}}");
		mcpx_core_free(core);
		CHECK_INT(cancels, 1);
		CHECK_INT(r.n, 0);
	}
	CHECK_DONE();
}
