/*
 * policy_document.c - the policy file's top level: its text checked (UTF-8,
 * no NUL byte, no U+0000 escape), its JSON parsed, and its sections parsed
 * in table order, because later ones refer to earlier ones ("exec" and
 * "functions" name "egress" rules and "upstreams"); and a snapshot's end,
 * when its last reference goes (secrets wiped).
 *
 * It sits above every section's parser (policy_egress.c, policy_grant.c,
 * policy_upstreams.c, policy_functions.c, policy_profiles.c); reading the
 * file and watching it is policy_store.c's.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "policy.h"
#include "policy_internal.h"
#include "utf8.h"

static int parse_exec(struct policy_ctx *c, const cJSON *v)
{
	return mcpx_pol_parse_grant(c, v, &c->p->exec);
}

/* The top-level sections, in the order they are parsed. */
static const struct {
	const char *key;
	int (*parse)(struct policy_ctx *c, const cJSON *v);
} sections[] = {
    {"egress", mcpx_pol_parse_egress},
    {"upstreams", mcpx_pol_parse_upstreams},
    {"exec", parse_exec},
    {"functions", mcpx_pol_parse_functions},
    {"profiles", mcpx_pol_parse_profiles},
};
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

void mcpx_policy_unref(struct mcpx_policy *p)
{
	if (!p || --p->refs > 0)
		return;
	for (size_t i = 0; i < p->n_rules; i++) {
		struct mcpx_credential *cred = &p->rules[i].cred;

		if (cred->value) {
			mcpx_wipe(cred->value, cred->value_len);
			free(cred->value);
		}
		free(p->rules[i].url_prefix);
	}
	mcpx_pol_functions_free(p);
	mcpx_pol_profiles_free(p);
	mcpx_pol_upstreams_free(p);
	free(p->rules);
	free(p->exec.rules);
	free(p->exec.upstreams);
	free(p);
}

/* Where the first "\\u0000" escape inside a string of the n bytes at json
 * is, or n. cJSON ends its strings at U+0000, so a name, a pattern or a
 * required property with one would silently mean a shorter one: refused. */
static size_t nul_escape_at(const char *json, size_t n)
{
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		if (!in_str) {
			in_str = json[i] == '"';
		} else if (json[i] == '"') {
			in_str = false;
		} else if (json[i] == '\\') {
			if (n - i >= 6 && memcmp(json + i + 1, "u0000", 5) == 0)
				return i;
			i++; /* the escaped character, "\\\\" included */
		}
	}
	return n;
}

/* What the JSON parser would let through that a policy must not hold:
 * bytes that are not UTF-8 (its strings go into tools/list, exec's
 * description and messages as they are), NUL bytes (cJSON stops reading at
 * one, so a file followed by NULs would pass), and U+0000 escapes. */
static int check_text(const char *json, size_t len, struct mcpx_err *err)
{
	const char *nul = memchr(json, '\0', len);
	size_t esc;

	if (nul)
		return mcpx_err_set(err, EINVAL, "not valid JSON: a NUL byte at byte %zu",
		                    (size_t)(nul - json));
	if (!mcpx_utf8_valid(json, len))
		return mcpx_err_set(err, EINVAL, "not valid UTF-8");
	if ((esc = nul_escape_at(json, len)) < len)
		return mcpx_err_set(
		    err, EINVAL, "U+0000 (\"\\u0000\") is not allowed in a string (byte %zu)", esc);
	return 0;
}

int mcpx_policy_parse(const char *json, size_t len, const struct mcpx_policy_opts *o,
                      struct mcpx_policy **out, struct mcpx_file_id *files, size_t max_files,
                      size_t *n_files, struct mcpx_err *err)
{
	struct policy_ctx c = {
	    .err = err, .o = o, .files = files, .max_files = files ? max_files : 0};
	const char *end = NULL;
	const char *keys[N_SECTIONS];
	cJSON *root;
	int rc;

	*out = NULL;
	if (n_files)
		*n_files = 0;
	if ((rc = check_text(json, len, err)) < 0)
		return rc;
	root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	while (root && end && (size_t)(end - json) < len && *end && strchr(" \t\r\n", *end))
		end++;
	if (!root || (size_t)(end - json) != len) {
		cJSON_Delete(root);
		return mcpx_err_set(err, EINVAL, "not valid JSON (near byte %zu)",
		                    end ? (size_t)(end - json) : len);
	}
	c.p = calloc(1, sizeof(*c.p));
	if (!c.p) {
		cJSON_Delete(root);
		return mcpx_err_set(err, ENOMEM, "out of memory");
	}
	c.p->refs = 1;
	for (size_t i = 0; i < N_SECTIONS; i++)
		keys[i] = sections[i].key;
	rc = mcpx_pol_want_object(&c, root);
	if (!rc)
		rc = mcpx_pol_check_keys(&c, root, keys, N_SECTIONS);
	for (size_t i = 0; !rc && i < N_SECTIONS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, sections[i].key);
		size_t old;

		if (!v)
			continue;
		old = mcpx_pol_push_key(&c, sections[i].key);
		rc = sections[i].parse(&c, v);
		mcpx_pol_pop(&c, old);
	}
	cJSON_Delete(root);
	if (n_files)
		*n_files = c.n_files;
	if (rc < 0) {
		mcpx_policy_unref(c.p);
		return rc;
	}
	*out = c.p;
	return 0;
}
