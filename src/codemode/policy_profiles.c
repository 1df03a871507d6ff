/*
 * policy_profiles.c - the policy file's "profiles" section: which callers
 * see which tools, what their exec code may reach, and their lower limits.
 *
 *   "profiles": [{"name": "billing",
 *                 "callers": ["billing-agent", "system:serviceaccount:billing:*"],
 *                 "tools": ["exec", "get_invoice"],
 *                 "exec": {"egress": ["invoices"], "upstreams": ["github"]},
 *                 "limits": {"timeout_s": 60, "memory_mb": 256,
 *                            "max_queued": 2, "runs_per_minute": 30},
 *                 "workspaces": {"max_mb": 16, "max": 4}}]
 *
 * name, callers and tools are required: a profile that says nothing about
 * tools is a mistake, not a grant. exec, limits and workspaces are
 * optional (absent exec: the top-level one; absent limits or workspaces:
 * the server's; workspaces false: none for its callers). The first profile
 * whose callers match applies; a caller no profile matches sees exec alone
 * under the top-level exec grant (deny by default for functions). callers
 * and tools are the policy's globs (name_glob.h; "*" also spans ':' in a
 * ServiceAccount name), checked at load and matched exactly; a matcher
 * error matches nothing. Names of egress rules must exist (parsed before);
 * names of upstreams are carried as written for the upstreams feature.
 */
#include "policy.h"
#include "policy_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name_glob.h"

/* Printable ASCII, no space: what a caller name, a tool name or a glob
 * over them can hold. */
static bool glob_ok(const char *s)
{
	for (const char *p = s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

struct str_list {
	char ***v;
	size_t *n;
	size_t cap; /* longest string + 1 */
};

static int parse_str(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct str_list *l = arg;
	char why[160];
	size_t n;

	if (!cJSON_IsString(v) || !(n = strlen(v->valuestring)) || n >= l->cap ||
	    !glob_ok(v->valuestring))
		return mcpx_pol_fail(c, EINVAL,
		                     "must be a string of 1..%zu printable characters, no spaces",
		                     l->cap - 1);
	if (mcpx_glob_check(v->valuestring, why, sizeof(why)) < 0)
		return mcpx_pol_fail(c, EINVAL, "%s", why);
	for (size_t j = 0; j < i; j++)
		if (strcmp((*l->v)[j], v->valuestring) == 0)
			return mcpx_pol_fail(c, EINVAL, "\"%.64s\" is listed twice",
			                     v->valuestring);
	if (!((*l->v)[i] = strdup(v->valuestring)))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	*l->n = i + 1;
	return 0;
}

/* A non-empty list of distinct strings under key of obj, into *v. */
static int parse_list(struct policy_ctx *c, const cJSON *obj, const char *key, size_t cap,
                      char ***v, size_t *n)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
	struct str_list l = {v, n, cap};
	size_t old = mcpx_pol_push_key(c, key);
	int rc = 0;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
		rc = mcpx_pol_fail(c, EINVAL, "must be a non-empty array of strings");
	else if (!(*v = calloc((size_t)cJSON_GetArraySize(arr), sizeof(**v))))
		rc = mcpx_pol_fail(c, ENOMEM, "out of memory");
	else
		rc = mcpx_pol_each_item(c, arr, MCPX_PROFILE_MAX_GLOBS, parse_str, &l);
	mcpx_pol_pop(c, old);
	return rc;
}

/* "exec": a grant like the top level's (egress rules and upstreams by
 * name, both resolved against the sections parsed before). */
static int parse_profile_exec(struct policy_ctx *c, const cJSON *v, struct mcpx_profile *pr)
{
	size_t old = mcpx_pol_push_key(c, "exec");
	int rc = mcpx_pol_parse_grant(c, v, &pr->exec);

	pr->has_exec = rc == 0;
	mcpx_pol_pop(c, old);
	return rc;
}

/* An object of n optional unsigned members, keys[k] within [min[k],
 * max[k]] into *dst[k] (left 0 when absent); an unknown key is refused. */
static int parse_uints(struct policy_ctx *c, const cJSON *v, const char *const *keys,
                       unsigned *const *dst, const double *min, const double *max, size_t n)
{
	int rc = mcpx_pol_want_object(c, v);

	if (!rc)
		rc = mcpx_pol_check_keys(c, v, keys, n);
	for (size_t k = 0; !rc && k < n; k++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, keys[k]);
		double d = 0;
		size_t o;

		if (!m)
			continue;
		o = mcpx_pol_push_key(c, keys[k]);
		rc = mcpx_pol_get_uint(c, m, min[k], max[k], &d);
		*dst[k] = (unsigned)d;
		mcpx_pol_pop(c, o);
	}
	return rc;
}

/* "limits": each optional, each at least 1 (0 would be a limit no run can
 * meet; to keep a caller out, leave it out of every profile). */
static int parse_limits(struct policy_ctx *c, const cJSON *v, struct mcpx_profile_limits *l)
{
	static const char *const keys[] = {"timeout_s", "memory_mb", "max_queued",
	                                   "runs_per_minute"};
	unsigned *const dst[] = {&l->timeout_s, &l->memory_mb, &l->max_queued, &l->runs_per_minute};
	static const double min[] = {1, 32, 1, 1}, max[] = {86400, 1 << 20, 100000, 1000000};
	size_t old = mcpx_pol_push_key(c, "limits");
	int rc = parse_uints(c, v, keys, dst, min, max, 4);

	mcpx_pol_pop(c, old);
	return rc;
}

