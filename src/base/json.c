/*
 * json.c - JSON read strictly and written exactly (json.h).
 *
 * Parsing is cJSON's, between two passes of ours over the text: before, a
 * copy that checks what cJSON lets through (control characters) and marks
 * each \u0000; after, a walk that pairs each number node with its token in
 * the text (both in document order: cJSON keeps members and elements in the
 * order they came) and keeps the token where the double would not print
 * it back. Printing is ours, written to give cJSON_PrintUnformatted's bytes
 * for everything but numbers.
 *
 * What it does not do: decide what a message means (jsonrpc.c and the
 * modules that read values), or repair invalid UTF-8 (utf8.h: the caller
 * decides whether to refuse or to repair first).
 */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* ---- parsing ----------------------------------------------------------- */

/* RFC 8259 section 2: whitespace between tokens is space, tab, LF and CR
 * only. cJSON skips every byte up to 0x20 there. */
static bool json_ws(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/*
 * Copies the text into dst while checking what cJSON 1.7.15 lets through,
 * in one pass over the bytes (O(n)): a control character (U+0000..U+001F)
 * must be escaped inside a string (RFC 8259 section 7) and may only be
 * whitespace outside one. Each \u0000 escape inside a string is replaced by
 * MCPX_JSON_NUL_MARK, so the parsed string keeps its full length and the
 * place of every NUL. Returns the copied length, or -1.
 */
static long copy_checked(const char *src, size_t len, char *dst)
{
	bool in_str = false;
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)src[i];

		if (ch < 0x20 && (in_str || !json_ws(ch)))
			return -1;
		if (!in_str) {
			in_str = ch == '"';
		} else if (ch == '"') {
			in_str = false;
		} else if (ch == '\\' && len - i >= 6 && memcmp(src + i + 1, "u0000", 5) == 0) {
			dst[o++] = (char)MCPX_JSON_NUL_MARK;
			i += 5;
			continue;
		} else if (ch == '\\' && i + 1 < len) {
			/* The escaped character is copied with its backslash,
			 * so "\\u0000" stays an escaped backslash. */
			dst[o++] = (char)ch;
			ch = (unsigned char)src[++i];
			if (ch < 0x20)
				return -1;
		}
		dst[o++] = (char)ch;
	}
	return (long)o;
}

/* True when only JSON whitespace lies in [p, end). */
static bool only_ws(const char *p, const char *end)
{
	while (p < end && json_ws((unsigned char)*p))
		p++;
	return p == end;
}

/* The number tokens of a text cJSON accepted, in order. */
struct tokens {
	const char *p, *end;
};

static bool number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* The next number token, with its length in *len; NULL when none is left.
 * Outside strings, a '-' or a digit can only start a number (the literals
 * true, false and null hold neither). */
static const char *next_number(struct tokens *t, size_t *len)
{
	bool in_str = false;

	for (; t->p < t->end; t->p++) {
		char c = *t->p;

		if (in_str) {
			if (c == '\\')
				t->p++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			const char *start = t->p;

			while (t->p < t->end && number_char(*t->p))
				t->p++;
			*len = (size_t)(t->p - start);
			return start;
		}
	}
	return NULL;
}

/* RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. cJSON
 * also takes what strtod takes ("01", "1.", "1.e5"), which no peer may
 * send and which printing the token back would pass on. */
static bool number_valid(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return false;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9';)
			i++;
		if (i == d)
			return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9';)
			i++;
		if (i == d)
			return false;
	}
	return i == n;
}

/* Keeps the token of number n where printing its double would not give it
 * back. */
static int keep_text(cJSON *n, const char *tok, size_t len)
{
	char own[MCPX_JSON_NUMBER_MAX];
	size_t l = mcpx_json_number(n->valuedouble, own);

	if (isfinite(n->valuedouble) && l == len && memcmp(own, tok, len) == 0)
		return 0;
	n->valuestring = malloc(len + 1);
	if (!n->valuestring)
		return -ENOMEM;
	memcpy(n->valuestring, tok, len);
	n->valuestring[len] = '\0';
	return 0;
}

/* Pairs every number under v with its token, in document order. cJSON
 * nests at most CJSON_NESTING_LIMIT (1000) deep, which bounds the
 * recursion. */
