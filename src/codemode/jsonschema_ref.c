/*
 * jsonschema_ref.c - a schema's `$ref`s (jsonschema_ref.h): the name of a
 * reference decoded (the URI fragment's %XX escapes, then RFC 6901's
 * token), every `$ref` pointed at its definition once the schema is
 * compiled, and a chain of references that loops without descending into
 * the instance refused, each with the JSON pointer of the offending `$ref`.
 *
 * What it does not do: parse the `$ref` or `$defs` keywords (jsonschema.c)
 * or follow a reference while validating (jsonschema_validate.c). Nothing
 * is resolved outside the document.
 */
#include "jsonschema_ref.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "hex.h"
#include "jsonschema_internal.h"

/* Decodes the URI fragment's %XX escapes in place; false on a bad escape
 * (or %00, which no C string can hold). */
bool mcpx_schema_ref_percent_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		int hi, lo;

		if (*s != '%') {
			*w++ = *s;
			continue;
		}
		hi = mcpx_hex_value((unsigned char)s[1]);
		lo = hi < 0 ? -1 : mcpx_hex_value((unsigned char)s[2]);
		if (lo < 0 || (hi == 0 && lo == 0))
			return false;
		*w++ = (char)(hi * 16 + lo);
		s += 2;
	}
	*w = '\0';
	return true;
}

/* Undoes RFC 6901 escaping in place; false when the token has a '/' (it
 * points inside a definition) or a bad '~' escape. */
bool mcpx_schema_ref_unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s == '/')
			return false;
		if (*s == '~') {
			if (s[1] != '0' && s[1] != '1')
				return false;
			*w++ = s[1] == '0' ? '~' : '/';
			s++;
			continue;
		}
		*w++ = *s;
	}
	*w = '\0';
	return true;
}

/* Points every `$ref` at its definition. */
int mcpx_schema_ref_resolve(struct mcpx_schema *s, struct mcpx_err *err)
{
	for (struct schema_node *n = s->nodes; n; n = n->next_alloc) {
		if (!n->ref_name)
			continue;
		for (size_t i = 0; i < s->ndefs && !n->ref; i++)
			if (strcmp(s->defs[i].name, n->ref_name) == 0)
				n->ref = s->defs[i].node;
		if (!n->ref)
			return mcpx_schema_fail_at(err, n->ref_where,
			                           "no definition \"%s\" in $defs", n->ref_name);
	}
	return 0;
}

/*
 * A `$ref` applies its target at the same instance location, so a chain of
 * definitions that refer to each other without any keyword descending into
 * the instance (a -> b -> a) would recurse forever. Recursion through
 * properties or items is fine: the instance is finite. Walks each chain once,
 * marking nodes on the current chain (1) and finished (2).
 */
int mcpx_schema_ref_cycles(struct mcpx_schema *s, struct mcpx_err *err)
{
	for (size_t i = 0; i < s->ndefs; i++) {
		struct schema_node *n = s->defs[i].node, *m;

		for (m = n; m && m->mark == 0; m = m->ref)
			m->mark = 1;
		if (m && m->mark == 1)
			return mcpx_schema_fail_at(
			    err, m->ref_where,
			    "$ref cycle through \"#/$defs/%s\" never descends into the "
			    "instance",
			    m->ref_name);
		for (m = n; m && m->mark == 1; m = m->ref)
			m->mark = 2;
	}
	return 0;
}
