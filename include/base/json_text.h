/*
 * json_text.h - what cJSON 1.7.15 accepts but RFC 8259 (or a caller that
 * reads C strings) must not: checked on the raw text before parsing.
 *
 * cJSON skips every byte up to 0x20 between tokens (a form feed, a NUL),
 * keeps raw control characters inside strings, and decodes "\u0000" into a
 * NUL that ends the C string it hands out, so a key, a name or a hash with
 * one silently means its shorter prefix. A text that passes this check has
 * none of these: parsed, each string is exactly what was written.
 */
#ifndef MCPX_JSON_TEXT_H
#define MCPX_JSON_TEXT_H

#include <stddef.h>

struct mcpx_json_text_flaw {
	size_t at;       /* byte offset of the first flaw */
	const char *why; /* static text: what is wrong there */
};

/* 0 when (p, len) is valid UTF-8, has only JSON whitespace (space, tab,
 * LF, CR) between tokens, no control character inside a string and no
 * "\u0000" escape; otherwise -EINVAL with *flaw (may be NULL) filled. Does
 * not check the grammar otherwise: the parser does. */
int mcpx_json_text_check(const char *p, size_t len, struct mcpx_json_text_flaw *flaw);

#endif
