/*
 * test_hiredis_lib.c - libhiredis loaded on first use (hiredis_lib.h): not
 * mapped before, mapped after, and the wrappers reach hiredis (a context
 * for port 1, where nothing listens, made, given a command and freed).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hiredis_lib.h"
#include "maps.h"

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
