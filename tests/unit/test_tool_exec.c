/*
 * test_tool_exec.c - the exec tool without an executor: argument validation
 * (each error message the client can see), result encoding (fields, U+FFFD
 * for invalid UTF-8, NUL bytes, the text block being exactly the
 * structuredContent JSON), the `files` argument (every error a client can
 * see), files from out/ as content blocks, the tool description, and
 * argument errors travelling through the protocol core as isError results.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "jsonrpc.h"
#include "jsonschema.h"
#include "mcp.h"
#include "runfiles.h"
#include "tool_exec.h"
#include "utf8.h"

static struct mcpx_config cfg;
/* The parsed arguments of the last parse() and the stdin copy it made:
 * mcpx_exec_args points into them, so they live until the next parse. */
static cJSON *args;
static char *last_stdin;

/* Parses args (JSON text, the way the core does) and returns the rc; the
 * message lands in msg. */
static int parse(const char *json, struct mcpx_exec_args *a, char *msg, size_t msglen)
{
	const char *why;
	int rc;

	cJSON_Delete(args);
	free(last_stdin);
	last_stdin = NULL;
	args = json ? mcpx_jsonrpc_parse(json, strlen(json), &why) : NULL;
	if (json && !args) {
		fprintf(stderr, "bad test JSON: %s\n", json);
		abort();
	}
	rc = mcpx_exec_parse_args(args, &cfg, a, msg, msglen);
	if (rc == 0)
		last_stdin = a->stdin_data;
	return rc;
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
	             "[\"foo\" \"b\\\"ar\"] (allowed: code, timeout_s, stdin, files, language, "
	             "workspace, workspace_reset)");
	/* The workspace's name, and reset without one. */
	EXPECT_ERROR("{\"code\":\"x\",\"workspace\":\"Nope\"}",
	             "workspace must be 1 to 64 characters of a-z, 0-9, '_', '.' and '-', starting "
	             "with a letter or digit (^[a-z0-9][a-z0-9_.-]{0,63}$)");
	EXPECT_ERROR("{\"code\":\"x\",\"workspace\":\"_a\"}",
	             "workspace must be 1 to 64 characters of a-z, 0-9, '_', '.' and '-', starting "
	             "with a letter or digit (^[a-z0-9][a-z0-9_.-]{0,63}$)");
	EXPECT_ERROR("{\"code\":\"x\",\"workspace\":\"\"}",
	             "workspace must be 1 to 64 characters of a-z, 0-9, '_', '.' and '-', starting "
	             "with a letter or digit (^[a-z0-9][a-z0-9_.-]{0,63}$)");
	EXPECT_ERROR("{\"code\":\"x\",\"workspace\":7}",
	             "validating \"arguments\": validating /properties/workspace: type: 7 has type "
	             "\"integer\", want \"string\"");
	EXPECT_ERROR("{\"code\":\"x\",\"workspace_reset\":true}",
	             "workspace_reset needs a workspace");
	/* A long unknown name is cut between characters: the message is UTF-8. */
	{
		char json[1024] = "{\"code\":\"x\",\"a";

		for (int i = 0; i < 200; i++)
			strcat(json, "\xC3\xA9");
		strcat(json, "\":1}");
		CHECK_INT(parse(json, &a, msg, sizeof(msg)), -EINVAL);
		CHECK(mcpx_utf8_valid(msg, strlen(msg)));
		CHECK(strstr(msg, "[\"a\xC3\xA9") != NULL &&
		      strstr(msg, "\xC3\xA9\"] (allowed") != NULL);
	}
	/* Unknown fields are reported even when code is missing. */
	EXPECT_ERROR("{\"cmd\":\"ls\"}", "validating \"arguments\": validating root: unexpected "
	                                 "additional properties [\"cmd\"] (allowed: code, "
	                                 "timeout_s, stdin, files, language, workspace, "
	                                 "workspace_reset)");

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
	/* U+0000: stdin keeps its exact bytes (each NUL one byte of the cap),
	 * code with a NUL is refused by name rather than cut short. */
	CHECK_INT(
	    parse("{\"code\":\"x\",\"stdin\":\"\\u0000a\\u0000\\u0000\"}", &a, msg, sizeof(msg)),
	    0);
	CHECK_INT(a.stdin_len, 4);
	CHECK(a.stdin_data && memcmp(a.stdin_data, "\0a\0\0", 4) == 0);
	EXPECT_ERROR("{\"code\":\"x\",\"stdin\":\"ab\\u0000cd\"}",
	             "stdin exceeds limit of 4 bytes");
	EXPECT_ERROR("{\"code\":\"print(1)\\u0000import os\"}",
	             "code must not contain NUL characters (U+0000)");

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
	          "\"max_rss_kb\":1000,\"files\":[],\"files_truncated\":false}");
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
	                            "\"max_rss_kb\":0,\"files\":[],\"files_truncated\":false}");
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

