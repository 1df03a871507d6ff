/*
 * jsonschema.h - a host-side JSON Schema validator for the subset that tool
 * schemas use (JSON Schema 2020-12 semantics).
 *
 * A schema is compiled once (when the policy file is loaded): every keyword
 * is checked, a keyword outside the supported subset is refused with its
 * JSON pointer in the schema, each `pattern` is compiled with PCRE2 and each
 * `$ref` is resolved, so validating an instance never meets a surprise.
 * Validation then walks the instance and reports every failure with the
 * JSON pointer (RFC 6901) of the failing location, for example
 * `/items/2/qty: must be >= 1`; the location "" (the whole instance) is
 * written `(root)`. The supported keywords are listed in docs/policy.md
 * ("Schema keywords supported").
 *
 * Hostile instances are bounded: nesting deeper than MCPX_SCHEMA_MAX_DEPTH
 * is a failure, every pattern match runs under PCRE2 match, depth and heap
 * limits, and the whole validation under a CPU-time budget, so no instance
 * can make validation hang; each of these is reported as a failure.
 *
 * It does not fetch or resolve anything outside the schema document, does
 * not apply `default`s, and does not know about MCP or tools: the caller
 * decides what an invalid instance means.
 *
 * Ownership: mcpx_schema_compile copies what it needs, so the cJSON schema
 * may be freed afterwards; the compiled schema belongs to the caller until
 * mcpx_schema_free. A compiled schema is never modified by validation, so
 * one may be used by several threads at once.
 */
#ifndef MCPX_JSONSCHEMA_H
#define MCPX_JSONSCHEMA_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "err.h"

/* Deepest nesting of subschemas in a schema, of values inside `enum` and
 * `const`, and of arrays and objects in an instance. */
#define MCPX_SCHEMA_MAX_DEPTH 64
/* Failure messages kept, and the bytes of text they may take in total;
 * failures beyond either are only counted ("... and N more"). */
#define MCPX_SCHEMA_MAX_ERRORS 20
#define MCPX_SCHEMA_ERRORS_TEXT 4096
/* CPU time one validation may use before it stops with a failure. */
#define MCPX_SCHEMA_CPU_LIMIT_MS 250

struct mcpx_schema;

/* The failures of one validation, filled by mcpx_schema_validate. Lives on
 * the caller's stack; never allocates. */
struct mcpx_schema_errors {
	unsigned count; /* every failure found, kept or not */
	unsigned kept;  /* messages stored in text */
	size_t len;     /* bytes of text used, without the final NUL */
	/* The kept messages, "<pointer>: <message>", each ending in '\n'. */
	char text[MCPX_SCHEMA_ERRORS_TEXT];
};

/* Compiles schema (an object or a boolean). Returns 0 and a new schema in
 * *out, -EINVAL when the schema is invalid or unsupported (err says where
 * and why, e.g. `/properties/a/oneOf: unsupported keyword "oneOf"`), or
 * -ENOMEM. */
int mcpx_schema_compile(const cJSON *schema, struct mcpx_schema **out, struct mcpx_err *err);

/* Validates instance. Returns 0 when valid, -EINVAL when it is not (errs
 * holds the failures), or -ENOMEM (errs may hold some failures already
 * found). errs is reset first. */
int mcpx_schema_validate(const struct mcpx_schema *s, const cJSON *instance,
                         struct mcpx_schema_errors *errs);

/* Formats the failures as one message for a tool error:
 *   "<heading>: 2 errors\n/a: must be string (got number)\n(root): ..."
 * ending with "... and N more" when some were not kept. Always
 * NUL-terminates out (size > 0); text that does not fit is cut at a
 * character boundary. Returns the length written. */
size_t mcpx_schema_errors_format(const struct mcpx_schema_errors *errs, const char *heading,
                                 char *out, size_t size);

/* Frees a compiled schema; NULL is allowed. */
void mcpx_schema_free(struct mcpx_schema *s);

#endif
