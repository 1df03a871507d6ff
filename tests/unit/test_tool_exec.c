/*
 * test_tool_exec.c - the exec tool without an executor: argument validation
 * (each error message the client can see), result encoding (fields, U+FFFD
 * for invalid UTF-8, NUL bytes, the text block being exactly the
 * structuredContent JSON), the tool description, and argument errors
 * travelling through the protocol core as isError results.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "mcp.h"
#include "tool_exec.h"

static struct mcpx_config cfg;
/* The parsed arguments of the last parse(): mcpx_exec_args points into them,
 * so they live until the next parse. */
static cJSON *args;

/* Parses args (JSON text) and returns the rc; the message lands in msg. */
static int parse(const char *json, struct mcpx_exec_args *a, char *msg, size_t msglen)
{
	cJSON_Delete(args);
	args = json ? cJSON_Parse(json) : NULL;
	if (json && !args) {
		fprintf(stderr, "bad test JSON: %s\n", json);
		abort();
	}
	return mcpx_exec_parse_args(args, &cfg, a, msg, msglen);
}

static void expect_error(const char *json, const char *want, int line)
{
	struct mcpx_exec_args a;
	char msg[512];
	int rc = parse(json, &a, msg, sizeof(msg));

	if (rc != -EINVAL || strcmp(msg, want) != 0) {
		fprintf(stderr, "test_tool_exec.c:%d: rc %d msg \"%s\", want \"%s\"\n", line, rc,
		        msg, want);
		check_failures++;
	}
}

#define EXPECT_ERROR(json, want) expect_error(json, want, __LINE__)

static unsigned timeout_for(const char *json)
{
	struct mcpx_exec_args a;
	char msg[512];

	if (parse(json, &a, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "unexpected error for %s: %s\n", json, msg);
		check_failures++;
		return 0;
	}
	return a.timeout_s;
}

