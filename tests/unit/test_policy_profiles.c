/*
 * test_policy_profiles.c - the policy's "profiles": a complete section
 * parsed into what it says, the first matching profile applying (globs over
 * callers, ServiceAccount names included), tools filtered with exec and
 * functions alike, an unmatched caller seeing exec alone under the
 * top-level grant, no "profiles" meaning no filtering, and every mistake
 * refused with the JSON pointer of where it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "policy.h"

static const struct mcpx_policy_opts opts = {.credentials_allowed = true};

static int parse(const char *json, struct mcpx_policy **p, struct mcpx_err *err)
{
	return mcpx_policy_parse(json, strlen(json), &opts, p, NULL, 0, NULL, err);
}

static void expect_error(int line, const char *json, const char *pointer, const char *words)
{
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	int rc = parse(json, &p, &err);

	if (rc == 0 || strncmp(err.msg, pointer, strlen(pointer)) != 0 ||
	    (words && !strstr(err.msg, words))) {
		fprintf(stderr, "line %d: rc %d, message \"%s\"; expected \"%s ... %s\"\n", line,
		        rc, err.msg, pointer, words ? words : "");
		check_failures++;
	}
	CHECK(p == NULL);
	mcpx_policy_unref(p);
}
#define EXPECT_ERROR(json, pointer, words) expect_error(__LINE__, json, pointer, words)

#define RULES                                                                                      \
	"\"egress\": [{\"name\": \"invoices\", \"url_prefix\": \"https://inv.example/\"},"         \
	"             {\"name\": \"public\", \"url_prefix\": \"https://pub.example/\"}],"          \
	"\"exec\": {\"egress\": [\"public\"]},"

static void test_complete(void)
{
	const char *json =
	    "{" RULES
	    "\"upstreams\": [{\"name\": \"github\", \"url\": \"https://gh.example/mcp\"},"
	    "              {\"name\": \"jira\", \"url\": \"https://jira.example/mcp\"}],"
	    "\"profiles\": ["
	    " {\"name\": \"billing\", \"callers\": [\"billing-agent\", "
	    "\"system:serviceaccount:billing:*\"],"
	    "  \"tools\": [\"exec\", \"get_*\"],"
	    "  \"exec\": {\"egress\": [\"invoices\"], \"upstreams\": [\"github\", \"jira\"],"
	    "            \"max_requests\": 5},"
	    "  \"limits\": {\"timeout_s\": 5, \"memory_mb\": 128, \"max_queued\": 2,"
	    "              \"runs_per_minute\": 30},"
	    "  \"workspaces\": {\"max_mb\": 16, \"max\": 4}},"
	    " {\"name\": \"readers\", \"callers\": [\"*-reader\", \"billing-agent\"],"
	    "  \"tools\": [\"list_invoices\"], \"workspaces\": false},"
	    " {\"name\": \"everyone\", \"callers\": [\"*\"], \"tools\": [\"*\"],"
	    "  \"workspaces\": true}]}";
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	const struct mcpx_profile *pr;

	CHECK_INT(parse(json, &p, &err), 0);
	if (!p) {
		fprintf(stderr, "%s\n", err.msg);
		check_failures++;
		return;
	}
	CHECK(p->has_profiles);
	CHECK_INT(p->n_profiles, 3);

	pr = mcpx_policy_profile_for(p, "billing-agent");
	CHECK(pr && strcmp(pr->name, "billing") == 0);
	if (pr) {
		CHECK(pr->has_exec);
		CHECK_INT(pr->exec.n_rules, 1);
		CHECK_STR(pr->exec.rules[0]->name, "invoices");
		CHECK_INT(pr->exec.max_requests, 5);
		CHECK_INT(pr->exec.n_upstreams, 2);
		if (pr->exec.n_upstreams == 2)
			CHECK_STR(pr->exec.upstreams[1]->name, "jira");
		CHECK_INT(pr->limits.timeout_s, 5);
		CHECK_INT(pr->limits.memory_mb, 128);
		CHECK_INT(pr->limits.max_queued, 2);
		CHECK_INT(pr->limits.runs_per_minute, 30);
		CHECK(!pr->workspaces.off);
		CHECK_INT(pr->workspaces.max_mb, 16);
		CHECK_INT(pr->workspaces.max, 4);
	}
	/* "*" spans the ':' of a ServiceAccount's name. */
	pr = mcpx_policy_profile_for(p, "system:serviceaccount:billing:invoicer");
	CHECK(pr && strcmp(pr->name, "billing") == 0);
	/* First match wins: billing-agent is also in "readers". */
	pr = mcpx_policy_profile_for(p, "ledger-reader");
	CHECK(pr && strcmp(pr->name, "readers") == 0);
	CHECK(!pr || !pr->has_exec);
	CHECK(!pr || pr->limits.timeout_s == 0); /* not set: the server's */
	CHECK(pr && pr->workspaces.off);
	pr = mcpx_policy_profile_for(p, "someone");
	CHECK(pr && !pr->workspaces.off && pr->workspaces.max_mb == 0 && pr->workspaces.max == 0);

	/* Tools: the profile's globs, exec included. */
	CHECK(mcpx_policy_tool_allowed(p, "billing-agent", "exec"));
	CHECK(mcpx_policy_tool_allowed(p, "billing-agent", "get_invoice"));
	CHECK(!mcpx_policy_tool_allowed(p, "billing-agent", "list_invoices"));
	CHECK(!mcpx_policy_tool_allowed(p, "ledger-reader", "exec"));
	CHECK(mcpx_policy_tool_allowed(p, "ledger-reader", "list_invoices"));
	CHECK(mcpx_policy_tool_allowed(p, "someone", "anything"));

	/* exec's grant: the profile's, else the top level's. */
	CHECK(mcpx_policy_exec_grant(p, "billing-agent") ==
	      &mcpx_policy_profile_for(p, "billing-agent")->exec);
	CHECK(mcpx_policy_exec_grant(p, "ledger-reader") == &p->exec);
	mcpx_policy_unref(p);
}

