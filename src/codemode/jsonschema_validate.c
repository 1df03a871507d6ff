/*
 * jsonschema_validate.c - checks an instance against a compiled schema and
 * collects the failures, each with the JSON pointer of where it is.
 *
 * Every keyword is checked independently, as JSON Schema says (a keyword for
 * another type than the instance's simply does not apply), and the walk goes
 * on after a failure so the caller learns about all of them at once. Only
 * the first MCPX_SCHEMA_MAX_ERRORS messages are kept; the rest are counted.
 *
 * The instance is untrusted. Its nesting is checked before the walk, so
 * every recursion below is bounded; `uniqueItems` sorts hashes instead of
 * comparing every pair; and the whole walk, pattern matches included, runs
 * under a CPU-time budget. Running out of any bound is a failure of the
 * instance, never a hang or a crash. This file does not compile schemas
 * (jsonschema.c) or match patterns (jsonschema_pattern.c).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "jsonrpc.h"
#include "jsonschema_internal.h"

/* Nested validations, counting `$ref` hops; the instance's own nesting is
 * bounded separately, so this only stops long chains of references. */
#define MAX_FRAMES (2 * MCPX_SCHEMA_MAX_DEPTH)
/* Bytes one message may take, its pointer included. */
#define MESSAGE_MAX 320

struct vctx {
	struct schema_path path;
	struct mcpx_schema_errors *errs;
	struct schema_budget budget;
	unsigned frames;
	bool full;    /* a message did not fit: keep no more */
	bool stopped; /* the budget ran out: check nothing more */
	int rc;       /* -ENOMEM once memory ran out */
	uint64_t seed;
};

/* Records one failure at the current path. Ordinary messages stop at the
 * caps; the last one (why validation stopped) may use the room kept back
 * for it, so the caller always learns that the walk did not finish. */