static void test_parse(void)
{
	struct mcpx_exec_args a;
	char msg[512];

	/* Schema errors, worded like the Go server's go-sdk validation. */
	EXPECT_ERROR(NULL, "validating \"arguments\": validating root: required: missing "
	                   "properties: [\"code\"]");
	EXPECT_ERROR("{}", "validating \"arguments\": validating root: required: missing "
	                   "properties: [\"code\"]");
	EXPECT_ERROR("{\"stdin\":\"x\"}", "validating \"arguments\": validating root: required: "
	                                  "missing properties: [\"code\"]");
	EXPECT_ERROR("[1]", "validating \"arguments\": validating root: type: [...] has type "
	                    "\"array\", want \"object\"");
	EXPECT_ERROR("\"print(1)\"", "validating \"arguments\": validating root: type: "
	                             "\"print(1)\" has type \"string\", want \"object\"");
	EXPECT_ERROR("{\"code\":5}",
	             "validating \"arguments\": validating /properties/code: type: 5 "
	             "has type \"integer\", want \"string\"");
	EXPECT_ERROR("{\"code\":null}", "validating \"arguments\": validating /properties/code: "
	                                "type: null has type \"null\", want \"string\"");
	EXPECT_ERROR(
	    "{\"code\":\"x\",\"timeout_s\":1.5}",
	    "validating \"arguments\": validating /properties/timeout_s: type: 1.5 has type "
	    "\"number\", want \"integer\"");
	EXPECT_ERROR("{\"code\":\"x\",\"timeout_s\":\"30\"}",
	             "validating \"arguments\": validating /properties/timeout_s: type: \"30\" has "
	             "type \"string\", want \"integer\"");
	EXPECT_ERROR("{\"code\":\"x\",\"timeout_s\":true}",
	             "validating \"arguments\": validating /properties/timeout_s: type: true has "
	             "type \"boolean\", want \"integer\"");
	EXPECT_ERROR("{\"code\":\"x\",\"stdin\":{\"a\":1}}",
	             "validating \"arguments\": validating /properties/stdin: type: {...} has type "
	             "\"object\", want \"string\"");
	EXPECT_ERROR("{\"code\":\"x\",\"foo\":1,\"b\\\"ar\":2}",
	             "validating \"arguments\": validating root: unexpected additional properties "
	             "[\"foo\" \"b\\\"ar\"] (allowed: code, timeout_s, stdin)");
	/* Unknown fields are reported even when code is missing. */
	EXPECT_ERROR("{\"cmd\":\"ls\"}", "validating \"arguments\": validating root: unexpected "
	                                 "additional properties [\"cmd\"] (allowed: code, "
	                                 "timeout_s, stdin)");

	/* The Go handler's own checks, with its exact messages. */
	EXPECT_ERROR("{\"code\":\"\"}", "code must not be empty");
	EXPECT_ERROR("{\"code\":\"  \\n\\t\\r \"}", "code must not be empty");
	/* Unicode spaces count too, as in Go's strings.TrimSpace. */
	EXPECT_ERROR("{\"code\":\"\\u00a0\\u3000\\u2003\\u0085\"}", "code must not be empty");
	EXPECT_ERROR("{\"code\":\"x\",\"stdin\":\"hello\"}", "stdin exceeds limit of 4 bytes");
	EXPECT_ERROR("{\"code\":\"print(123456789)\"}", "code exceeds limit of 12 bytes");
	/* Multi-byte characters count in bytes: 2 x U+00E9 is 4 bytes, ok;
	 * 3 is 6 bytes, over. */
	CHECK_INT(parse("{\"code\":\"x\",\"stdin\":\"\\u00e9\\u00e9\"}", &a, msg, sizeof(msg)), 0);
	CHECK_INT(a.stdin_len, 4);
	EXPECT_ERROR("{\"code\":\"x\",\"stdin\":\"\\u00e9\\u00e9\\u00e9\"}",
	             "stdin exceeds limit of 4 bytes");

	/* Success: pointers into the arguments, lengths, defaults. */
	CHECK_INT(parse("{\"code\":\" print(1) \",\"stdin\":\"ab\"}", &a, msg, sizeof(msg)), 0);
	CHECK_STR(a.code, " print(1) ");
	CHECK_INT(a.code_len, 10);
	CHECK_INT(a.stdin_len, 2);
	CHECK_INT(a.timeout_s, 30);
	CHECK_INT(parse("{\"code\":\"x\"}", &a, msg, sizeof(msg)), 0);
	CHECK(a.stdin_data == NULL);
	CHECK_INT(a.stdin_len, 0);
	/* An empty stdin is present and empty, not absent. */
	CHECK_INT(parse("{\"code\":\"x\",\"stdin\":\"\"}", &a, msg, sizeof(msg)), 0);
	CHECK(a.stdin_data != NULL);

	/* timeout_s: 0/absent is the default, the rest is clamped to [1, max]. */
	CHECK_INT(timeout_for("{\"code\":\"x\"}"), 30);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":0}"), 30);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":7}"), 7);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":7.0}"), 7);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":-5}"), 1);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":300}"), 300);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":301}"), 300);
	CHECK_INT(timeout_for("{\"code\":\"x\",\"timeout_s\":1e300}"), 300);
}