/* With "profiles", a caller none matches sees exec alone; without it,
 * every caller sees every tool. */
static void test_unmatched_and_absent(void)
{
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};

	CHECK_INT(parse("{" RULES "\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], "
	                "\"tools\": [\"*\"]}]}",
	                &p, &err),
	          0);
	CHECK(mcpx_policy_profile_for(p, "b") == NULL);
	CHECK(mcpx_policy_tool_allowed(p, "b", "exec"));
	CHECK(!mcpx_policy_tool_allowed(p, "b", "get_invoice"));
	CHECK(mcpx_policy_exec_grant(p, "b") == &p->exec);
	mcpx_policy_unref(p);

	/* An empty list: profiles exist, none matches anyone. */
	CHECK_INT(parse("{\"profiles\": []}", &p, &err), 0);
	CHECK(p && p->has_profiles);
	CHECK(!mcpx_policy_tool_allowed(p, "a", "get_invoice"));
	CHECK(mcpx_policy_tool_allowed(p, "a", "exec"));
	mcpx_policy_unref(p);

	CHECK_INT(parse("{" RULES "\"functions\": []}", &p, &err), 0);
	CHECK(p && !p->has_profiles);
	CHECK(mcpx_policy_tool_allowed(p, "anyone", "get_invoice"));
	CHECK(mcpx_policy_profile_for(p, "anyone") == NULL);
	mcpx_policy_unref(p);
}

static void test_errors(void)
{
	EXPECT_ERROR("{\"profiles\": {}}", "/profiles", "array");
	/* A profile's upstreams are resolved like exec's: a name no upstream has is refused. */
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"*\"], \"tools\": [\"*\"],"
	             " \"exec\": {\"upstreams\": [\"nope\"]}}]}",
	             "/profiles/0/exec/upstreams/0", NULL);
	EXPECT_ERROR("{\"profiles\": [7]}", "/profiles/0", "object");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"]}]}", "/profiles/0",
	             "\"tools\"");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"tools\": [\"*\"]}]}", "/profiles/0",
	             "\"callers\"");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"tool\": []}]}",
	             "/profiles/0/tool", "unknown key");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [], \"tools\": [\"*\"]}]}",
	             "/profiles/0/callers", "non-empty");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a b\"], \"tools\": "
	             "[\"*\"]}]}",
	             "/profiles/0/callers/0", "no spaces");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\", \"a\"], \"tools\": "
	             "[\"*\"]}]}",
	             "/profiles/0/callers/1", "twice");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [3]}]}",
	             "/profiles/0/tools/0", "string");
	/* Globs the matcher cannot use are refused at load. */
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": "
	             "[\"get_\\\\\"]}]}",
	             "/profiles/0/tools/0", "lone backslash");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"team-[ab\"], "
	             "\"tools\": [\"*\"]}]}",
	             "/profiles/0/callers/0", "not closed");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"]},"
	             " {\"name\": \"a\", \"callers\": [\"b\"], \"tools\": [\"*\"]}]}",
	             "/profiles/1/name", "another profile");
	EXPECT_ERROR("{" RULES "\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": "
	             "[\"*\"], \"exec\": {\"egress\": [\"nope\"]}}]}",
	             "/profiles/0/exec/egress/0", "no egress rule");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"exec\": {\"upstream\": []}}]}",
	             "/profiles/0/exec/upstream", "unknown key");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"exec\": {\"upstreams\": \"github\"}}]}",
	             "/profiles/0/exec/upstreams", "array");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"limits\": {\"timeout_s\": 0}}]}",
	             "/profiles/0/limits/timeout_s", "[1, 86400]");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"limits\": {\"memory_mb\": 8}}]}",
	             "/profiles/0/limits/memory_mb", "[32,");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"limits\": {\"max_queued\": 1.5}}]}",
	             "/profiles/0/limits/max_queued", "integer");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"limits\": {\"cpu_s\": 1}}]}",
	             "/profiles/0/limits/cpu_s", "unknown key");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"workspaces\": \"off\"}]}",
	             "/profiles/0/workspaces", "must be false");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"workspaces\": {\"max_mb\": 0}}]}",
	             "/profiles/0/workspaces/max_mb", "[1,");
	EXPECT_ERROR("{\"profiles\": [{\"name\": \"a\", \"callers\": [\"a\"], \"tools\": [\"*\"], "
	             "\"workspaces\": {\"ttl_s\": 5}}]}",
	             "/profiles/0/workspaces/ttl_s", "unknown key");
}

int main(void)
{
	test_complete();
	test_unmatched_and_absent();
	test_errors();
	CHECK_DONE();
}
