/*
 * policy_upstreams.c - the policy file's "upstreams" section: other MCP
 * servers (Streamable HTTP) whose tools runs may call through the server,
 * and the lists of upstream names that exec and each function may use.
 *
 * Each entry is parsed as strictly as an egress rule: unknown keys and
 * duplicate names are errors naming their JSON pointer; the URL goes
 * through the broker's URL parser (egress_check.h), so an upstream URL is
 * held to the same rules as a fetch (http or https, no user name or
 * password in it, no zone id); the credential is the broker's
 * {header, secret_file, prefix} shape, read here, wiped when the policy
 * goes. The tool globs are the policy's globs (name_glob.h) over the
 * upstream's tool names, checked here: a pattern the matcher cannot use is
 * an error at load, not a deny that denies nothing. deny is matched with
 * ASCII case folded, so an upstream cannot slip a tool past it by listing
 * it in capitals; allow is exact; a matcher error denies.
 *
 * What it does not do: talk to an upstream (upstream.c) or decide per
 * address (egress_addr.c: the upstream client checks every address it
 * connects to against the entry's allow_cidrs).
 */
#include "policy.h"
#include "policy_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "name_glob.h"

static const char *const keys[] = {
    "name",      "url",       "credential",         "allow_cidrs",       "tools",          "expose",
    "timeout_s", "max_tools", "max_response_bytes", "max_calls_per_run", "max_tools_bytes"};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

/* 1..32 of a-z 0-9 _: a Python identifier's worth of characters, so
 * `from mcpx.servers import <name>` works, and no '.', which separates the
 * upstream from the tool in "<upstream>.<tool>". */
static bool valid_upstream_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > MCPX_UPSTREAM_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

struct glob_list {
	char **globs;
	size_t *n;
};

static int parse_glob(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct glob_list *l = arg;
	char why[160];
	size_t len;

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be a string (a glob such as \"list_*\")");
	len = strlen(v->valuestring);
	if (len == 0 || len > MCPX_UPSTREAM_GLOB_MAX)
		return mcpx_pol_fail(c, EINVAL, "must be 1..%d characters", MCPX_UPSTREAM_GLOB_MAX);
	for (const char *p = v->valuestring; *p; p++)
		if ((unsigned char)*p < 0x21 || *p == 0x7f)
			return mcpx_pol_fail(c, EINVAL,
			                     "must not contain spaces or control characters");
	if (mcpx_glob_check(v->valuestring, why, sizeof(why)) < 0)
		return mcpx_pol_fail(c, EINVAL, "%s", why);
	if (!(l->globs[i] = strdup(v->valuestring)))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	*l->n = i + 1;
	return 0;
}

/* tools: {"allow": [glob, ...], "deny": [glob, ...]}. */
static int parse_tools(struct policy_ctx *c, const cJSON *v, struct mcpx_upstream_conf *u)
{
	static const char *const tkeys[] = {"allow", "deny"};
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "allow");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "deny");
	struct glob_list al = {u->allow_tools, &u->n_allow_tools};
	struct glob_list dl = {u->deny_tools, &u->n_deny_tools};
	size_t old;
	int rc;

	if ((rc = mcpx_pol_want_object(c, v)) < 0 || (rc = mcpx_pol_check_keys(c, v, tkeys, 2)) < 0)
		return rc;
	if (a) {
		/* The default "*" goes: the list replaces it. */
		free(u->allow_tools[0]);
		u->allow_tools[0] = NULL;
		u->n_allow_tools = 0;
		old = mcpx_pol_push_key(c, "allow");
		rc = mcpx_pol_each_item(c, a, MCPX_UPSTREAM_MAX_GLOBS, parse_glob, &al);
		mcpx_pol_pop(c, old);
		if (rc < 0)
			return rc;
	}
	if (d) {
		old = mcpx_pol_push_key(c, "deny");
		rc = mcpx_pol_each_item(c, d, MCPX_UPSTREAM_MAX_GLOBS, parse_glob, &dl);
		mcpx_pol_pop(c, old);
	}
	return rc;
}

