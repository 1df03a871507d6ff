/*
 * test_fair_queue.c - each caller's share of the queue: max_queued counts
 * waiting runs per caller (others unaffected), leaving the queue frees a
 * place, runs_per_minute is a bucket of that many runs refilled evenly with
 * a retry-after that says when the next one passes, a changed rate starts
 * a full bucket, the served-longest-ago order (round-robin), idle
 * callers forgotten without losing a busy one or a rate-limited one, and a
 * bucket that never holds more than its rate after idling.
 */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "fair_queue.h"

#define S 1000000ull /* one second in us */

static void test_max_queued(void)
{
	struct mcpx_fair *f = mcpx_fair_new();
	unsigned ra = 0;

	CHECK(f != NULL);
	for (int i = 0; i < 2; i++) {
		CHECK_INT(mcpx_fair_admit(f, "a", 2, 0, 0, &ra), 0);
		mcpx_fair_enter(f, "a");
	}
	CHECK_INT(mcpx_fair_admit(f, "a", 2, 0, 0, &ra), -EBUSY);
	CHECK_INT(mcpx_fair_admit(f, "b", 2, 0, 0, &ra), 0); /* another caller */
	CHECK_INT(mcpx_fair_queued(f, "a"), 2);
	mcpx_fair_leave(f, "a");
	CHECK_INT(mcpx_fair_admit(f, "a", 2, 0, 0, &ra), 0);
	/* No cap: any number. */
	for (int i = 0; i < 100; i++)
		mcpx_fair_enter(f, "c");
	CHECK_INT(mcpx_fair_admit(f, "c", 0, 0, 0, &ra), 0);
	mcpx_fair_free(f);
}

static void test_rate(void)
{
	struct mcpx_fair *f = mcpx_fair_new();
	unsigned ra = 0;
	uint64_t t = 1000 * S;

	/* 2 a minute: a burst of 2, then one each 30 s. */
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t, &ra), 0);
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t, &ra), 0);
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t, &ra), -EAGAIN);
	CHECK_INT(ra, 30);
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t + 20 * S, &ra), -EAGAIN);
	CHECK_INT(ra, 10);
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t + 30 * S, &ra), 0);
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t + 30 * S, &ra), -EAGAIN);
	/* Another caller has its own bucket. */
	CHECK_INT(mcpx_fair_admit(f, "b", 0, 2, t, &ra), 0);
	/* A new rate starts full. */
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 60, t + 30 * S, &ra), 0);
	/* A fast rate never says less than 1 s. */
	for (int i = 0; i < 59; i++)
		(void)mcpx_fair_admit(f, "a", 0, 60, t + 30 * S, &ra);
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 60, t + 30 * S, &ra), -EAGAIN);
	CHECK_INT(ra, 1);
	mcpx_fair_free(f);
}

/* The queue's pick: the queued run whose caller has the smallest stamp. */
static void test_round_robin(void)
{
	struct mcpx_fair *f = mcpx_fair_new();
	unsigned ra = 0;
	const char *queue[] = {"a", "a", "a", "b", "c"};

	for (size_t i = 0; i < 5; i++) {
		CHECK_INT(mcpx_fair_admit(f, queue[i], 0, 0, 0, &ra), 0);
		mcpx_fair_enter(f, queue[i]);
	}
	/* Never served: all 0, so the queue's order decides (a first). */
	CHECK_INT(mcpx_fair_last_served(f, "a"), 0);
	mcpx_fair_served(f, "a");
	CHECK(mcpx_fair_last_served(f, "a") > mcpx_fair_last_served(f, "b"));
	mcpx_fair_served(f, "b");
	mcpx_fair_served(f, "c");
	/* Now a was served longest ago. */
	CHECK(mcpx_fair_last_served(f, "a") < mcpx_fair_last_served(f, "b"));
	CHECK(mcpx_fair_last_served(f, "b") < mcpx_fair_last_served(f, "c"));
	mcpx_fair_free(f);
}

/* Many callers come and go: idle ones are forgotten, a waiting one is not. */
static void test_forget(void)
{
	struct mcpx_fair *f = mcpx_fair_new();
	unsigned ra = 0;
	char name[32];

	CHECK_INT(mcpx_fair_admit(f, "busy", 1, 0, 0, &ra), 0);
	mcpx_fair_enter(f, "busy");
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "caller-%d", i);
		CHECK_INT(mcpx_fair_admit(f, name, 1, 0, 0, &ra), 0);
	}
	CHECK_INT(mcpx_fair_queued(f, "busy"), 1);
	CHECK_INT(mcpx_fair_admit(f, "busy", 1, 0, 0, &ra), -EBUSY);
	mcpx_fair_free(f);
}

/* However long a caller idles, its bucket holds runs_per_minute runs, no
 * more: an hour away buys a burst of 2, not of 120. */
static void test_cap_after_idle(void)
{
	struct mcpx_fair *f = mcpx_fair_new();
	unsigned ra = 0;
	uint64_t t = 1000 * S;
	int passed = 0;

	/* One of two spent: the other stays, and the refill stops at 2. */
	CHECK_INT(mcpx_fair_admit(f, "a", 0, 2, t, &ra), 0);
	for (int i = 0; i < 10; i++)
		passed += mcpx_fair_admit(f, "a", 0, 2, t + 3600 * S, &ra) == 0;
	CHECK_INT(passed, 2);
	CHECK_INT(ra, 30);
	/* The same from 0 left, and a minute and a half later (more than one
	 * minute's refill): 2 again. */
	passed = 0;
	for (int i = 0; i < 10; i++)
		passed += mcpx_fair_admit(f, "a", 0, 2, t + 3690 * S, &ra) == 0;
	CHECK_INT(passed, 2);
	mcpx_fair_free(f);
}

/* A caller that is rate-limited with nothing queued is not idle: when the
 * table fills with other callers it is kept, so forgetting it cannot hand
 * it a fresh, full bucket. */
static void test_limited_not_forgotten(void)
{
	struct mcpx_fair *f = mcpx_fair_new();
	unsigned ra = 0;
	uint64_t t = 1000 * S;
	char name[32];

	CHECK_INT(mcpx_fair_admit(f, "limited", 0, 2, t, &ra), 0);
	CHECK_INT(mcpx_fair_admit(f, "limited", 0, 2, t, &ra), 0);
	CHECK_INT(mcpx_fair_admit(f, "limited", 0, 2, t, &ra), -EAGAIN);
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "caller-%d", i);
		CHECK_INT(mcpx_fair_admit(f, name, 0, 0, t + 1, &ra), 0);
	}
	CHECK_INT(mcpx_fair_admit(f, "limited", 0, 2, t + 2, &ra), -EAGAIN);
	CHECK_INT(ra, 30);
	mcpx_fair_free(f);
}

int main(void)
{
	test_max_queued();
	test_rate();
	test_round_robin();
	test_forget();
	test_cap_after_idle();
	test_limited_not_forgotten();
	CHECK_DONE();
}
