/*
 * jsonschema_internal.h - what the schema validator's files share: the
 * compiled form of a schema, the JSON pointer path kept while walking a
 * schema or an instance, the JSON value helpers (deep equality, nesting
 * depth) and the PCRE2 pattern wrapper. Not for use outside src/codemode/jsonschema*.
 */
#ifndef MCPX_JSONSCHEMA_INTERNAL_H
#define MCPX_JSONSCHEMA_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "jsonschema.h"

/* Bits of `types`; TYPE_INTEGER accepts numbers with no fractional part. */
enum {
	SCHEMA_T_NULL = 1 << 0,
	SCHEMA_T_BOOLEAN = 1 << 1,
	SCHEMA_T_OBJECT = 1 << 2,
	SCHEMA_T_ARRAY = 1 << 3,
	SCHEMA_T_NUMBER = 1 << 4,
	SCHEMA_T_STRING = 1 << 5,
	SCHEMA_T_INTEGER = 1 << 6,
};

/* Bits of `has`: which optional keywords a node carries. */
enum {
	SCHEMA_HAS_MINIMUM = 1 << 0,
	SCHEMA_HAS_MAXIMUM = 1 << 1,
	SCHEMA_HAS_XMINIMUM = 1 << 2,
	SCHEMA_HAS_XMAXIMUM = 1 << 3,
	SCHEMA_HAS_MULTIPLE = 1 << 4,
	SCHEMA_HAS_MINLEN = 1 << 5,
	SCHEMA_HAS_MAXLEN = 1 << 6,
	SCHEMA_HAS_MINITEMS = 1 << 7,
	SCHEMA_HAS_MAXITEMS = 1 << 8,
	SCHEMA_HAS_ENUM = 1 << 9,
	SCHEMA_HAS_CONST = 1 << 10,
};

struct schema_pattern;
struct schema_node;

struct schema_prop {
	char *name;
	struct schema_node *schema;
};

/* One compiled (sub)schema. Nodes are owned by the schema's node list, not
 * by their parents, so a node reached through several `$ref`s is freed once. */
struct schema_node {
	struct schema_node *next_alloc; /* the schema's list of every node */
	bool is_false;                  /* the boolean schema false */
	unsigned types;                 /* SCHEMA_T_*; 0 means any type */
	unsigned has;                   /* SCHEMA_HAS_* */
	double minimum, maximum, xminimum, xmaximum, multiple;
	double min_len, max_len, min_items, max_items;
	bool unique_items;
	struct schema_pattern *pattern;
	cJSON *enum_values; /* owned copies */
	cJSON *const_value;
	struct schema_prop *props;
	size_t nprops;
	char **required;
	size_t nrequired;
	bool no_additional;             /* additionalProperties: false */
	struct schema_node *additional; /* additionalProperties as a schema */
	struct schema_node *items;
	struct schema_node *ref; /* the resolved `$ref` target */
	char *ref_name;          /* the $defs name `$ref` points to */
	char *ref_where;         /* JSON pointer of the `$ref`, for errors */
	unsigned char mark;      /* cycle detection state */
};

struct schema_def {
	char *name;
	struct schema_node *node;
};

struct mcpx_schema {
	struct schema_node *root;
	struct schema_node *nodes; /* every node, through next_alloc */
	struct schema_def *defs;
	size_t ndefs;
};

/* A JSON pointer being built while walking: each segment is an object key
 * or an array index. Deep enough for a schema at the nesting limit (each
 * level adds at most two segments) plus the keyword. */
#define SCHEMA_PATH_MAX (2 * MCPX_SCHEMA_MAX_DEPTH + 8)
struct schema_path {
	struct {
		const char *key; /* NULL for an array index */
		size_t index;
	} seg[SCHEMA_PATH_MAX];
	unsigned n;
};

void mcpx_schema_path_key(struct schema_path *p, const char *key);
void mcpx_schema_path_index(struct schema_path *p, size_t index);
void mcpx_schema_path_pop(struct schema_path *p);
/* Writes the pointer with ~ and / escaped (RFC 6901), "(root)" when empty;
 * cut at a character boundary when it does not fit. Returns its length. */
size_t mcpx_schema_path_format(const struct schema_path *p, char *out, size_t size);
/* Cuts s (of length len) to at most max bytes without splitting a UTF-8
 * sequence; returns the new length. Writes the terminating NUL. */
size_t mcpx_schema_utf8_cut(char *s, size_t len, size_t max);
/* For text snprintf wrote into s[size]: len is the length it wanted. When
 * that did not fit, the text ends in "..." at a character boundary instead.
 * Each byte of an ill-formed UTF-8 sequence becomes '?' (the parser's
 * U+0000 mark excepted, jsonrpc.h). Returns the final length. */
size_t mcpx_schema_text_fit(char *s, size_t len, size_t size);
/* "<where>: <message>" into err, cut at a character boundary (the pointer
 * whole when it fits beside the reason); returns -EINVAL. */
int mcpx_schema_vfail_at(struct mcpx_err *err, const char *where, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int mcpx_schema_fail_at(struct mcpx_err *err, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Deep JSON equality (numbers by value, objects regardless of member
 * order). Returns 1 equal, 0 not equal, -ENOMEM. Objects with a repeated
 * key equal nothing: which of the duplicates counts is not defined. */
int mcpx_schema_json_equal(const cJSON *a, const cJSON *b);
/* True when v nests arrays/objects no deeper than max levels. */
bool mcpx_schema_json_depth_ok(const cJSON *v, unsigned max);
/* True when the number has no fractional part (2020-12's integer). */
bool mcpx_schema_is_integer(double d);
/* Writes d in the shortest form that reads back to the same double. */
void mcpx_schema_format_number(double d, char *out, size_t size);

/* The CPU-time budget of one validation, shared with pattern matching. */
struct schema_budget {
	clockid_t clock;          /* this thread's CPU time, where available */
	struct timespec deadline; /* on that clock */
	unsigned ticks;
	bool expired;
};
void mcpx_schema_budget_start(struct schema_budget *b, unsigned ms);
/* Checks the clock every few calls; once expired, stays expired. */
bool mcpx_schema_budget_over(struct schema_budget *b);

/* Compiles a pattern for JSON Schema use (see jsonschema_pattern.c).
 * Returns 0, -EINVAL (msg says why) or -ENOMEM. */
int mcpx_schema_pattern_compile(const char *src, struct schema_pattern **out, char *msg,
                                size_t msgsize);
const char *mcpx_schema_pattern_source(const struct schema_pattern *p);
void mcpx_schema_pattern_free(struct schema_pattern *p);

enum schema_match {
	SCHEMA_MATCH,
	SCHEMA_NO_MATCH,
	SCHEMA_MATCH_LIMIT,   /* match, depth or heap limit reached */
	SCHEMA_MATCH_BADUTF,  /* the subject is not valid UTF-8 */
	SCHEMA_MATCH_EXPIRED, /* the validation's CPU budget ran out */
	SCHEMA_MATCH_NOMEM,
};
/* Searches s (unanchored, as JSON Schema says) for the pattern. */
enum schema_match mcpx_schema_pattern_match(const struct schema_pattern *p, const char *s,
                                            size_t len, struct schema_budget *b);

#endif
