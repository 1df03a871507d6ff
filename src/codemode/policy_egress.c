/*
 * policy_egress.c - the policy file's "egress" section (policy.h): the
 * rules (name, url_prefix, methods, allow_cidrs, credential), the
 * credentials other sections share (an upstream's too), a grant's list of
 * rule names, and which rule of a grant allows a request.
 *
 * Secrets: each credential's secret_file is read while parsing (a regular
 * file of at most MCPX_SECRET_MAX_BYTES, one trailing newline dropped, no
 * control characters since it goes into an HTTP header); the value lives in
 * the policy only, never in a message, and is wiped when the last reference
 * is dropped. A secret file a run could read is refused.
 *
 * What it does not do: parse the document's other sections (policy_*.c),
 * share the strict-parsing helpers (policy.c), or decide per address or
 * header (egress_check.c).
 */
#include "policy.h"
#include "policy_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "utf8.h"

/* Reads the secret and builds prefix + secret into cred->value. */
static int load_secret(struct policy_ctx *c, struct mcpx_credential *cred, const char *prefix)
{
	char *secret = NULL;
	size_t len = 0, plen = strlen(prefix);
	int rc;

	mcpx_pol_watch_file(c, cred->secret_file);
	rc = mcpx_pol_read_file(cred->secret_file, MCPX_SECRET_MAX_BYTES, &secret, &len);
	if (rc < 0)
		return mcpx_pol_fail(c, -rc, "cannot read the secret file %s: %s",
		                     cred->secret_file, mcpx_pol_file_error(rc));
	/* `echo token > file` leaves a newline that is not part of the token. */
	if (len && secret[len - 1] == '\n')
		len--;
	if (len && secret[len - 1] == '\r')
		len--;
	rc = 0;
	for (size_t i = 0; i < len && !rc; i++)
		if ((unsigned char)secret[i] < 0x20 || secret[i] == 0x7f)
			rc = mcpx_pol_fail(c, EINVAL,
			                   "the secret in %s contains a control character "
			                   "(it must fit in one HTTP header line)",
			                   cred->secret_file);
	if (!rc && len == 0)
		rc = mcpx_pol_fail(c, EINVAL, "the secret file %s is empty", cred->secret_file);
	if (!rc && !(cred->value = malloc(plen + len + 1)))
		rc = mcpx_pol_fail(c, ENOMEM, "out of memory");
	if (!rc) {
		memcpy(cred->value, prefix, plen);
		memcpy(cred->value + plen, secret, len);
		cred->value[plen + len] = '\0';
		cred->value_len = plen + len;
	}
	mcpx_wipe(secret, len);
	free(secret);
	return rc;
}

/* ---- egress rules --------------------------------------------------------- */

static int parse_method(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct mcpx_egress_rule *r = arg;

	if (!cJSON_IsString(v) || !mcpx_method_valid(v->valuestring, strlen(v->valuestring)))
		return mcpx_pol_fail(
		    c, EINVAL, "must be an HTTP method in upper case (\"GET\", \"POST\", ...)");
	for (size_t j = 0; j < i; j++)
		if (strcmp(r->methods[j], v->valuestring) == 0)
			return mcpx_pol_fail(c, EINVAL, "%s is listed twice", v->valuestring);
	strcpy(r->methods[i], v->valuestring);
	r->n_methods = i + 1;
	return 0;
}

struct cidr_list {
	struct mcpx_cidr *allow;
	size_t *n;
};

static int parse_cidr(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct cidr_list *l = arg;
	char why[128];

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be a string such as \"10.0.0.0/8\"");
	if (mcpx_cidr_parse(v->valuestring, &l->allow[i], why, sizeof(why)) < 0)
		return mcpx_pol_fail(c, EINVAL, "%s", why);
	*l->n = i + 1;
	return 0;
}

int mcpx_pol_parse_cidrs(struct policy_ctx *c, const cJSON *v, struct mcpx_cidr *allow, size_t *n)
{
	struct cidr_list l = {allow, n};

	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_CIDRS, parse_cidr, &l);
}

