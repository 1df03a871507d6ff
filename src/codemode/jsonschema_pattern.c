/*
 * jsonschema_pattern.c - the `pattern` keyword on PCRE2, with bounds.
 *
 * JSON Schema patterns are ECMA-262 regular expressions searched anywhere
 * in the string (not anchored). PCRE2 is close to that; the options below
 * close the gaps that would change what a pattern accepts: `$` matches only
 * at the very end (PCRE's default also matches before a final newline, so
 * `^[a-z]+$` would accept "abc\n"), \u is ECMAScript's code point escape,
 * `[]` matches nothing and `[^]` any character, a reference to a group that
 * did not match matches the empty string, and \C (which can split a UTF-8
 * character) is refused. Where no option exists, the pattern is rewritten
 * before it is compiled (ecma_rewrite): `.` excludes exactly ECMAScript's
 * line terminators (LF, CR, U+2028, U+2029), `\s` and `\S` are
 * ECMAScript's white space and line terminators (U+00A0 and U+FEFF in,
 * U+0085 out), and `\v` is U+000B alone. The source is compiled as written
 * first, so errors and their offsets refer to what the admin wrote.
 *
 * An instance must not be able to make a match run for long. Catastrophic
 * backtracking (`^(a+)+$` on "aaa...ab") is stopped by PCRE2's match and
 * depth limits, and memory by its heap limit: each is a deterministic
 * failure. Those limits count backtracking only: an unanchored search
 * re-scans the subject from every start position, so `[a-z]*[0-9]` on a
 * megabyte of letters is quadratic without a single backtrack (minutes of
 * CPU). Every pattern is therefore compiled with automatic callouts, which
 * PCRE2 calls before each item at each start position, and the callout
 * checks the validation's CPU budget and abandons the match when it is
 * spent. This module does not decide what a failure means: the validator
 * reports it.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jsonschema_internal.h"

/* Backtracking steps, nested backtracking depth and KiB of backtracking
 * memory one match may use. Legitimate tool-argument patterns (identifiers,
 * dates, e-mail addresses) stay orders of magnitude below; the match limit
 * ends a catastrophic match after about a millisecond. */
#define PATTERN_MATCH_LIMIT 100000
#define PATTERN_DEPTH_LIMIT 20000
#define PATTERN_HEAP_LIMIT_KIB 8192

struct schema_pattern {
	pcre2_code *code;
	char *source;
};

/* ECMAScript's WhiteSpace and LineTerminator code points (ECMA-262
 * 12.2, 12.3), as class contents in PCRE2_ALT_BSUX syntax. */
#define ECMA_SPACE                                                                                 \
	"\\t\\n\\x0B\\f\\r "                                                                       \
	"\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF"
/* What ECMAScript's `.` matches without the s flag. */
#define ECMA_DOT "[^\\n\\r\\u2028\\u2029]"

/* Copies a \Q...\E quote (from the backslash) unchanged; returns what
 * follows it. */
static const char *copy_quote(const char *p, struct mcpx_buf *b)
{
	const char *e = strstr(p + 2, "\\E");
	size_t n = e ? (size_t)(e + 2 - p) : strlen(p);

	mcpx_buf_add(b, p, n);
	return p + n;
}

/* The length of an escape's braces at p ("{L}" of \\p{L}), or 0 when the
 * escape takes none: only those of \\p, \\P, \\g, \\k, \\N, \\o and \\u
 * (\\x{41} is not one with PCRE2_ALT_BSUX), and only braces holding
 * nothing this rewrite reads (no '.', '[', ']', '\\', '(' or ')'). Other
 * braces (\\d{2}, \\d{] in a class) are ordinary characters to it: taking
 * "\\d{].}" whole would carry a class past its ']'. */
static size_t escape_braces(const char *p)
{
	size_t n = 1;

	if (*p != '{')
		return 0;
	for (; p[n] && p[n] != '}'; n++)
		if (strchr(".[]\\()", p[n]))
			return 0;
	return p[n] == '}' ? n + 1 : 0;
}

/* Copies an escape other than \\Q, \\s, \\S and \\v (from its backslash)
 * unchanged, with what belongs to it: \\c takes the next character ("\\c["
 * is a control character, not a class), and an escape that takes braces
 * (\\p{L}, \\g{1}, \\u{41}) takes them. Returns what follows. */
static const char *copy_escape(const char *p, struct mcpx_buf *b)
{
	size_t n = 2;

	if (p[1] == 'c' && p[2])
		n = 3;
	else if (p[1] && strchr("pPgkNou", p[1]))
		n += escape_braces(p + 2);
	mcpx_buf_add(b, p, n);
	return p + n;
}

