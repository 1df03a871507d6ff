/*
 * test_policy.c - the policy file: a complete policy parses into the rules
 * and grant it says; every error names its JSON pointer; secrets are read,
 * trimmed, checked and never echoed; files runs could read are refused;
 * rule matching says why nothing matched; the store reloads on an edit, a
 * secret rotation and a ConfigMap-style symlink swap, and keeps the old
 * version when the new file is bad.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "policy.h"

static char dir[] = "/tmp/mcpx-policy-test-XXXXXX";
static char secret_path[256], secret2_path[256];

static bool under_runtime(void *ctx, const char *path)
{
	(void)ctx;
	return strncmp(path, "/usr/", 5) == 0 || strncmp(path, "/etc/", 5) == 0;
}

static const struct mcpx_policy_opts opts = {.run_may_read = under_runtime,
                                             .credentials_allowed = true};

static void write_file(const char *path, const char *text)
{
	char tmp[300];
	FILE *f;

	/* Replaced by rename, as editors and kubelet do: a new inode. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	CHECK(rename(tmp, path) == 0);
}

static int parse(const char *json, struct mcpx_policy **p, struct mcpx_err *err)
{
	return mcpx_policy_parse(json, strlen(json), &opts, p, NULL, 0, NULL, err);
}

/* Parses json, expecting an error whose message starts with the pointer. */
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

static void test_complete_policy(void)
{
	char json[2048];
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	const struct mcpx_egress_rule *r;

	snprintf(json, sizeof(json),
	         "{\"egress\": ["
	         " {\"name\": \"gh\", \"url_prefix\": \"https://api.github.com/repos/\","
	         "  \"methods\": [\"GET\", \"POST\"],"
	         "  \"credential\": {\"header\": \"Authorization\", \"secret_file\": \"%s\","
	         "                   \"prefix\": \"Bearer \"},"
	         "  \"timeout_s\": 10, \"max_response_bytes\": 1000},"
	         " {\"name\": \"local\", \"url_prefix\": \"http://127.0.0.1:8080\","
	         "  \"allow_cidrs\": [\"127.0.0.1/32\", \"::1\"]},"
	         " {\"name\": \"unused\", \"url_prefix\": \"https://*.example.com/\"}],"
	         " \"exec\": {\"egress\": [\"local\", \"gh\"], \"max_requests\": 7,"
	         "            \"max_in_flight\": 2}}",
	         secret_path);
	CHECK_INT(parse(json, &p, &err), 0);
	if (!p) {
		fprintf(stderr, "%s\n", err.msg);
		check_failures++;
		return;
	}
	CHECK_INT(p->n_rules, 3);
	r = &p->rules[0];
	CHECK_STR(r->name, "gh");
	CHECK_INT(r->n_methods, 2);
	CHECK(r->has_credential);
	CHECK_STR(r->cred.header, "Authorization");
	/* The trailing newline of the file is not part of the secret. */
	CHECK_STR(r->cred.value, "Bearer s3cret-token");
	CHECK_INT(r->timeout_s, 10);
	CHECK_INT(r->max_response_bytes, 1000);
	r = &p->rules[1];
	CHECK_INT(r->n_methods, 1);
	CHECK_STR(r->methods[0], "GET");
	CHECK_INT(r->n_allow, 2);
	CHECK(!r->has_credential);
	CHECK_INT(r->timeout_s, MCPX_EGRESS_TIMEOUT_DEFAULT_S);
	CHECK_INT(r->max_response_bytes, MCPX_EGRESS_RESPONSE_DEFAULT);
	CHECK(p->rules[2].prefix.wildcard);
	CHECK_INT(p->exec.n_rules, 2);
	CHECK(p->exec.rules[0] == &p->rules[1]);
	CHECK_INT(p->exec.max_requests, 7);
	CHECK_INT(p->exec.max_in_flight, 2);

	/* Matching: the first rule that covers the URL and allows the method. */
	{
		struct mcpx_url u;
		const char *reason = NULL;
		char why[128];
		const char *url = "https://api.github.com/repos/x/y";

		CHECK_INT(mcpx_url_parse(url, strlen(url), NULL, &u, why, sizeof(why)), 0);
		CHECK(mcpx_egress_grant_match(&p->exec, &u, "POST", &reason) == &p->rules[0]);
		CHECK(mcpx_egress_grant_match(&p->exec, &u, "DELETE", &reason) == NULL);
		CHECK_STR(reason, "method");
		mcpx_url_release(&u);
		url = "https://a.example.com/";
		CHECK_INT(mcpx_url_parse(url, strlen(url), NULL, &u, why, sizeof(why)), 0);
		/* Covered by a rule, but not one exec was granted. */
		CHECK(mcpx_egress_grant_match(&p->exec, &u, "GET", &reason) == NULL);
		CHECK_STR(reason, "no_rule");
		mcpx_url_release(&u);
	}
	{
		struct mcpx_buf b;

		mcpx_buf_init(&b, 4096);
		CHECK_INT(mcpx_egress_grant_describe(&p->exec, &b), 0);
		CHECK_STR(mcpx_buf_str(&b),
		          "http://127.0.0.1:8080 (GET); https://api.github.com/repos/ "
		          "(GET, POST; the server adds the credentials)");
		CHECK(strstr(mcpx_buf_str(&b), "s3cret") == NULL);
		mcpx_buf_free(&b);
	}
	CHECK(mcpx_policy_ref(p) == p);
	mcpx_policy_unref(p);
	mcpx_policy_unref(p);

	/* No policy content at all is a valid, empty policy. */
	CHECK_INT(parse("{}", &p, &err), 0);
	CHECK_INT(p->n_rules, 0);
	CHECK_INT(p->exec.n_rules, 0);
	mcpx_policy_unref(p);
}

