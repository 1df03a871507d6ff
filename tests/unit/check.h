/*
 * check.h - the unit tests' assertion macros, in the spirit of libuv's
 * test/task.h: a failed check prints where and what, and the test exits 1.
 */
#ifndef MCPX_CHECK_H
#define MCPX_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			check_failures++;                                                  \
		}                                                                          \
	} while (0)

#define CHECK_STR(a, b)                                                                    \
	do {                                                                               \
		const char *a_ = (a), *b_ = (b);                                           \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                   \
			fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" != \"%s\"\n", __FILE__, \
				__LINE__, a_ ? a_ : "(null)", b_ ? b_ : "(null)");        \
			check_failures++;                                                  \
		}                                                                          \
	} while (0)

#define CHECK_INT(a, b)                                                                    \
	do {                                                                               \
		long long a_ = (long long)(a), b_ = (long long)(b);                        \
		if (a_ != b_) {                                                            \
			fprintf(stderr, "%s:%d: CHECK_INT failed: %s = %lld, expected %lld\n", \
				__FILE__, __LINE__, #a, a_, b_);                           \
			check_failures++;                                                  \
		}                                                                          \
	} while (0)

/* A check whose failure leaves nothing to test (a NULL pointer, a process
 * that was never started, a server that never became ready): reported like
 * CHECK, then the calling test function returns, so the binary does not
 * crash on what follows and the other tests still run. For void test
 * functions. */
#define REQUIRE(cond)                                                                      \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s (rest of %s skipped)\n",     \
				__FILE__, __LINE__, #cond, __func__);                      \
			check_failures++;                                                  \
			return;                                                            \
		}                                                                          \
	} while (0)

#define REQUIRE_INT(a, b)                                                                  \
	do {                                                                               \
		long long a_ = (long long)(a), b_ = (long long)(b);                        \
		if (a_ != b_) {                                                            \
			fprintf(stderr,                                                    \
				"%s:%d: REQUIRE_INT failed: %s = %lld, expected %lld (rest of " \
				"%s skipped)\n",                                           \
				__FILE__, __LINE__, #a, a_, b_, __func__);                 \
			check_failures++;                                                  \
			return;                                                            \
		}                                                                          \
	} while (0)

#define CHECK_DONE()                                                                       \
	do {                                                                               \
		if (check_failures) {                                                      \
			fprintf(stderr, "%d check(s) failed\n", check_failures);           \
			return 1;                                                          \
		}                                                                          \
		printf("ok\n");                                                            \
		return 0;                                                                  \
	} while (0)

#endif
