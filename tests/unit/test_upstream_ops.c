/*
 * test_upstream_ops.c - what a run's code asks of the upstreams over its
 * channel (upstream_ops.h: the ops "upstream" and "upstream_tools"), on a
 * real loop, a real run channel and a C MCP server on loopback
 * (mcp_fixture.h): the answer is the structuredContent (its numbers
 * exact), else the joined text, or with "raw" the whole result; isError
 * and JSON-RPC errors are tool errors; a name of no upstream is
 * "not_upstream"; arguments that are not an object, calls past
 * max_calls_per_run or max_in_flight are denied (and never sent); the tool
 * list comes from the kept text with the functions code may call; the
 * run's end cancels its calls (the upstream hears notifications/cancelled).
 */
#include "upstream_ops.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_wire.h"
#include "channel_fixture.h"
#include "check.h"
#include "curl_lib.h"
#include "log.h"
#include "mcp_fixture.h"
#include "upstream.h"

static struct channel_fixture fx;

/* One frame (json, body) written as the run. */
static void send_frame(const char *json, const char *body)
{
	size_t jl = strlen(json), bl = body ? strlen(body) : 0;
	unsigned char hdr[MCPX_WIRE_HEADER_LEN] = {
	    (unsigned char)(jl >> 24), (unsigned char)(jl >> 16), (unsigned char)(jl >> 8),
	    (unsigned char)jl,         (unsigned char)(bl >> 24), (unsigned char)(bl >> 16),
	    (unsigned char)(bl >> 8),  (unsigned char)bl};

	CHECK(write(fx.fd, hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr));
	CHECK(write(fx.fd, json, jl) == (ssize_t)jl);
	if (bl)
		CHECK(write(fx.fd, body, bl) == (ssize_t)bl);
}

struct reply {
	char json[512];
	char body[8192];
};

/* The next answer to the run (bytes read past it wait for the next). */
static bool next_reply(struct reply *out)
{
	static struct mcpx_wire_in in;
	static bool init;
	static char buf[65536];
	static size_t have;

	if (!init) {
		mcpx_wire_in_init(&in, 1 << 20);
		init = true;
	}
	for (int i = 0; i < 2000000; i++) {
		ssize_t r;
		size_t used = 0;
		int rc = have ? mcpx_wire_in_feed(&in, buf, have, &used) : 0;

		memmove(buf, buf + used, have - used);
		have -= used;
		if (rc == 1) {
			snprintf(out->json, sizeof(out->json), "%s", mcpx_buf_str(&in.json));
			snprintf(out->body, sizeof(out->body), "%.*s", (int)in.body.len,
			         in.body.data ? in.body.data : "");
			mcpx_wire_in_next(&in);
			return true;
		}
		r = read(fx.fd, buf + have, sizeof(buf) - have);
		if (r > 0)
			have += (size_t)r;
		else
			mcpx_loop_turn(fx.loop);
	}
	return false;
}

static void ask(struct reply *r, const char *json, const char *body)
{
	memset(r, 0, sizeof(*r));
	send_frame(json, body);
	CHECK(next_reply(r));
}

static void test_calls(struct mcp_fixture *m)
{
	struct reply r;

	ask(&r, "{\"id\":1,\"op\":\"upstream\",\"name\":\"u.echo\"}", "{\"text\":\"hi\"}");
	CHECK_STR(r.json, "{\"id\":1,\"ok\":true}");
	CHECK_STR(r.body, "\"hi\"");
	/* Refused before they count: not an object, a denied tool. */
	ask(&r, "{\"id\":7,\"op\":\"upstream\",\"name\":\"u.echo\"}", "[1]");
	CHECK(strstr(r.json, "\"reason\":\"bad_request\"") != NULL);
	ask(&r, "{\"id\":8,\"op\":\"upstream\",\"name\":\"u.secret_admin\"}", "{}");
	CHECK(strstr(r.json, "\"reason\":\"not_allowed\"") != NULL);
	CHECK_INT(mcp_fixture_count(m, "secret_admin"), 0);
	ask(&r, "{\"id\":2,\"op\":\"upstream\",\"name\":\"u.add\"}", "{\"a\":1e400}");
	CHECK_STR(r.body, "{\"sum\":0.30000000000000004}");
	ask(&r, "{\"id\":3,\"op\":\"upstream\",\"name\":\"u.add\",\"raw\":true}", "{}");
	CHECK_STR(r.body, "{\"content\":[],\"structuredContent\":{\"sum\":0.30000000000000004}}");
	ask(&r, "{\"id\":4,\"op\":\"upstream\",\"name\":\"u.fail\"}", "{}");
	CHECK_STR(r.json, "{\"id\":4,\"error\":\"tool\",\"message\":\"it broke\"}");
	ask(&r, "{\"id\":5,\"op\":\"upstream\",\"name\":\"u.rpc_error\"}", "{}");
	CHECK(strstr(r.json, "\"error\":\"tool\"") && strstr(r.json, "no such tool here"));
	ask(&r, "{\"id\":6,\"op\":\"upstream\",\"name\":\"nothing.here\"}", "{}");
	CHECK_STR(r.json, "{\"id\":6,\"error\":\"not_upstream\"}");
	/* Five calls were sent (echo, add twice, fail, rpc_error): the sixth
	 * is past max_calls_per_run. */
	ask(&r, "{\"id\":9,\"op\":\"upstream\",\"name\":\"u.echo\"}", "{}");
	CHECK(strstr(r.json, "\"reason\":\"budget\"") != NULL);
	CHECK_INT(mcp_fixture_count(m, "echo"), 1);
}

