/*
 * utf8.c - validate untrusted bytes as UTF-8 and repair them for JSON.
 *
 * The decoder follows the well-formed byte sequences of the Unicode Standard
 * (chapter 3, table 3-7) and, when it repairs, replaces each *maximal subpart*
 * of an ill-formed sequence with one U+FFFD, the practice Unicode recommends
 * (and WHATWG's decoder implements): a truncated sequence is one replacement,
 * every stray byte is one replacement, and decoding resumes at the first byte
 * that broke the sequence, so a valid character right after garbage is never
 * swallowed. It does not normalise, does not touch valid text (U+0000
 * included) and does not allocate except for the repaired copy.
 */
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/*
 * Returns the length of the well-formed sequence at in[0..len), or 0 when it
 * is ill-formed; then *bad is the length of its maximal subpart (at least 1).
 */
static size_t seq_len(const unsigned char *in, size_t len, size_t *bad)
{
	unsigned char c = in[0];
	unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0; /* below would be an overlong encoding */
		else if (c == 0xED)
			hi = 0x9F; /* above would be a UTF-16 surrogate */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* above U+10FFFF */
	} else {
		/* 0x80..0xC1 and 0xF5..0xFF can never start a sequence. */
		*bad = 1;
		return 0;
	}

	for (size_t i = 1; i < need; i++) {
		unsigned char b;
		if (i >= len) {
			*bad = i; /* truncated at the end of the input */
			return 0;
		}
		b = in[i];
		if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) {
			*bad = i;
			return 0;
		}
	}
	return need;
}

int mcpx_utf8_valid(const char *in, size_t len)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, bad;

	while (i < len) {
		size_t n;
		/* Fast path: runs of ASCII are the common case for program output. */
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		n = seq_len(p + i, len - i, &bad);
		if (n == 0)
			return 0;
		i += n;
	}
	return 1;
}

size_t mcpx_utf8_next(const char *in, size_t len, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t n, bad = 1;

	n = seq_len(p, len, &bad);
	switch (n) {
	case 1:
		*cp = p[0];
		return 1;
	case 2:
		*cp = ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
		return 2;
	case 3:
		*cp = ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) |
		      (p[2] & 0x3F);
		return 3;
	case 4:
		*cp = ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
		      ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
		return 4;
	default:
		*cp = 0xFFFD;
		return bad;
	}
}

char *mcpx_utf8_sanitize(const char *in, size_t len, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, o = 0, bad;
	char *out;

	/* Valid input (the usual case) is copied as is, so the copy costs no
	 * more memory than the input. */
	if (mcpx_utf8_valid(in, len)) {
		out = malloc(len + 1);
		if (!out)
			return NULL;
		memcpy(out, in, len);
		out[len] = '\0';
		if (out_len)
			*out_len = len;
		return out;
	}

	/* Each input byte becomes at most one U+FFFD (3 bytes); guard the
	 * multiplication so a huge len cannot wrap. */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;

	while (i < len) {
		size_t n = p[i] < 0x80 ? 1 : seq_len(p + i, len - i, &bad);
		if (n) {
			memcpy(out + o, p + i, n);
			o += n;
			i += n;
		} else {
			memcpy(out + o, replacement, sizeof(replacement));
			o += sizeof(replacement);
			i += bad;
		}
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}