static void vreport(struct vctx *v, bool last, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vreport(struct vctx *v, bool last, const char *fmt, va_list ap)
{
	struct mcpx_schema_errors *e = v->errs;
	size_t room = sizeof(e->text) - (last ? 0 : MESSAGE_MAX + 2);
	char where[MESSAGE_MAX / 2], what[MESSAGE_MAX], line[MESSAGE_MAX];
	int n;

	e->count++;
	if (!last && (v->full || e->kept >= MCPX_SCHEMA_MAX_ERRORS))
		return; /* counted, not kept: do not spend time formatting */
	mcpx_schema_path_format(&v->path, where, sizeof(where));
	n = vsnprintf(what, sizeof(what), fmt, ap);
	mcpx_schema_text_fit(what, n < 0 ? 0 : (size_t)n, sizeof(what));
	n = snprintf(line, sizeof(line), "%s: %s", where, what);
	n = (int)mcpx_schema_text_fit(line, n < 0 ? 0 : (size_t)n, sizeof(line));
	if (e->len + (size_t)n + 2 > room) {
		v->full = true;
		return;
	}
	memcpy(e->text + e->len, line, (size_t)n);
	e->len += (size_t)n;
	e->text[e->len++] = '\n';
	e->text[e->len] = '\0';
	e->kept++;
}

__attribute__((format(printf, 2, 3))) static void report(struct vctx *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(v, false, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void report_last(struct vctx *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(v, true, fmt, ap);
	va_end(ap);
}

/* True (after reporting it once) when the CPU budget is spent. */
static bool out_of_time(struct vctx *v)
{
	if (!v->stopped && mcpx_schema_budget_over(&v->budget)) {
		v->stopped = true;
		report_last(v, "validation stopped: it used more than %d ms of CPU time",
		            MCPX_SCHEMA_CPU_LIMIT_MS);
	}
	return v->stopped;
}

/* A value for a message, cut short with "..." when long. Not printed when
 * the message would only be counted. */
static void value_text(const struct vctx *v, const cJSON *val, char *out, size_t size)
{
	char *s;

	out[0] = '\0';
	if (v->full || v->errs->kept >= MCPX_SCHEMA_MAX_ERRORS)
		return;
	s = mcpx_json_print_exact(val);

	mcpx_schema_text_fit(out, (size_t)snprintf(out, size, "%s", s ? s : "the listed values"),
	                     size);
	free(s);
}

static unsigned type_of(const cJSON *i)
{
	if (cJSON_IsNumber(i))
		return SCHEMA_T_NUMBER |
		       (mcpx_schema_is_integer(i->valuedouble) ? SCHEMA_T_INTEGER : 0);
	if (cJSON_IsString(i))
		return SCHEMA_T_STRING;
	if (cJSON_IsObject(i))
		return SCHEMA_T_OBJECT;
	if (cJSON_IsArray(i))
		return SCHEMA_T_ARRAY;
	if (cJSON_IsBool(i))
		return SCHEMA_T_BOOLEAN;
	return SCHEMA_T_NULL;
}

static const char *const type_names[] = {"null",   "boolean", "object", "array",
                                         "number", "string",  "integer"};

static void check_type(struct vctx *v, const struct schema_node *n, const cJSON *inst)
{
	unsigned got = type_of(inst), bits = n->types;
	char want[96] = "";
	size_t len = 0;

	if (!bits || (bits & got))
		return;
	for (unsigned i = 0, left = (unsigned)__builtin_popcount(bits); i < 7; i++) {
		if (!(bits & (1u << i)))
			continue;
		left--;
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s", type_names[i],
		                        left == 0   ? ""
		                        : left == 1 ? " or "
		                                    : ", ");
	}
	report(v, "must be %s (got %s)", want,
	       got & SCHEMA_T_INTEGER ? "integer" : type_names[__builtin_ctz(got)]);
}

/* enum and const, by deep equality. */
static void check_values(struct vctx *v, const struct schema_node *n, const cJSON *inst)
{
	char text[MESSAGE_MAX];
	const cJSON *e;
	int eq = 0;

	if (n->has & SCHEMA_HAS_CONST) {
		if ((eq = mcpx_schema_json_equal(inst, n->const_value)) == 0) {
			value_text(v, n->const_value, text, sizeof(text));
			report(v, "must be equal to %s", text);
		}
	}
	if (eq >= 0 && (n->has & SCHEMA_HAS_ENUM)) {
		eq = 0;
		for (e = n->enum_values->child; e && eq == 0; e = e->next)
			eq = mcpx_schema_json_equal(inst, e);
		if (eq == 0) {
			value_text(v, n->enum_values, text, sizeof(text));
			report(v, "must be one of %s", text);
		}
	}
	if (eq < 0)
		v->rc = eq;
}

/* multipleOf, robust to binary floating point: 0.3 is a multiple of 0.1
 * although 0.3 / 0.1 is 2.9999999999999996 in doubles. Integers below 2^53
 * are exact, so they are checked exactly. Otherwise x and m are correctly
 * rounded decimals and the division rounds once more, so the quotient is
 * within 1.5 units of relative rounding error of the true one: it must be
 * that close (with a margin, 4 units) to a whole number. */
/* round(q) (half away from zero) without libm, which the server does not
 * link for two functions (its mapping alone was 0.3 MiB of idle RSS).
 * Doubles of 2^52 and beyond are whole; below, the truncation and the
 * fraction q - t are exact. */
static double nearest_whole(double q)
{
	double t, f;

	if (!(fabs(q) < 0x1p52))
		return q;
	t = (double)(long long)q;
	f = q - t;
	if (f >= 0.5)
		t += 1;
	else if (f <= -0.5)
		t -= 1;
	return t;
}

static bool is_multiple(double x, double m)
{
	double q = x / m;

	if (!isfinite(q))
		return false;
	if (mcpx_schema_is_integer(x) && mcpx_schema_is_integer(m) && fabs(x) < 0x1p53) {
		/* Exact, as fmod(x, m) == 0: a divisor larger than x divides
		 * only 0; otherwise both fit a long long. */
		if (fabs(m) > fabs(x))
			return x == 0;
		return (long long)x % (long long)m == 0;
	}
	return fabs(q - nearest_whole(q)) <= fabs(q) * 4 * DBL_EPSILON;
}

static void check_number(struct vctx *v, const struct schema_node *n, double x)
{
	char b[40];

	if ((n->has & SCHEMA_HAS_MINIMUM) && x < n->minimum) {
		mcpx_schema_format_number(n->minimum, b, sizeof(b));
		report(v, "must be >= %s", b);
	}
	if ((n->has & SCHEMA_HAS_MAXIMUM) && x > n->maximum) {
		mcpx_schema_format_number(n->maximum, b, sizeof(b));
		report(v, "must be <= %s", b);
	}
	if ((n->has & SCHEMA_HAS_XMINIMUM) && x <= n->xminimum) {
		mcpx_schema_format_number(n->xminimum, b, sizeof(b));
		report(v, "must be > %s", b);
	}
	if ((n->has & SCHEMA_HAS_XMAXIMUM) && x >= n->xmaximum) {
		mcpx_schema_format_number(n->xmaximum, b, sizeof(b));
		report(v, "must be < %s", b);
	}
	if ((n->has & SCHEMA_HAS_MULTIPLE) && !is_multiple(x, n->multiple)) {
		mcpx_schema_format_number(n->multiple, b, sizeof(b));
		report(v, "must be a multiple of %s", b);
	}
}

/* Code points: every byte that does not continue a UTF-8 sequence. */
static size_t code_points(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

static void check_pattern(struct vctx *v, const struct schema_pattern *p, const char *s, size_t len)
{
	const char *src = mcpx_schema_pattern_source(p);

	switch (mcpx_schema_pattern_match(p, s, len, &v->budget)) {
	case SCHEMA_MATCH:
		break;
	case SCHEMA_NO_MATCH:
		report(v, "must match pattern \"%s\"", src);
		break;
	case SCHEMA_MATCH_LIMIT:
		report(v,
		       "could not be matched against pattern \"%s\": the match exceeded "
		       "its backtracking limit",
		       src);
		break;
	case SCHEMA_MATCH_BADUTF:
		report(v, "is not valid UTF-8");
		break;
	case SCHEMA_MATCH_EXPIRED:
		out_of_time(v);
		break;
	case SCHEMA_MATCH_NOMEM:
		v->rc = -ENOMEM;
		break;
	}
}

static void check_string(struct vctx *v, const struct schema_node *n, const char *s)
{
	size_t len = strlen(s), cps = 0;
	char *exact = NULL;

	if (n->has & (SCHEMA_HAS_MINLEN | SCHEMA_HAS_MAXLEN))
		cps = code_points(s, len);
	if ((n->has & SCHEMA_HAS_MINLEN) && (double)cps < n->min_len)
		report(v, "must be at least %.0f character%s long", n->min_len,
		       n->min_len == 1 ? "" : "s");
	if ((n->has & SCHEMA_HAS_MAXLEN) && (double)cps > n->max_len)
		report(v, "must be at most %.0f character%s long", n->max_len,
		       n->max_len == 1 ? "" : "s");
	if (n->pattern && memchr(s, MCPX_JSON_NUL_MARK, len)) {
		/* The parser marked each U+0000 (jsonrpc.h): the pattern sees
		 * the string as sent, NULs included. */
		if (!(exact = malloc(len + 1))) {
			v->rc = -ENOMEM;
			return;
		}
		for (size_t i = 0; i <= len; i++)
			exact[i] = s[i] == (char)MCPX_JSON_NUL_MARK ? '\0' : s[i];
		s = exact;
	}
	if (n->pattern)
		check_pattern(v, n->pattern, s, len);
	free(exact);
}

static void validate_node(struct vctx *v, const struct schema_node *n, const cJSON *inst);

/* 64-bit finaliser of splitmix64: spreads every input bit. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t hash_text(const char *s, uint64_t seed)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ seed; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	return mix(h);
}

/* A hash that equal values (by mcpx_schema_json_equal) share. */
static uint64_t hash_value(const cJSON *val, uint64_t seed)
{
	uint64_t h = mix(seed ^ (uint64_t)(val->type & 0xFF));
	double d;

	if (cJSON_IsNumber(val)) {
		d = val->valuedouble == 0 ? 0 : val->valuedouble; /* -0 equals 0 */
		memcpy(&h, &d, sizeof(h));
		return mix(h ^ seed);
	}
	if (cJSON_IsString(val))
		return hash_text(val->valuestring, seed);
	if (cJSON_IsArray(val)) {
		for (const cJSON *c = val->child; c; c = c->next)
			h = mix(h ^ hash_value(c, seed));
	} else if (cJSON_IsObject(val)) {
		/* A sum, so the order of the members does not matter. */
		for (const cJSON *c = val->child; c; c = c->next)
			h += mix(hash_text(c->string, seed) ^ (hash_value(c, seed) * 31));
	}
	return h;
}

struct hashed {
	uint64_t hash;
	size_t index;
	const cJSON *item;
};

static int by_hash(const void *a, const void *b)
{
	const struct hashed *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Among the items of one hash run (sorted by index), finds the equal pair
 * with the smallest second index, then first index, so the message does
 * not depend on the hash seed. */
static void duplicates_in_run(struct vctx *v, const struct hashed *h, size_t n, size_t *bi,
                              size_t *bj)
{
	for (size_t a = 0; a < n; a++) {
		for (size_t b = a + 1; b < n && h[b].index <= *bj; b++) {
			int eq;

			if (out_of_time(v))
				return;
			if ((eq = mcpx_schema_json_equal(h[a].item, h[b].item)) < 0) {
				v->rc = eq;
				return;
			}
			if (eq && (h[b].index < *bj || h[a].index < *bi)) {
				*bi = h[a].index;
				*bj = h[b].index;
				break;
			}
		}
	}
}

/* uniqueItems in n log n: hash every item, sort by hash, and compare
 * deeply only items whose hashes collide. The seed is random so nobody can
 * prepare items that all collide. */
static void check_unique(struct vctx *v, const cJSON *arr)
{
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0, end, bi = SIZE_MAX, bj = SIZE_MAX;
	struct hashed *h;

	if (n < 2)
		return;
	if (!v->seed && getrandom(&v->seed, sizeof(v->seed), GRND_NONBLOCK) != sizeof(v->seed))
		v->seed = mix((uint64_t)(uintptr_t)v ^ (uint64_t)v->budget.deadline.tv_nsec);
	if (!(h = malloc(n * sizeof(*h)))) {
		v->rc = -ENOMEM;
		return;
	}
	for (const cJSON *c = arr->child; c; c = c->next, i++)
		h[i] = (struct hashed){hash_value(c, v->seed), i, c};
	qsort(h, n, sizeof(*h), by_hash);
	for (size_t start = 0; start < n && !v->rc && !v->stopped; start = end) {
		for (end = start + 1; end < n && h[end].hash == h[start].hash; end++)
			;
		if (end - start > 1)
			duplicates_in_run(v, h + start, end - start, &bi, &bj);
	}
	free(h);
	if (bj != SIZE_MAX && !v->rc && !v->stopped)
		report(v, "must not contain duplicates: items %zu and %zu are equal", bi, bj);
}

static void check_array(struct vctx *v, const struct schema_node *n, const cJSON *arr)
{
	size_t count = (size_t)cJSON_GetArraySize(arr), i = 0;

	if ((n->has & SCHEMA_HAS_MINITEMS) && (double)count < n->min_items)
		report(v, "must have at least %.0f item%s", n->min_items,
		       n->min_items == 1 ? "" : "s");
	if ((n->has & SCHEMA_HAS_MAXITEMS) && (double)count > n->max_items)
		report(v, "must have at most %.0f item%s", n->max_items,
		       n->max_items == 1 ? "" : "s");
	if (n->items) {
		for (const cJSON *c = arr->child; c && !v->stopped && !v->rc; c = c->next, i++) {
			mcpx_schema_path_index(&v->path, i);
			validate_node(v, n->items, c);
			mcpx_schema_path_pop(&v->path);
		}
	}
	if (n->unique_items)
		check_unique(v, arr);
}

static const struct schema_node *property(const struct schema_node *n, const char *key)
{
	for (size_t i = 0; i < n->nprops; i++)
		if (strcmp(n->props[i].name, key) == 0)
			return n->props[i].schema;
	return NULL;
}

/* Every member is checked, so an object that repeats a key cannot slip a
 * second, unchecked value past the schema. */
static void check_object(struct vctx *v, const struct schema_node *n, const cJSON *obj)
{
	const cJSON *c;

	/* Both loops run over the instance's members, as many as the caller
	 * sent: each step counts against the CPU budget. */
	for (c = obj->child; c && !v->rc && !out_of_time(v); c = c->next) {
		const char *key = c->string ? c->string : "";
		const struct schema_node *p = property(n, key);

		if (!p && !n->no_additional && !n->additional)
			continue;
		mcpx_schema_path_key(&v->path, key);
		if (p)
			validate_node(v, p, c);
		else if (n->no_additional)
			report(v, "property not allowed");
		else
			validate_node(v, n->additional, c);
		mcpx_schema_path_pop(&v->path);
	}
	for (size_t i = 0; i < n->nrequired && !v->stopped; i++) {
		for (c = obj->child; c && !out_of_time(v); c = c->next)
			if (c->string && strcmp(c->string, n->required[i]) == 0)
				break;
		if (!c && !v->stopped)
			report(v, "missing required property \"%s\"", n->required[i]);
	}
}

static void validate_node(struct vctx *v, const struct schema_node *n, const cJSON *inst)
{
	if (v->stopped || v->rc || out_of_time(v))
		return;
	if (v->frames >= MAX_FRAMES) {
		report(v, "schema references nest deeper than %d levels", MAX_FRAMES);
		return;
	}
	v->frames++;
	if (n->is_false)
		report(v, "no value is allowed here");
	check_type(v, n, inst);
	check_values(v, n, inst);
	if (cJSON_IsNumber(inst))
		check_number(v, n, inst->valuedouble);
	else if (cJSON_IsString(inst) && inst->valuestring)
		check_string(v, n, inst->valuestring);
	else if (cJSON_IsArray(inst))
		check_array(v, n, inst);
	else if (cJSON_IsObject(inst))
		check_object(v, n, inst);
	if (n->ref)
		validate_node(v, n->ref, inst);
	v->frames--;
}

/* Moves the path down to the first array or object nested deeper than max
 * levels; true when there is one. */
static bool find_too_deep(struct schema_path *p, const cJSON *val, unsigned max)
{
	size_t i = 0;

	if (!cJSON_IsArray(val) && !cJSON_IsObject(val))
		return false;
	if (max == 0)
		return true;
	for (const cJSON *c = val->child; c; c = c->next, i++) {
		if (cJSON_IsArray(val))
			mcpx_schema_path_index(p, i);
		else
			mcpx_schema_path_key(p, c->string);
		if (find_too_deep(p, c, max - 1))
			return true;
		mcpx_schema_path_pop(p);
	}
	return false;
}

/* Moves the path to the first number that is not finite (1e999 parses as
 * infinity, which no JSON text can carry back). Every finite number
 * travels with its own text (json.h), an integer above 2^53 included; the
 * keywords compare their doubles. */
static bool find_inexact(struct schema_path *p, const cJSON *val, const char **why)
{
	size_t i = 0;

	if (cJSON_IsNumber(val)) {
		if (!isfinite(val->valuedouble))
			*why = "is not a finite number";
		return *why != NULL;
	}
	for (const cJSON *c = val->child; c && (cJSON_IsArray(val) || cJSON_IsObject(val));
	     c = c->next, i++) {
		if (cJSON_IsArray(val))
			mcpx_schema_path_index(p, i);
		else
			mcpx_schema_path_key(p, c->string);
		if (find_inexact(p, c, why))
			return true;
		mcpx_schema_path_pop(p);
	}
	return false;
}

int mcpx_schema_validate(const struct mcpx_schema *s, const cJSON *instance,
                         struct mcpx_schema_errors *errs)
{
	struct vctx v = {.errs = errs};
	const char *why = NULL;

	errs->count = errs->kept = 0;
	errs->len = 0;
	errs->text[0] = '\0';
	mcpx_schema_budget_start(&v.budget, MCPX_SCHEMA_CPU_LIMIT_MS);
	if (!instance)
		report(&v, "no value");
	else if (find_too_deep(&v.path, instance, MCPX_SCHEMA_MAX_DEPTH))
		report(&v, "nests deeper than %d levels", MCPX_SCHEMA_MAX_DEPTH);
	else if (find_inexact(&v.path, instance, &why))
		report(&v, "%s", why);
	else
		validate_node(&v, s->root, instance);
	if (v.rc < 0)
		return v.rc;
	return errs->count ? -EINVAL : 0;
}

/* Appends formatted text to out, keeping *len within size - 1. */
__attribute__((format(printf, 4, 5))) static void put(char *out, size_t size, size_t *len,
                                                      const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len + 1 >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < size - *len ? (size_t)n : size - *len - 1;
}

size_t mcpx_schema_errors_format(const struct mcpx_schema_errors *errs, const char *heading,
                                 char *out, size_t size)
{
	size_t len = 0, text = errs->len;

	if (size == 0)
		return 0;
	out[0] = '\0';
	if (text > 0 && errs->text[text - 1] == '\n')
		text--; /* the last line needs no newline */
	if (heading)
		put(out, size, &len, "%s: %u error%s%s", heading, errs->count,
		    errs->count == 1 ? "" : "s", text ? "\n" : "");
	put(out, size, &len, "%.*s", (int)text, errs->text);
	if (errs->count > errs->kept)
		put(out, size, &len, "%s... and %u more", len ? "\n" : "",
		    errs->count - errs->kept);
	/* A message cut by a small buffer may end inside a character. */
	return mcpx_schema_utf8_cut(out, len, size - 1);
}