static int parse_url(struct policy_ctx *c, const cJSON *v, struct mcpx_upstream_conf *u)
{
	struct mcpx_url url;
	char why[160];

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be a string (the upstream's MCP endpoint)");
	if (mcpx_url_parse(v->valuestring, strlen(v->valuestring), NULL, &url, why, sizeof(why)) <
	    0)
		return mcpx_pol_fail(c, EINVAL, "%s", why);
	mcpx_url_release(&url);
	if (strchr(v->valuestring, '#'))
		return mcpx_pol_fail(c, EINVAL, "must not have a fragment");
	if (!(u->url = strdup(v->valuestring)))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return 0;
}

static int parse_member(struct policy_ctx *c, const cJSON *v, const char *key,
                        struct mcpx_upstream_conf *u)
{
	double d = 0;
	int rc;

	if (strcmp(key, "url") == 0)
		return parse_url(c, v, u);
	if (strcmp(key, "credential") == 0) {
		rc = mcpx_pol_parse_credential(c, v, &u->cred);
		u->has_credential = rc == 0;
		return rc;
	}
	if (strcmp(key, "allow_cidrs") == 0)
		return mcpx_pol_parse_cidrs(c, v, u->allow, &u->n_allow);
	if (strcmp(key, "tools") == 0)
		return parse_tools(c, v, u);
	if (strcmp(key, "expose") == 0) {
		if (!cJSON_IsBool(v))
			return mcpx_pol_fail(c, EINVAL, "must be true or false");
		u->expose = cJSON_IsTrue(v);
		return 0;
	}
	if (strcmp(key, "timeout_s") == 0) {
		rc = mcpx_pol_get_uint(c, v, 1, MCPX_UPSTREAM_TIMEOUT_MAX_S, &d);
		u->timeout_s = (unsigned)d;
		return rc;
	}
	if (strcmp(key, "max_tools") == 0) {
		rc = mcpx_pol_get_uint(c, v, 1, MCPX_UPSTREAM_TOOLS_MAX, &d);
		u->max_tools = (unsigned)d;
		return rc;
	}
	if (strcmp(key, "max_tools_bytes") == 0) {
		rc = mcpx_pol_get_uint(c, v, MCPX_UPSTREAM_TOOLS_BYTES_MIN,
		                       MCPX_UPSTREAM_TOOLS_BYTES_MAX, &d);
		u->max_tools_bytes = (size_t)d;
		return rc;
	}
	if (strcmp(key, "max_response_bytes") == 0) {
		rc = mcpx_pol_get_uint(c, v, 1024, MCPX_UPSTREAM_RESPONSE_MAX, &d);
		u->max_response_bytes = (size_t)d;
		return rc;
	}
	rc = mcpx_pol_get_uint(c, v, 1, MCPX_UPSTREAM_CALLS_MAX, &d); /* max_calls_per_run */
	u->max_calls_per_run = (unsigned)d;
	return rc;
}

static int parse_name(struct policy_ctx *c, const cJSON *v, struct mcpx_upstream_conf *u, size_t i)
{
	size_t old = mcpx_pol_push_key(c, "name");
	int rc = 0;

	if (!cJSON_IsString(v) || !valid_upstream_name(v->valuestring))
		rc = mcpx_pol_fail(c, EINVAL, "must be 1..%d of a-z, 0-9 and _",
		                   MCPX_UPSTREAM_NAME_MAX);
	for (size_t j = 0; !rc && j < i; j++)
		if (strcmp(c->p->upstreams[j].name, v->valuestring) == 0)
			rc = mcpx_pol_fail(c, EINVAL, "another upstream is named %s",
			                   v->valuestring);
	if (!rc)
		snprintf(u->name, sizeof(u->name), "%s", v->valuestring);
	mcpx_pol_pop(c, old);
	return rc;
}

static int parse_upstream(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct mcpx_upstream_conf *u = &c->p->upstreams[i];
	int rc;

	(void)arg;
	c->p->n_upstreams = i + 1; /* so a failure still frees what this one holds */
	u->timeout_s = MCPX_UPSTREAM_TIMEOUT_DEFAULT_S;
	u->max_response_bytes = MCPX_UPSTREAM_RESPONSE_DEFAULT;
	u->max_calls_per_run = MCPX_UPSTREAM_CALLS_DEFAULT;
	u->max_tools = MCPX_UPSTREAM_TOOLS_DEFAULT;
	u->max_tools_bytes = MCPX_UPSTREAM_TOOLS_BYTES_DEFAULT;
	if (!(u->allow_tools[0] = strdup("*")))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	u->n_allow_tools = 1;
	if ((rc = mcpx_pol_want_object(c, v)) < 0 ||
	    (rc = mcpx_pol_check_keys(c, v, keys, N_KEYS)) < 0)
		return rc;
	if (!cJSON_GetObjectItemCaseSensitive(v, "name") ||
	    !cJSON_GetObjectItemCaseSensitive(v, "url"))
		return mcpx_pol_fail(c, EINVAL, "an upstream needs \"name\" and \"url\"");
	if ((rc = parse_name(c, cJSON_GetObjectItemCaseSensitive(v, "name"), u, i)) < 0)
		return rc;
	for (size_t k = 1; k < N_KEYS; k++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, keys[k]);
		size_t old;

		if (!m)
			continue;
		old = mcpx_pol_push_key(c, keys[k]);
		rc = parse_member(c, m, keys[k], u);
		mcpx_pol_pop(c, old);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int mcpx_pol_parse_upstreams(struct policy_ctx *c, const cJSON *v)
{
	size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;

	if (n > MCPX_POLICY_MAX_UPSTREAMS)
		return mcpx_pol_fail(c, E2BIG, "at most %d upstreams", MCPX_POLICY_MAX_UPSTREAMS);
	if (n && !(c->p->upstreams = calloc(n, sizeof(*c->p->upstreams))))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_UPSTREAMS, parse_upstream, NULL);
}

static int parse_grant_upstream(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct mcpx_egress_grant *g = arg;
	const struct mcpx_upstream_conf *u;

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be the name of an upstream");
	for (size_t j = 0; j < i; j++)
		if (strcmp(g->upstreams[j]->name, v->valuestring) == 0)
			return mcpx_pol_fail(c, EINVAL, "%s is listed twice", v->valuestring);
	u = mcpx_policy_upstream(c->p, v->valuestring, strlen(v->valuestring));
	if (!u)
		return mcpx_pol_fail(c, ENOENT, "no upstream is named \"%.64s\"", v->valuestring);
	g->upstreams[i] = u;
	g->n_upstreams = i + 1;
	return 0;
}

int mcpx_pol_grant_upstreams(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_grant *g)
{
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0 &&
	    !(g->upstreams = calloc((size_t)cJSON_GetArraySize(v), sizeof(*g->upstreams))))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_UPSTREAMS, parse_grant_upstream, g);
}

