/*
 * hex.c - hexadecimal digits (hex.h). Nothing else: no encoding, no
 * locale (isxdigit's answer depends on it).
 */
#include "hex.h"

int mcpx_hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