/* Parses json, expects success, and returns the decoded files (NULL when
 * none); the caller frees them with mcpx_exec_args_free. */
static struct mcpx_exec_args parse_ok(const char *json)
{
	struct mcpx_exec_args a;
	char msg[512];

	if (parse(json, &a, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "unexpected error for %s: %s\n", json, msg);
		check_failures++;
	}
	return a;
}

static void test_parse_files(void)
{
	struct mcpx_exec_args a;
	char json[16384], *o;

	a = parse_ok(
	    "{\"code\":\"x\",\"files\":[{\"path\":\"data/a.csv\",\"content\":\"a,b\\n1,2\\n\"},"
	    "{\"path\":\"b.bin\",\"content_base64\":\"AAEC/w==\"}]}");
	CHECK(a.files != NULL);
	if (a.files) {
		CHECK_INT(a.files->n, 2);
		CHECK_STR(a.files->v[0].path, "data/a.csv");
		CHECK_INT(a.files->v[0].len, 8);
		CHECK(memcmp(a.files->v[0].data, "a,b\n1,2\n", 8) == 0);
		CHECK_STR(a.files->v[1].path, "b.bin");
		CHECK_INT(a.files->v[1].len, 4);
		CHECK(memcmp(a.files->v[1].data, "\x00\x01\x02\xff", 4) == 0);
		CHECK_INT(a.files->bytes, 12);
	}
	mcpx_exec_args_free(&a);
	CHECK(a.files == NULL);
	a = parse_ok("{\"code\":\"x\",\"files\":[]}");
	CHECK(a.files == NULL);
	/* Empty files are files. */
	a = parse_ok("{\"code\":\"x\",\"files\":[{\"path\":\"e\",\"content\":\"\"},"
	             "{\"path\":\"out/f\",\"content_base64\":\"\"}]}");
	CHECK(a.files && a.files->n == 2 && a.files->bytes == 0);
	mcpx_exec_args_free(&a);

	EXPECT_ERROR("{\"code\":\"x\",\"files\":{\"path\":\"a\"}}",
	             "validating \"arguments\": validating /properties/files: type: {...} has type "
	             "\"object\", want \"array\"");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[\"a.csv\"]}",
	             "files[0]: \"a.csv\" is not an object {path, content} or {path, "
	             "content_base64}");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"content\":\"1\"}]}",
	             "files[0]: path, content and content_base64 must be strings, and path is "
	             "required");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":1}]}",
	             "files[0]: path, content and content_base64 must be strings, and path is "
	             "required");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\"}]}",
	             "files[0]: give exactly one of content (UTF-8 text) and content_base64");
	EXPECT_ERROR(
	    "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"\",\"content_base64\":"
	    "\"\"}]}",
	    "files[0]: give exactly one of content (UTF-8 text) and content_base64");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":1}]}",
	             "files[0]: unexpected property (allowed: path, content, content_base64)");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"ok\",\"content\":\"\"},"
	             "{\"path\":\"../x\",\"content\":\"\"}]}",
	             "files[1] (path \"../x\"): \"..\" segments are not allowed");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"/etc/passwd\",\"content\":\"\"}]}",
	             "files[0] (path \"/etc/passwd\"): absolute paths are not allowed");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"main.py\",\"content\":\"\"}]}",
	             "files[0] (path \"main.py\"): main.py is where the code goes");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_base64\":\"AAE$\"}]}",
	             "files[0] (path \"a\"): content_base64 is not valid base64 (RFC 4648, "
	             "standard alphabet, no whitespace)");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_base64\":\"AA EC\"}]}",
	             "files[0] (path \"a\"): content_base64 is not valid base64 (RFC 4648, "
	             "standard alphabet, no whitespace)");
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"a\","
	             "\"content\":\"\"}]}",
	             "files[1] (path \"a\"): the same path is given twice");
	EXPECT_ERROR(
	    "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"a/b\","
	    "\"content\":\"\"}]}",
	    "files[1] (path \"a/b\"): a directory on its path is another file");

	/* The byte cap counts decoded bytes over all files: 16 here. */
	cfg.max_files_in_bytes = 16;
	a = parse_ok("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"0123456789\"},"
	             "{\"path\":\"b\",\"content_base64\":\"AAECAwQF\"}]}");
	CHECK(a.files && a.files->bytes == 16);
	mcpx_exec_args_free(&a);
	EXPECT_ERROR("{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"0123456789\"},"
	             "{\"path\":\"b\",\"content_base64\":\"AAECAwQFBg==\"}]}",
	             "files[1] (path \"b\"): the files' decoded size exceeds the limit of 16 bytes "
	             "in total (MCP_EXEC_MAX_FILES_IN_BYTES)");
	cfg.max_files_in_bytes = 4 << 20;

	/* At most MCPX_RUNFILES_MAX_IN files. */
	o = json + sprintf(json, "{\"code\":\"x\",\"files\":[");
	for (int i = 0; i <= MCPX_RUNFILES_MAX_IN; i++)
		o += sprintf(o, "%s{\"path\":\"f%d\",\"content\":\"\"}", i ? "," : "", i);
	sprintf(o, "]}");
	EXPECT_ERROR(json, "files[256] (path \"f256\"): more than 256 files");
}

