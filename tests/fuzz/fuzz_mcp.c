/*
 * fuzz_mcp.c - the JSON-RPC parser and the MCP dispatcher, fed bytes the way
 * the stdio transport feeds them (mcpx_lines, then mcpx_core_handle, or
 * mcpx_core_handle_http with request headers), with a fake tool that also
 * runs the exec tool's argument validation (nothing is executed).
 *
 * Checked on every input, beyond the sanitizers:
 * - every outbound message parses with the server's own strict parser (valid
 *   UTF-8, no raw control characters), needed no UTF-8 repair by the printer
 *   (mcpx_jsonrpc_repairs: the text it was made from was valid), and has the
 *   shape its kind says: a
 *   response is an object with an id and a result or error, or a non-empty
 *   array of those (a batch); a notification has a method;
 * - the sink's pending count never underflows, and once every held call is
 *   finished, nothing is pending and nothing is in flight.
 *
 * Input: byte 0 picks the session (bits 0-2: not initialized, or initialized
 * with one of the four session versions; bits 6-7 its log level) and
 * whether requests come with HTTP headers (bit 3). With headers, the first
 * line holds MCP-Protocol-Version, Mcp-Method and Mcp-Name separated by
 * tabs (an empty value is an absent header). The rest is stdin, one message
 * per line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "streamable_headers.h"
#include "tool.h"
#include "tool_exec.h"
#include "transport_stdio.h"

#define MAX_HELD 8

static struct mcpx_call *held[MAX_HELD];
static size_t nheld;
static struct mcpx_config cfg;

/* ---- a fake tool ------------------------------------------------------ */

static cJSON *text_result(const char *t)
{
	return mcpx_text_result(t, false);
}

static void finish_oldest(void)
{
	if (nheld) {
		struct mcpx_call *c = held[0];
		memmove(held, held + 1, --nheld * sizeof(held[0]));
		mcpx_call_finish(c, text_result("late"));
	}
}

static cJSON *fake_describe(const struct mcpx_tool *tool)
{
	(void)tool;
	return cJSON_Parse("{\"name\":\"fake\",\"inputSchema\":{\"type\":\"object\"}}");
}

/* The exec tool's validation runs on every call; "mode" (an extra property
 * it rejects, which is fine) picks what the fake does. */
static void fake_call(const struct mcpx_tool *tool, struct mcpx_call *call, const cJSON *args)
{
	const cJSON *mode =
	    cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "mode") : NULL;
	const char *m = cJSON_IsString(mode) ? mode->valuestring : "";
	struct mcpx_exec_args a;
	char msg[512];

	(void)tool;
	if (mcpx_exec_parse_args(args, &cfg, &a, msg, sizeof(msg)) == 0)
		mcpx_exec_args_free(&a);
	if (strcmp(m, "hold") == 0 && nheld < MAX_HELD) {
		held[nheld++] = call;
		return;
	}
	if (strcmp(m, "finish") == 0)
		finish_oldest();
	mcpx_call_log(call, (enum mcpx_level)(strlen(m) % 9), m);
	mcpx_call_progress(call, (double)strlen(m), m);
	if (strcmp(m, "fail") == 0)
		mcpx_call_fail(call, msg);
	else
		mcpx_call_finish(call, text_result(msg));
}

static void fake_cancel(const struct mcpx_tool *tool, struct mcpx_call *call)
{
	(void)tool;
	for (size_t i = 0; i < nheld; i++) {
		if (held[i] == call) {
			memmove(held + i, held + i + 1, (nheld - i - 1) * sizeof(held[0]));
			nheld--;
			return;
		}
	}
}

static struct mcpx_tool fake_tool = {
    .name = "fake", .describe = fake_describe, .call = fake_call, .cancel = fake_cancel};

/* ---- a checking sink -------------------------------------------------- */

static bool reply_shape_ok(const cJSON *m)
{
	return cJSON_IsObject(m) && cJSON_GetObjectItemCaseSensitive(m, "id") &&
	       (cJSON_GetObjectItemCaseSensitive(m, "result") ||
	        cJSON_GetObjectItemCaseSensitive(m, "error"));
}

