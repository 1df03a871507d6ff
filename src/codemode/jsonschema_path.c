/*
 * jsonschema_path.c - the JSON pointer (RFC 6901) of where the validator
 * is, in the schema while compiling or in the instance while validating.
 *
 * Segments point into the cJSON tree being walked (nothing is copied while
 * walking); the text is produced only when a message needs it. Keys are
 * escaped as RFC 6901 says ("~" as "~0", "/" as "~1"); no URI
 * percent-encoding is applied, since the pointer is shown to people, not
 * used in a URI. The walkers bound their depth, so the stack never fills;
 * a push on a full stack is ignored rather than written out of bounds.
 * Every message passes mcpx_schema_text_fit, which leaves it valid UTF-8
 * whatever bytes the schema or the instance's keys hold; a refusal of a
 * schema is "<pointer>: <reason>" (mcpx_schema_fail_at).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "jsonschema_internal.h"
#include "utf8.h"

void mcpx_schema_path_key(struct schema_path *p, const char *key)
{
	if (p->n < SCHEMA_PATH_MAX) {
		p->seg[p->n].key = key ? key : "";
		p->seg[p->n].index = 0;
	}
	p->n++;
}

void mcpx_schema_path_index(struct schema_path *p, size_t index)
{
	if (p->n < SCHEMA_PATH_MAX) {
		p->seg[p->n].key = NULL;
		p->seg[p->n].index = index;
	}
	p->n++;
}

void mcpx_schema_path_pop(struct schema_path *p)
{
	if (p->n > 0)
		p->n--;
}

size_t mcpx_schema_utf8_cut(char *s, size_t len, size_t max)
{
	size_t lead, need;
	unsigned char c;

	if (len > max)
		len = max;
	/* Find where the last character starts; drop it when the bytes it
	 * announces are not all there. */
	lead = len;
	while (lead > 0 && len - lead < 4 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
		lead--;
	if (lead > 0) {
		c = (unsigned char)s[lead - 1];
		need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (len - (lead - 1) < need)
			len = lead - 1;
	}
	s[len] = '\0';
	return len;
}

/* Each byte of an ill-formed UTF-8 sequence in s becomes '?', in place
 * (no growth, so nothing is cut again). The parser's U+0000 mark
 * (jsonrpc.h) stays: the printer writes it as \u0000. Keys, names and
 * values in messages come from the schema and the instance as they are,
 * and a schema built by code need not be UTF-8. */
static void text_clean(char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = mcpx_utf8_next(s + i, len - i, &cp);

		if (cp == 0xFFFD && !(n == 3 && memcmp(s + i, "\xEF\xBF\xBD", 3) == 0))
			for (size_t k = i; k < i + n; k++)
				if ((unsigned char)s[k] != MCPX_JSON_NUL_MARK)
					s[k] = '?';
		i += n;
	}
}

size_t mcpx_schema_text_fit(char *s, size_t len, size_t size)
{
	if (len < size) {
		s[len] = '\0';
	} else if (size < 4) {
		len = mcpx_schema_utf8_cut(s, size - 1, size - 1);
	} else {
		len = mcpx_schema_utf8_cut(s, size - 4, size - 4);
		memcpy(s + len, "...", 4);
		len += 3;
	}
	text_clean(s, len);
	return len;
}

/* Appends one escaped key; returns 0, or -1 when out of room. */
static int put_key(char *out, size_t size, size_t *len, const char *key)
{
	for (; *key; key++) {
		const char *rep = *key == '~' ? "~0" : *key == '/' ? "~1" : NULL;
		size_t n = rep ? 2 : 1;

		if (*len + n >= size)
			return -1;
		memcpy(out + *len, rep ? rep : key, n);
		*len += n;
	}
	return 0;
}

size_t mcpx_schema_path_format(const struct schema_path *p, char *out, size_t size)
{
	unsigned n = p->n < SCHEMA_PATH_MAX ? p->n : SCHEMA_PATH_MAX;
	size_t len = 0;

	if (size == 0)
		return 0;
	if (n == 0)
		return mcpx_schema_text_fit(out, (size_t)snprintf(out, size, "(root)"), size);
	for (unsigned i = 0; i < n; i++) {
		int w = 0;

		if (len + 1 >= size)
			return mcpx_schema_text_fit(out, size, size);
		out[len++] = '/';
		if (p->seg[i].key)
			w = put_key(out, size, &len, p->seg[i].key);
		else if ((w = snprintf(out + len, size - len, "%zu", p->seg[i].index)) >= 0 &&
		         (size_t)w < size - len)
			len += (size_t)w, w = 0;
		if (w != 0) /* out of room: say so, on a character boundary */
			return mcpx_schema_text_fit(out, size, size);
	}
	out[len] = '\0';
	return len;
}

/* "<where>: <message>" into err, cut at a character boundary; -EINVAL. */
int mcpx_schema_vfail_at(struct mcpx_err *err, const char *where, const char *fmt, va_list ap)
{
	char what[sizeof(err->msg)], msg[sizeof(err->msg)], ptr[sizeof(err->msg)];
	size_t wlen, room;
	int n;

	/* The pointer is given whole whenever it fits beside the reason; a
	 * pointer too long for the buffer is cut (with "...") so that at
	 * least the first half of the buffer's worth of reason stays. */
	room =
	    strlen(where) + 2 < sizeof(msg) / 2 ? sizeof(msg) - strlen(where) - 2 : sizeof(msg) / 2;
	n = vsnprintf(what, sizeof(what), fmt, ap);
	wlen = mcpx_schema_text_fit(what, n < 0 ? 0 : (size_t)n, room);
	room = sizeof(msg) - wlen - 2;
	n = snprintf(ptr, sizeof(ptr), "%s", where);
	mcpx_schema_text_fit(ptr, n < 0 ? 0 : (size_t)n, room);
	n = snprintf(msg, sizeof(msg), "%s: %s", ptr, what);
	mcpx_schema_text_fit(msg, n < 0 ? 0 : (size_t)n, sizeof(msg));
	return mcpx_err_set(err, EINVAL, "%s", msg);
}

int mcpx_schema_fail_at(struct mcpx_err *err, const char *where, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = mcpx_schema_vfail_at(err, where, fmt, ap);
	va_end(ap);
	return rc;
}