/* A result with files from out/: the listing and one content block per
 * returned file, in order, after the text block. */
static void test_result_files(void)
{
	static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	struct mcpx_runfile_out v[5];
	struct mcpx_runfiles_out files = {.v = v, .n = 5, .truncated = true};
	struct mcpx_job_result r;
	cJSON *res, *content, *sc;
	char *s;

	memset(v, 0, sizeof(v));
	v[0] = (struct mcpx_runfile_out){.path = "out/chart.png",
	                                 .bytes = 16,
	                                 .data = (char *)png,
	                                 .len = 16,
	                                 .kind = MCPX_RUNFILE_IMAGE,
	                                 .mime = "image/png"};
	strcpy(v[0].sha256, "00ff");
	v[1] = (struct mcpx_runfile_out){.path = "out/a b%.csv",
	                                 .bytes = 4,
	                                 .data = "x,y\n",
	                                 .len = 4,
	                                 .kind = MCPX_RUNFILE_TEXT,
	                                 .mime = "text/csv"};
	strcpy(v[1].sha256, "11ee");
	v[2] = (struct mcpx_runfile_out){.path = "out/x.bin",
	                                 .bytes = 3,
	                                 .data = "\x00\x01\xfe",
	                                 .len = 3,
	                                 .kind = MCPX_RUNFILE_BINARY,
	                                 .mime = "application/octet-stream"};
	strcpy(v[2].sha256, "22dd");
	v[3] = (struct mcpx_runfile_out){.path = "out/link", .status = MCPX_RUNFILE_NOT_REGULAR};
	v[4] = (struct mcpx_runfile_out){
	    .path = "out/big", .bytes = 99, .status = MCPX_RUNFILE_TOO_LARGE};

	memset(&r, 0, sizeof(r));
	r.status = MCPX_JOB_DONE;
	r.files = &files;
	res = mcpx_exec_result(&r);
	content = item(res, "content");
	sc = item(res, "structuredContent");
	CHECK_INT(cJSON_GetArraySize(content), 4);
	s = cJSON_PrintUnformatted(cJSON_GetArrayItem(content, 1));
	CHECK_STR(s, "{\"type\":\"image\",\"data\":\"iVBORw0KGgoAAAANSUhEUg==\",\"mimeType\":"
	             "\"image/png\"}");
	cJSON_free(s);
	s = cJSON_PrintUnformatted(cJSON_GetArrayItem(content, 2));
	CHECK_STR(s, "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///out/a%20b%25.csv\","
	             "\"mimeType\":\"text/csv\",\"text\":\"x,y\\n\"}}");
	cJSON_free(s);
	s = cJSON_PrintUnformatted(cJSON_GetArrayItem(content, 3));
	CHECK_STR(s, "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///out/x.bin\","
	             "\"mimeType\":\"application/octet-stream\",\"blob\":\"AAH+\"}}");
	cJSON_free(s);
	s = cJSON_PrintUnformatted(item(sc, "files"));
	CHECK_STR(s,
	          "[{\"path\":\"out/chart.png\",\"bytes\":16,\"mime_type\":\"image/png\","
	          "\"sha256\":\"00ff\",\"returned\":true},"
	          "{\"path\":\"out/a b%.csv\",\"bytes\":4,\"mime_type\":\"text/csv\","
	          "\"sha256\":\"11ee\",\"returned\":true},"
	          "{\"path\":\"out/x.bin\",\"bytes\":3,\"mime_type\":\"application/octet-stream\","
	          "\"sha256\":\"22dd\",\"returned\":true},"
	          "{\"path\":\"out/link\",\"bytes\":0,\"mime_type\":null,\"sha256\":null,"
	          "\"returned\":false,\"reason\":\"not a regular file\"},"
	          "{\"path\":\"out/big\",\"bytes\":99,\"mime_type\":null,\"sha256\":null,"
	          "\"returned\":false,\"reason\":\"too large\"}]");
	cJSON_free(s);
	CHECK(cJSON_IsTrue(item(sc, "files_truncated")));
	/* The text block is still exactly structuredContent. */
	s = cJSON_PrintUnformatted(sc);
	CHECK_STR(cJSON_GetStringValue(item(cJSON_GetArrayItem(content, 0), "text")), s);
	cJSON_free(s);
	cJSON_Delete(res);
}

