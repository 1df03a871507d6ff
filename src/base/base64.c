/*
 * base64.c - RFC 4648 base64 encode and strict decode (base64.h).
 */
#include "base64.h"

#include <errno.h>
#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

size_t mcpx_base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

size_t mcpx_base64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t o = 0, i = 0;

	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

ssize_t mcpx_base64_decode(const char *in, size_t len, void *out, size_t cap)
{
	unsigned char *q = out;
	uint32_t acc = 0;
	size_t o = 0, pad = 0;
	int bits = 0;

	while (len > 0 && in[len - 1] == '=' && pad < 2) {
		len--;
		pad++;
	}
	if ((len + pad) % 4 == 1 || (pad && (len + pad) % 4 != 0))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int v = value((unsigned char)in[i]);
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
	/* Leftover bits must be zero (canonical encoding). */
	if (bits && (acc & ((1u << bits) - 1)))
		return -EINVAL;
	return (ssize_t)o;
}
