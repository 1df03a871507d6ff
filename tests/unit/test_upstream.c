/*
 * test_upstream.c - the upstream MCP servers' client (upstream.h: upstream.c
 * and its parts upstream_conn.c, upstream_call.c, upstream_catalog.c), on a
 * real loop against a C MCP server on loopback (mcp_fixture.h): the
 * connection (initialize, the session, the list page by page, settled once
 * it answered or failed), the catalogue (kept within max_tools, listed for
 * the gateway and for runs from the kept text, its numbers exact), calls
 * (results, isError, JSON-RPC errors, refusals before anything is sent, a
 * timeout and a cancellation followed by notifications/cancelled, a
 * forgotten session reconnected and the call sent once more, progress),
 * an upstream that is down, and a reload that drops an upstream.
 */
#include "upstream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "curl_lib.h"
#include "curl_loop.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "mcp_fixture.h"
#include "policy.h"

static struct mcpx_loop *loop;
static struct mcpx_curl_loop *http;
static struct mcpx_policy_store *store;
static struct mcpx_upstreams *ups;
static char dir[64], path[96];
static int changes;

static void write_policy(const char *json)
{
	char tmp[128];
	int f;

	snprintf(tmp, sizeof(tmp), "%s/new.json", dir);
	f = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(f >= 0 && write(f, json, strlen(json)) == (ssize_t)strlen(json));
	if (f >= 0)
		close(f);
	CHECK(rename(tmp, path) == 0);
}

static void on_changed(void *arg)
{
	(void)arg;
	changes++;
}

/* Turns the loop until *flag is true (or long enough to say it never is). */
static void turn_until(const bool *flag)
{
	for (int i = 0; i < 2000000 && !*flag; i++)
		mcpx_loop_turn(loop);
}

/* Until every exposed upstream settled and the summary holds want. */
static void wait_for(const char *const *want, size_t n)
{
	for (int i = 0; i < 2000000; i++) {
		char *s = mcpx_upstreams_summary(ups, mcpx_policy_store_current(store), NULL);
		size_t k = 0;

		while (s && k < n && strstr(s, want[k]))
			k++;
		free(s);
		if (k == n &&
		    mcpx_upstreams_settled(ups, mcpx_policy_store_current(store), NULL, 0))
			return;
		mcpx_loop_turn(loop);
	}
	CHECK(!"the upstreams connected");
}

/* ---- one call -------------------------------------------------------- */

struct answer {
	bool done;
	enum mcpx_upstream_kind kind;
	char reason[32];
	char text[512]; /* the result printed, or the message */
	int progress;
	char last_message[32];
};

static void on_done(void *arg, struct mcpx_upstream_answer *a)
{
	struct answer *r = arg;
	char *t = a->kind == MCPX_UPSTREAM_RESULT ? mcpx_json_print_exact(a->result) : NULL;

	r->done = true;
	r->kind = a->kind;
	snprintf(r->reason, sizeof(r->reason), "%s", a->reason ? a->reason : "");
	snprintf(r->text, sizeof(r->text), "%s", t ? t : a->message ? a->message : "");
	free(t);
}

static void on_progress(void *arg, double progress, const char *message)
{
	struct answer *r = arg;

	r->progress = (int)progress;
	snprintf(r->last_message, sizeof(r->last_message), "%s", message ? message : "");
}

/* Starts name as the gateway (or under the exec grant); returns the rc. */
static int start(struct answer *r, const char *name, const char *args_json, bool as_run,
                 bool progress, struct mcpx_upstream_call **out, char *msg, size_t msglen)
{
	struct mcpx_policy *p = mcpx_policy_store_current(store);
	struct mcpx_upstream_caller who = {.request_id = "1",
	                                   .caller = "test",
	                                   .policy = p,
	                                   .run_id = as_run ? "run1" : NULL,
	                                   .grant = as_run ? &p->exec : NULL};
	const char *reason = NULL;
	cJSON *args = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	if (progress) {
		who.progress = on_progress;
		who.progress_arg = r;
	}
	if (args_json)
		CHECK_INT(mcpx_json_parse(args_json, strlen(args_json), &args), 0);
	rc = mcpx_upstream_call_start(ups, &who, name, args, on_done, r, out, &reason, msg, msglen);
	if (rc == -EACCES)
		snprintf(r->reason, sizeof(r->reason), "%s", reason);
	cJSON_Delete(args);
	return rc;
}