static int attach_numbers(cJSON *v, struct tokens *t)
{
	for (; v; v = v->next) {
		if (cJSON_IsNumber(v)) {
			size_t len = 0;
			const char *tok = next_number(t, &len);

			int rc;

			/* cJSON parsed a number here, so the text has its token. */
			if (!tok || !number_valid(tok, len))
				return -EINVAL;
			if ((rc = keep_text(v, tok, len)) < 0)
				return rc;
		} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
			int rc = attach_numbers(v->child, t);

			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int mcpx_json_parse(const char *p, size_t len, cJSON **out)
{
	const char *end = NULL;
	struct tokens t;
	cJSON *root;
	char *buf;
	long n;
	int rc = 0;

	*out = NULL;
	/* Checking first also means every string read is valid UTF-8, and
	 * that MCPX_JSON_NUL_MARK (never valid UTF-8) cannot come from the
	 * text. */
	if (!mcpx_utf8_valid(p, len))
		return -EILSEQ;
	if (!(buf = malloc(len + 1)))
		return -ENOMEM;
	n = copy_checked(p, len, buf);
	if (n < 0) {
		free(buf);
		return -EBADMSG;
	}
	buf[n] = '\0';
	root = cJSON_ParseWithLengthOpts(buf, (size_t)n + 1, &end, false);
	/* Nothing but whitespace may follow the value. */
	if (!root || !end || !only_ws(end, buf + n)) {
		rc = -EINVAL;
	} else {
		/* A root that is not a container has no siblings to walk. */
		t = (struct tokens){.p = buf, .end = buf + n};
		rc = attach_numbers(root, &t);
	}
	free(buf);
	if (rc < 0) {
		cJSON_Delete(root);
		return rc;
	}
	*out = root;
	return 0;
}

/* ---- numbers ----------------------------------------------------------- */

/* The shortest decimal digits that read back as d (> 0, finite): digits
 * into dig (no dot), their count returned, and the decimal exponent of the
 * first digit in *exp10. Correctly rounded p-digit forms only get closer to
 * d as p grows, so the smallest p that reads back is found by bisection. */
static int shortest_digits(double d, char dig[20], int *exp10)
{
	char buf[40];
	int lo = 1, hi = 17, k = 0;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		snprintf(buf, sizeof(buf), "%.*e", mid - 1, d);
		if (strtod(buf, NULL) == d)
			hi = mid;
		else
			lo = mid + 1;
	}
	snprintf(buf, sizeof(buf), "%.*e", lo - 1, d);
	/* "d.ddde±XX" */
	for (const char *c = buf; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			dig[k++] = *c;
	dig[k] = '\0';
	*exp10 = atoi(strchr(buf, 'e') + 1);
	return k;
}

size_t mcpx_json_number(double d, char buf[MCPX_JSON_NUMBER_MAX])
{
	const char *sign = signbit(d) ? "-" : "";
	char dig[20];
	int k, n, e, len;

	if (!isfinite(d))
		return (size_t)snprintf(buf, MCPX_JSON_NUMBER_MAX, "null");
	d = signbit(d) ? -d : d;
	/* The common case, an integer a double holds exactly (zeros too). */
	if (d < 9007199254740992.0 && d == (double)(int64_t)d)
		return (size_t)snprintf(buf, MCPX_JSON_NUMBER_MAX, "%s%lld", sign, (long long)d);
	k = shortest_digits(d, dig, &e);
	/* ECMAScript's Number::toString: n is the position of the decimal
	 * point relative to the digits (value = 0.dig x 10^n). */
	n = e + 1;
	if (k <= n && n <= 21)
		len = snprintf(buf, MCPX_JSON_NUMBER_MAX, "%s%s%.*s", sign, dig, n - k,
		               "000000000000000000000");
	else if (0 < n && n <= 21)
		len = snprintf(buf, MCPX_JSON_NUMBER_MAX, "%s%.*s.%s", sign, n, dig, dig + n);
	else if (-6 < n && n <= 0)
		len = snprintf(buf, MCPX_JSON_NUMBER_MAX, "%s0.%.*s%s", sign, -n, "000000", dig);
	else
		len =
		    snprintf(buf, MCPX_JSON_NUMBER_MAX, "%s%c%s%.*se%c%d", sign, dig[0],
		             k > 1 ? "." : "", k - 1, dig + 1, n - 1 >= 0 ? '+' : '-', abs(n - 1));
	return (size_t)len;
}

/* ---- printing ---------------------------------------------------------- */

static int print_number(const cJSON *v, struct mcpx_buf *out)
{
	char text[MCPX_JSON_NUMBER_MAX];
	size_t n;

	/* The parsed text, while the node still holds the value it reads as
	 * (the same bits: -0 and 0 differ). */
	if (v->valuestring) {
		double d = strtod(v->valuestring, NULL);

		if (memcmp(&d, &v->valuedouble, sizeof(d)) == 0 ||
		    (isnan(d) && isnan(v->valuedouble)))
			return mcpx_buf_adds(out, v->valuestring);
	}
	n = mcpx_json_number(v->valuedouble, text);
	return mcpx_buf_add(out, text, n);
}

/* As cJSON's print_string_ptr: the two escapes JSON requires and the five
 * short ones for control characters, \u00XX for the other control
 * characters, every other byte as it is; a mark is \u0000. */
static int print_string(const char *s, struct mcpx_buf *out)
{
	const char *run = s;
	int rc = mcpx_buf_add(out, "\"", 1);

	for (; rc == 0 && s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		const char *e = NULL;

		switch (c) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		case MCPX_JSON_NUL_MARK:
			e = "\\u0000";
			break;
		default:
			if (c >= 0x20)
				continue;
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			e = esc;
		}
		rc = mcpx_buf_add(out, run, (size_t)(s - run));
		if (rc == 0)
			rc = mcpx_buf_adds(out, e);
		run = s + 1;
	}
	if (rc == 0 && s)
		rc = mcpx_buf_add(out, run, (size_t)(s - run));
	return rc ? rc : mcpx_buf_add(out, "\"", 1);
}

static int print_value(const cJSON *v, struct mcpx_buf *out);

/* An array's elements or an object's members between open and close. */
static int print_children(const cJSON *v, bool object, struct mcpx_buf *out)
{
	int rc = mcpx_buf_add(out, object ? "{" : "[", 1);

	for (const cJSON *c = v->child; rc == 0 && c; c = c->next) {
		if (c != v->child)
			rc = mcpx_buf_add(out, ",", 1);
		if (rc == 0 && object) {
			if (!c->string)
				return -EINVAL;
			rc = print_string(c->string, out);
			if (rc == 0)
				rc = mcpx_buf_add(out, ":", 1);
		}
		if (rc == 0)
			rc = print_value(c, out);
	}
	return rc ? rc : mcpx_buf_add(out, object ? "}" : "]", 1);
}

static int print_value(const cJSON *v, struct mcpx_buf *out)
{
	switch (v->type & 0xFF) {
	case cJSON_NULL:
		return mcpx_buf_adds(out, "null");
	case cJSON_False:
		return mcpx_buf_adds(out, "false");
	case cJSON_True:
		return mcpx_buf_adds(out, "true");
	case cJSON_Number:
		return print_number(v, out);
	case cJSON_String:
		return print_string(v->valuestring, out);
	case cJSON_Raw:
		return v->valuestring ? mcpx_buf_adds(out, v->valuestring) : -EINVAL;
	case cJSON_Array:
		return print_children(v, false, out);
	case cJSON_Object:
		return print_children(v, true, out);
	default:
		return -EINVAL;
	}
}

int mcpx_json_print_string(const char *s, struct mcpx_buf *out)
{
	return print_string(s, out);
}

int mcpx_json_print(const cJSON *v, struct mcpx_buf *out)
{
	return v ? print_value(v, out) : -EINVAL;
}

char *mcpx_json_print_exact(const cJSON *v)
{
	struct mcpx_buf b;

	/* The largest message any transport carries is far below this. */
	mcpx_buf_init(&b, (size_t)1 << 30);
	if (mcpx_json_print(v, &b) < 0) {
		mcpx_buf_free(&b);
		return NULL;
	}
	if (!b.data)
		return NULL;
	return mcpx_buf_take(&b, NULL);
}
