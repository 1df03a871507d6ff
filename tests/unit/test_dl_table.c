/*
 * test_dl_table.c - a library loaded into a table (dl_table.h): every
 * function found, or false: a missing library or a missing function says
 * so (the feature then reports itself absent and uses no slot).
 */
#include <stddef.h>

#include "check.h"
#include "dl_table.h"

static void test_found(void)
{
	static const char *const names[] = {"zlibVersion", "crc32"};
	void *a = NULL, *b = NULL;
	void **const slots[] = {&a, &b};

	CHECK(mcpx_dl_table_load("libz.so.1", names, slots, 2, "nothing"));
	CHECK(a != NULL && b != NULL && a != b);
}

static void test_missing_library(void)
{
	static const char *const names[] = {"zlibVersion"};
	void *a = NULL;
	void **const slots[] = {&a};

	CHECK(!mcpx_dl_table_load("libmcpx-absent.so.9", names, slots, 1, "nothing"));
	CHECK(a == NULL);
}

static void test_missing_function(void)
{
	static const char *const names[] = {"mcpx_no_such_function", "zlibVersion"};
	void *a = NULL, *b = NULL;
	void **const slots[] = {&a, &b};

	CHECK(!mcpx_dl_table_load("libz.so.1", names, slots, 2, "nothing"));
	CHECK(a == NULL && b == NULL);
}

int main(void)
{
	test_found();
	test_missing_library();
	test_missing_function();
	CHECK_DONE();
}