static void test_errors(void)
{
	char json[1024];
	char many[16384];
	size_t n;

	EXPECT_ERROR("", "not valid JSON", NULL);
	EXPECT_ERROR("{} x", "not valid JSON", NULL);
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://h\xff/\"}]}",
	             "not valid UTF-8", NULL);
	/* A file followed by NUL bytes is not a policy (cJSON stops at NUL). */
	{
		static const char padded[] = "{}\0\0\0";
		struct mcpx_policy *p = NULL;
		struct mcpx_err err = {{0}};

		CHECK(mcpx_policy_parse(padded, sizeof(padded) - 1, &opts, &p, NULL, 0, NULL,
		                        &err) < 0);
		CHECK(strstr(err.msg, "NUL") != NULL);
		CHECK(p == NULL);
		CHECK_INT(mcpx_policy_parse(padded, 2, &opts, &p, NULL, 0, NULL, &err), 0);
		mcpx_policy_unref(p);
	}
	EXPECT_ERROR("[]", "(the top level): must be an object", NULL);
	EXPECT_ERROR("{\"function\": []}", "/function: unknown key", NULL);
	EXPECT_ERROR("{\"functions\": {}}", "/functions: must be an array", NULL);
	EXPECT_ERROR("{\"a/b~\": 1}", "/a~1b~0: unknown key", NULL);
	EXPECT_ERROR("{\"egress\": [], \"egress\": []}", "/egress: duplicate key", NULL);
	EXPECT_ERROR("{\"egress\": {}}", "/egress: must be an array", NULL);
	EXPECT_ERROR("{\"egress\": [1]}", "/egress/0: must be an object", NULL);
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credentail\": {}}]}",
	             "/egress/0/credentail: unknown key", NULL);
	EXPECT_ERROR("{\"egress\": [{\"url_prefix\": \"http://a/\"}]}", "/egress/0:", "\"name\"");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a b\", \"url_prefix\": \"http://a/\"}]}",
	             "/egress/0/name:", "letters");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"\", \"url_prefix\": \"http://a/\"}]}",
	             "/egress/0/name:", "1..64");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\"}, "
	             "{\"name\": \"a\", \"url_prefix\": \"http://b/\"}]}",
	             "/egress/1/name:", "another rule");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"ftp://a/\"}]}",
	             "/egress/0/url_prefix:", "http");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": 5}]}",
	             "/egress/0/url_prefix: must be a string", NULL);
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/?x\"}]}",
	             "/egress/0/url_prefix:", "query");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"methods\": [\"GET\", \"post\"]}]}",
	             "/egress/0/methods/1:", "upper case");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"methods\": [\"GET\", \"GET\"]}]}",
	             "/egress/0/methods/1:", "twice");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"methods\": []}]}",
	             "/egress/0/methods:", "must list");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"allow_cidrs\": [\"10.0.0.0/8\", \"10.0.0.1/8\"]}]}",
	             "/egress/0/allow_cidrs/1:", "host bits");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"timeout_s\": 0}]}",
	             "/egress/0/timeout_s:", "[1, 300]");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"timeout_s\": 1.5}]}",
	             "/egress/0/timeout_s: must be an integer", NULL);
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"max_response_bytes\": 1e12}]}",
	             "/egress/0/max_response_bytes:", "must be in");
	EXPECT_ERROR(
	    "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	    "\"credential\": {\"header\": \"X\", \"secret_file\": \"/s\", \"secret\": 1}}]}",
	    "/egress/0/credential/secret: unknown key", NULL);
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"secret_file\": \"/s\"}}]}",
	             "/egress/0/credential:", "\"header\"");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"header\": \"Host\", \"secret_file\": \"/s\"}}]}",
	             "/egress/0/credential/header:", "Host");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"header\": \"X Y\", \"secret_file\": \"/s\"}}]}",
	             "/egress/0/credential/header:", "token");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"header\": \"X\", \"secret_file\": \"/s\", "
	             "\"prefix\": \"a\\nb\"}}]}",
	             "/egress/0/credential/prefix:", "control");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"header\": \"X\", \"secret_file\": \"s\"}}]}",
	             "/egress/0/credential/secret_file:", "absolute");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"header\": \"X\", \"secret_file\": \"/nonexistent/x\"}}]}",
	             "/egress/0/credential/secret_file:", "cannot read");
	/* A secret runs could read (the runtime's directories) is refused. */
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	             "\"credential\": {\"header\": \"X\", \"secret_file\": \"/etc/hostname\"}}]}",
	             "/egress/0/credential/secret_file:", "runs can read");
	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	         "\"credential\": {\"header\": \"X\", \"secret_file\": \"%s\"}}]}",
	         secret2_path);
	write_file(secret2_path, "\n");
	EXPECT_ERROR(json, "/egress/0/credential/secret_file:", "empty");
	write_file(secret2_path, "tok\x01"
	                         "en-VALUE\n");
	EXPECT_ERROR(json, "/egress/0/credential/secret_file:", "control character");
	{
		/* The message names the file, never the value. */
		struct mcpx_policy *p = NULL;
		struct mcpx_err err = {{0}};

		CHECK(parse(json, &p, &err) < 0);
		CHECK(strstr(err.msg, "VALUE") == NULL);
	}
	EXPECT_ERROR("{\"exec\": {\"egress_rules\": []}}", "/exec/egress_rules: unknown key", NULL);
	EXPECT_ERROR("{\"exec\": []}", "/exec: must be an object", NULL);
	EXPECT_ERROR("{\"exec\": {\"egress\": [\"nope\"]}}", "/exec/egress/0:", "nope");
	EXPECT_ERROR("{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\"}], "
	             "\"exec\": {\"egress\": [\"a\", \"a\"]}}",
	             "/exec/egress/1:", "twice");
	EXPECT_ERROR("{\"exec\": {\"max_in_flight\": 0}}", "/exec/max_in_flight:", "[1, 64]");
	EXPECT_ERROR("{\"exec\": {\"max_requests\": \"5\"}}", "/exec/max_requests:", "integer");

	n = (size_t)snprintf(many, sizeof(many), "{\"egress\": [");
	for (int i = 0; i <= MCPX_POLICY_MAX_RULES; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n,
		                      "%s{\"name\": \"r%d\", \"url_prefix\": \"http://a/\"}",
		                      i ? "," : "", i);
	snprintf(many + n, sizeof(many) - n, "]}");
	EXPECT_ERROR(many, "/egress:", "at most 64");
}

