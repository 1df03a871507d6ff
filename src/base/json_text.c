/*
 * json_text.c - the byte-level checks cJSON 1.7.15 leaves out (json_text.h).
 *
 * One pass that knows only whether it is inside a string: enough to tell a
 * "\u0000" escape from an escaped backslash followed by "u0000", and
 * whitespace between tokens from a control character inside a string. The
 * grammar itself is the parser's business; this only refuses what the
 * parser would let through into a C string or past RFC 8259.
 */
#include "json_text.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "utf8.h"

static int flawed(struct mcpx_json_text_flaw *f, size_t at, const char *why)
{
	if (f) {
		f->at = at;
		f->why = why;
	}
	return -EINVAL;
}

static bool json_ws(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

int mcpx_json_text_check(const char *p, size_t len, struct mcpx_json_text_flaw *flaw)
{
	bool in_str = false;

	if (!mcpx_utf8_valid(p, len)) {
		size_t i = 0;
		uint32_t cp;

		/* The first ill-formed sequence, for the message. */
		while (i < len) {
			size_t n = mcpx_utf8_next(p + i, len - i, &cp);

			if (cp == 0xFFFD && !(n == 3 && memcmp(p + i, "\xEF\xBF\xBD", 3) == 0))
				break;
			i += n;
		}
		return flawed(flaw, i, "not valid UTF-8");
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch < 0x20 && in_str)
			return flawed(flaw, i, "a control character inside a string (escape it)");
		if (ch < 0x20 && !json_ws(ch))
			return flawed(flaw, i,
			              ch ? "a control character between tokens (only space, tab, "
			                   "LF and CR may separate them)"
			                 : "a NUL byte");
		if (!in_str) {
			in_str = ch == '"';
		} else if (ch == '"') {
			in_str = false;
		} else if (ch == '\\' && i + 1 < len) {
			if (len - i >= 6 && memcmp(p + i + 1, "u0000", 5) == 0)
				return flawed(flaw, i, "U+0000 (\"\\u0000\") inside a string");
			i++; /* the escaped character: "\\\\" and "\\\"" included */
			if ((unsigned char)p[i] < 0x20)
				return flawed(flaw, i,
				              "a control character inside a string (escape it)");
		}
	}
	return 0;
}