static cJSON *item(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Checks the invariant of every successful result: isError false, one text
 * block, and that block is exactly the structuredContent JSON. Returns the
 * text. */
static const char *check_shape(const cJSON *res)
{
	const cJSON *content = item(res, "content");
	const cJSON *block = cJSON_GetArrayItem(content, 0);
	const cJSON *text = item(block, "text");
	char *printed = cJSON_PrintUnformatted(item(res, "structuredContent"));

	CHECK(cJSON_IsFalse(item(res, "isError")));
	CHECK_INT(cJSON_GetArraySize(content), 1);
	CHECK_STR(cJSON_GetStringValue(item(block, "type")), "text");
	CHECK(cJSON_IsString(text));
	CHECK_STR(cJSON_IsString(text) ? text->valuestring : NULL, printed);
	cJSON_free(printed);
	return cJSON_IsString(text) ? text->valuestring : "";
}

static void test_result(void)
{
	struct mcpx_job_result r;
	cJSON *res;

	/* A normal run, invalid UTF-8 in stderr. */
	memset(&r, 0, sizeof(r));
	r.status = MCPX_JOB_DONE;
	r.stdout_buf = "hi\n";
	r.stdout_len = 3;
	r.stderr_buf = "a\xff\xe2\x82"
	               "b";
	r.stderr_len = 5;
	r.exit_code = 0;
	r.duration_ms = 12;
	r.cpu_ms = 5;
	r.max_rss_kb = 1000;
	res = mcpx_exec_result(&r);
	CHECK(res != NULL);
	CHECK_STR(check_shape(res),
	          "{\"stdout\":\"hi\\n\",\"stderr\":\"a\xEF\xBF\xBD\xEF\xBF\xBD"
	          "b\",\"exit_code\":0,\"duration_ms\":12,\"truncated\":false,"
	          "\"timed_out\":false,\"signal\":null,\"limit\":null,\"cpu_ms\":5,"
	          "\"max_rss_kb\":1000}");
	cJSON_Delete(res);

	/* A timeout: the whole tree was killed. Non-zero exits and timeouts are
	 * normal results, not tool errors. */
	memset(&r, 0, sizeof(r));
	r.status = MCPX_JOB_DONE;
	r.stdout_buf = "partial";
	r.stdout_len = 7;
	r.exit_code = -1;
	r.signal = SIGKILL;
	r.timed_out = true;
	r.truncated = true;
	r.limit = "timeout";
	r.duration_ms = 30001;
	res = mcpx_exec_result(&r);
	CHECK_STR(check_shape(res), "{\"stdout\":\"partial\",\"stderr\":\"\",\"exit_code\":-1,"
	                            "\"duration_ms\":30001,\"truncated\":true,\"timed_out\":true,"
	                            "\"signal\":\"SIGKILL\",\"limit\":\"timeout\",\"cpu_ms\":0,"
	                            "\"max_rss_kb\":0}");
	cJSON_Delete(res);

	/* NUL bytes survive as \u0000 instead of cutting the string short. */
	memset(&r, 0, sizeof(r));
	r.status = MCPX_JOB_DONE;
	r.stdout_buf = "a\0b\"\x01";
	r.stdout_len = 5;
	r.exit_code = 3;
	res = mcpx_exec_result(&r);
	CHECK(strstr(check_shape(res), "\"stdout\":\"a\\u0000b\\\"\\u0001\",") != NULL);
	CHECK(strstr(check_shape(res), "\"exit_code\":3,") != NULL);
	cJSON_Delete(res);

	/* Infrastructure failures are tool errors with the executor's message,
	 * or a clear default. */
	memset(&r, 0, sizeof(r));
	r.status = MCPX_JOB_FAILED;
	snprintf(r.message, sizeof(r.message), "sandbox could not start: python3 not found");
	res = mcpx_exec_result(&r);
	{
		char *s = cJSON_PrintUnformatted(res);
		CHECK_STR(s, "{\"content\":[{\"type\":\"text\",\"text\":\"sandbox could not start: "
		             "python3 not found\"}],\"isError\":true}");
		cJSON_free(s);
	}
	cJSON_Delete(res);
	r.status = MCPX_JOB_EXPIRED;
	r.message[0] = '\0';
	res = mcpx_exec_result(&r);
	CHECK(cJSON_IsTrue(item(res, "isError")));
	CHECK(
	    strstr(cJSON_GetStringValue(item(cJSON_GetArrayItem(item(res, "content"), 0), "text")),
	           "server busy") != NULL);
	CHECK(item(res, "structuredContent") == NULL);
	cJSON_Delete(res);
	r.status = MCPX_JOB_SHUTDOWN;
	res = mcpx_exec_result(&r);
	CHECK(cJSON_IsTrue(item(res, "isError")));
	CHECK(
	    strstr(cJSON_GetStringValue(item(cJSON_GetArrayItem(item(res, "content"), 0), "text")),
	           "shutting down") != NULL);
	cJSON_Delete(res);
}

static void test_describe(struct mcpx_tool *tool)
{
	cJSON *d = tool->describe(tool);
	const cJSON *in = item(d, "inputSchema"), *out = item(d, "outputSchema");
	const char *desc = cJSON_GetStringValue(item(d, "description"));
	char *s;

	CHECK_STR(cJSON_GetStringValue(item(d, "name")), "exec");
	CHECK_STR(tool->name, "exec");
	/* Input: exactly the Go contract. */
	CHECK_STR(cJSON_GetStringValue(item(in, "type")), "object");
	CHECK(cJSON_IsFalse(item(in, "additionalProperties")));
	s = cJSON_PrintUnformatted(item(in, "required"));
	CHECK_STR(s, "[\"code\"]");
	cJSON_free(s);
	CHECK_STR(cJSON_GetStringValue(item(item(item(in, "properties"), "code"), "type")),
	          "string");
	CHECK_STR(cJSON_GetStringValue(item(item(item(in, "properties"), "timeout_s"), "type")),
	          "integer");
	CHECK_STR(cJSON_GetStringValue(item(item(item(in, "properties"), "stdin"), "type")),
	          "string");
	CHECK_INT(cJSON_GetArraySize(item(in, "properties")), 3);
	/* Output: the six required fields plus our four. */
	s = cJSON_PrintUnformatted(item(out, "required"));
	CHECK_STR(s, "[\"stdout\",\"stderr\",\"exit_code\",\"duration_ms\",\"truncated\","
	             "\"timed_out\"]");
	cJSON_free(s);
	CHECK_INT(cJSON_GetArraySize(item(out, "properties")), 10);
	s = cJSON_PrintUnformatted(item(item(item(out, "properties"), "signal"), "type"));
	CHECK_STR(s, "[\"string\",\"null\"]");
	cJSON_free(s);
	CHECK_STR(cJSON_GetStringValue(item(item(item(out, "properties"), "max_rss_kb"), "type")),
	          "integer");
	/* The description states the configured limits and the packages. */
	CHECK(desc != NULL);
	if (desc) {
		static const char *const want[] = {
		    "no network access",
		    "30s by default",
		    "at most 300s",
		    "memory 512 MiB and files 128 MiB, all processes together",
		    "capped at 1 MiB",
		    "discarded while the program keeps running",
		    "truncated=true with the program's own exit_code",
		    "capped at 4 bytes",
		    "numpy",
		    "pandas",
		    "matplotlib",
		    "PyYAML",
		    "Jinja2",
		    "Pillow",
		    "fresh Python process",
		    "not a tool error",
		};
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			if (!strstr(desc, want[i])) {
				fprintf(stderr, "description lacks \"%s\": %s\n", want[i], desc);
				check_failures++;
			}
		}
	}
	CHECK(cJSON_IsFalse(item(item(d, "annotations"), "openWorldHint")));
	cJSON_Delete(d);
}