int mcpx_pol_parse_credential(struct policy_ctx *c, const cJSON *v, struct mcpx_credential *cred)
{
	static const char *const keys[] = {"header", "secret_file", "prefix"};
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(v, "header");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, "secret_file");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "prefix");
	char prefix[257] = "";
	size_t old;
	int rc;

	if ((rc = mcpx_pol_want_object(c, v)) < 0 || (rc = mcpx_pol_check_keys(c, v, keys, 3)) < 0)
		return rc;
	if (!c->o || !c->o->credentials_allowed)
		return mcpx_pol_fail(c, EPERM,
		                     "credentials need Landlock (Linux 5.13+) or the filesystem "
		                     "view (gVisor 2024-07+), so that runs cannot read the secret "
		                     "file; neither holds here");
	if (!h || !f)
		return mcpx_pol_fail(c, EINVAL, "needs \"header\" and \"secret_file\"");
	old = mcpx_pol_push_key(c, "header");
	rc = mcpx_pol_get_string(c, h, cred->header, sizeof(cred->header));
	/* The run may not set it, so the header must be one a run could set
	 * otherwise: a token, and not one the broker owns. */
	if (!rc && mcpx_header_refusal(cred->header, strlen(cred->header), "", 0, NULL))
		rc = mcpx_pol_fail(
		    c, EINVAL, "%s",
		    mcpx_header_refusal(cred->header, strlen(cred->header), "", 0, NULL));
	mcpx_pol_pop(c, old);
	if (rc < 0)
		return rc;
	old = mcpx_pol_push_key(c, "prefix");
	if (p && !cJSON_IsString(p))
		rc = mcpx_pol_fail(c, EINVAL, "must be a string");
	else if (p && (strlen(p->valuestring) >= sizeof(prefix) ||
	               mcpx_header_refusal("x", 1, p->valuestring, strlen(p->valuestring), NULL)))
		rc = mcpx_pol_fail(c, EINVAL,
		                   "must be at most %zu characters, without control characters",
		                   sizeof(prefix) - 1);
	else if (p)
		strcpy(prefix, p->valuestring);
	mcpx_pol_pop(c, old);
	if (rc < 0)
		return rc;
	old = mcpx_pol_push_key(c, "secret_file");
	rc = mcpx_pol_get_string(c, f, cred->secret_file, sizeof(cred->secret_file));
	if (!rc && cred->secret_file[0] != '/')
		rc = mcpx_pol_fail(c, EINVAL, "must be an absolute path");
	if (!rc && mcpx_pol_readable_by_runs(c->o, cred->secret_file))
		rc = mcpx_pol_fail(c, EPERM,
		                   "%s lies where runs can read it; mount secrets elsewhere "
		                   "(for example under /var/run/secrets/mcp-exec/)",
		                   cred->secret_file);
	if (!rc)
		rc = load_secret(c, cred, prefix);
	mcpx_pol_pop(c, old);
	return rc;
}

/* One rule's optional members, each under its own pointer. */
static int parse_rule_member(struct policy_ctx *c, const cJSON *v, const char *key,
                             struct mcpx_egress_rule *r)
{
	double d = 0;
	int rc;

	if (strcmp(key, "methods") == 0) {
		rc = mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_METHODS, parse_method, r);
		return rc ? rc : r->n_methods ? 0 : mcpx_pol_fail(c, EINVAL, "must list a method");
	}
	if (strcmp(key, "allow_cidrs") == 0)
		return mcpx_pol_parse_cidrs(c, v, r->allow, &r->n_allow);
	if (strcmp(key, "credential") == 0) {
		rc = mcpx_pol_parse_credential(c, v, &r->cred);
		r->has_credential = rc == 0;
		return rc;
	}
	if (strcmp(key, "timeout_s") == 0) {
		rc = mcpx_pol_get_uint(c, v, 1, MCPX_EGRESS_TIMEOUT_MAX_S, &d);
		r->timeout_s = (unsigned)d;
		return rc;
	}
	rc = mcpx_pol_get_uint(c, v, 1, MCPX_EGRESS_RESPONSE_MAX, &d); /* max_response_bytes */
	r->max_response_bytes = (size_t)d;
	return rc;
}

static bool valid_name(const char *s)
{
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || (p != s && strchr("_.-", *p))))
			return false;
	return true;
}

static int parse_rule_head(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_rule *r,
                           size_t i)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(v, "url_prefix");
	char why[160];
	size_t old;
	int rc;

	if (!name || !url)
		return mcpx_pol_fail(c, EINVAL, "a rule needs \"name\" and \"url_prefix\"");
	old = mcpx_pol_push_key(c, "name");
	rc = mcpx_pol_get_string(c, name, r->name, sizeof(r->name));
	if (!rc && !valid_name(r->name))
		rc = mcpx_pol_fail(c, EINVAL, "use letters, digits, '_', '.' and '-' only");
	for (size_t j = 0; !rc && j < i; j++)
		if (strcmp(c->p->rules[j].name, r->name) == 0)
			rc = mcpx_pol_fail(c, EINVAL, "another rule is named %s", r->name);
	mcpx_pol_pop(c, old);
	if (rc < 0)
		return rc;
	old = mcpx_pol_push_key(c, "url_prefix");
	if (!cJSON_IsString(url))
		rc = mcpx_pol_fail(c, EINVAL, "must be a string");
	else if (mcpx_url_prefix_parse(url->valuestring, &r->prefix, why, sizeof(why)) < 0)
		rc = mcpx_pol_fail(c, EINVAL, "%s", why);
	else if (!(r->url_prefix = strdup(url->valuestring)))
		rc = mcpx_pol_fail(c, ENOMEM, "out of memory");
	mcpx_pol_pop(c, old);
	return rc;
}

