/*
 * name_glob.c - the policy file's globs (name_glob.h): a checker that
 * refuses what the matcher cannot use, and a matcher.
 *
 * Ours rather than fnmatch(3): glibc's fnmatch answers "no match" for a
 * pattern ending in a lone backslash and reads an unclosed '[' as a
 * literal, so a mistyped deny glob denied nothing without a word, and its
 * errors and no-match share one return value. Here the syntax is written
 * down once (name_glob.h), a pattern outside it is refused when the policy
 * loads, and the matcher reports a broken pattern as an error of its own.
 *
 * The matcher is the usual iterative one: each token but '*' consumes one
 * character, and on a mismatch the last '*' takes one more character, so
 * time is O(pattern x name) with no recursion.
 */
#include "name_glob.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static int refuse(char *why, size_t whylen, size_t at, const char *what)
{
	if (why && whylen)
		snprintf(why, whylen, "%s (at character %zu of the glob)", what, at + 1);
	return -EINVAL;
}

/* The set starting at p[0] == '['; its length through the closing ']',
 * or -EINVAL (with why) when it is not a usable set. */
static long set_len(const char *p, size_t at, char *why, size_t whylen)
{
	size_t i = 1, first;
	unsigned char prev = 0;
	bool have_prev = false;

	if (p[i] == '!' || p[i] == '^')
		i++;
	first = i;
	for (;; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\0')
			return refuse(why, whylen, at, "[ is not closed by ]");
		if (c == ']' && i > first)
			break;
		if (c == '[' && p[i + 1] == ':')
			return refuse(why, whylen, at + i,
			              "character classes such as [:alpha:] are not supported "
			              "(write the set out, e.g. [a-zA-Z])");
		if (c == '\\') {
			if (p[i + 1] == '\0')
				return refuse(why, whylen, at + i,
				              "the glob ends with a lone backslash");
			c = (unsigned char)p[++i];
		} else if (c == '-' && have_prev && p[i + 1] != ']' && p[i + 1] != '\0') {
			unsigned char hi = (unsigned char)p[i + 1];

			if (hi == '\\' && p[i + 2])
				hi = (unsigned char)p[i + 2];
			if (hi < prev)
				return refuse(why, whylen, at + i,
				              "a range whose end comes before its start");
			i += p[i + 1] == '\\' ? 2 : 1;
			have_prev = false;
			continue;
		}
		prev = c;
		have_prev = true;
	}
	return (long)i + 1;
}

int mcpx_glob_check(const char *p, char *why, size_t whylen)
{
	size_t n = strlen(p);

	if (n == 0)
		return refuse(why, whylen, 0, "a glob must not be empty");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
			return refuse(why, whylen, i,
			              "a glob is printable ASCII without spaces (match other "
			              "characters with ? or *)");
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\') {
			if (p[i + 1] == '\0')
				return refuse(why, whylen, i,
				              "the glob ends with a lone backslash");
			i++;
		} else if (p[i] == '[') {
			long l = set_len(p + i, i, why, whylen);

			if (l < 0)
				return (int)l;
			i += (size_t)l - 1;
		}
	}
	return 0;
}

static unsigned char fold(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Whether the set at p ('[' ... ']', checked) holds the character cp. */
static bool in_set(const char *p, uint32_t cp, bool casefold)
{
	size_t i = 1;
	bool neg = false, hit = false, first = true;

	if (p[i] == '!' || p[i] == '^')
		neg = true, i++;
	for (; p[i] != ']' || first; i++, first = false) {
		unsigned char lo = (unsigned char)p[i], hi;

		if (lo == '\\')
			lo = (unsigned char)p[++i];
		hi = lo;
		if (p[i + 1] == '-' && p[i + 2] != ']') {
			i += 2;
			hi = (unsigned char)(p[i] == '\\' ? p[++i] : p[i]);
		}
		if (cp >= lo && cp <= hi)
			hit = true;
		/* Folded: either case of a letter, against the same range. */
		if (casefold && cp < 0x80) {
			unsigned char l = fold((unsigned char)cp),
			              u = l >= 'a' && l <= 'z' ? (unsigned char)(l - 'a' + 'A') : l;

			if ((l >= lo && l <= hi) || (u >= lo && u <= hi))
				hit = true;
		}
	}
	return hit != neg;
}

/* Whether one pattern token at p (not '*') takes the character at s
 * (cp, its first byte c); *tok gets the token's length. */
static bool token_takes(const char *p, size_t *tok, uint32_t cp, unsigned char c, bool casefold)
{
	if (*p == '?') {
		*tok = 1;
		return true;
	}
	if (*p == '[') {
		*tok = (size_t)set_len(p, 0, NULL, 0);
		return in_set(p, cp, casefold);
	}
	*tok = *p == '\\' ? 2 : 1;
	if (*p == '\\')
		p++;
	return casefold ? fold((unsigned char)*p) == fold(c) : (unsigned char)*p == c;
}

int mcpx_glob_match(const char *pat, const char *name, unsigned flags)
{
	bool casefold = flags & MCPX_GLOB_CASEFOLD;
	const char *p = pat, *s = name, *star_p = NULL, *star_s = NULL;
	size_t rest = strlen(name);

	if (mcpx_glob_check(pat, NULL, 0) < 0)
		return -EINVAL;
	while (*s) {
		uint32_t cp;
		size_t len = mcpx_utf8_next(s, rest, &cp), tok;

		if (*p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (*p && token_takes(p, &tok, cp, (unsigned char)*s, casefold)) {
			p += tok;
			s += len;
			rest -= len;
			continue;
		}
		if (!star_p)
			return 0;
		/* The last '*' takes one more character. */
		len = mcpx_utf8_next(star_s, strlen(star_s), &cp);
		star_s += len;
		s = star_s;
		rest = strlen(s);
		p = star_p;
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}