/* Argument errors through the core: a tool error result, never a JSON-RPC
 * error, and the executor is never reached (it is NULL here). */
static char *last;

static void rec_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	free(last);
	last = strndup(json, len);
}

static void test_through_core(struct mcpx_tool *tool)
{
	struct mcpx_tool *tools[] = {tool};
	struct mcpx_core_opts opts = {
	    .server_name = "mcp-exec", .server_version = "1", .tools = tools, .ntools = 1};
	struct mcpx_core *core = mcpx_core_new(&opts);
	struct mcpx_session s = {.initialized = true, .version = "2025-11-25", .key = "stdio"};
	struct mcpx_sink sink = {.send = rec_send};
	struct mcpx_handle_info info;
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
	                          "\"params\":{\"name\":\"exec\",\"arguments\":{\"code\":\"  \"}}}";
	static const char req2[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	                           "\"params\":{\"name\":\"exec\"}}";

	mcpx_core_handle(core, &s, &sink, req, sizeof(req) - 1, &info);
	CHECK_STR(last, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
	                "\"text\":\"code must not be empty\"}],\"isError\":true}}");
	mcpx_core_handle(core, &s, &sink, req2, sizeof(req2) - 1, &info);
	CHECK_STR(last,
	          "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\","
	          "\"text\":\"validating \\\"arguments\\\": validating root: required: missing "
	          "properties: [\\\"code\\\"]\"}],\"isError\":true}}");
	CHECK_INT(mcpx_core_inflight(core), 0);
	CHECK_INT(sink.pending, 0);
	mcpx_core_free(core);
	free(last);
	last = NULL;
}

int main(void)
{
	struct mcpx_tool *tool;

	cfg.default_timeout_s = 30;
	cfg.max_timeout_s = 300;
	cfg.max_output_bytes = 1048576;
	cfg.max_stdin_bytes = 4;
	cfg.max_code_bytes = 12;
	cfg.memory_mb = 512;
	cfg.max_disk_mb = 128;
	cfg.max_procs = 64;
	cfg.max_queue = 16;

	test_parse();
	cJSON_Delete(args);
	test_result();

	tool = mcpx_tool_exec_new(&cfg, NULL);
	CHECK(tool != NULL);
	if (!tool)
		return 1;
	test_describe(tool);
	test_through_core(tool);
	mcpx_tool_exec_free(tool);
	CHECK_DONE();
}
