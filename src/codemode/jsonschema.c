/*
 * jsonschema.c - compiles a JSON Schema (the supported subset) into the
 * tree the validator walks, and frees it.
 *
 * Compiling is where a schema is judged: the keyword table below is the
 * whole supported subset, and anything else (an unknown keyword, a keyword
 * twice in one object, a value of the wrong form, a pattern PCRE2 refuses,
 * a `$ref` that is not "#/$defs/<name>" or names no definition, a chain of
 * `$ref`s that loops without descending into the instance) is refused with
 * the JSON pointer of the offending keyword. Validation (jsonschema_validate.c)
 * can then trust the tree completely. Nothing is resolved outside the
 * document: there is no `$id`-based or remote resolution; a `$ref`'s name
 * is decoded, and every `$ref` resolved and checked for loops, by
 * jsonschema_ref.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonschema_internal.h"
#include "jsonschema_ref.h"
#include "utf8.h"

/* The only dialect accepted in `$schema` (with or without the final '#'). */
#define DIALECT_2020_12 "https://json-schema.org/draft/2020-12/schema"
#define DEFS_PREFIX "#/$defs/"

struct cctx {
	struct mcpx_schema *s;
	struct schema_path path;
	unsigned depth; /* subschema nesting of the schema being compiled */
	struct mcpx_err *err;
};

struct keyword;
typedef int (*kw_fn)(struct cctx *c, struct schema_node *n, const cJSON *v,
                     const struct keyword *k);

struct keyword {
	const char *name;
	kw_fn compile;  /* NULL: an annotation, accepted and ignored */
	bool root_only; /* only in the schema's top-level object */
	size_t field;   /* for numeric keywords: the double in schema_node */
	unsigned has;   /* for numeric keywords: the SCHEMA_HAS_ bit */
};

/* Refuses the schema at the current keyword's pointer; returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int fail(struct cctx *c, const char *fmt, ...)
{
	char where[sizeof(c->err->msg)];
	va_list ap;
	int rc;

	mcpx_schema_path_format(&c->path, where, sizeof(where));
	va_start(ap, fmt);
	rc = mcpx_schema_vfail_at(c->err, where, fmt, ap);
	va_end(ap);
	return rc;
}

static int no_memory(struct cctx *c)
{
	return mcpx_err_set(c->err, ENOMEM, "out of memory compiling a schema");
}

static struct schema_node *new_node(struct cctx *c)
{
	struct schema_node *n = calloc(1, sizeof(*n));

	if (n) {
		n->next_alloc = c->s->nodes;
		c->s->nodes = n;
	}
	return n;
}

static int compile_schema(struct cctx *c, const cJSON *js, struct schema_node **out);

/* Compiles js as the subschema at <current path>/<key>. */
static int compile_at(struct cctx *c, const char *key, const cJSON *js, struct schema_node **out)
{
	int rc;

	mcpx_schema_path_key(&c->path, key);
	rc = compile_schema(c, js, out);
	mcpx_schema_path_pop(&c->path);
	return rc;
}

static unsigned type_bit(const cJSON *v)
{
	static const struct {
		const char *name;
		unsigned bit;
	} types[] = {
	    {"null", SCHEMA_T_NULL},       {"boolean", SCHEMA_T_BOOLEAN},
	    {"object", SCHEMA_T_OBJECT},   {"array", SCHEMA_T_ARRAY},
	    {"number", SCHEMA_T_NUMBER},   {"string", SCHEMA_T_STRING},
	    {"integer", SCHEMA_T_INTEGER},
	};

	if (!cJSON_IsString(v))
		return 0;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(v->valuestring, types[i].name) == 0)
			return types[i].bit;
	return 0;
}

static int kw_type(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	const cJSON *t;
	unsigned bit;

	if (!cJSON_IsArray(v)) {
		if (!(n->types = type_bit(v)))
			return fail(c, "must be one of null, boolean, object, array, "
			               "number, string, integer, or a list of them");
		return 0;
	}
	if (!v->child)
		return fail(c, "must not be an empty list");
	cJSON_ArrayForEach(t, v)
	{
		if (!(bit = type_bit(t)))
			return fail(c, "lists an unknown type");
		if (n->types & bit)
			return fail(c, "lists \"%s\" twice", t->valuestring);
		n->types |= bit;
	}
	return 0;
}