/* `language`: a string, checked against the languages on offer; the error
 * names the available ones. */
static void test_language(void)
{
	struct mcpx_languages langs;
	struct mcpx_exec_args a;
	char msg[512];

	memset(&langs, 0, sizeof(langs));
	langs.mask = (1u << MCPX_LANG_PYTHON) | (1u << MCPX_LANG_BASH);
	EXPECT_ERROR("{\"code\":\"x\",\"language\":1}",
	             "validating \"arguments\": validating /properties/language: type: 1 has type "
	             "\"integer\", want \"string\"");
	CHECK_INT(parse("{\"code\":\"x\"}", &a, msg, sizeof(msg)), 0);
	CHECK(a.language == NULL);
	CHECK_INT(mcpx_exec_language(&a, &langs, msg, sizeof(msg)), MCPX_LANG_PYTHON);
	mcpx_exec_args_free(&a);
	CHECK_INT(parse("{\"code\":\"x\",\"language\":\"bash\"}", &a, msg, sizeof(msg)), 0);
	CHECK_INT(mcpx_exec_language(&a, &langs, msg, sizeof(msg)), MCPX_LANG_BASH);
	/* Python alone without a language table. */
	CHECK_INT(mcpx_exec_language(&a, NULL, msg, sizeof(msg)), -EINVAL);
	CHECK_STR(msg, "language \"bash\" is not available on this server (available: python)");
	mcpx_exec_args_free(&a);
	CHECK_INT(parse("{\"code\":\"x\",\"language\":\"javascript\"}", &a, msg, sizeof(msg)), 0);
	CHECK_INT(mcpx_exec_language(&a, &langs, msg, sizeof(msg)), -EINVAL);
	CHECK_STR(msg, "language \"javascript\" is not available on this server (available: "
	               "python, bash)");
	mcpx_exec_args_free(&a);
	/* The script's own file cannot be an input file. */
	CHECK_INT(parse("{\"code\":\"x\",\"language\":\"bash\",\"files\":[{\"path\":\"a\","
	                "\"content\":\"\"},{\"path\":\"main.sh\",\"content\":\"\"}]}",
	                &a, msg, sizeof(msg)),
	          0);
	CHECK_INT(mcpx_exec_language(&a, &langs, msg, sizeof(msg)), -EINVAL);
	CHECK_STR(msg, "files[1] (path \"main.sh\"): main.sh is where the code goes");
	mcpx_exec_args_free(&a);
	CHECK_INT(parse("{\"code\":\"x\",\"language\":\"Bash\"}", &a, msg, sizeof(msg)), 0);
	CHECK_INT(mcpx_exec_language(&a, &langs, msg, sizeof(msg)), -EINVAL);
	mcpx_exec_args_free(&a);
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
	CHECK_STR(cJSON_GetStringValue(item(item(item(in, "properties"), "files"), "type")),
	          "array");
	CHECK_INT(cJSON_GetArraySize(item(in, "properties")), 5);
	/* Without languages from the sandbox: python alone. */
	s = cJSON_PrintUnformatted(item(item(item(in, "properties"), "language"), "enum"));
	CHECK_STR(s, "[\"python\"]");
	cJSON_free(s);
	/* Output: the six required fields plus our seven. */
	s = cJSON_PrintUnformatted(item(out, "required"));
	CHECK_STR(s, "[\"stdout\",\"stderr\",\"exit_code\",\"duration_ms\",\"truncated\","
	             "\"timed_out\"]");
	cJSON_free(s);
	CHECK_INT(cJSON_GetArraySize(item(out, "properties")), 13);
	s = cJSON_PrintUnformatted(item(
	    item(item(item(item(out, "properties"), "files"), "items"), "properties"), "reason"));
	CHECK_STR(s, "{\"type\":\"string\",\"description\":\"why it was not returned\","
	             "\"enum\":[\"too large\",\"too many\",\"not a regular file\","
	             "\"unsafe name\"]}");
	cJSON_free(s);
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
		    "`files`",
		    "out/",
		    "plt.show()",
		    "at most 16 files, 8 MiB in total",
		    "4 MiB in total",
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

/* The inputSchema exec publishes, compiled by the validator, agrees with
 * exec's own checks: what they accept it accepts, and the type errors they
 * report it reports too (emptiness and sizes are exec's alone). */
static void test_schema_agrees(struct mcpx_tool *tool)
{
	static const struct {
		const char *json;
		bool valid;
	} table[] = {
	    {"{\"code\":\"x\"}", true},
	    {"{\"code\":\"x\",\"timeout_s\":5,\"stdin\":\"in\"}", true},
	    {"{\"code\":\"x\",\"timeout_s\":5.0}", true},
	    {"{\"code\":\"x\",\"files\":[{\"path\":\"a.txt\",\"content\":\"t\"}]}", true},
	    {"{\"code\":\"x\",\"files\":[]}", true},
	    {"{\"code\":5}", false},
	    {"{}", false},
	    {"{\"code\":\"x\",\"timeout_s\":1.5}", false},
	    {"{\"code\":\"x\",\"timeout_s\":\"5\"}", false},
	    {"{\"code\":\"x\",\"stdin\":1}", false},
	    {"{\"code\":\"x\",\"extra\":1}", false},
	    {"{\"code\":\"x\",\"files\":{}}", false},
	    {"{\"code\":\"x\",\"files\":[{\"content\":\"t\"}]}", false},
	    {"{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":1}]}", false},
	    {"{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"other\":\"t\"}]}", false},
	    {"[]", false},
	};
	cJSON *d = tool->describe(tool);
	struct mcpx_schema *schema = NULL;
	struct mcpx_err err = {{0}};

	CHECK_INT(mcpx_schema_compile(item(d, "inputSchema"), &schema, &err), 0);
	for (size_t i = 0; schema && i < sizeof(table) / sizeof(table[0]); i++) {
		struct mcpx_schema_errors errs;
		struct mcpx_exec_args a;
		char msg[512];
		bool by_exec = parse(table[i].json, &a, msg, sizeof(msg)) == 0;
		bool by_schema = mcpx_schema_validate(schema, args, &errs) == 0;

		if (by_exec && a.files) {
			mcpx_runfiles_in_free(a.files);
			free(a.files);
		}
		if (by_exec != table[i].valid || by_schema != table[i].valid) {
			fprintf(stderr, "%s: exec %d, schema %d, want %d\n", table[i].json, by_exec,
			        by_schema, table[i].valid);
			check_failures++;
		}
	}
	mcpx_schema_free(schema);
	cJSON_Delete(d);
	cJSON_Delete(args);
	args = NULL;
	free(last_stdin);
	last_stdin = NULL;
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
	/* exec's own checks read the first "code"; the validator, run in
	 * addition, sees the second. */
	static const char req3[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	                           "\"params\":{\"name\":\"exec\",\"arguments\":{\"code\":\"1\","
	                           "\"code\":5}}}";

	mcpx_core_handle(core, &s, &sink, req, sizeof(req) - 1, &info);
	CHECK_STR(last, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
	                "\"text\":\"code must not be empty\"}],\"isError\":true}}");
	mcpx_core_handle(core, &s, &sink, req3, sizeof(req3) - 1, &info);
	CHECK_STR(last, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\","
	                "\"text\":\"invalid arguments: 1 error\\n/code: must be string (got "
	                "integer)\"}],\"isError\":true}}");
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
	cfg.max_files_in_bytes = 4 << 20;
	cfg.max_files_out = 16;
	cfg.max_files_out_bytes = 8 << 20;

	test_parse();
	test_parse_files();
	test_language();
	cJSON_Delete(args);
	args = NULL;
	free(last_stdin);
	last_stdin = NULL;
	test_result();
	test_result_files();

	tool = mcpx_tool_exec_new(&cfg, NULL, NULL);
	CHECK(tool != NULL);
	if (!tool)
		return 1;
	test_describe(tool);
	test_schema_agrees(tool);
	test_through_core(tool);
	mcpx_tool_exec_free(tool);
	CHECK_DONE();
}