static void call_as(struct answer *r, const char *name, const char *args_json, bool as_run,
                    bool progress)
{
	struct mcpx_upstream_call *c = NULL;
	char msg[MCPX_UPSTREAM_MSG_MAX];

	REQUIRE_INT(start(r, name, args_json, as_run, progress, &c, msg, sizeof(msg)), 0);
	turn_until(&r->done);
	CHECK(r->done);
}

static void call(struct answer *r, const char *name, const char *args_json, bool progress)
{
	call_as(r, name, args_json, false, progress);
}

/* ---- tests ------------------------------------------------------------- */

static void test_connect_and_catalog(struct mcp_fixture *m)
{
	struct mcpx_buf b;
	bool first = true;
	cJSON *gw;
	char *summary;

	static const char *const want[] = {"- u: 6 tools", "- capped: 3 tools", "- slow: 7 tools"};

	wait_for(want, 3);
	/* Seven tools in four pages; the gateway lists the allowed ones. */
	gw = mcpx_upstreams_gateway_tools(ups, mcpx_policy_store_current(store));
	REQUIRE(gw != NULL);
	CHECK_INT(cJSON_GetArraySize(gw), 6); /* secret_admin is denied */
	CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gw, 0), "name")->valuestring,
	          "u.echo");
	{
		char *t = mcpx_json_print_exact(cJSON_GetArrayItem(gw, 1));

		/* The upstream's own text, its number's bytes included. */
		CHECK_STR(t,
		          "{\"name\":\"u.add\",\"description\":\"Adds.\",\"inputSchema\":{\"type\":"
		          "\"object\"},\"outputSchema\":{\"type\":\"object\",\"properties\":{"
		          "\"sum\":{\"maximum\":1.7976931348623157e308}}}}");
		free(t);
	}
	cJSON_Delete(gw);
	mcpx_buf_init(&b, 1 << 20);
	CHECK_INT(mcpx_upstreams_run_tools(ups, mcpx_policy_store_current(store),
	                                   &mcpx_policy_store_current(store)->exec, &b, &first),
	          0);
	CHECK(
	    strncmp(mcpx_buf_str(&b),
	            "{\"name\":\"u.echo\",\"description\":\"Echoes.\",\"input_schema\":{\"type\":"
	            "\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}},\"output_schema\":"
	            "null},{\"name\":\"u.add\"",
	            60) == 0);
	CHECK(!first && strstr(mcpx_buf_str(&b), "\"u.secret_admin\"") == NULL &&
	      strstr(mcpx_buf_str(&b), "\"slow.secret_admin\"") != NULL);
	mcpx_buf_free(&b);
	summary = mcpx_upstreams_summary(ups, mcpx_policy_store_current(store), NULL);
	CHECK(summary && strstr(summary, "- u: 6 tools (server c-fixture)\n"));
	CHECK(summary && strstr(summary, "- capped: 3 tools (server c-fixture)\n"));
	CHECK(summary && strstr(summary, "- down: not connected yet\n"));
	free(summary);
	CHECK(changes > 0);
}