/* Numeric keywords: minimum, maximum, exclusive*, multipleOf and the
 * length and item counts; the table says which field and bit. */
static int kw_number(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	bool count = k->has & (SCHEMA_HAS_MINLEN | SCHEMA_HAS_MAXLEN | SCHEMA_HAS_MINITEMS |
	                       SCHEMA_HAS_MAXITEMS);

	if (!cJSON_IsNumber(v))
		return fail(c, "must be a number");
	if (count && (v->valuedouble < 0 || !mcpx_schema_is_integer(v->valuedouble)))
		return fail(c, "must be a non-negative integer");
	if (k->has == SCHEMA_HAS_MULTIPLE && !(v->valuedouble > 0))
		return fail(c, "must be greater than 0");
	*(double *)((char *)n + k->field) = v->valuedouble;
	n->has |= k->has;
	return 0;
}

/* Finds an earlier member of the same object with s's key. */
static bool key_seen_before(const cJSON *first, const cJSON *s)
{
	for (const cJSON *m = first; m != s; m = m->next)
		if (strcmp(m->string, s->string) == 0)
			return true;
	return false;
}

static int kw_properties(struct cctx *c, struct schema_node *n, const cJSON *v,
                         const struct keyword *k)
{
	const cJSON *m;
	int rc;

	if (!cJSON_IsObject(v))
		return fail(c, "must be an object of schemas");
	n->props = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(*n->props));
	if (!n->props)
		return no_memory(c);
	for (m = v->child; m; m = m->next) {
		struct schema_prop *p = &n->props[n->nprops];

		if (key_seen_before(v->child, m)) {
			mcpx_schema_path_key(&c->path, m->string);
			return fail(c, "property defined twice");
		}
		if (!(p->name = strdup(m->string)))
			return no_memory(c);
		n->nprops++;
		if ((rc = compile_at(c, m->string, m, &p->schema)) < 0)
			return rc;
	}
	return 0;
}

static int kw_required(struct cctx *c, struct schema_node *n, const cJSON *v,
                       const struct keyword *k)
{
	const cJSON *m;

	if (!cJSON_IsArray(v))
		return fail(c, "must be a list of property names");
	n->required = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(*n->required));
	if (!n->required)
		return no_memory(c);
	cJSON_ArrayForEach(m, v)
	{
		if (!cJSON_IsString(m))
			return fail(c, "must be a list of property names");
		for (size_t i = 0; i < n->nrequired; i++)
			if (strcmp(n->required[i], m->valuestring) == 0)
				return fail(c, "lists \"%s\" twice", m->valuestring);
		if (!(n->required[n->nrequired] = strdup(m->valuestring)))
			return no_memory(c);
		n->nrequired++;
	}
	return 0;
}

static int kw_additional(struct cctx *c, struct schema_node *n, const cJSON *v,
                         const struct keyword *k)
{
	if (cJSON_IsFalse(v))
		n->no_additional = true;
	else if (!cJSON_IsTrue(v))
		return compile_schema(c, v, &n->additional);
	return 0;
}

/* enum and const: keep a copy of the value(s) for deep comparison. */
static int kw_value(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	cJSON **slot = k->has == SCHEMA_HAS_ENUM ? &n->enum_values : &n->const_value;

	if (k->has == SCHEMA_HAS_ENUM && !cJSON_IsArray(v))
		return fail(c, "must be a list of values");
	if (!mcpx_schema_json_depth_ok(v, MCPX_SCHEMA_MAX_DEPTH))
		return fail(c, "nests deeper than %d levels", MCPX_SCHEMA_MAX_DEPTH);
	if (!(*slot = cJSON_Duplicate(v, true)))
		return no_memory(c);
	n->has |= k->has;
	return 0;
}

static int kw_pattern(struct cctx *c, struct schema_node *n, const cJSON *v,
                      const struct keyword *k)
{
	char why[200] = "";
	int rc;

	if (!cJSON_IsString(v))
		return fail(c, "must be a string");
	rc = mcpx_schema_pattern_compile(v->valuestring, &n->pattern, why, sizeof(why));
	if (rc == -EINVAL)
		return fail(c, "invalid regular expression: %s", why);
	return rc < 0 ? no_memory(c) : 0;
}

static int kw_items(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	if (cJSON_IsArray(v))
		return fail(c, "a list of schemas (the tuple form of older drafts) is "
		               "not supported; use one schema for every item");
	return compile_schema(c, v, &n->items);
}