static void test_no_landlock(void)
{
	static const struct mcpx_policy_opts strict = {.credentials_allowed = false};
	char json[512];
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};

	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	         "\"credential\": {\"header\": \"X\", \"secret_file\": \"%s\"}}]}",
	         secret_path);
	CHECK(mcpx_policy_parse(json, strlen(json), &strict, &p, NULL, 0, NULL, &err) < 0);
	CHECK(strstr(err.msg, "/egress/0/credential: credentials need Landlock") == err.msg);
	/* Without credentials there is nothing to hide: allowed. */
	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\"}]}");
	CHECK_INT(mcpx_policy_parse(json, strlen(json), &strict, &p, NULL, 0, NULL, &err), 0);
	mcpx_policy_unref(p);
}

/* A policy with functions: {"functions": [<entries>]} and one rule. */
static int parse_functions(const char *entries, struct mcpx_policy **p, struct mcpx_err *err)
{
	char json[4096];

	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"inv\", \"url_prefix\": \"http://inv/\"}], "
	         "\"functions\": [%s]}",
	         entries);
	return parse(json, p, err);
}

static void expect_function_error(int line, const char *entries, const char *pointer,
                                  const char *words)
{
	char json[4096];

	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"inv\", \"url_prefix\": \"http://inv/\"}], "
	         "\"functions\": [%s]}",
	         entries);
	expect_error(line, json, pointer, words);
}
#define EXPECT_FN_ERROR(e, pointer, words) expect_function_error(__LINE__, e, pointer, words)

/* One valid entry with `extra` members added and source file `src`. */
static void entry(char *buf, size_t len, const char *src, const char *extra)
{
	snprintf(buf, len,
	         "{\"name\": \"get_invoice\", \"description\": \"One invoice.\", "
	         "\"input_schema\": {\"type\": \"object\", \"properties\": {\"n\": "
	         "{\"type\": \"integer\", \"minimum\": 1}}, \"required\": [\"n\"]}, "
	         "\"source_file\": \"%s\"%s}",
	         src, extra);
}

/* A function's own "upstreams", and a function name that would shadow an
 * upstream's tools. */
