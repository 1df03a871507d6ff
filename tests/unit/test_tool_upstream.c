/*
 * test_tool_upstream.c - the gateway (tool_upstream.h): exposed upstreams'
 * tools as tools of this server, through the real MCP core, on a real loop
 * against a C MCP server on loopback (mcp_fixture.h). The first tools/list
 * waits for the exposed upstream's first answer and then lists its allowed
 * tools (issue 34 item 7); a call's result reaches the client as the
 * upstream gave it (numbers' bytes included); a client that asked for
 * progress gets the upstream's, with its own token; a tool the globs deny
 * is a tool error, one of an upstream without expose an unknown tool;
 * arguments that are not an object are refused; a cancelled call is never
 * answered and the upstream hears notifications/cancelled.
 */
#include "tool_upstream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "curl_lib.h"
#include "curl_loop.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mcp_fixture.h"
#include "policy.h"
#include "upstream.h"

#define MAXMSG 64

struct rec_sink {
	struct mcpx_sink base; /* first: the core hands us &base */
	char *msg[MAXMSG];
	int n;
};

static void rec_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct rec_sink *r = (struct rec_sink *)sink;

	(void)response;
	if (r->n < MAXMSG)
		r->msg[r->n++] = strndup(json, len);
}

static void rec_clear(struct rec_sink *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->msg[i]);
	r->n = 0;
}

static struct mcpx_loop *loop;
static struct mcpx_core *core;
static struct rec_sink sink;
static struct mcpx_session session;

static void on_changed(void *arg)
{
	(void)arg;
	if (core)
		mcpx_core_tools_ready(core);
}

static void send_msg(const char *json)
{
	struct mcpx_handle_info info;

	memset(&info, 0, sizeof(info));
	mcpx_core_handle(core, &session, &sink.base, json, strlen(json), &info);
}

/* The message (after from) holding needle, waiting for it on the loop. */
static const char *wait_msg(int from, const char *needle)
{
	for (int i = 0; i < 2000000; i++) {
		for (int k = from; k < sink.n; k++)
			if (strstr(sink.msg[k], needle))
				return sink.msg[k];
		mcpx_loop_turn(loop);
	}
	return NULL;
}

static void test_first_list(void)
{
	const char *m;

	/* Sent before the upstream could answer: it waits. */
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	CHECK_INT(sink.n, 0);
	m = wait_msg(0, "\"id\":1,");
	REQUIRE(m != NULL);
	CHECK(strstr(m, "\"name\":\"u.echo\"") && strstr(m, "\"name\":\"u.add\""));
	CHECK(strstr(m, "u.secret_admin") == NULL && strstr(m, "hidden.") == NULL);
	CHECK(strstr(m, "\"maximum\":1.7976931348623157e308") != NULL);
	rec_clear(&sink);
	/* Then at once. */
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	CHECK_INT(sink.n, 1);
	rec_clear(&sink);
}

static void test_calls(void)
{
	const char *m;

	send_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"u.add\",\"arguments\":{}}}");
	m = wait_msg(0, "\"id\":3,");
	CHECK_STR(m,
	          "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[],\"structuredContent\":"
	          "{\"sum\":0.30000000000000004}}}");
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"u.secret_admin\",\"arguments\":{}}}");
	m = wait_msg(0, "\"id\":4,");
	CHECK(m && strstr(m, "\"isError\":true") && strstr(m, "not allowed by the policy"));
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"hidden.echo\",\"arguments\":{}}}");
	m = wait_msg(0, "\"id\":5,");
	CHECK(m && strstr(m, "Unknown tool: hidden.echo"));
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"u.echo\",\"arguments\":[1]}}");
	m = wait_msg(0, "\"id\":6,");
	CHECK(m && strstr(m, "arguments must be an object"));
	rec_clear(&sink);
}

static void test_progress(struct mcp_fixture *fx)
{
	const char *m;
	int notes = 0;

	send_msg("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"u.progress\",\"arguments\":{},\"_meta\":{\"progressToken\":\"tok\"}}}");
	m = wait_msg(0, "\"id\":7,");
	CHECK(m && strstr(m, "\"text\":\"done\""));
	for (int k = 0; k < sink.n; k++)
		notes += strstr(sink.msg[k], "\"method\":\"notifications/progress\"") &&
		         strstr(sink.msg[k], "\"progressToken\":\"tok\"") != NULL;
	CHECK_INT(notes, 3);
	CHECK(strstr(sink.msg[2], "\"progress\":3,\"message\":\"step 3\"") != NULL);
	/* The upstream was asked with a number of the server's own. */
	CHECK(strcmp(fx->last_token, "-1") != 0);
	rec_clear(&sink);
}