static int parse_rule(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	static const char *const keys[] = {
	    "name",       "url_prefix", "methods",           "allow_cidrs",
	    "credential", "timeout_s",  "max_response_bytes"};
	struct mcpx_egress_rule *r = &c->p->rules[i];
	int rc;

	(void)arg;
	c->p->n_rules = i + 1; /* so a failure still frees what this rule holds */
	r->timeout_s = MCPX_EGRESS_TIMEOUT_DEFAULT_S;
	r->max_response_bytes = MCPX_EGRESS_RESPONSE_DEFAULT;
	if ((rc = mcpx_pol_want_object(c, v)) < 0 ||
	    (rc = mcpx_pol_check_keys(c, v, keys, 7)) < 0 || (rc = parse_rule_head(c, v, r, i)) < 0)
		return rc;
	for (size_t k = 2; k < 7; k++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, keys[k]);
		size_t old;

		if (!m)
			continue;
		old = mcpx_pol_push_key(c, keys[k]);
		rc = parse_rule_member(c, m, keys[k], r);
		mcpx_pol_pop(c, old);
		if (rc < 0)
			return rc;
	}
	if (!r->n_methods) {
		strcpy(r->methods[0], "GET");
		r->n_methods = 1;
	}
	return 0;
}

int mcpx_pol_parse_egress(struct policy_ctx *c, const cJSON *v)
{
	size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;

	if (n > MCPX_POLICY_MAX_RULES)
		return mcpx_pol_fail(c, E2BIG, "at most %d rules", MCPX_POLICY_MAX_RULES);
	if (n && !(c->p->rules = calloc(n, sizeof(*c->p->rules))))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_RULES, parse_rule, NULL);
}

/* ---- grants: which rules a caller may use ------------------------------- */

static int parse_grant_rule(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	struct mcpx_egress_grant *g = arg;
	const struct mcpx_policy *p = c->p;

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be the name of an egress rule");
	for (size_t j = 0; j < i; j++)
		if (strcmp(g->rules[j]->name, v->valuestring) == 0)
			return mcpx_pol_fail(c, EINVAL, "%s is listed twice", v->valuestring);
	for (size_t r = 0; r < p->n_rules; r++) {
		if (strcmp(p->rules[r].name, v->valuestring) == 0) {
			g->rules[i] = &p->rules[r];
			g->n_rules = i + 1;
			return 0;
		}
	}
	return mcpx_pol_fail(c, ENOENT, "no egress rule is named \"%.64s\"", v->valuestring);
}

int mcpx_pol_grant_rules(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_grant *g)
{
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0 &&
	    !(g->rules = calloc((size_t)cJSON_GetArraySize(v), sizeof(*g->rules))))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_RULES, parse_grant_rule, g);
}

/* ---- a grant's rules: which one allows a request ---------------------- */

const struct mcpx_egress_rule *mcpx_egress_grant_match(const struct mcpx_egress_grant *g,
                                                       const struct mcpx_url *url,
                                                       const char *method, const char **reason)
{
	bool covered = false;

	for (size_t i = 0; i < g->n_rules; i++) {
		const struct mcpx_egress_rule *r = g->rules[i];

		if (!mcpx_url_prefix_match(&r->prefix, url))
			continue;
		covered = true;
		for (size_t m = 0; m < r->n_methods; m++)
			if (strcmp(r->methods[m], method) == 0)
				return r;
	}
	*reason = covered ? "method" : "no_rule";
	return NULL;
}

int mcpx_egress_grant_describe(const struct mcpx_egress_grant *g, struct mcpx_buf *b)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < g->n_rules; i++) {
		const struct mcpx_egress_rule *r = g->rules[i];

		rc = mcpx_buf_addf(b, "%s%s (", i ? "; " : "", r->url_prefix);
		for (size_t m = 0; !rc && m < r->n_methods; m++)
			rc = mcpx_buf_addf(b, "%s%s", m ? ", " : "", r->methods[m]);
		if (!rc && r->has_credential)
			rc = mcpx_buf_adds(b, "; the server adds the credentials");
		if (!rc)
			rc = mcpx_buf_adds(b, ")");
	}
	return rc;
}