static void test_function_upstreams(void)
{
	char src[300], e[2048], json[4096];
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	const struct mcpx_function *f;

	snprintf(src, sizeof(src), "%s/up.py", dir);
	write_file(src, "def handler(args, ctx):\n    return {}\n");
	entry(e, sizeof(e), src, ", \"upstreams\": [\"gh\"]");
	snprintf(json, sizeof(json),
	         "{\"upstreams\": [{\"name\": \"gh\", \"url\": \"https://a.example/mcp\"}],"
	         " \"functions\": [%s]}",
	         e);
	CHECK(parse(json, &p, &err) == 0);
	f = p ? mcpx_policy_function(p, "get_invoice") : NULL;
	CHECK(f && f->grant.n_upstreams == 1 &&
	      f->grant.upstreams[0] == mcpx_policy_upstream(p, "gh", 2));
	CHECK(p && p->exec.n_upstreams == 0 && !mcpx_policy_exec_calls(p));
	mcpx_policy_unref(p);
	p = NULL;

	snprintf(json, sizeof(json),
	         "{\"upstreams\": [{\"name\": \"gh\", \"url\": \"https://a.example/mcp\"}],"
	         " \"functions\": [{\"name\": \"gh.list\", \"description\": \"d\","
	         " \"input_schema\": {\"type\": \"object\"}, \"source_file\": \"%s\"}]}",
	         src);
	expect_error(__LINE__, json, "/functions/0/name", "upstream's name");
	entry(e, sizeof(e), src, ", \"upstreams\": [\"nope\"]");
	snprintf(json, sizeof(json),
	         "{\"upstreams\": [{\"name\": \"gh\", \"url\": \"https://a.example/mcp\"}],"
	         " \"functions\": [%s]}",
	         e);
	expect_error(__LINE__, json, "/functions/0/upstreams/0", "no upstream");
}

/* "upstreams": the fields and their defaults, the grants of exec and of a
 * function, the tool globs, and every error naming its pointer. */
