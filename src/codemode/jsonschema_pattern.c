/*
 * jsonschema_pattern.c - the `pattern` keyword on PCRE2, with bounds.
 *
 * JSON Schema patterns are ECMA-262 regular expressions searched anywhere
 * in the string (not anchored). PCRE2 is close to that; the options below
 * close the gaps that would change what a pattern accepts: `$` matches only
 * at the very end (PCRE's default also matches before a final newline, so
 * `^[a-z]+$` would accept "abc\n"), \u is ECMAScript's code point escape,
 * and \C (which can split a UTF-8 character) is refused.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int mcpx_schema_pattern_compile(const char *src, struct schema_pattern **out, char *msg,
                                size_t msgsize)
{
	uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX |
	                PCRE2_NEVER_BACKSLASH_C | PCRE2_AUTO_CALLOUT;
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
	*out = p;
	p = NULL;
	rc = 0;
out:
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
