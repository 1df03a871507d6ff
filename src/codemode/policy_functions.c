/*
 * policy_functions.c - the policy file's "functions" section: admin-written
 * Python functions published as tools (struct mcpx_function).
 *
 * Everything a function's call will rely on is settled here, when the
 * policy loads, so a call never meets a surprise: the name is a valid and
 * unique tool name (not "exec"); both schemas are compiled by the validator
 * (jsonschema.h), which refuses a keyword outside its subset and names its
 * pointer ("/functions/0/input_schema/properties/email/format: unsupported
 * keyword"); the source file is read (a regular file, valid UTF-8, no NUL,
 * at most MCPX_FUNCTION_SOURCE_MAX bytes) and watched for changes like a
 * secret file, and refused when a run could read it; the egress rules it
 * names exist. Without Landlock a function that exec code may call cannot
 * have egress rules: exec code could write the callee's workdir and take
 * over its run, and with it the rules.
 *
 * What it does not do: run anything (functions.c), or speak MCP
 * (tool_function.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "policy_internal.h"
#include "utf8.h"

static const char *const keys[] = {
    "name",   "title",     "description",        "input_schema", "output_schema", "source_file",
    "egress", "timeout_s", "callable_from_exec", "upstreams",    "task_support"};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static bool tool_name_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_-.", *s)))
			return false;
	return true;
}

static int parse_name(struct policy_ctx *c, const cJSON *v, struct mcpx_function *f, size_t i)
{
	int rc = mcpx_pol_get_string(c, v, f->name, sizeof(f->name));

	if (rc < 0)
		return rc;
	if (!tool_name_ok(f->name))
		return mcpx_pol_fail(
		    c, EINVAL,
		    "a tool name is 1..%d of the letters A-Z and a-z, digits, '_', "
		    "'-' and '.'",
		    MCPX_FUNCTION_NAME_MAX);
	if (strcmp(f->name, "exec") == 0)
		return mcpx_pol_fail(c, EINVAL, "\"exec\" is the server's own tool");
	/* "<upstream>.<tool>" names an upstream's tool, in mcpx.call and in
	 * tools/list alike. */
	if (strchr(f->name, '.') &&
	    mcpx_policy_upstream(c->p, f->name, (size_t)(strchr(f->name, '.') - f->name)))
		return mcpx_pol_fail(
		    c, EINVAL, "names starting with an upstream's name and '.' are its tools'");
	for (size_t j = 0; j < i; j++)
		if (strcmp(c->p->functions[j].name, f->name) == 0)
			return mcpx_pol_fail(c, EINVAL, "another function is named %s", f->name);
	return 0;
}

/* title and description: text an agent reads, so valid UTF-8 of bounded
 * size (mcpx_policy_parse checked the whole file as UTF-8 without U+0000
 * before parsing it). */
static int parse_text(struct policy_ctx *c, const cJSON *v, char **out)
{
	size_t n;

	if (!cJSON_IsString(v))
		return mcpx_pol_fail(c, EINVAL, "must be a string");
	n = strlen(v->valuestring);
	if (n == 0 || n > MCPX_FUNCTION_TEXT_MAX)
		return mcpx_pol_fail(c, EINVAL, "must be 1..%d bytes", MCPX_FUNCTION_TEXT_MAX);
	if (!(*out = strdup(v->valuestring)))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return 0;
}

/* A tool's schema: an object schema (MCP requires "type": "object" at the
 * top of inputSchema and outputSchema) in the validator's subset. */
static int parse_schema(struct policy_ctx *c, const cJSON *v, cJSON **copy,
                        struct mcpx_schema **compiled)
{
	const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : NULL;
	struct mcpx_err why = {{0}};
	int rc;

	if (!cJSON_IsObject(v))
		return mcpx_pol_fail(c, EINVAL, "must be a JSON Schema object");
	if (!cJSON_IsString(type) || strcmp(type->valuestring, "object") != 0)
		return mcpx_pol_fail(c, EINVAL,
		                     "a tool's schema must say \"type\": \"object\" at the top");
	rc = mcpx_schema_compile(v, compiled, &why);
	if (rc == -ENOMEM)
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	/* The validator's message starts with the pointer inside the schema
	 * ("/properties/a/format: ..."): the two pointers join into one. */
	if (rc < 0 && why.msg[0] == '/')
		return mcpx_err_set(c->err, EINVAL, "%s%s", c->ptr, why.msg);
	if (rc < 0)
		return mcpx_pol_fail(c, EINVAL, "%s", why.msg);
	if (!(*copy = cJSON_Duplicate(v, true)))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return 0;
}

