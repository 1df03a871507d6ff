/*
 * test_auth_tokens.c - the named tokens file: its parser (what it accepts,
 * each refusal with a message naming the entry and never the hash), and the
 * auth check with it: each token its caller, the single token "default",
 * every failure the same -EACCES, a rewritten file taking effect, a bad
 * rewrite keeping the old version, and a file runs could read refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "auth_tokens.h"
#include "check.h"
#include "crypto.h"
#include "log.h"
#include "tokenreview.h"

#define T0 1700000000

static char dir[64];

static void hex_of(const char *token, char hex[65])
{
	mcpx_sha256_hex(token, strlen(token), hex);
}

static int parse(const char *json, struct mcpx_auth_tokens **t, struct mcpx_err *err)
{
	return mcpx_auth_tokens_parse(json, strlen(json), t, err);
}

static void test_parse_ok(void)
{
	struct mcpx_auth_tokens *t = NULL;
	struct mcpx_err err = {{0}};
	char a[65], b[65], c[65], json[512];

	hex_of("tok-a", a);
	hex_of("tok-b", b);
	hex_of("tok-a2", c);
	/* Upper-case hex is the same hash; one caller may own two tokens. */
	for (char *p = b; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	snprintf(json, sizeof(json),
	         " [{\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"},\n"
	         "  {\"token_sha256\": \"%s\", \"caller\": \"reports@team.example:1\"},\n"
	         "  {\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"}]\n",
	         a, b, c);
	CHECK_INT(parse(json, &t, &err), 0);
	CHECK(t && t->n == 3);
	if (t && t->n == 3) {
		uint8_t d[MCPX_SHA256_LEN];

		CHECK_STR(t->v[0].caller, "billing-agent");
		CHECK_STR(t->v[1].caller, "reports@team.example:1");
		mcpx_sha256("tok-b", 5, d);
		CHECK(memcmp(t->v[1].digest, d, sizeof(d)) == 0);
	}
	mcpx_auth_tokens_free(t);
	CHECK_INT(parse("[]", &t, &err), 0);
	CHECK(t && t->n == 0);
	mcpx_auth_tokens_free(t);
}

