/*
 * jsonschema_value.c - JSON value questions the validator asks: are two
 * values equal (for `enum`, `const`, `uniqueItems`), how deep does a value
 * nest, is a number an integer, and how to print a number in a message.
 *
 * Equality is JSON Schema's: numbers by mathematical value (1 equals 1.0),
 * strings byte for byte, arrays element by element, objects member by
 * member in any order. Objects are compared through sorted member lists so
 * two large equal objects cost n log n, not n squared. Every recursion here
 * runs on values whose depth the caller has bounded.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonschema_internal.h"

/* Objects this small are compared by direct lookup: no allocation. */
#define SMALL_OBJECT 8

bool mcpx_schema_is_integer(double d)
{
	/* Without libm (trunc): 2^52 and beyond are whole; below, the cast
	 * truncates exactly. */
	if (!isfinite(d))
		return false;
	return fabs(d) >= 0x1p52 || d == (double)(long long)d;
}

void mcpx_schema_format_number(double d, char *out, size_t size)
{
	snprintf(out, size, "%.15g", d);
	if (strtod(out, NULL) != d)
		snprintf(out, size, "%.17g", d);
}

bool mcpx_schema_json_depth_ok(const cJSON *v, unsigned max)
{
	const cJSON *c;

	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return true;
	if (max == 0)
		return false;
	for (c = v->child; c; c = c->next)
		if (!mcpx_schema_json_depth_ok(c, max - 1))
			return false;
	return true;
}

static int by_key(const void *a, const void *b)
{
	return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The object's members sorted by key, or NULL when out of memory. */
static const cJSON **sorted_members(const cJSON *o, size_t n)
{
	const cJSON **m = malloc(n * sizeof(*m));
	size_t i = 0;

	if (!m)
		return NULL;
	for (const cJSON *c = o->child; c; c = c->next)
		m[i++] = c;
	qsort(m, n, sizeof(*m), by_key);
	return m;
}

/* Returns the member of o named key, or NULL; *twice is set when the key
 * occurs more than once. */
static const cJSON *member(const cJSON *o, const char *key, bool *twice)
{
	const cJSON *found = NULL;

	for (const cJSON *c = o->child; c; c = c->next) {
		if (strcmp(c->string, key) != 0)
			continue;
		if (found)
			*twice = true;
		found = c;
	}
	return found;
}

static int small_objects_equal(const cJSON *a, const cJSON *b)
{
	bool twice = false;
	int eq;

	for (const cJSON *c = a->child; c; c = c->next) {
		const cJSON *d = member(b, c->string, &twice);

		member(a, c->string, &twice);
		if (!d || twice)
			return 0;
		if ((eq = mcpx_schema_json_equal(c, d)) != 1)
			return eq;
	}
	return 1;
}

static int objects_equal(const cJSON *a, const cJSON *b, size_t n)
{
	const cJSON **ma = NULL, **mb = NULL;
	int eq = -ENOMEM;

	if (n <= SMALL_OBJECT)
		return small_objects_equal(a, b);
	ma = sorted_members(a, n);
	mb = sorted_members(b, n);
	if (!ma || !mb)
		goto out;
	eq = 1;
	for (size_t i = 0; i < n && eq == 1; i++) {
		if (strcmp(ma[i]->string, mb[i]->string) != 0 ||
		    (i > 0 && strcmp(ma[i]->string, ma[i - 1]->string) == 0) ||
		    (i > 0 && strcmp(mb[i]->string, mb[i - 1]->string) == 0))
			eq = 0;
		else
			eq = mcpx_schema_json_equal(ma[i], mb[i]);
	}
out:
	free(ma);
	free(mb);
	return eq;
}

int mcpx_schema_json_equal(const cJSON *a, const cJSON *b)
{
	int na, nb, eq;
	const cJSON *c, *d;

	if ((a->type & 0xFF) != (b->type & 0xFF))
		return 0;
	if (cJSON_IsNumber(a))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (!cJSON_IsArray(a) && !cJSON_IsObject(a))
		return 1; /* null, true, false: the type says it all */
	na = cJSON_GetArraySize(a);
	nb = cJSON_GetArraySize(b);
	if (na != nb)
		return 0;
	if (cJSON_IsObject(a))
		return objects_equal(a, b, (size_t)na);
	for (c = a->child, d = b->child; c && d; c = c->next, d = d->next)
		if ((eq = mcpx_schema_json_equal(c, d)) != 1)
			return eq;
	return 1;
}