static int kw_unique(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	if (!cJSON_IsBool(v))
		return fail(c, "must be true or false");
	n->unique_items = cJSON_IsTrue(v);
	return 0;
}

static int kw_ref(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	char where[sizeof(c->err->msg)];

	if (!cJSON_IsString(v))
		return fail(c, "must be a string");
	if (strncmp(v->valuestring, DEFS_PREFIX, strlen(DEFS_PREFIX)) != 0 ||
	    !v->valuestring[strlen(DEFS_PREFIX)])
		return fail(c, "only references of the form \"#/$defs/<name>\" are supported");
	n->ref_name = strdup(v->valuestring + strlen(DEFS_PREFIX));
	mcpx_schema_path_format(&c->path, where, sizeof(where));
	n->ref_where = strdup(where);
	if (!n->ref_name || !n->ref_where)
		return no_memory(c);
	/* Decoded, the name must still be text: "%db" alone is not UTF-8,
	 * and no definition name (a JSON string) could match it. */
	if (!mcpx_schema_ref_percent_decode(n->ref_name) ||
	    !mcpx_schema_ref_unescape(n->ref_name) ||
	    !mcpx_utf8_valid(n->ref_name, strlen(n->ref_name)))
		return fail(c, "only references of the form \"#/$defs/<name>\" are supported");
	return 0;
}

static int kw_defs(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	struct mcpx_schema *s = c->s;
	const cJSON *m;
	int rc;

	if (!cJSON_IsObject(v))
		return fail(c, "must be an object of schemas");
	s->defs = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(*s->defs));
	if (!s->defs)
		return no_memory(c);
	for (m = v->child; m; m = m->next) {
		struct schema_def *d = &s->defs[s->ndefs];

		if (key_seen_before(v->child, m)) {
			mcpx_schema_path_key(&c->path, m->string);
			return fail(c, "definition appears twice");
		}
		if (!(d->name = strdup(m->string)))
			return no_memory(c);
		s->ndefs++;
		if ((rc = compile_at(c, m->string, m, &d->node)) < 0)
			return rc;
	}
	return 0;
}

static int kw_dialect(struct cctx *c, struct schema_node *n, const cJSON *v,
                      const struct keyword *k)
{
	const char *d = cJSON_IsString(v) ? v->valuestring : "";
	size_t len = strlen(DIALECT_2020_12);

	if (strncmp(d, DIALECT_2020_12, len) != 0 || (d[len] && strcmp(d + len, "#") != 0))
		return fail(c, "only \"%s\" (JSON Schema 2020-12) is supported", DIALECT_2020_12);
	return 0;
}

static int kw_id(struct cctx *c, struct schema_node *n, const cJSON *v, const struct keyword *k)
{
	return cJSON_IsString(v) ? 0 : fail(c, "must be a string");
}

#define NUM(name, field, bit)                                                                      \
	{                                                                                          \
		name, kw_number, false, offsetof(struct schema_node, field), bit                   \
	}

/* The supported subset, all of it. docs/policy.md lists the same. */
static const struct keyword keywords[] = {
    {"type", kw_type, false, 0, 0},
    {"properties", kw_properties, false, 0, 0},
    {"required", kw_required, false, 0, 0},
    {"additionalProperties", kw_additional, false, 0, 0},
    {"enum", kw_value, false, 0, SCHEMA_HAS_ENUM},
    {"const", kw_value, false, 0, SCHEMA_HAS_CONST},
    NUM("minimum", minimum, SCHEMA_HAS_MINIMUM),
    NUM("maximum", maximum, SCHEMA_HAS_MAXIMUM),
    NUM("exclusiveMinimum", xminimum, SCHEMA_HAS_XMINIMUM),
    NUM("exclusiveMaximum", xmaximum, SCHEMA_HAS_XMAXIMUM),
    NUM("multipleOf", multiple, SCHEMA_HAS_MULTIPLE),
    NUM("minLength", min_len, SCHEMA_HAS_MINLEN),
    NUM("maxLength", max_len, SCHEMA_HAS_MAXLEN),
    NUM("minItems", min_items, SCHEMA_HAS_MINITEMS),
    NUM("maxItems", max_items, SCHEMA_HAS_MAXITEMS),
    {"pattern", kw_pattern, false, 0, 0},
    {"items", kw_items, false, 0, 0},
    {"uniqueItems", kw_unique, false, 0, 0},
    {"$ref", kw_ref, false, 0, 0},
    {"$defs", kw_defs, true, 0, 0},
    {"$schema", kw_dialect, true, 0, 0},
    {"$id", kw_id, true, 0, 0},
    /* Annotations: they describe, they never constrain. */
    {"title", NULL, false, 0, 0},
    {"description", NULL, false, 0, 0},
    {"default", NULL, false, 0, 0},
    {"examples", NULL, false, 0, 0},
    {"$comment", NULL, false, 0, 0},
    {"deprecated", NULL, false, 0, 0},
    {"readOnly", NULL, false, 0, 0},
    {"writeOnly", NULL, false, 0, 0},
};

