/*
 * maps.h - whether a library is mapped into this process (the tests of
 * the libraries the server loads on first use: test_curl_lib.c,
 * test_hiredis_lib.c).
 */
#ifndef MCPX_TEST_MAPS_H
#define MCPX_TEST_MAPS_H

#include <stdio.h>
#include <string.h>

/* 1 when a mapping's file name contains name, 0 when none does, -1 when
 * /proc/self/maps cannot be read. */
static inline int mapped(const char *name)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

#endif