static void test_tools(void)
{
	struct reply r;

	ask(&r, "{\"id\":20,\"op\":\"upstream_tools\"}", NULL);
	CHECK_STR(r.json, "{\"id\":20,\"ok\":true}");
#define FIRST "[{\"name\":\"u.echo\",\"description\":\"Echoes.\",\"input_schema\":"
	CHECK(strncmp(r.body, FIRST, strlen(FIRST)) == 0);
	CHECK(strstr(r.body, "\"maximum\":1.7976931348623157e308") != NULL);
	CHECK(strstr(r.body, "\"u.secret_admin\"") == NULL);
	CHECK(strstr(r.body, "{\"name\":\"f1\",\"description\":\"F.\",\"input_schema\":{\"type\":"
	                     "\"object\"},\"output_schema\":null}]") != NULL);
}

/* max_in_flight 1: a second call waits for none, it is refused; the run's
 * end cancels the first, and the upstream hears of it. */
static void test_in_flight_and_end(struct mcp_fixture *m, struct mcpx_run_channel_run *run)
{
	int cancelled = mcp_fixture_count(m, NULL);
	struct reply r;

	send_frame("{\"id\":30,\"op\":\"upstream\",\"name\":\"v.hang\"}", "{}");
	for (int i = 0; i < 2000000 && mcp_fixture_count(m, "hang") == 0; i++)
		mcpx_loop_turn(fx.loop);
	ask(&r, "{\"id\":31,\"op\":\"upstream\",\"name\":\"v.echo\"}", "{}");
	CHECK(strstr(r.json, "\"id\":31") && strstr(r.json, "\"reason\":\"in_flight\""));
	mcpx_run_channel_end(run);
	for (int i = 0; i < 2000000 && mcp_fixture_count(m, NULL) == cancelled; i++)
		mcpx_loop_turn(fx.loop);
	CHECK_INT(mcp_fixture_count(m, NULL), cancelled + 1);
}

int main(void)
{
	struct mcpx_run_who who = {.run_id = "r1", .caller = "test"};
	struct mcpx_upstreams *ups = NULL;
	struct mcpx_upstream_ops *ops;
	struct mcpx_run_channel_run *run;
	struct mcp_fixture m;
	char policy[2048], src[128];
	FILE *f;

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	if (!mcpx_curl_available()) {
		fprintf(stderr, "libcurl cannot be loaded: skipped\n");
		return 77;
	}
	if (!mcp_fixture_start(&m)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	snprintf(src, sizeof(src), "/tmp/mcpx-test-upstream-ops-%d.py", (int)getpid());
	f = fopen(src, "w");
	CHECK(f && fputs("def handler(args, ctx):\n    return {}\n", f) >= 0);
	if (f)
		fclose(f);
	snprintf(policy, sizeof(policy),
	         "{\"upstreams\": [{\"name\": \"u\", \"url\": \"%s\", \"allow_cidrs\": "
	         "[\"127.0.0.1/32\"], \"max_calls_per_run\": 5, \"tools\": {\"deny\": "
	         "[\"secret_*\"]}}, {\"name\": \"v\", \"url\": \"%s\", \"allow_cidrs\": "
	         "[\"127.0.0.1/32\"]}],"
	         " \"functions\": [{\"name\": \"f1\", \"description\": \"F.\", \"input_schema\": "
	         "{\"type\": \"object\"}, \"source_file\": \"%s\", \"callable_from_exec\": true}],"
	         " \"exec\": {\"upstreams\": [\"u\", \"v\"], \"max_in_flight\": 1}}",
	         m.url, m.url, src);
	channel_fixture_open(&fx, policy, true);
	if (mcpx_upstreams_new(fx.loop, fx.http, fx.store, NULL, &ups) < 0 ||
	    !(ops = mcpx_upstream_ops_new(fx.rc, ups))) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	/* Until both lists are in. */
	for (int i = 0; i < 2000000; i++) {
		char *s = mcpx_upstreams_summary(ups, mcpx_policy_store_current(fx.store), NULL);
		bool in = s && strstr(s, "- u: 6 tools") && strstr(s, "- v: 7 tools");

		free(s);
		if (in)
			break;
		mcpx_loop_turn(fx.loop);
	}
	run = channel_fixture_start(&fx, &who);

	test_calls(&m);
	test_tools();
	test_in_flight_and_end(&m, run);

	mcpx_upstream_ops_free(ops);
	mcpx_upstreams_free(ups);
	channel_fixture_close(&fx);
	http_fixture_stop(&m.http);
	unlink(src);
	CHECK_DONE();
}
