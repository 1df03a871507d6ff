/*
 * base64.h - RFC 4648 base64 (the standard alphabet, with padding), used for
 * the Mcp-Name header's encoded form and for binary content in MCP results,
 * and base64url without padding (section 5), used in session ids.
 */
#ifndef MCPX_BASE64_H
#define MCPX_BASE64_H

#include <stddef.h>
#include <sys/types.h>

/* Bytes mcpx_base64_encode writes for n input bytes, without the NUL. */
size_t mcpx_base64_encoded_len(size_t n);

/* Encodes n bytes into out (which must hold encoded_len(n) + 1 bytes) and
 * NUL-terminates it. Returns the encoded length. */
size_t mcpx_base64_encode(const void *in, size_t n, char *out);

/* Decodes len characters of strict base64 (padding optional, no whitespace,
 * no characters outside the alphabet, no data after padding) into out, at
 * most cap bytes. Returns the decoded length, or -EINVAL. A buffer of
 * len / 4 * 3 + 3 bytes always suffices. */
ssize_t mcpx_base64_decode(const char *in, size_t len, void *out, size_t cap);

/* base64url, unpadded: encoded_len(n) characters, encode NUL-terminates
 * (out holds encoded_len(n) + 1 bytes) and returns the length; decode is
 * strict like mcpx_base64_decode and refuses '=' and the standard
 * alphabet's '+' and '/'. */
size_t mcpx_base64url_encoded_len(size_t n);
size_t mcpx_base64url_encode(const void *in, size_t n, char *out);
ssize_t mcpx_base64url_decode(const char *in, size_t len, void *out, size_t cap);

#endif
