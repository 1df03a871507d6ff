/*
 * test_heap_trim.c - the heap's free pages go back to the kernel
 * (heap_trim.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "heap_trim.h"

/* Resident pages of this process (statm's second field), in KiB. */
static long rss_kb(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res * 4;
}

#define N 64
#define SIZE (48 * 1024) /* below the mmap threshold: on the heap */

static void test_trim(void)
{
	struct mcpx_heap_trim h = {0};
	char *keep[N], *last;
	long before, after;

	/* Little free memory: nothing to do. */
	(void)mcpx_heap_trim_now(&h);
	CHECK_INT(mcpx_heap_trim_now(&h), 0);
	/* 3 MiB touched, then freed except for one chunk at the top, which
	 * keeps glibc from trimming by itself. */
	for (int i = 0; i < N; i++) {
		keep[i] = malloc(SIZE);
		REQUIRE(keep[i]);
		memset(keep[i], 1, SIZE);
	}
	last = malloc(64);
	REQUIRE(last);
	for (int i = 0; i < N; i++)
		free(keep[i]);
	before = rss_kb();
	/* The first look sees a changed heap (a busy server): left alone. */
	CHECK_INT(mcpx_heap_trim_now(&h), 0);
	CHECK(rss_kb() >= before - 64);
	/* The same heap a second time: quiet, trimmed. */
	CHECK_INT(mcpx_heap_trim_now(&h), 1);
	after = rss_kb();
	CHECK_INT(h.trims, 1);
	CHECK(before - after >= 2048);
	CHECK_INT(mcpx_heap_trim_now(&h), 0);
	free(last);
}

int main(void)
{
	/* AddressSanitizer's allocator replaces glibc's heap: nothing of it
	 * for malloc_trim to give back. */
#ifdef __SANITIZE_ADDRESS__
	const bool asan = true;
#else
	const bool asan = false;
#endif
	if (asan) {
		printf("SKIP: built with AddressSanitizer (no glibc heap to trim)\n");
		return 77;
	}
	test_trim();
	CHECK_DONE();
}
