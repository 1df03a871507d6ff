/*
 * warm.c - the warm interpreter's side of the protocol in C: which preload
 * lists are valid, and the fixed-size header that hands a run its code.
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

bool mcpx_warm_preload_valid(const char *csv)
{
	const char *p = csv;
	bool start = true;

	for (; *p; p++) {
		char c = *p;
		if (c == ',' || c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (!start && c >= '0' && c <= '9')) {
			start = false;
			continue;
		}
		return false;
	}
	return !start || p == csv;
}

const char *mcpx_warm_preload_list(const char *configured, bool fork_server)
{
	if (strcmp(configured, MCPX_WARM_PRELOAD_AUTO) != 0)
		return configured;
	return fork_server ? MCPX_WARM_PRELOAD_FORK : MCPX_WARM_PRELOAD_FRESH;
}

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
