/*
 * base64.c - RFC 4648 base64 and base64url: encode and strict decode
 * (base64.h). One implementation for both alphabets: they differ in the
 * last two characters and in padding only.
 */
#include "base64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

static const char std_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* A character's value in the alphabet (url: base64url's), or -1. */
static int value(unsigned char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

size_t mcpx_base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Encodes n bytes with alphabet a, padded with '=' when pad; NUL-terminated.
 * Returns the encoded length. */
static size_t encode(const void *in, size_t n, char *out, const char *a, bool pad)
{
	const unsigned char *p = in;
	size_t o = 0, i = 0;

	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63];
		out[o++] = a[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = a[(v >> 6) & 63];
		else if (pad)
			out[o++] = '=';
		if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

size_t mcpx_base64_encode(const void *in, size_t n, char *out)
{
	return encode(in, n, out, std_alphabet, true);
}

size_t mcpx_base64url_encode(const void *in, size_t n, char *out)
{
	return encode(in, n, out, url_alphabet, false);
}

size_t mcpx_base64url_encoded_len(size_t n)
{
	return (n * 4 + 2) / 3;
}

/* Decodes len characters (url: of base64url, which has no padding) into
 * out, at most cap bytes; strict and canonical. */
static ssize_t decode(const char *in, size_t len, void *out, size_t cap, bool url)
{
	unsigned char *q = out;
	uint32_t acc = 0;
	size_t o = 0, pad = 0;
	int bits = 0;

	while (!url && len > 0 && in[len - 1] == '=' && pad < 2) {
		len--;
		pad++;
	}
	if ((len + pad) % 4 == 1 || (pad && (len + pad) % 4 != 0))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int v = value((unsigned char)in[i], url);
		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= cap)
				return -EINVAL;
			q[o++] = (unsigned char)((acc >> bits) & 0xFF);
		}
	}
	/* Leftover bits must be zero (canonical encoding): otherwise several
	 * strings decode to the same bytes. */
	if (bits && (acc & ((1u << bits) - 1)))
		return -EINVAL;
	return (ssize_t)o;
}

ssize_t mcpx_base64_decode(const char *in, size_t len, void *out, size_t cap)
{
	return decode(in, len, out, cap, false);
}

ssize_t mcpx_base64url_decode(const char *in, size_t len, void *out, size_t cap)
{
	return decode(in, len, out, cap, true);
}