/* Where a POSIX class ("[:alpha:]") that starts before p ends, as PCRE2
 * decides it (check_posix_syntax): at the first ":]", unless a ']' or
 * another "[:" comes first. NULL when it is no POSIX class. */
static const char *posix_end(const char *p)
{
	for (; *p; p++) {
		if (p[0] == '\\' && (p[1] == ']' || p[1] == '\\'))
			p++;
		else if ((p[0] == '[' && p[1] == ':') || p[0] == ']')
			return NULL;
		else if (p[0] == ':' && p[1] == ']')
			return p + 2;
	}
	return NULL;
}

/* One character class, from its '['; returns what follows its ']'. \s
 * becomes ECMAScript's white space; a class holding \S becomes a group
 * (PCRE2 classes cannot subtract): [x\S] is (?:[x]|[^ws]) and [^x\S] is
 * (?:(?![x])[ws]). */
static const char *rewrite_class(const char *p, struct mcpx_buf *b)
{
	struct mcpx_buf body;
	bool neg = false, has_S = false;

	mcpx_buf_init(&body, SIZE_MAX / 2);
	if (*++p == '^')
		neg = true, p++;
	while (*p && *p != ']') {
		const char *e = p[0] == '[' && p[1] == ':' ? posix_end(p + 2) : NULL;

		if (e) {
			mcpx_buf_add(&body, p, (size_t)(e - p));
			p = e;
		} else if (p[0] == '\\' && p[1] == 'Q') {
			p = copy_quote(p, &body);
		} else if (p[0] == '\\' && (p[1] == 's' || p[1] == 'S' || p[1] == 'v')) {
			if (p[1] == 's')
				mcpx_buf_adds(&body, ECMA_SPACE);
			else if (p[1] == 'v')
				mcpx_buf_adds(&body, "\\x0B");
			else
				has_S = true;
			p += 2;
		} else if (p[0] == '\\' && p[1]) {
			p = copy_escape(p, &body);
		} else {
			/* Once \S is taken out, a class can open with '.', '='
			 * or ':' ([\S..] becomes [..]), which PCRE2 reads as a
			 * POSIX collating element or class: escaped, the same
			 * character. A literal '[' is escaped too: with \S
			 * gone, "[:x:\S]" would end in ":]" and its "[:"
			 * would open a POSIX class where the source had none. */
			if ((body.len == 0 && (*p == '.' || *p == '=' || *p == ':')) || *p == '[')
				mcpx_buf_add(&body, "\\", 1);
			mcpx_buf_add(&body, p++, 1);
		}
	}
	if (!has_S)
		mcpx_buf_addf(b, "[%s%s]", neg ? "^" : "", mcpx_buf_str(&body));
	else if (!neg)
		mcpx_buf_addf(b, "(?:%s%s%s[^" ECMA_SPACE "])", body.len ? "[" : "",
		              mcpx_buf_str(&body), body.len ? "]|" : "");
	else
		mcpx_buf_addf(b, "(?:%s%s%s[" ECMA_SPACE "])", body.len ? "(?![" : "",
		              mcpx_buf_str(&body), body.len ? "])" : "");
	mcpx_buf_free(&body);
	return *p ? p + 1 : p;
}

/* src with ECMAScript's `.`, `\s`, `\S` and `\v` spelled out for PCRE2
 * (see the top of this file); malloc'd, NULL when out of memory. src has
 * compiled as written, so its classes and quotes are well formed. */
static char *ecma_rewrite(const char *src)
{
	struct mcpx_buf b;
	const char *p = src;

	mcpx_buf_init(&b, SIZE_MAX / 2);
	while (*p) {
		if (p[0] == '\\' && p[1] == 'Q') {
			p = copy_quote(p, &b);
		} else if (p[0] == '\\' && p[1] == 's') {
			mcpx_buf_adds(&b, "[" ECMA_SPACE "]"), p += 2;
		} else if (p[0] == '\\' && p[1] == 'S') {
			mcpx_buf_adds(&b, "[^" ECMA_SPACE "]"), p += 2;
		} else if (p[0] == '\\' && p[1] == 'v') {
			mcpx_buf_adds(&b, "\\x0B"), p += 2;
		} else if (p[0] == '\\' && p[1]) {
			p = copy_escape(p, &b);
		} else if (p[0] == '(' && p[1] == '?' && p[2] == '#' && strchr(p, ')')) {
			const char *e = strchr(p, ')') + 1;

			mcpx_buf_add(&b, p, (size_t)(e - p)), p = e;
		} else if (p[0] == '[') {
			p = rewrite_class(p, &b);
		} else if (p[0] == '.') {
			mcpx_buf_adds(&b, ECMA_DOT), p++;
		} else {
			mcpx_buf_add(&b, p++, 1);
		}
	}
	if (!b.data)
		mcpx_buf_adds(&b, "");
	return mcpx_buf_take(&b, NULL);
}