static int check_source(struct policy_ctx *c, struct mcpx_function *f)
{
	if (f->source_len == 0)
		return mcpx_pol_fail(c, EINVAL, "%s is empty", f->source_file);
	if (memchr(f->source, '\0', f->source_len))
		return mcpx_pol_fail(c, EINVAL, "%s contains a NUL byte", f->source_file);
	if (!mcpx_utf8_valid(f->source, f->source_len))
		return mcpx_pol_fail(c, EINVAL, "%s is not valid UTF-8 (Python source is UTF-8)",
		                     f->source_file);
	mcpx_sha256_hex(f->source, f->source_len, f->source_sha256);
	return 0;
}

static int parse_source_file(struct policy_ctx *c, const cJSON *v, struct mcpx_function *f)
{
	int rc = mcpx_pol_get_string(c, v, f->source_file, sizeof(f->source_file));

	if (rc < 0)
		return rc;
	if (f->source_file[0] != '/')
		return mcpx_pol_fail(c, EINVAL, "must be an absolute path");
	/* The source is the admin's: runs (exec code above all) must not read
	 * it, nor change it under the server. */
	if (mcpx_pol_readable_by_runs(c->o, f->source_file))
		return mcpx_pol_fail(c, EPERM,
		                     "%s lies where runs can read it; mount function sources "
		                     "elsewhere (for example beside the policy file)",
		                     f->source_file);
	mcpx_pol_watch_file(c, f->source_file);
	rc = mcpx_pol_read_file(f->source_file, MCPX_FUNCTION_SOURCE_MAX, &f->source,
	                        &f->source_len);
	if (rc < 0)
		return mcpx_pol_fail(c, -rc, "cannot read the source file %s: %s", f->source_file,
		                     mcpx_pol_file_error(rc));
	return check_source(c, f);
}

/* The optional members, each under its own pointer. */
static int parse_member(struct policy_ctx *c, const cJSON *v, const char *key,
                        struct mcpx_function *f)
{
	double d;
	int rc;

	if (strcmp(key, "title") == 0)
		return parse_text(c, v, &f->title);
	if (strcmp(key, "output_schema") == 0)
		return parse_schema(c, v, &f->output_schema, &f->output);
	if (strcmp(key, "egress") == 0)
		return mcpx_pol_grant_rules(c, v, &f->grant);
	if (strcmp(key, "upstreams") == 0)
		return mcpx_pol_grant_upstreams(c, v, &f->grant);
	if (strcmp(key, "task_support") == 0) {
		static const char *const names[] = {"optional", "forbidden", "required"};

		for (size_t n = 0; cJSON_IsString(v) && n < 3; n++) {
			if (strcmp(v->valuestring, names[n]) == 0) {
				f->task_support = (enum mcpx_fn_tasks)n;
				return 0;
			}
		}
		return mcpx_pol_fail(c, EINVAL,
		                     "must be \"optional\", \"forbidden\" or \"required\"");
	}
	if (strcmp(key, "callable_from_exec") == 0) {
		if (!cJSON_IsBool(v))
			return mcpx_pol_fail(c, EINVAL, "must be true or false");
		f->callable_from_exec = cJSON_IsTrue(v);
		return 0;
	}
	rc = mcpx_pol_get_uint(c, v, 1, MCPX_FUNCTION_TIMEOUT_MAX_S, &d); /* timeout_s */
	f->timeout_s = (unsigned)d;
	return rc;
}