static const struct keyword *find_keyword(const char *name, unsigned *index)
{
	for (unsigned i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++) {
		if (strcmp(keywords[i].name, name) == 0) {
			*index = i;
			return &keywords[i];
		}
	}
	return NULL;
}

/* One keyword of a schema object; the path already ends with its name. */
static int compile_keyword(struct cctx *c, struct schema_node *n, const cJSON *m, uint64_t *seen)
{
	unsigned i = 0;
	const struct keyword *k = find_keyword(m->string, &i);

	if (!k)
		return fail(c, "unsupported keyword \"%s\"", m->string);
	if (*seen & (UINT64_C(1) << i))
		return fail(c, "keyword \"%s\" appears twice", m->string);
	*seen |= UINT64_C(1) << i;
	if (k->root_only && c->depth != 1)
		return fail(c, "\"%s\" is supported only at the top of the schema", m->string);
	return k->compile ? k->compile(c, n, m, k) : 0;
}

static int compile_schema(struct cctx *c, const cJSON *js, struct schema_node **out)
{
	struct schema_node *n;
	uint64_t seen = 0;
	int rc = 0;

	if (c->depth >= MCPX_SCHEMA_MAX_DEPTH)
		return fail(c, "schema nests deeper than %d levels", MCPX_SCHEMA_MAX_DEPTH);
	if (!cJSON_IsObject(js) && !cJSON_IsBool(js))
		return fail(c, "a schema must be an object or true or false");
	if (!(*out = n = new_node(c)))
		return no_memory(c);
	if (cJSON_IsBool(js)) {
		n->is_false = cJSON_IsFalse(js);
		return 0;
	}
	c->depth++;
	for (const cJSON *m = js->child; m && rc == 0; m = m->next) {
		mcpx_schema_path_key(&c->path, m->string);
		rc = compile_keyword(c, n, m, &seen);
		mcpx_schema_path_pop(&c->path);
	}
	c->depth--;
	return rc;
}

int mcpx_schema_compile(const cJSON *schema, struct mcpx_schema **out, struct mcpx_err *err)
{
	struct cctx c = {.err = err};
	int rc;

	*out = NULL;
	if (!(c.s = calloc(1, sizeof(*c.s))))
		return mcpx_err_set(err, ENOMEM, "out of memory compiling a schema");
	rc = schema ? compile_schema(&c, schema, &c.s->root) : fail(&c, "no schema");
	if (rc == 0)
		rc = mcpx_schema_ref_resolve(c.s, c.err);
	if (rc == 0)
		rc = mcpx_schema_ref_cycles(c.s, c.err);
	if (rc < 0) {
		mcpx_schema_free(c.s);
		return rc;
	}
	*out = c.s;
	return 0;
}

static void free_node(struct schema_node *n)
{
	for (size_t i = 0; i < n->nprops; i++)
		free(n->props[i].name);
	free(n->props);
	for (size_t i = 0; i < n->nrequired; i++)
		free(n->required[i]);
	free(n->required);
	cJSON_Delete(n->enum_values);
	cJSON_Delete(n->const_value);
	mcpx_schema_pattern_free(n->pattern);
	free(n->ref_name);
	free(n->ref_where);
	free(n);
}

void mcpx_schema_free(struct mcpx_schema *s)
{
	struct schema_node *n, *next;

	if (!s)
		return;
	for (n = s->nodes; n; n = next) {
		next = n->next_alloc;
		free_node(n);
	}
	for (size_t i = 0; i < s->ndefs; i++)
		free(s->defs[i].name);
	free(s->defs);
	free(s);
}