static void test_upstreams(void)
{
	char json[2048];
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	const struct mcpx_upstream_conf *gh, *local;
	char sum[256];

	snprintf(
	    json, sizeof(json),
	    "{\"upstreams\": ["
	    " {\"name\": \"github\", \"url\": \"https://mcp.example.com/mcp\","
	    "  \"credential\": {\"header\": \"Authorization\", \"secret_file\": \"%s\","
	    "                 \"prefix\": \"Bearer \"},"
	    "  \"tools\": {\"allow\": [\"list_*\", \"get_issue\"], \"deny\": [\"list_secrets\"]},"
	    "  \"expose\": true, \"timeout_s\": 5, \"max_response_bytes\": 65536,"
	    "  \"max_calls_per_run\": 7, \"max_tools\": 50, \"max_tools_bytes\": 65536},"
	    " {\"name\": \"local_2\", \"url\": \"http://10.1.2.3:8080/mcp\","
	    "  \"allow_cidrs\": [\"10.0.0.0/8\"]}],"
	    " \"exec\": {\"upstreams\": [\"github\"]}}",
	    secret_path);
	CHECK(parse(json, &p, &err) == 0);
	if (!p) {
		fprintf(stderr, "%s\n", err.msg);
		return;
	}
	CHECK(p->n_upstreams == 2);
	gh = mcpx_policy_upstream(p, "github", 6);
	local = mcpx_policy_upstream(p, "local_2", 7);
	CHECK(gh && local && !mcpx_policy_upstream(p, "git", 3));
	if (!gh || !local)
		goto out;
	CHECK(strcmp(gh->url, "https://mcp.example.com/mcp") == 0);
	CHECK(gh->has_credential && strcmp(gh->cred.value, "Bearer s3cret-token") == 0);
	CHECK(gh->expose && gh->timeout_s == 5 && gh->max_response_bytes == 65536 &&
	      gh->max_calls_per_run == 7 && gh->max_tools == 50 && gh->max_tools_bytes == 65536);
	CHECK(mcpx_upstream_tool_allowed(gh, "list_issues"));
	CHECK(mcpx_upstream_tool_allowed(gh, "get_issue"));
	CHECK(!mcpx_upstream_tool_allowed(gh, "list_secrets")); /* deny wins */
	CHECK(!mcpx_upstream_tool_allowed(gh, "delete_repo"));  /* not allowed */
	/* deny is matched whatever the case: an upstream that lists the
	 * tool in capitals does not slip past it. allow is exact. */
	CHECK(!mcpx_upstream_tool_allowed(gh, "list_SECRETS"));
	CHECK(!mcpx_upstream_tool_allowed(gh, "list_Secrets"));
	CHECK(!mcpx_upstream_tool_allowed(gh, "LIST_ISSUES"));
	/* The defaults: every tool, not exposed, 30 s, 4 MiB, 100 calls. */
	CHECK(!local->has_credential && !local->expose && local->n_allow == 1);
	CHECK(local->timeout_s == 30 && local->max_response_bytes == (4u << 20) &&
	      local->max_calls_per_run == 100);
	/* A tool list is kept up to 1000 tools and 8 MiB of their text. */
	CHECK(local->max_tools == 1000 && local->max_tools_bytes == (8u << 20));
	CHECK(mcpx_upstream_tool_allowed(local, "anything"));
	CHECK(mcpx_egress_grant_has_upstream(&p->exec, gh));
	CHECK(!mcpx_egress_grant_has_upstream(&p->exec, local));
	CHECK(mcpx_policy_exec_calls(p)); /* exec runs get a channel */
	mcpx_policy_summary(p, sum, sizeof(sum));
	CHECK(strstr(sum, "2 upstreams (exec may call 1)") != NULL);
	/* The secret never shows in the summary. */
	CHECK(strstr(sum, "s3cret") == NULL);
out:
	mcpx_policy_unref(p);

	EXPECT_ERROR("{\"upstreams\": [{\"url\": \"https://a.example/mcp\"}]}", "/upstreams/0",
	             "needs \"name\" and \"url\"");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"GitHub\", \"url\": \"https://a.example/\"}]}",
	             "/upstreams/0/name", "a-z, 0-9 and _");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a.b\", \"url\": \"https://a.example/\"}]}",
	             "/upstreams/0/name", "a-z, 0-9 and _");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"abcdefghijabcdefghijabcdefghijabc\","
	             " \"url\": \"https://a.example/\"}]}",
	             "/upstreams/0/name", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\"},"
	             " {\"name\": \"a\", \"url\": \"https://b.example/\"}]}",
	             "/upstreams/1/name", "another upstream is named a");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"ftp://a.example/\"}]}",
	             "/upstreams/0/url", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://u:p@a.example/\"}]}",
	             "/upstreams/0/url", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tool\": {}}]}",
	             "/upstreams/0/tool", "unknown key");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"allow\": [\"x y\"]}}]}",
	             "/upstreams/0/tools/allow/0", "spaces");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"deny\": [1]}}]}",
	             "/upstreams/0/tools/deny/0", "must be a string");
	/* A pattern the matcher cannot use is refused, not left to match
	 * nothing (a deny that denies nothing) or to mean something else. */
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"deny\": [\"secret\\\\\"]}}]}",
	             "/upstreams/0/tools/deny/0", "ends with a lone backslash");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"deny\": [\"sec[ret\"]}}]}",
	             "/upstreams/0/tools/deny/0", "[ is not closed");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"allow\": [\"[[:alpha:]]*\"]}}]}",
	             "/upstreams/0/tools/allow/0", "[:alpha:]");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"allow\": [\"[z-a]\"]}}]}",
	             "/upstreams/0/tools/allow/0", "range");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"allow\": [\"caf\u00e9\"]}}]}",
	             "/upstreams/0/tools/allow/0", "printable ASCII");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"tools\": {\"only\": []}}]}",
	             "/upstreams/0/tools/only", "unknown key");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"expose\": 1}]}",
	             "/upstreams/0/expose", "true or false");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"timeout_s\": 0}]}",
	             "/upstreams/0/timeout_s", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"max_calls_per_run\": 1.5}]}",
	             "/upstreams/0/max_calls_per_run", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"allow_cidrs\": [\"10.0.0.1/8\"]}]}",
	             "/upstreams/0/allow_cidrs/0", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"credential\": {\"header\": \"Authorization\"}}]}",
	             "/upstreams/0/credential", "needs");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\"}],"
	             " \"exec\": {\"upstreams\": [\"b\"]}}",
	             "/exec/upstreams/0", "no upstream is named \"b\"");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\"}],"
	             " \"exec\": {\"upstreams\": [\"a\", \"a\"]}}",
	             "/exec/upstreams/1", "listed twice");
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"max_tools\": 0}]}",
	             "/upstreams/0/max_tools", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"max_tools\": 10001}]}",
	             "/upstreams/0/max_tools", NULL);
	EXPECT_ERROR("{\"upstreams\": [{\"name\": \"a\", \"url\": \"https://a.example/\","
	             " \"max_tools_bytes\": 1024}]}",
	             "/upstreams/0/max_tools_bytes", NULL);
	EXPECT_ERROR("{\"upstreams\": {}}", "/upstreams", NULL);
	test_function_upstreams();
}