/* Each refusal, with words a person can act on. */
static void test_parse_refused(void)
{
	struct mcpx_auth_tokens *t = NULL;
	struct mcpx_err err = {{0}};
	char a[65], json[1024];
	static const struct {
		const char *fmt; /* %s: a valid hash */
		const char *says;
	} cases[] = {
	    {"{\"caller\": \"x\", \"token_sha256\": \"%s\"}", "JSON list"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"%s\"}", "not valid JSON"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"%s\"}] x", "not valid JSON"},
	    {"[{\"caller\": \"x\", \"token\": \"%s\"}]", "unknown key \"token\""},
	    {"[{\"caller\": \"x\", \"caller\": \"y\", \"token_sha256\": \"%s\"}]",
	     "caller appears twice"},
	    {"[{\"caller\": \"x\"}]%.0s", "needs both"},
	    {"[\"%s\"]", "must be an object"},
	    {"[{\"caller\": \"\", \"token_sha256\": \"%s\"}]", "entry 0: caller must be"},
	    {"[{\"caller\": \"two words\", \"token_sha256\": \"%s\"}]", "caller must be"},
	    {"[{\"caller\": \"a\\\"b\", \"token_sha256\": \"%s\"}]", "caller must be"},
	    {"[{\"caller\": \"system:serviceaccount:ns:x\", \"token_sha256\": \"%s\"}]", "system:"},
	    {"[{\"caller\": 7, \"token_sha256\": \"%s\"}]", "caller must be"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"%.63s\"}]", "64 hex digits"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"%sa\"}]", "64 hex digits"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"s3cret%.58s\"}]", "64 hex digits"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"%s\"}, {\"caller\": \"y\", "
	     "\"token_sha256\": \"%s\"}]",
	     "entry 1 (y): the same token_sha256 as entry 0 (x)"},
	    /* cJSON would cut each of these at the NUL into something valid. */
	    {"[{\"caller\": \"x\", \"token_sha256\\u0000\": \"%s\"}]", "U+0000"},
	    {"[{\"caller\": \"x\\u0000y\", \"token_sha256\": \"%s\"}]", "U+0000"},
	    {"[{\"caller\": \"x\", \"token_sha256\": \"%s\\u0000zz\"}]", "U+0000"},
	    /* Only space, tab, LF and CR separate JSON tokens (cJSON takes any
	     * byte up to 0x20). */
	    {"[\f{\"caller\": \"x\", \"token_sha256\": \"%s\"}]", "between tokens"},
	    {"[{\"caller\": \"x\",\v\"token_sha256\": \"%s\"}]", "between tokens"},
	    {"[{\"caller\": \"x\x01\", \"token_sha256\": \"%s\"}]", "inside a string"},
	    {"[{\"caller\": \"x\xff\", \"token_sha256\": \"%s\"}]", "UTF-8"},
	};

	hex_of("tok-a", a);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(json, sizeof(json), cases[i].fmt, a, a);
#pragma GCC diagnostic pop
		err.msg[0] = '\0';
		t = NULL;
		CHECK(parse(json, &t, &err) < 0);
		CHECK(t == NULL);
		if (!strstr(err.msg, cases[i].says))
			fprintf(stderr, "case %zu: \"%s\" lacks \"%s\"\n", i, err.msg,
			        cases[i].says);
		CHECK(strstr(err.msg, cases[i].says) != NULL);
		/* A hash never appears in a message. */
		CHECK(strstr(err.msg, a) == NULL);
	}
	/* A NUL byte after the list (cJSON stops reading at one). */
	snprintf(json, sizeof(json), "[{\"caller\": \"x\", \"token_sha256\": \"%s\"}]\n", a);
	err.msg[0] = '\0';
	CHECK(mcpx_auth_tokens_parse(json, strlen(json) + 1, &t, &err) < 0);
	CHECK(strstr(err.msg, "NUL byte") != NULL);
	/* A caller name at the limit passes; one more character does not. */
	{
		char name[MCPX_CALLER_NAME_MAX + 2];

		memset(name, 'n', sizeof(name));
		name[MCPX_CALLER_NAME_MAX] = '\0';
		snprintf(json, sizeof(json), "[{\"caller\": \"%s\", \"token_sha256\": \"%s\"}]",
		         name, a);
		CHECK_INT(parse(json, &t, &err), 0);
		mcpx_auth_tokens_free(t);
		name[MCPX_CALLER_NAME_MAX] = 'n';
		name[MCPX_CALLER_NAME_MAX + 1] = '\0';
		snprintf(json, sizeof(json), "[{\"caller\": \"%s\", \"token_sha256\": \"%s\"}]",
		         name, a);
		CHECK(parse(json, &t, &err) < 0);
	}
}

static void write_file(const char *path, const char *content)
{
	char tmp[128];
	FILE *f;

	/* Through a rename, as a Secret volume update does. */
	snprintf(tmp, sizeof(tmp), "%s/.tmp", dir);
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(content, f);
	fclose(f);
	CHECK_INT(rename(tmp, path), 0);
}

static int who(struct mcpx_auth *a, const char *x, const char *authz, time_t now, char *caller)
{
	return mcpx_auth_identify(a, x, x ? strlen(x) : 0, authz, authz ? strlen(authz) : 0, now,
	                          caller, NULL);
}

static unsigned long cred_of(struct mcpx_auth *a, const char *x, time_t now)
{
	char caller[MCPX_CALLER_MAX];
	unsigned long cred = 0;

	CHECK_INT(mcpx_auth_identify(a, x, strlen(x), NULL, 0, now, caller, &cred), 0);
	return cred;
}

/* Each token is a credential whose number outlives reloads that keep it;
 * removing a token, giving it to another caller or replacing the single
 * token revokes exactly the numbers concerned, and counts a revocation. */