static void test_cancel(struct mcp_fixture *fx)
{
	int cancelled = mcp_fixture_count(fx, NULL);

	send_msg("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
	         "\"u.hang\",\"arguments\":{}}}");
	for (int i = 0; i < 2000000 && mcp_fixture_count(fx, "hang") == 0; i++)
		mcpx_loop_turn(loop);
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	         "\"requestId\":8}}");
	for (int i = 0; i < 2000000 && mcp_fixture_count(fx, NULL) == cancelled; i++)
		mcpx_loop_turn(loop);
	CHECK_INT(mcp_fixture_count(fx, NULL), cancelled + 1);
	/* Never answered. */
	for (int i = 0; i < 20000; i++)
		mcpx_loop_turn(loop);
	for (int k = 0; k < sink.n; k++)
		CHECK(strstr(sink.msg[k], "\"id\":8,") == NULL);
}

int main(void)
{
	const struct mcpx_policy_opts opts = {.credentials_allowed = true};
	struct mcpx_core_opts co = {.server_name = "t", .server_version = "1"};
	struct mcpx_policy_store *store = NULL;
	struct mcpx_upstreams *ups = NULL;
	struct mcpx_curl_loop *http;
	struct mcpx_err err = {{0}};
	struct mcpx_tool *tool;
	struct mcp_fixture fx;
	char dir[64] = "/tmp/mcpx-test-gateway-XXXXXX", path[96], policy[1024];
	int f;

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	if (!mcpx_curl_available()) {
		fprintf(stderr, "libcurl cannot be loaded: skipped\n");
		return 77;
	}
	if (!mcp_fixture_start(&fx) || !mkdtemp(dir)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	snprintf(policy, sizeof(policy),
	         "{\"upstreams\": [{\"name\": \"u\", \"url\": \"%s\", \"allow_cidrs\": "
	         "[\"127.0.0.1/32\"], \"expose\": true, \"tools\": {\"deny\": [\"secret_*\"]}},"
	         "{\"name\": \"hidden\", \"url\": \"%s\", \"allow_cidrs\": [\"127.0.0.1/32\"]}]}",
	         fx.url, fx.url);
	snprintf(path, sizeof(path), "%s/policy.json", dir);
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(f >= 0 && write(f, policy, strlen(policy)) == (ssize_t)strlen(policy));
	if (f >= 0)
		close(f);
	loop = mcpx_loop_new();
	http = mcpx_curl_loop_new(loop, "test");
	if (mcpx_policy_store_open(path, &opts, &store, &err) < 0 ||
	    mcpx_upstreams_new(loop, http, store, NULL, &ups) < 0 ||
	    !(tool = mcpx_tool_upstream_new(ups, store, NULL))) {
		fprintf(stderr, "set-up failed: %s\n", err.msg);
		return 1;
	}
	mcpx_upstreams_on_list_changed(ups, on_changed, NULL);
	co.provider = mcpx_tool_upstream_provider(tool);
	co.tools_list_changed = true;
	core = mcpx_core_new(&co);
	memset(&sink, 0, sizeof(sink));
	sink.base.send = rec_send;
	memset(&session, 0, sizeof(session));
	snprintf(session.version, sizeof(session.version), "2025-06-18");
	session.initialized = true;
	session.log_level = MCPX_LEVEL_OFF;
	snprintf(session.key, sizeof(session.key), "stdio");
	snprintf(session.caller, sizeof(session.caller), "stdio");

	test_first_list();
	test_calls();
	test_progress(&fx);
	test_cancel(&fx);

	mcpx_core_free(core);
	core = NULL;
	mcpx_tool_upstream_free(tool);
	mcpx_upstreams_free(ups);
	mcpx_policy_store_free(store);
	mcpx_curl_loop_free(http);
	mcpx_loop_free(loop);
	http_fixture_stop(&fx.http);
	rec_clear(&sink);
	unlink(path);
	rmdir(dir);
	CHECK_DONE();
}