static void test_functions(void)
{
	char src[300], bad[300], e[2048], e2[4200];
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};
	const struct mcpx_function *f;
	struct mcpx_file_id files[8];
	size_t n_files = 0;

	snprintf(src, sizeof(src), "%s/invoice.py", dir);
	write_file(src, "def handler(args, ctx):\n    return {'n': args['n']}\n");
	entry(e, sizeof(e), src,
	      ", \"title\": \"Get an invoice\", \"egress\": [\"inv\"], \"timeout_s\": 20, "
	      "\"callable_from_exec\": true, \"output_schema\": {\"type\": \"object\"}");
	CHECK_INT(parse_functions(e, &p, &err), 0);
	if (!p) {
		fprintf(stderr, "%s\n", err.msg);
		check_failures++;
		return;
	}
	CHECK_INT(p->n_functions, 1);
	f = mcpx_policy_function(p, "get_invoice");
	CHECK(f == &p->functions[0]);
	CHECK(mcpx_policy_function(p, "other") == NULL);
	CHECK(mcpx_policy_exec_calls(p));
	if (f) {
		CHECK_STR(f->title, "Get an invoice");
		CHECK_STR(f->description, "One invoice.");
		CHECK(f->input && f->output && f->input_schema && f->output_schema);
		CHECK(strncmp(f->source, "def handler(args, ctx):", 23) == 0);
		CHECK_INT(strlen(f->source_sha256), 64);
		CHECK_INT(f->grant.n_rules, 1);
		CHECK(f->grant.rules[0] == &p->rules[0]);
		CHECK_INT(f->timeout_s, 20);
		CHECK(f->callable_from_exec);
	}
	mcpx_policy_unref(p);

	/* Defaults, and the source file is watched like a secret file. */
	entry(e, sizeof(e), src, "");
	{
		char json[4096];

		snprintf(json, sizeof(json), "{\"functions\": [%s]}", e);
		CHECK_INT(
		    mcpx_policy_parse(json, strlen(json), &opts, &p, files, 8, &n_files, &err), 0);
	}
	CHECK_INT(n_files, 1);
	CHECK_STR(files[0].path, src);
	CHECK(p && p->functions[0].title == NULL && p->functions[0].output == NULL &&
	      p->functions[0].timeout_s == 0 && !p->functions[0].callable_from_exec &&
	      p->functions[0].grant.n_rules == 0 && !mcpx_policy_exec_calls(p));
	mcpx_policy_unref(p);

	/* Every error names its pointer. */
	EXPECT_FN_ERROR("1", "/functions/0: must be an object", NULL);
	EXPECT_FN_ERROR("{\"name\": \"a\"}", "/functions/0: a function needs", NULL);
	entry(e, sizeof(e), src, ", \"sourcefile\": 1");
	EXPECT_FN_ERROR(e, "/functions/0/sourcefile: unknown key", NULL);
	snprintf(e, sizeof(e),
	         "{\"name\": \"exec\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"object\"}, \"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(e, "/functions/0/name:", "server's own tool");
	snprintf(e, sizeof(e),
	         "{\"name\": \"get invoice\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"object\"}, \"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(e, "/functions/0/name:", "a tool name is");
	entry(e, sizeof(e), src, "");
	snprintf(e2, sizeof(e2), "%s, %s", e, e);
	EXPECT_FN_ERROR(e2, "/functions/1/name:", "another function is named get_invoice");
	/* The schema's own pointer follows the function's. */
	snprintf(e, sizeof(e),
	         "{\"name\": \"f\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"object\", \"properties\": {\"email\": {\"type\": \"string\", \"format\": "
	         "\"email\"}}}, \"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(
	    e, "/functions/0/input_schema/properties/email/format:", "unsupported keyword");
	snprintf(e, sizeof(e),
	         "{\"name\": \"f\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"array\"}, \"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(e, "/functions/0/input_schema:", "\"type\": \"object\"");
	entry(e, sizeof(e), src, ", \"output_schema\": {\"type\": \"object\", \"oneOf\": []}");
	EXPECT_FN_ERROR(e, "/functions/0/output_schema/oneOf:", "unsupported keyword");
	/* A pointer longer than 96 bytes is given whole, so it resolves. */
	snprintf(e, sizeof(e),
	         "{\"name\": \"f\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"object\", \"properties\": {\"customer_billing_address\": {\"type\": "
	         "\"object\", \"properties\": {\"second_line_of_the_street_address\": "
	         "{\"type\": \"string\", \"format\": \"email\"}}}}}, \"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(e,
	                "/functions/0/input_schema/properties/customer_billing_address/properties/"
	                "second_line_of_the_street_address/format: ",
	                "unsupported keyword");
	/* U+0000 would cut a schema string short (a required name "a\0b" would
	 * be met by "a"): refused at load, wherever it is. */
	snprintf(e, sizeof(e),
	         "{\"name\": \"f\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"object\", \"required\": [\"a\\u0000b\"]}, \"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(e, "U+0000", NULL);
	snprintf(e, sizeof(e),
	         "{\"name\": \"f\", \"description\": \"d\", \"input_schema\": {\"type\": "
	         "\"object\", \"properties\": {\"s\": {\"pattern\": \"^a\\u0000|b\"}}}, "
	         "\"source_file\": \"%s\"}",
	         src);
	EXPECT_FN_ERROR(e, "U+0000", NULL);
	/* An escaped backslash before u0000 is not U+0000. */
	entry(e, sizeof(e), src, ", \"title\": \"a\\\\u0000\"");
	snprintf(e2, sizeof(e2), "{\"functions\": [%s]}", e);
	CHECK_INT(mcpx_policy_parse(e2, strlen(e2), &opts, &p, NULL, 0, NULL, &err), 0);
	CHECK(p && strcmp(p->functions[0].title, "a\\u0000") == 0);
	mcpx_policy_unref(p);
	p = NULL;
	/* Policy strings are UTF-8: they go into tools/list as they are. */
	entry(e, sizeof(e), src, ", \"title\": \"caf\xe9\"");
	EXPECT_FN_ERROR(e, "not valid UTF-8", NULL);
	entry(e, sizeof(e), src, ", \"egress\": [\"nope\"]");
	EXPECT_FN_ERROR(e, "/functions/0/egress/0:", "no egress rule is named \"nope\"");
	entry(e, sizeof(e), src, ", \"timeout_s\": 0");
	EXPECT_FN_ERROR(e, "/functions/0/timeout_s:", "must be in");
	entry(e, sizeof(e), src, ", \"callable_from_exec\": 1");
	EXPECT_FN_ERROR(e, "/functions/0/callable_from_exec:", "true or false");
	/* Source files: absolute, readable by the server, not by runs, text. */
	entry(e, sizeof(e), "relative.py", "");
	EXPECT_FN_ERROR(e, "/functions/0/source_file:", "absolute path");
	entry(e, sizeof(e), "/etc/passwd", "");
	EXPECT_FN_ERROR(e, "/functions/0/source_file:", "runs can read it");
	snprintf(bad, sizeof(bad), "%s/missing.py", dir);
	entry(e, sizeof(e), bad, "");
	EXPECT_FN_ERROR(e, "/functions/0/source_file:", "cannot read the source file");
	snprintf(bad, sizeof(bad), "%s/latin1.py", dir);
	write_file(bad, "x = '\xe9'\n");
	entry(e, sizeof(e), bad, "");
	EXPECT_FN_ERROR(e, "/functions/0/source_file:", "not valid UTF-8");
	snprintf(bad, sizeof(bad), "%s/empty.py", dir);
	write_file(bad, "");
	entry(e, sizeof(e), bad, "");
	EXPECT_FN_ERROR(e, "/functions/0/source_file:", "is empty");
	entry(e, sizeof(e), dir, "");
	EXPECT_FN_ERROR(e, "/functions/0/source_file:", "not a regular file");
}

/* Without Landlock, exec code could take over a function it calls: such a
 * function may not have egress rules. */
static void test_functions_no_landlock(void)
{
	static const struct mcpx_policy_opts strict = {.credentials_allowed = false};
	char src[300], e[2048], json[4096];
	struct mcpx_policy *p = NULL;
	struct mcpx_err err = {{0}};

	snprintf(src, sizeof(src), "%s/invoice.py", dir);
	entry(e, sizeof(e), src, ", \"egress\": [\"inv\"], \"callable_from_exec\": true");
	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"inv\", \"url_prefix\": \"http://inv/\"}], "
	         "\"functions\": [%s]}",
	         e);
	CHECK(mcpx_policy_parse(json, strlen(json), &strict, &p, NULL, 0, NULL, &err) < 0);
	CHECK(strstr(err.msg, "/functions/0/callable_from_exec: ") == err.msg);
	entry(e, sizeof(e), src, ", \"egress\": [\"inv\"]");
	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"inv\", \"url_prefix\": \"http://inv/\"}], "
	         "\"functions\": [%s]}",
	         e);
	CHECK_INT(mcpx_policy_parse(json, strlen(json), &strict, &p, NULL, 0, NULL, &err), 0);
	mcpx_policy_unref(p);
	p = NULL;
	/* Its upstreams (and their credentials) likewise. */
	entry(e, sizeof(e), src, ", \"upstreams\": [\"gh\"], \"callable_from_exec\": true");
	snprintf(json, sizeof(json),
	         "{\"upstreams\": [{\"name\": \"gh\", \"url\": \"https://a.example/mcp\"}], "
	         "\"functions\": [%s]}",
	         e);
	CHECK(mcpx_policy_parse(json, strlen(json), &strict, &p, NULL, 0, NULL, &err) < 0);
	CHECK(strstr(err.msg, "/functions/0/callable_from_exec: ") == err.msg);
	CHECK(p == NULL);
}