/* "workspaces": false turns them off for the profile's callers; an object
 * lowers the server's caps ("max_mb" per workspace, "max" workspaces per
 * caller); true is the server's own. */
static int parse_workspaces(struct policy_ctx *c, const cJSON *v, struct mcpx_profile_workspaces *w)
{
	static const char *const keys[] = {"max_mb", "max"};
	unsigned *const dst[] = {&w->max_mb, &w->max};
	static const double min[] = {1, 1}, max[] = {1 << 20, 100000};
	size_t old = mcpx_pol_push_key(c, "workspaces");
	int rc = 0;

	if (cJSON_IsBool(v))
		w->off = cJSON_IsFalse(v);
	else if (!cJSON_IsObject(v))
		rc = mcpx_pol_fail(c, EINVAL,
		                   "must be false (off), true (the server's caps) or an object "
		                   "{\"max_mb\", \"max\"}");
	else
		rc = parse_uints(c, v, keys, dst, min, max, 2);
	mcpx_pol_pop(c, old);
	return rc;
}

static int parse_profile(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	static const char *const keys[] = {"name", "callers", "tools",
	                                   "exec", "limits",  "workspaces"};
	struct mcpx_profile *pr = &c->p->profiles[i];
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
	const cJSON *exec, *limits, *ws;
	size_t old;
	int rc;

	(void)arg;
	c->p->n_profiles = i + 1; /* so a failure still frees what this one holds */
	if ((rc = mcpx_pol_want_object(c, v)) < 0 || (rc = mcpx_pol_check_keys(c, v, keys, 6)) < 0)
		return rc;
	if (!name || !cJSON_GetObjectItemCaseSensitive(v, "callers") ||
	    !cJSON_GetObjectItemCaseSensitive(v, "tools"))
		return mcpx_pol_fail(c, EINVAL,
		                     "a profile needs \"name\", \"callers\" and \"tools\" (use "
		                     "[\"*\"] for every tool)");
	old = mcpx_pol_push_key(c, "name");
	rc = mcpx_pol_get_string(c, name, pr->name, sizeof(pr->name));
	if (!rc && !glob_ok(pr->name))
		rc = mcpx_pol_fail(c, EINVAL, "printable characters only, no spaces");
	for (size_t j = 0; !rc && j < i; j++)
		if (strcmp(c->p->profiles[j].name, pr->name) == 0)
			rc = mcpx_pol_fail(c, EINVAL, "another profile is named %s", pr->name);
	mcpx_pol_pop(c, old);
	if (!rc)
		rc = parse_list(c, v, "callers", MCPX_PROFILE_GLOB_MAX, &pr->callers,
		                &pr->n_callers);
	if (!rc)
		rc = parse_list(c, v, "tools", MCPX_PROFILE_GLOB_MAX, &pr->tools, &pr->n_tools);
	if (!rc && (exec = cJSON_GetObjectItemCaseSensitive(v, "exec")))
		rc = parse_profile_exec(c, exec, pr);
	if (!rc && (limits = cJSON_GetObjectItemCaseSensitive(v, "limits")))
		rc = parse_limits(c, limits, &pr->limits);
	if (!rc && (ws = cJSON_GetObjectItemCaseSensitive(v, "workspaces")))
		rc = parse_workspaces(c, ws, &pr->workspaces);
	return rc;
}

int mcpx_pol_parse_profiles(struct policy_ctx *c, const cJSON *v)
{
	size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;

	c->p->has_profiles = true;
	if (n > MCPX_POLICY_MAX_PROFILES)
		return mcpx_pol_fail(c, E2BIG, "at most %d profiles", MCPX_POLICY_MAX_PROFILES);
	if (n && !(c->p->profiles = calloc(n, sizeof(*c->p->profiles))))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_PROFILES, parse_profile, NULL);
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void mcpx_pol_profiles_free(struct mcpx_policy *p)
{
	for (size_t i = 0; i < p->n_profiles; i++) {
		struct mcpx_profile *pr = &p->profiles[i];

		/* Lists are freed up to their allocation: a failed parse may
		 * have filled fewer entries than it allocated, and calloc left
		 * the rest NULL. */
		free_list(pr->callers, pr->n_callers);
		free_list(pr->tools, pr->n_tools);
		free(pr->exec.upstreams);
		free(pr->exec.rules);
	}
	free(p->profiles);
	p->profiles = NULL;
	p->n_profiles = 0;
}

static bool any_match(char *const *globs, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (mcpx_glob_match(globs[i], s, 0) == 1)
			return true;
	return false;
}

const struct mcpx_profile *mcpx_policy_profile_for(const struct mcpx_policy *p, const char *caller)
{
	for (size_t i = 0; p && caller && i < p->n_profiles; i++)
		if (any_match(p->profiles[i].callers, p->profiles[i].n_callers, caller))
			return &p->profiles[i];
	return NULL;
}

bool mcpx_policy_tool_allowed(const struct mcpx_policy *p, const char *caller, const char *name)
{
	const struct mcpx_profile *pr;

	if (!p || !p->has_profiles)
		return true;
	pr = mcpx_policy_profile_for(p, caller);
	if (!pr)
		return strcmp(name, "exec") == 0;
	return any_match(pr->tools, pr->n_tools, name);
}

const struct mcpx_egress_grant *mcpx_policy_exec_grant(const struct mcpx_policy *p,
                                                       const char *caller)
{
	const struct mcpx_profile *pr = mcpx_policy_profile_for(p, caller);

	return pr && pr->has_exec ? &pr->exec : &p->exec;
}
