/*
 * utf8.h - make untrusted bytes valid UTF-8 for JSON.
 *
 * Output of sandboxed code can be any bytes; JSON strings must be UTF-8.
 * Invalid sequences (bad lead bytes, truncated or overlong sequences,
 * surrogates, code points above U+10FFFF) become U+FFFD, as the Go mcp-exec
 * does with strings.ToValidUTF8 (but per maximal invalid subpart).
 */
#ifndef MCPX_UTF8_H
#define MCPX_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Returns a NUL-terminated copy of (in, len) with invalid sequences replaced,
 * or NULL on allocation failure. Embedded NULs are kept as U+0000 would be:
 * the length is returned in *out_len. Caller frees. */
char *mcpx_utf8_sanitize(const char *in, size_t len, size_t *out_len);

/* True when (in, len) is entirely valid UTF-8. */
int mcpx_utf8_valid(const char *in, size_t len);

/* Decodes the character at in[0..len) (len > 0) into *cp and returns its
 * length in bytes; an ill-formed sequence reads as U+FFFD and its maximal
 * subpart's length, as mcpx_utf8_sanitize replaces it. */
size_t mcpx_utf8_next(const char *in, size_t len, uint32_t *cp);

#endif