static void check_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	const char *why;
	cJSON *root = mcpx_jsonrpc_parse(json, len, &why);
	const cJSON *el;

	/* The printer repairs text that is not UTF-8 (jsonrpc.h): a repair
	 * means some message was made with such text, a bug to find here. */
	if (!root || sink->pending > (1u << 20) || mcpx_jsonrpc_repairs() != 0)
		abort();
	if (response && cJSON_IsArray(root)) {
		if (cJSON_GetArraySize(root) == 0)
			abort();
		cJSON_ArrayForEach(el, root) if (!reply_shape_ok(el)) abort();
	} else if (response ? !reply_shape_ok(root)
	                    : !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "method"))) {
		abort();
	}
	cJSON_Delete(root);
}

static void check_unanswered(struct mcpx_sink *sink)
{
	if (sink->pending > (1u << 20))
		abort();
}

/* ---- the harness ------------------------------------------------------ */

struct run {
	struct mcpx_core *core;
	struct mcpx_session session;
	struct mcpx_sink sink;
	struct mcpx_req_headers hdr;
	char hdr_buf[3][256];
	bool http;
};

static void on_line(void *arg, const char *line, size_t len)
{
	struct run *r = arg;
	struct mcpx_handle_info info;

	if (r->http)
		mcpx_core_handle_http(r->core, &r->session, &r->sink, line, len, &r->hdr, &info);
	else
		mcpx_core_handle(r->core, &r->session, &r->sink, line, len, &info);
}

static void on_drop(void *arg, int err)
{
	(void)arg;
	(void)err;
}

/* Takes the header line off the front of the input: up to three
 * tab-separated values, each NUL-free (a header value cannot hold one). */
static size_t take_headers(struct run *r, const char *p, size_t n)
{
	const char **slot[3] = {&r->hdr.protocol_version, &r->hdr.method, &r->hdr.name};
	const char *nl = memchr(p, '\n', n);
	size_t len = nl ? (size_t)(nl - p) : n, i = 0, f = 0, o = 0;

	for (; i <= len && f < 3; i++) {
		if (i == len || p[i] == '\t') {
			r->hdr_buf[f][o] = '\0';
			*slot[f] = o ? r->hdr_buf[f] : NULL;
			f++;
			o = 0;
		} else if (p[i] && o + 1 < sizeof(r->hdr_buf[0])) {
			r->hdr_buf[f][o++] = p[i];
		}
	}
	/* As the Streamable HTTP transport hands them over, with its check. */
	mcpx_streamable_headers_init(&r->hdr, r->hdr.protocol_version, r->hdr.method, r->hdr.name);
	return nl ? len + 1 : n;
}

static void setup(struct run *r, uint8_t mode)
{
	static const char *const versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
	                                       "2025-11-25"};
	struct mcpx_tool *tools[] = {&fake_tool};
	struct mcpx_core_opts o = {
	    .server_name = "mcp-exec", .server_version = "1", .tools = tools, .ntools = 1};

	memset(r, 0, sizeof(*r));
	r->core = mcpx_core_new(&o);
	strcpy(r->session.key, "fuzz");
	strcpy(r->session.caller, "fuzz");
	r->session.allow_stateless = true;
	r->session.log_level = (enum mcpx_level)(mode >> 6);
	if ((mode & 7) >= 1 && (mode & 7) <= 4) {
		r->session.initialized = true;
		strcpy(r->session.version, versions[(mode & 7) - 1]);
	}
	r->http = mode & 8;
	r->sink.send = check_send;
	r->sink.unanswered = check_unanswered;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcpx_lines lines;
	static struct run r;
	size_t off = 1;

	if (size < 1)
		return 0;
	cfg.default_timeout_s = 30;
	cfg.max_timeout_s = 300;
	cfg.max_code_bytes = 64;
	cfg.max_stdin_bytes = 16;
	setup(&r, data[0]);
	if (!r.core)
		return 0;
	if (r.http)
		off += take_headers(&r, (const char *)data + 1, size - 1);
	mcpx_lines_init(&lines, 1 << 16, on_line, on_drop, &r);
	mcpx_lines_feed(&lines, (const char *)data + off, size - off);
	mcpx_lines_finish(&lines);
	mcpx_lines_free(&lines);

	/* Every held call answered: nothing may be left pending. */
	while (nheld)
		finish_oldest();
	if (r.sink.pending != 0 || mcpx_core_inflight(r.core) != 0)
		abort();
	mcpx_core_sink_gone(r.core, &r.sink);
	mcpx_core_free(r.core);
	return 0;
}