void mcpx_pol_upstreams_free(struct mcpx_policy *p)
{
	for (size_t i = 0; i < p->n_upstreams; i++) {
		struct mcpx_upstream_conf *u = &p->upstreams[i];

		if (u->cred.value) {
			mcpx_wipe(u->cred.value, u->cred.value_len);
			free(u->cred.value);
		}
		free(u->url);
		for (size_t k = 0; k < MCPX_UPSTREAM_MAX_GLOBS; k++) {
			free(u->allow_tools[k]);
			free(u->deny_tools[k]);
		}
	}
	free(p->upstreams);
}

const struct mcpx_upstream_conf *mcpx_policy_upstream(const struct mcpx_policy *p, const char *name,
                                                      size_t name_len)
{
	for (size_t i = 0; p && i < p->n_upstreams; i++)
		if (strlen(p->upstreams[i].name) == name_len &&
		    memcmp(p->upstreams[i].name, name, name_len) == 0)
			return &p->upstreams[i];
	return NULL;
}

bool mcpx_egress_grant_has_upstream(const struct mcpx_egress_grant *g,
                                    const struct mcpx_upstream_conf *u)
{
	for (size_t i = 0; g && i < g->n_upstreams; i++)
		if (g->upstreams[i] == u)
			return true;
	return false;
}

bool mcpx_upstream_tool_allowed(const struct mcpx_upstream_conf *u, const char *tool)
{
	bool allowed = false;

	for (size_t i = 0; i < u->n_allow_tools && !allowed; i++)
		allowed = mcpx_glob_match(u->allow_tools[i], tool, 0) == 1;
	/* Any answer but "no match" denies: a match, or an error. */
	for (size_t i = 0; i < u->n_deny_tools && allowed; i++)
		allowed = mcpx_glob_match(u->deny_tools[i], tool, MCPX_GLOB_CASEFOLD) == 0;
	return allowed;
}