int mcpx_schema_pattern_compile(const char *src, struct schema_pattern **out, char *msg,
                                size_t msgsize)
{
	uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX |
	                PCRE2_NEVER_BACKSLASH_C | PCRE2_AUTO_CALLOUT | PCRE2_ALLOW_EMPTY_CLASS |
	                PCRE2_MATCH_UNSET_BACKREF;
	char *ecma = NULL;
	pcre2_compile_context *cc = NULL;
	struct schema_pattern *p = NULL;
	PCRE2_SIZE where = 0;
	int code = 0, rc = -ENOMEM;

	*out = NULL;
	cc = pcre2_compile_context_create(NULL);
	p = calloc(1, sizeof(*p));
	if (!cc || !p)
		goto out;
	/* ECMAScript's \u{hhhh} form, next to \uhhhh. */
	pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
	p->source = strdup(src);
	if (!p->source)
		goto out;
	p->code = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, opts, &code, &where, cc);
	if (!p->code) {
		char why[160];

		if (code == PCRE2_ERROR_NOMEMORY)
			goto out;
		pcre2_get_error_message(code, (PCRE2_UCHAR *)why, sizeof(why));
		snprintf(msg, msgsize, "%s at offset %zu", why, (size_t)where);
		rc = -EINVAL;
		goto out;
	}
	/* The source compiled as written: now the ECMAScript spelling. */
	pcre2_code_free(p->code);
	p->code = NULL;
	if (!(ecma = ecma_rewrite(src)))
		goto out;
	p->code = pcre2_compile((PCRE2_SPTR)ecma, PCRE2_ZERO_TERMINATED, opts, &code, &where, cc);
	if (!p->code) {
		if (code == PCRE2_ERROR_NOMEMORY)
			goto out;
		snprintf(msg, msgsize, "not supported in its ECMAScript meaning");
		rc = -EINVAL;
		goto out;
	}
	*out = p;
	p = NULL;
	rc = 0;
out:
	free(ecma);
	mcpx_schema_pattern_free(p);
	pcre2_compile_context_free(cc);
	return rc;
}

const char *mcpx_schema_pattern_source(const struct schema_pattern *p)
{
	return p->source;
}

void mcpx_schema_pattern_free(struct schema_pattern *p)
{
	if (!p)
		return;
	pcre2_code_free(p->code);
	free(p->source);
	free(p);
}

/* Called by PCRE2 before every pattern item; a negative return abandons
 * the match with that code. */
static int on_callout(pcre2_callout_block *block, void *data)
{
	struct schema_budget *b = data;

	(void)block;
	return mcpx_schema_budget_over(b) ? PCRE2_ERROR_CALLOUT : 0;
}

static enum schema_match match_result(int rc, const struct schema_budget *b)
{
	if (rc >= 0)
		return SCHEMA_MATCH;
	switch (rc) {
	case PCRE2_ERROR_NOMATCH:
		return SCHEMA_NO_MATCH;
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
		return SCHEMA_MATCH_LIMIT;
	case PCRE2_ERROR_NOMEMORY:
		return SCHEMA_MATCH_NOMEM;
	case PCRE2_ERROR_CALLOUT:
		return b->expired ? SCHEMA_MATCH_EXPIRED : SCHEMA_MATCH_LIMIT;
	}
	if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
		return SCHEMA_MATCH_BADUTF;
	/* Anything else means the match could not be completed: fail closed,
	 * reported like a limit. */
	return SCHEMA_MATCH_LIMIT;
}

enum schema_match mcpx_schema_pattern_match(const struct schema_pattern *p, const char *s,
                                            size_t len, struct schema_budget *b)
{
	pcre2_match_context *mc = NULL;
	pcre2_match_data *md = NULL;
	enum schema_match res = SCHEMA_MATCH_NOMEM;

	if (mcpx_schema_budget_over(b))
		return SCHEMA_MATCH_EXPIRED;
	mc = pcre2_match_context_create(NULL);
	md = pcre2_match_data_create(1, NULL);
	if (!mc || !md)
		goto out;
	pcre2_set_match_limit(mc, PATTERN_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, PATTERN_DEPTH_LIMIT);
	pcre2_set_heap_limit(mc, PATTERN_HEAP_LIMIT_KIB);
	pcre2_set_callout(mc, on_callout, b);
	res = match_result(pcre2_match(p->code, (PCRE2_SPTR)s, len, 0, 0, md, mc), b);
out:
	pcre2_match_data_free(md);
	pcre2_match_context_free(mc);
	return res;
}
