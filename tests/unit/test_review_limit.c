/*
 * test_review_limit.c - the TokenReview buckets: an address gets its burst,
 * then its rate; the total caps many addresses together; a refusal costs
 * nothing; idling never fills a bucket past its burst; IPv6 addresses of
 * one /64 share a bucket, IPv4-mapped ones are their IPv4 address; a
 * limited address is not forgotten when the table fills with new ones.
 */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "review_limit.h"

#define S 1000000ull /* one second in microseconds */

static int take_n(struct mcpx_review_limit *l, const char *addr, int n, uint64_t now)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += mcpx_review_limit_take(l, addr, now) == 0;
	return ok;
}

static void per_address(void)
{
	struct mcpx_review_limit l;
	uint64_t t = 1000 * S;

	mcpx_review_limit_init(&l, NULL, t);
	CHECK_INT(take_n(&l, "192.0.2.1", 100, t), MCPX_REVIEW_ADDR_BURST);
	CHECK_INT(mcpx_review_limit_take(&l, "192.0.2.1", t), -EAGAIN);
	CHECK_INT(take_n(&l, "192.0.2.2", 5, t), 5); /* another address */
	/* One second later: the rate's worth, no more. */
	CHECK_INT(take_n(&l, "192.0.2.1", 100, t + S), MCPX_REVIEW_ADDR_RATE);
	/* An hour idle: the burst again, never more (the cap holds). */
	CHECK_INT(take_n(&l, "192.0.2.1", 100, t + 3600 * S), MCPX_REVIEW_ADDR_BURST);
	/* The clock going backwards adds nothing. */
	CHECK_INT(mcpx_review_limit_take(&l, "192.0.2.1", t), -EAGAIN);
}

static void total(void)
{
	struct mcpx_review_limit l;
	char a[32];
	int ok = 0, busy = 0;
	uint64_t t = 5 * S;

	mcpx_review_limit_init(&l, NULL, t);
	for (int i = 0; i < 100; i++) {
		snprintf(a, sizeof(a), "198.51.100.%d", i);
		int rc = mcpx_review_limit_take(&l, a, t);
		ok += rc == 0;
		busy += rc == -EBUSY;
	}
	CHECK_INT(ok, MCPX_REVIEW_TOTAL_BURST);
	CHECK_INT(busy, 100 - MCPX_REVIEW_TOTAL_BURST);
	/* Refused by the total: the address paid nothing, its burst is whole. */
	CHECK_INT(take_n(&l, "198.51.100.99", 100, t + 100 * S), MCPX_REVIEW_ADDR_BURST);
	/* Re-reviews (no address) draw on the total only. */
	mcpx_review_limit_init(&l, NULL, t);
	CHECK_INT(take_n(&l, NULL, 100, t), MCPX_REVIEW_TOTAL_BURST);
	CHECK_INT(take_n(&l, NULL, 100, t + S / 2), MCPX_REVIEW_TOTAL_RATE / 2);
}

static void grouping(void)
{
	struct mcpx_review_limit l;
	struct mcpx_review_limit_opts o = {.addr_burst = 2, .addr_rate = 1};
	uint64_t t = S;

	mcpx_review_limit_init(&l, &o, t);
	CHECK_INT(take_n(&l, "2001:db8:1:2::1", 1, t), 1);
	CHECK_INT(take_n(&l, "2001:db8:1:2:ffff::9", 5, t), 1); /* the same /64 */
	CHECK_INT(take_n(&l, "2001:db8:1:3::1", 5, t), 2);      /* the next /64 */
	CHECK_INT(take_n(&l, "192.0.2.7", 1, t), 1);
	CHECK_INT(take_n(&l, "::ffff:192.0.2.7", 5, t), 1); /* mapped: the same */
	CHECK_INT(take_n(&l, "not an address", 1, t), 1);
	CHECK_INT(take_n(&l, "", 5, t), 1); /* every unparsable one shares */
}

static void table_full(void)
{
	struct mcpx_review_limit l;
	struct mcpx_review_limit_opts o = {.total_burst = 100000, .total_rate = 100000};
	char a[32];
	uint64_t t = S;

	mcpx_review_limit_init(&l, &o, t);
	CHECK_INT(take_n(&l, "203.0.113.1", 100, t), MCPX_REVIEW_ADDR_BURST);
	/* Every other slot taken by an address that is partly spent. */
	for (int i = 0; i < MCPX_REVIEW_ADDRS + 10; i++) {
		snprintf(a, sizeof(a), "10.%d.%d.1", i / 256, i % 256);
		(void)mcpx_review_limit_take(&l, a, t);
	}
	/* Still limited: it was not evicted to make room. */
	CHECK_INT(mcpx_review_limit_take(&l, "203.0.113.1", t), -EAGAIN);
	/* A new address with no room left is refused, not let through. */
	CHECK_INT(mcpx_review_limit_take(&l, "203.0.113.2", t), -EAGAIN);
	/* Once the others refilled, their slots are free again. */
	CHECK_INT(mcpx_review_limit_take(&l, "203.0.113.2", t + 60 * S), 0);
}

int main(void)
{
	per_address();
	total();
	grouping();
	table_full();
	CHECK_DONE();
}