static void test_revocation(void)
{
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char path[128], single_path[128], json[600], ha[65], hb[65], hc[65];
	unsigned long ca, cb, cd, r0;

	hex_of("tok-a", ha);
	hex_of("tok-b", hb);
	hex_of("tok-c", hc);
	snprintf(path, sizeof(path), "%s/tokens.json", dir);
	snprintf(single_path, sizeof(single_path), "%s/single", dir);
	write_file(single_path, "the-single-token\n");
	snprintf(json, sizeof(json),
	         "[{\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"},"
	         " {\"caller\": \"report-agent\", \"token_sha256\": \"%s\"}]",
	         ha, hb);
	write_file(path, json);
	CHECK_INT(mcpx_auth_new(&a, NULL, single_path, &err), 0);
	CHECK_INT(mcpx_auth_set_tokens_file(a, path, NULL, NULL, &err), 0);
	ca = cred_of(a, "tok-a", T0);
	cb = cred_of(a, "tok-b", T0);
	cd = cred_of(a, "the-single-token", T0);
	CHECK(ca && cb && cd && ca != cb && cb != cd && ca != cd);
	CHECK(mcpx_auth_cred_live(a, 0));
	r0 = mcpx_auth_revocations(a);

	/* A rotation for billing-agent adds tok-c: nothing is revoked. */
	snprintf(json, sizeof(json),
	         "[{\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"},"
	         " {\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"},"
	         " {\"caller\": \"report-agent\", \"token_sha256\": \"%s\"}]",
	         ha, hc, hb);
	write_file(path, json);
	mcpx_auth_poll(a, T0 + 1);
	CHECK_INT(mcpx_auth_tokens_count(a), 3);
	CHECK(mcpx_auth_revocations(a) == r0);
	CHECK(cred_of(a, "tok-a", T0 + 1) == ca);
	CHECK(mcpx_auth_cred_live(a, ca) && mcpx_auth_cred_live(a, cb));

	/* tok-a removed (billing-agent keeps tok-c), tok-b now another
	 * caller's: both numbers are revoked, the single token's is not. */
	snprintf(json, sizeof(json),
	         "[{\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"},"
	         " {\"caller\": \"other-agent\", \"token_sha256\": \"%s\"}]",
	         hc, hb);
	write_file(path, json);
	mcpx_auth_poll(a, T0 + 2);
	CHECK(mcpx_auth_revocations(a) == r0 + 1);
	CHECK(!mcpx_auth_cred_live(a, ca));
	CHECK(!mcpx_auth_cred_live(a, cb));
	CHECK(mcpx_auth_cred_live(a, cd));
	CHECK(cred_of(a, "tok-b", T0 + 2) != cb);

	/* A bad version changes nothing. */
	write_file(path, "[{");
	mcpx_auth_poll(a, T0 + 3);
	CHECK(mcpx_auth_revocations(a) == r0 + 1);

	/* The single token's file gets a new token: the old one's number is
	 * revoked. */
	write_file(single_path, "another-single-token\n");
	mcpx_auth_poll(a, T0 + 4);
	CHECK(mcpx_auth_revocations(a) == r0 + 2);
	CHECK(!mcpx_auth_cred_live(a, cd));
	CHECK(mcpx_auth_cred_live(a, cred_of(a, "another-single-token", T0 + 4)));
	mcpx_auth_free(a);
	unlink(path);
	unlink(single_path);
}

static void test_identify(void)
{
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char path[128], json[512], ha[65], hb[65], caller[MCPX_CALLER_MAX];
	char *single = strdup("the-single-token");

	hex_of("tok-a", ha);
	hex_of("tok-b", hb);
	snprintf(path, sizeof(path), "%s/tokens.json", dir);
	snprintf(json, sizeof(json),
	         "[{\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"},"
	         " {\"caller\": \"report-agent\", \"token_sha256\": \"%s\"}]",
	         ha, hb);
	write_file(path, json);
	CHECK_INT(mcpx_auth_new(&a, &single, "", &err), 0);
	CHECK_INT(mcpx_auth_set_tokens_file(a, path, NULL, NULL, &err), 0);
	CHECK_INT(mcpx_auth_tokens_count(a), 2);

	CHECK_INT(who(a, "tok-a", NULL, T0, caller), 0);
	CHECK_STR(caller, "billing-agent");
	CHECK_INT(who(a, NULL, "Bearer tok-b", T0, caller), 0);
	CHECK_STR(caller, "report-agent");
	CHECK_INT(who(a, "the-single-token", NULL, T0, caller), 0);
	CHECK_STR(caller, "default");
	/* The hash itself is not a token. */
	CHECK_INT(who(a, ha, NULL, T0, caller), -EACCES);
	CHECK_INT(who(a, "tok-c", "Bearer tok-", T0, caller), -EACCES);
	CHECK_STR(caller, "");
	CHECK_INT(who(a, NULL, NULL, T0, caller), -EACCES);

	/* report-agent's token removed: refused from the next check a
	 * second later on; billing-agent unaffected. */
	snprintf(json, sizeof(json), "[{\"caller\": \"billing-agent\", \"token_sha256\": \"%s\"}]",
	         ha);
	write_file(path, json);
	CHECK_INT(who(a, "tok-b", NULL, T0 + 1, caller), -EACCES);
	CHECK_INT(who(a, "tok-a", NULL, T0 + 1, caller), 0);
	CHECK_INT(mcpx_auth_tokens_count(a), 1);

	/* A bad rewrite keeps the version in force. */
	write_file(path, "[{\"caller\": \"x\"");
	CHECK_INT(who(a, "tok-a", NULL, T0 + 2, caller), 0);
	CHECK_STR(caller, "billing-agent");
	/* So does a file that vanished. */
	CHECK_INT(unlink(path), 0);
	CHECK_INT(who(a, "tok-a", NULL, T0 + 3, caller), 0);
	mcpx_auth_free(a);
}