/* name, description, input_schema and source_file, in that order. */
static int parse_required(struct policy_ctx *c, const cJSON *v, struct mcpx_function *f, size_t i)
{
	static const char *const req[] = {"name", "description", "input_schema", "source_file"};
	int rc = 0;

	for (size_t k = 0; k < 4 && rc == 0; k++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, req[k]);
		size_t old;

		if (!m)
			return mcpx_pol_fail(c, EINVAL,
			                     "a function needs \"name\", \"description\", "
			                     "\"input_schema\" and \"source_file\"");
		old = mcpx_pol_push_key(c, req[k]);
		if (k == 0)
			rc = parse_name(c, m, f, i);
		else if (k == 1)
			rc = parse_text(c, m, &f->description);
		else if (k == 2)
			rc = parse_schema(c, m, &f->input_schema, &f->input);
		else
			rc = parse_source_file(c, m, f);
		mcpx_pol_pop(c, old);
	}
	return rc;
}

static int parse_function(struct policy_ctx *c, const cJSON *v, size_t i, void *arg)
{
	static const char *const optional[] = {"title",       "output_schema",      "egress",
	                                       "timeout_s",   "callable_from_exec", "upstreams",
	                                       "task_support"};
	struct mcpx_function *f = &c->p->functions[i];
	int rc;

	(void)arg;
	c->p->n_functions = i + 1; /* so a failure still frees what this one holds */
	f->grant.max_requests = MCPX_EGRESS_MAX_REQUESTS_DEFAULT;
	f->grant.max_in_flight = MCPX_EGRESS_MAX_IN_FLIGHT_DEFAULT;
	if ((rc = mcpx_pol_want_object(c, v)) < 0 ||
	    (rc = mcpx_pol_check_keys(c, v, keys, N_KEYS)) < 0 ||
	    (rc = parse_required(c, v, f, i)) < 0)
		return rc;
	for (size_t k = 0; k < sizeof(optional) / sizeof(optional[0]); k++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, optional[k]);
		size_t old;

		if (!m)
			continue;
		old = mcpx_pol_push_key(c, optional[k]);
		rc = parse_member(c, m, optional[k], f);
		mcpx_pol_pop(c, old);
		if (rc < 0)
			return rc;
	}
	if (f->callable_from_exec && (f->grant.n_rules || f->grant.n_upstreams) &&
	    (!c->o || !c->o->credentials_allowed)) {
		size_t old = mcpx_pol_push_key(c, "callable_from_exec");

		rc =
		    mcpx_pol_fail(c, EPERM,
		                  "a function exec code may call cannot have egress rules or "
		                  "upstreams without Landlock (Linux 5.13+) or the filesystem view "
		                  "(gVisor 2024-07+): the caller could take "
		                  "over its run");
		mcpx_pol_pop(c, old);
	}
	return rc;
}

int mcpx_pol_parse_functions(struct policy_ctx *c, const cJSON *v)
{
	size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;

	if (n > MCPX_POLICY_MAX_FUNCTIONS)
		return mcpx_pol_fail(c, E2BIG, "at most %d functions", MCPX_POLICY_MAX_FUNCTIONS);
	if (n && !(c->p->functions = calloc(n, sizeof(*c->p->functions))))
		return mcpx_pol_fail(c, ENOMEM, "out of memory");
	return mcpx_pol_each_item(c, v, MCPX_POLICY_MAX_FUNCTIONS, parse_function, NULL);
}

void mcpx_pol_functions_free(struct mcpx_policy *p)
{
	for (size_t i = 0; i < p->n_functions; i++) {
		struct mcpx_function *f = &p->functions[i];

		free(f->title);
		free(f->description);
		cJSON_Delete(f->input_schema);
		cJSON_Delete(f->output_schema);
		mcpx_schema_free(f->input);
		mcpx_schema_free(f->output);
		free(f->source);
		free(f->grant.rules);
		free(f->grant.upstreams);
	}
	free(p->functions);
	p->functions = NULL;
	p->n_functions = 0;
}

const struct mcpx_function *mcpx_policy_function(const struct mcpx_policy *p, const char *name)
{
	for (size_t i = 0; p && i < p->n_functions; i++)
		if (strcmp(p->functions[i].name, name) == 0)
			return &p->functions[i];
	return NULL;
}

bool mcpx_policy_exec_calls(const struct mcpx_policy *p)
{
	if (p && p->exec.n_upstreams)
		return true;
	for (size_t i = 0; p && i < p->n_functions; i++)
		if (p->functions[i].callable_from_exec)
			return true;
	return false;
}
