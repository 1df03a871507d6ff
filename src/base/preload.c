/*
 * preload.c - the MCP_EXEC_PRELOAD list (preload.h): its syntax, and what
 * "auto" resolves to. It only checks names; importing them is the warm
 * interpreter's business (src/zygote/interp.c).
 */
#include "preload.h"

#include <string.h>

bool mcpx_preload_valid(const char *csv)
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

const char *mcpx_preload_list(const char *configured, bool fork_server)
{
	if (strcmp(configured, MCPX_PRELOAD_AUTO) != 0)
		return configured;
	return fork_server ? MCPX_PRELOAD_FORK : MCPX_PRELOAD_FRESH;
}
