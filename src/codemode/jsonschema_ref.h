/*
 * jsonschema_ref.h - a schema's `$ref`s, for the compiler (jsonschema.c):
 * a reference's name decoded, and every reference resolved and checked for
 * loops once the whole schema is compiled. Not for use outside
 * src/codemode/jsonschema*.c.
 */
#ifndef MCPX_JSONSCHEMA_REF_H
#define MCPX_JSONSCHEMA_REF_H

#include <stdbool.h>

struct mcpx_err;
struct mcpx_schema;

/* Decodes the URI fragment's %XX escapes in place; false on a bad escape
 * (or %00). */
bool mcpx_schema_ref_percent_decode(char *s);
/* Undoes RFC 6901 escaping in place; false when the token has a '/' or a
 * bad '~' escape. */
bool mcpx_schema_ref_unescape(char *s);

/* Points every `$ref` of s at its definition: 0, or -EINVAL with err set
 * when one names no definition. */
int mcpx_schema_ref_resolve(struct mcpx_schema *s, struct mcpx_err *err);
/* Refuses a chain of `$ref`s that loops without descending into the
 * instance: 0, or -EINVAL with err set. */
int mcpx_schema_ref_cycles(struct mcpx_schema *s, struct mcpx_err *err);

#endif
