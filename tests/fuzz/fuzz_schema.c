/*
 * fuzz_schema.c - the JSON Schema subset: compiling a schema
 * (mcpx_schema_compile) and validating an instance against it
 * (mcpx_schema_validate), then formatting the failures.
 *
 * Input: the schema's JSON, a NUL byte, the instance's JSON (parsed as
 * requests are, so U+0000 in its strings is kept: jsonrpc.h). Without a NUL
 * the whole input is the instance, checked against a fixed schema that uses
 * most keywords.
 *
 * Beyond the sanitizers it checks: a refusal without a message; a result
 * other than 0, -EINVAL or -ENOMEM; -EINVAL without a failure counted, or 0
 * with one; messages that are not valid UTF-8 (whatever the schema's
 * bytes) or overrun their buffer; a
 * pattern that compiles as written but not once spelled out the ECMAScript
 * way (jsonschema_pattern.c); a
 * second validation that says something else than the first (uniqueItems
 * hashes with a random seed, and must not show it); an instance with a
 * non-finite number that validates (issue 21; integers of 2^53 and more
 * travel with their text since issue 34, and may).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "jsonschema.h"
#include "utf8.h"

static const char fixed[] =
    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1,"
    "\"multipleOf\":3},\"s\":{\"type\":\"string\",\"pattern\":\"^[a-z]+\\\\s.$\","
    "\"maxLength\":8},\"a\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/i\"},"
    "\"uniqueItems\":true,\"maxItems\":50},\"e\":{\"enum\":[1,\"x\",null,[1]]}},"
    "\"required\":[\"n\"],\"additionalProperties\":{\"const\":true},"
    "\"$defs\":{\"i\":{\"type\":[\"number\",\"object\"],\"exclusiveMaximum\":1e6}}}";

/* True when a number somewhere in v is not finite (it cannot travel back
 * as JSON; every finite one travels with its own text, json.h). */
static bool inexact(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return !isfinite(v->valuedouble);
	for (const cJSON *c = v->child; c && (cJSON_IsArray(v) || cJSON_IsObject(v)); c = c->next)
		if (inexact(c))
			return true;
	return false;
}

static int nesting(const cJSON *v)
{
	int d = 0;

	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return 0;
	for (const cJSON *c = v->child; c; c = c->next) {
		int n = nesting(c);
		if (n > d)
			d = n;
	}
	return d + 1;
}

/* Valid UTF-8, the parser's U+0000 mark (jsonrpc.h) standing for itself:
 * the printer writes it as \u0000. */
static bool valid_text(const char *s, size_t n)
{
	char *c = malloc(n + 1);
	bool ok;

	if (!c)
		return true;
	for (size_t i = 0; i < n; i++)
		c[i] = s[i] == (char)MCPX_JSON_NUL_MARK ? ' ' : s[i];
	ok = mcpx_utf8_valid(c, n);
	free(c);
	return ok;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data, *why, *sep = memchr(d, '\0', size);
	const char *inst_text = sep ? sep + 1 : d;
	size_t inst_len = sep ? size - (size_t)(sep + 1 - d) : size;
	struct mcpx_schema_errors e1, e2;
	struct mcpx_schema *s = NULL;
	struct mcpx_err err = {{0}};
	cJSON *js, *inst;
	char out[2048];
	int rc;

	if (size > 256 * 1024)
		return 0;
	/* The schema's bytes need not be UTF-8 (the policy file's are, a
	 * schema built by code need not be): messages must be whatever they
	 * are. */
	js = sep ? cJSON_ParseWithLength(d, (size_t)(sep - d)) : cJSON_Parse(fixed);
	if (!js)
		return 0;
	rc = mcpx_schema_compile(js, &s, &err);
	cJSON_Delete(js);
	if (rc < 0) {
		if (!err.msg[0] || s || !valid_text(err.msg, strlen(err.msg)))
			abort();
		/* A pattern PCRE2 compiles as written compiles once '.', \s,
		 * \S and \v are spelled out as ECMAScript means them. */
		if (ends_with(err.msg, "/pattern: invalid regular expression: not supported in "
		                       "its ECMAScript meaning"))
			abort();
		return 0;
	}
	inst = mcpx_jsonrpc_parse(inst_text, inst_len, &why);
	if (inst && nesting(inst) < 200) {
		rc = mcpx_schema_validate(s, inst, &e1);
		if (rc != 0 && rc != -EINVAL && rc != -ENOMEM)
			abort();
		if ((rc == -EINVAL) != (e1.count > 0) || e1.len >= sizeof(e1.text) ||
		    e1.text[e1.len] != '\0' || !valid_text(e1.text, e1.len))
			abort();
		if (rc == 0 && inexact(inst))
			abort();
		mcpx_schema_errors_format(&e1, "invalid arguments", out, sizeof(out));
		if (!valid_text(out, strlen(out)))
			abort();
		/* The same again, unless the CPU budget ran out in either. */
		if (rc != -ENOMEM && mcpx_schema_validate(s, inst, &e2) != -ENOMEM &&
		    !strstr(e1.text, "validation stopped") &&
		    !strstr(e2.text, "validation stopped") &&
		    (e1.count != e2.count || strcmp(e1.text, e2.text) != 0))
			abort();
	}
	cJSON_Delete(inst);
	mcpx_schema_free(s);
	return 0;
}