static void test_calls(struct mcp_fixture *m)
{
	struct mcpx_upstream_call *c = NULL;
	char msg[MCPX_UPSTREAM_MSG_MAX];
	struct answer r;

	call(&r, "u.echo", "{\"text\":\"hi\"}", false);
	CHECK_INT(r.kind, MCPX_UPSTREAM_RESULT);
	CHECK_STR(r.text, "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}");
	call(&r, "u.add", "{\"a\":0.1,\"b\":0.2}", false);
	CHECK_STR(r.text, "{\"content\":[],\"structuredContent\":{\"sum\":0.30000000000000004}}");
	call(&r, "u.fail", NULL, false);
	CHECK_INT(r.kind, MCPX_UPSTREAM_RESULT);
	CHECK(strstr(r.text, "\"isError\":true") != NULL);
	call(&r, "u.rpc_error", NULL, false);
	CHECK_INT(r.kind, MCPX_UPSTREAM_TOOL_ERROR);
	CHECK_STR(r.text, "u.rpc_error: no such tool here");

	/* Refused before anything is sent. */
	CHECK_INT(start(&r, "u.secret_admin", NULL, false, false, &c, msg, sizeof(msg)), -EACCES);
	CHECK_STR(r.reason, "not_allowed");
	CHECK_INT(start(&r, "u.nope", NULL, false, false, &c, msg, sizeof(msg)), -EACCES);
	CHECK_STR(r.reason, "no_tool");
	CHECK_INT(start(&r, "hidden.echo", NULL, false, false, &c, msg, sizeof(msg)), -EACCES);
	CHECK_STR(r.reason, "not_allowed");
	/* Down, or reconnecting and then down again. */
	if (start(&r, "down.echo", NULL, true, false, &c, msg, sizeof(msg)) == 0) {
		turn_until(&r.done);
		CHECK_INT(r.kind, MCPX_UPSTREAM_DENIED);
	}
	CHECK_STR(r.reason, "upstream_down");
	CHECK_INT(start(&r, "nosuch.echo", NULL, false, false, &c, msg, sizeof(msg)), -ENOENT);
	CHECK_INT(mcp_fixture_count(m, "secret_admin"), 0);

	/* Progress, asked for with the request's own token. */
	call(&r, "u.progress", NULL, true);
	CHECK_INT(r.progress, 3);
	CHECK_STR(r.last_message, "step 3");
	CHECK(strcmp(m->last_token, "-1") != 0);
	call(&r, "u.progress", NULL, false);
	CHECK_INT(r.progress, 0);
	CHECK_STR(m->last_token, "-1");
}

static void test_timeout_and_cancel(struct mcp_fixture *m)
{
	struct mcpx_upstream_call *c = NULL;
	char msg[MCPX_UPSTREAM_MSG_MAX];
	struct answer r;
	int cancelled = mcp_fixture_count(m, NULL);

	/* timeout_s 1 of upstream slow: a hang ends as a timeout, and the
	 * upstream hears notifications/cancelled. */
	call_as(&r, "slow.hang", NULL, true, false);
	CHECK_INT(r.kind, MCPX_UPSTREAM_TOOL_ERROR);
	CHECK(strstr(r.text, "no answer in 1 s") != NULL);
	for (int i = 0; i < 2000000 && mcp_fixture_count(m, NULL) == cancelled; i++)
		mcpx_loop_turn(loop);
	CHECK_INT(mcp_fixture_count(m, NULL), cancelled + 1);

	/* The caller goes away: no answer, and notifications/cancelled. */
	REQUIRE_INT(start(&r, "u.hang", NULL, false, false, &c, msg, sizeof(msg)), 0);
	for (int i = 0; i < 2000000 && mcp_fixture_count(m, "hang") < 2; i++)
		mcpx_loop_turn(loop);
	mcpx_upstream_call_cancel(c);
	for (int i = 0; i < 2000000 && mcp_fixture_count(m, NULL) == cancelled + 1; i++)
		mcpx_loop_turn(loop);
	CHECK_INT(mcp_fixture_count(m, NULL), cancelled + 2);
	CHECK(!r.done);
}

/* The upstream restarted: the call's 404 reconnects and sends it again. */
static void test_session_gone(struct mcp_fixture *m)
{
	int echoes = mcp_fixture_count(m, "echo");
	struct answer r;

	mcp_fixture_restart(m);
	call(&r, "u.echo", "{\"text\":\"again\"}", false);
	CHECK_INT(r.kind, MCPX_UPSTREAM_RESULT);
	CHECK(strstr(r.text, "again") != NULL);
	CHECK_INT(mcp_fixture_count(m, "echo"), echoes + 1);
}

