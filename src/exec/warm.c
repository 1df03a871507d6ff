/*
 * warm.c - the warm interpreter's side of the protocol in C: the fixed-size
 * header that hands a run its code.
 *
 * A warm interpreter is the mcp-exec-zygote binary (src/zygote/): the fork
 * server's child, or in after-reap mode the binary itself, started through
 * the cold path's setup. Both write one NUL byte when ready, then read the
 * header and the code from stdin. This file is shared by the server (which
 * writes the header) and the zygote (which parses it).
 */
#include "warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t mcpx_warm_header(char *buf, size_t len, size_t code_len, unsigned cpu_s)
{
	int n = snprintf(buf, len, "%020zu %010u\n", code_len, cpu_s);
	return n == MCPX_WARM_HEADER_LEN && (size_t)n < len ? (size_t)n : 0;
}

int mcpx_warm_header_parse(const char *hdr, size_t *code_len, unsigned *cpu_s)
{
	char tmp[MCPX_WARM_HEADER_LEN + 1], *end;
	unsigned long long n;
	unsigned long c;

	memcpy(tmp, hdr, MCPX_WARM_HEADER_LEN);
	tmp[MCPX_WARM_HEADER_LEN] = '\0';
	if (tmp[20] != ' ' || tmp[31] != '\n')
		return -1;
	n = strtoull(tmp, &end, 10);
	if (end != tmp + 20)
		return -1;
	c = strtoul(tmp + 21, &end, 10);
	if (end != tmp + 31 || c > 0xffffffffUL)
		return -1;
	*code_len = (size_t)n;
	*cpu_s = (unsigned)c;
	return 0;
}