static void test_store(void)
{
	char path[300], data1[300], data2[300], link[300], datalink[300], json[1024];
	struct mcpx_policy_store *s = NULL;
	struct mcpx_policy *old;
	struct mcpx_err err = {{0}};

	snprintf(path, sizeof(path), "%s/policy.json", dir);
	snprintf(json, sizeof(json),
	         "{\"egress\": [{\"name\": \"a\", \"url_prefix\": \"http://a/\", "
	         "\"credential\": {\"header\": \"X-Key\", \"secret_file\": \"%s\"}}], "
	         "\"exec\": {\"egress\": [\"a\"]}}",
	         secret_path);
	write_file(path, json);
	CHECK_INT(mcpx_policy_store_open(path, &opts, &s, &err), 0);
	if (!s)
		return;
	CHECK_INT(mcpx_policy_store_current(s)->version, 1);
	CHECK_INT(mcpx_policy_store_check(s), 0);

	/* A run keeps the version it started with. */
	old = mcpx_policy_ref(mcpx_policy_store_current(s));
	write_file(path, "{\"egress\": []}");
	CHECK_INT(mcpx_policy_store_check(s), 1);
	CHECK_INT(mcpx_policy_store_current(s)->version, 2);
	CHECK_INT(mcpx_policy_store_current(s)->n_rules, 0);
	CHECK_INT(old->n_rules, 1);
	CHECK_STR(old->rules[0].cred.value, "s3cret-token");
	mcpx_policy_unref(old);

	/* A bad file is reported once and the old version stays. */
	write_file(path, "{\"egress\": [}");
	CHECK(mcpx_policy_store_check(s) < 0);
	CHECK_INT(mcpx_policy_store_current(s)->version, 2);
	CHECK_INT(mcpx_policy_store_check(s), 0);

	/* A rotated secret is a new version. */
	write_file(path, json);
	CHECK_INT(mcpx_policy_store_check(s), 1);
	CHECK_STR(mcpx_policy_store_current(s)->rules[0].cred.value, "s3cret-token");
	write_file(secret_path, "rotated\n");
	CHECK_INT(mcpx_policy_store_check(s), 1);
	CHECK_STR(mcpx_policy_store_current(s)->rules[0].cred.value, "rotated");
	write_file(secret_path, "s3cret-token\n");
	CHECK_INT(mcpx_policy_store_check(s), 1);
	mcpx_policy_store_free(s);
	s = NULL;

	/* A ConfigMap mount: policy.json -> ..data/policy.json, ..data -> a
	 * timestamped directory, swapped atomically on update. */
	snprintf(data1, sizeof(data1), "%s/..v1", dir);
	snprintf(data2, sizeof(data2), "%s/..v2", dir);
	CHECK(mkdir(data1, 0700) == 0 && mkdir(data2, 0700) == 0);
	snprintf(link, sizeof(link), "%s/..v1/policy.json", dir);
	write_file(link, "{}");
	snprintf(link, sizeof(link), "%s/..v2/policy.json", dir);
	write_file(link, "{\"egress\": [{\"name\": \"b\", \"url_prefix\": \"http://b/\"}]}");
	snprintf(datalink, sizeof(datalink), "%s/..data", dir);
	CHECK(symlink("..v1", datalink) == 0);
	snprintf(link, sizeof(link), "%s/cm-policy.json", dir);
	CHECK(symlink("..data/policy.json", link) == 0);
	CHECK_INT(mcpx_policy_store_open(link, &opts, &s, &err), 0);
	if (!s)
		return;
	CHECK_INT(mcpx_policy_store_current(s)->n_rules, 0);
	{
		char tmp[320];

		snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
		CHECK(symlink("..v2", tmp) == 0);
		CHECK(rename(tmp, datalink) == 0);
	}
	CHECK_INT(mcpx_policy_store_check(s), 1);
	CHECK_INT(mcpx_policy_store_current(s)->n_rules, 1);
	mcpx_policy_store_free(s);

	/* The policy itself may not lie where runs read. */
	CHECK(mcpx_policy_store_open("/etc/hostname", &opts, &s, &err) < 0);
	CHECK(strstr(err.msg, "runs can read") != NULL);
	CHECK(mcpx_policy_store_open("relative.json", &opts, &s, &err) < 0);
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	CHECK(mcpx_policy_store_open(path, &opts, &s, &err) < 0);
	CHECK(strstr(err.msg, "cannot read") != NULL);
}

int main(void)
{
	char cmd[300];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(secret_path, sizeof(secret_path), "%s/token", dir);
	snprintf(secret2_path, sizeof(secret2_path), "%s/token2", dir);
	write_file(secret_path, "s3cret-token\n");
	test_complete_policy();
	test_errors();
	test_no_landlock();
	test_upstreams();
	test_functions();
	test_functions_no_landlock();
	test_store();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	CHECK_DONE();
}