static bool all_readable(void *ctx, const char *path)
{
	(void)ctx;
	(void)path;
	return true;
}

/* A tokens file runs could read is refused, and the message says where to
 * put it instead. */
static void test_readable_by_runs(void)
{
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char path[128];

	snprintf(path, sizeof(path), "%s/tokens.json", dir);
	write_file(path, "[]");
	CHECK_INT(mcpx_auth_new(&a, NULL, "", &err), 0);
	CHECK_INT(mcpx_auth_set_tokens_file(a, path, all_readable, NULL, &err), -EPERM);
	CHECK(strstr(err.msg, "runs can read") != NULL);
	CHECK(!mcpx_auth_enabled(a));
	mcpx_auth_free(a);
	unlink(path);
}

/* With ServiceAccount tokens on, a JWT-shaped Bearer token none of ours
 * matches is to be reviewed (-EINPROGRESS), not refused; the same value in
 * X-MCP-AUTH is refused (only Bearer carries ServiceAccount tokens), and so
 * is anything not JWT-shaped, at once; our own tokens still answer at
 * once. */
/* {"alg":"RS256"}.{"sub":"x"}.sig */
#define JWT "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"

static void test_kubernetes_pending(void)
{
	struct mcpx_tokenreview_opts ko = {.api = "https://127.0.0.1:1", .audience = "mcp-exec"};
	struct mcpx_tokenreview *tr = NULL;
	struct mcpx_auth *a = NULL;
	struct mcpx_err err = {{0}};
	char path[128], caller[MCPX_CALLER_MAX];
	char *single = strdup("the-single-token");

	snprintf(path, sizeof(path), "%s/pod-token", dir);
	write_file(path, "pod\n");
	ko.token_file = ko.ca_file = path;
	CHECK_INT(mcpx_tokenreview_new(&tr, NULL, &ko, &err), 0);
	CHECK_INT(mcpx_auth_new(&a, &single, "", &err), 0);
	mcpx_auth_set_kubernetes(a, tr);
	CHECK_INT(who(a, NULL, "Bearer " JWT, T0, caller), -EINPROGRESS);
	CHECK_INT(who(a, JWT, NULL, T0, caller), -EACCES);
	CHECK_INT(who(a, NULL, "Bearer not-a-jwt", T0, caller), -EACCES);
	CHECK_INT(who(a, NULL, "Bearer eyJhbGciOi.eyJzdWIi.c2ln", T0, caller), -EACCES);
	CHECK_INT(who(a, NULL, "Bearer the-single-token", T0, caller), 0);
	CHECK_STR(caller, "default");
	/* Without the single token, only ServiceAccounts: auth is on. */
	mcpx_auth_free(a);
	CHECK_INT(mcpx_auth_new(&a, NULL, "", &err), 0);
	CHECK(!mcpx_auth_enabled(a));
	mcpx_auth_set_kubernetes(a, tr);
	CHECK(mcpx_auth_enabled(a));
	CHECK_INT(who(a, NULL, NULL, T0, caller), -EACCES);
	mcpx_auth_free(a);
	mcpx_tokenreview_free(tr);
	unlink(path);
}

int main(void)
{
	mcpx_log_setup(MCPX_LOG_TEXT, MCPX_LOG_ERROR);
	snprintf(dir, sizeof(dir), "/tmp/mcpx-test-tokens-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_parse_ok();
	test_parse_refused();
	test_identify();
	test_revocation();
	test_readable_by_runs();
	test_kubernetes_pending();
	rmdir(dir);
	CHECK_DONE();
}
