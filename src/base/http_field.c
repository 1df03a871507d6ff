/*
 * http_field.c - HTTP field values (http_field.h). It does not parse
 * lists, quoted strings or parameters: the callers know their fields.
 */
#include "http_field.h"

void mcpx_http_trim(const char **p, size_t *len)
{
	const char *s = *p;
	size_t n = *len;

	if (!s) {
		*len = 0;
		return;
	}
	while (n > 0 && (s[0] == ' ' || s[0] == '\t'))
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*p = s;
	*len = n;
}

void mcpx_http_chomp(const char *p, size_t *len)
{
	if (*len && p[*len - 1] == '\n')
		(*len)--;
	if (*len && p[*len - 1] == '\r')
		(*len)--;
}
