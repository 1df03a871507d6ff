/*
 * test_hiredis_lib.c - libhiredis loaded on first use (hiredis_lib.h): not
 * mapped before, every function found after, and a connection made through
 * the wrappers fails the way hiredis says (nothing listens on port 1).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hiredis_lib.h"

/* Whether a library whose file name contains name is mapped here. */
static int mapped(const char *name)
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

static void test_lazy(void)
{
	/* This test links what the binaries link: were hiredis linked, it
	 * would be mapped before any call. */
	CHECK(mapped("libhiredis") == 0);
	CHECK(!mcpx_hiredis_loaded());
	REQUIRE(mcpx_hiredis_available());
	CHECK(mcpx_hiredis_loaded());
	CHECK(mapped("libhiredis") == 1);
	/* Once: a second call loads nothing more and says the same. */
	CHECK(mcpx_hiredis_available());
}

static void test_calls(void)
{
	redisAsyncContext *ac = mcpx_redisAsyncConnect("127.0.0.1", 1);
	const char *argv[] = {"PING"};
	size_t lens[] = {4};

	/* A non-blocking connect: the context exists, the refusal comes on
	 * the first write. */
	REQUIRE(ac);
	CHECK_INT(ac->err, 0);
	CHECK_INT(mcpx_redisAsyncCommandArgv(ac, NULL, NULL, 1, argv, lens), REDIS_OK);
	CHECK_INT(mcpx_redisAsyncSetConnectCallback(ac, NULL), REDIS_OK);
	mcpx_redisAsyncFree(ac);
}

int main(void)
{
	test_lazy();
	test_calls();
	CHECK_DONE();
}