/* A reload that drops an upstream ends its connection; what stays keeps
 * its list. */
static void test_reload(struct mcp_fixture *m, const char *policy_without_capped)
{
	struct mcpx_upstream_call *c = NULL;
	char msg[MCPX_UPSTREAM_MSG_MAX];
	struct answer r;
	char *summary;

	write_policy(policy_without_capped);
	CHECK(mcpx_policy_store_check(store) >= 0);
	mcpx_upstreams_reload(ups);
	CHECK_INT(start(&r, "capped.echo", NULL, false, false, &c, msg, sizeof(msg)), -ENOENT);
	summary = mcpx_upstreams_summary(ups, mcpx_policy_store_current(store), NULL);
	CHECK(summary && strstr(summary, "- u: 6 tools") && !strstr(summary, "capped"));
	free(summary);
	call(&r, "u.echo", "{\"text\":\"still\"}", false);
	CHECK_INT(r.kind, MCPX_UPSTREAM_RESULT);
	(void)m;
}

int main(void)
{
	const struct mcpx_policy_opts opts = {.credentials_allowed = true};
	struct mcpx_err err = {{0}};
	struct mcp_fixture m;
	char policy[2048], without[2048];
	int f;

	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	if (!mcpx_curl_available()) {
		fprintf(stderr, "libcurl cannot be loaded: skipped\n");
		return 77;
	}
	if (!mcp_fixture_start(&m)) {
		fprintf(stderr, "set-up failed\n");
		return 1;
	}
	snprintf(policy, sizeof(policy),
	         "{\"upstreams\": ["
	         "{\"name\": \"u\", \"url\": \"%s\", \"allow_cidrs\": [\"127.0.0.1/32\"], "
	         "\"expose\": true, \"tools\": {\"deny\": [\"secret_*\"]}},"
	         "{\"name\": \"capped\", \"url\": \"%s\", \"allow_cidrs\": [\"127.0.0.1/32\"], "
	         "\"max_tools\": 3},"
	         "{\"name\": \"slow\", \"url\": \"%s\", \"allow_cidrs\": [\"127.0.0.1/32\"], "
	         "\"timeout_s\": 1},"
	         "{\"name\": \"hidden\", \"url\": \"%s\", \"allow_cidrs\": [\"127.0.0.1/32\"]},"
	         "{\"name\": \"down\", \"url\": \"http://127.0.0.1:1/mcp\", \"allow_cidrs\": "
	         "[\"127.0.0.1/32\"], \"expose\": true}],"
	         " \"exec\": {\"upstreams\": [\"u\", \"down\", \"slow\"]}}",
	         m.url, m.url, m.url, m.url);
	snprintf(without, sizeof(without),
	         "{\"upstreams\": ["
	         "{\"name\": \"u\", \"url\": \"%s\", \"allow_cidrs\": [\"127.0.0.1/32\"], "
	         "\"expose\": true, \"tools\": {\"deny\": [\"secret_*\"]}}]}",
	         m.url);
	snprintf(dir, sizeof(dir), "/tmp/mcpx-test-upstream-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/policy.json", dir);
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(f >= 0 && write(f, policy, strlen(policy)) == (ssize_t)strlen(policy));
	if (f >= 0)
		close(f);
	loop = mcpx_loop_new();
	http = mcpx_curl_loop_new(loop, "test");
	CHECK_INT(mcpx_policy_store_open(path, &opts, &store, &err), 0);
	CHECK_INT(mcpx_upstreams_new(loop, http, store, NULL, &ups), 0);
	mcpx_upstreams_on_list_changed(ups, on_changed, NULL);

	test_connect_and_catalog(&m);
	test_calls(&m);
	test_timeout_and_cancel(&m);
	test_session_gone(&m);
	test_reload(&m, without);

	mcpx_upstreams_free(ups);
	mcpx_policy_store_free(store);
	mcpx_curl_loop_free(http);
	mcpx_loop_free(loop);
	http_fixture_stop(&m.http);
	unlink(path);
	rmdir(dir);
	CHECK_DONE();
}
