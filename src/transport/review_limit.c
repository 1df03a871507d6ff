/*
 * review_limit.c - token buckets for TokenReviews, per client address and
 * in total (review_limit.h).
 *
 * Tokens are counted in millionths so that rates below one per microsecond
 * refill exactly in integers; a bucket is refilled when it is looked at, and
 * never past its burst however long it idled.
 */
#include "review_limit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#define UNIT 1000000ull /* one token */

static unsigned or_default(unsigned v, unsigned d)
{
	return v ? v : d;
}

void mcpx_review_limit_init(struct mcpx_review_limit *l, const struct mcpx_review_limit_opts *o,
                            uint64_t now_us)
{
	memset(l, 0, sizeof(*l));
	if (o)
		l->o = *o;
	l->o.addr_rate = or_default(l->o.addr_rate, MCPX_REVIEW_ADDR_RATE);
	l->o.addr_burst = or_default(l->o.addr_burst, MCPX_REVIEW_ADDR_BURST);
	l->o.total_rate = or_default(l->o.total_rate, MCPX_REVIEW_TOTAL_RATE);
	l->o.total_burst = or_default(l->o.total_burst, MCPX_REVIEW_TOTAL_BURST);
	l->total.tokens_u = l->o.total_burst * UNIT;
	l->total.at_us = now_us;
}

/* The bucket's tokens as of now: what it held plus its rate since, capped
 * at its burst. A clock that went backwards adds nothing. */
static uint64_t level(const struct mcpx_review_bucket *b, unsigned rate, unsigned burst,
                      uint64_t now_us)
{
	uint64_t full = burst * UNIT, dt = now_us > b->at_us ? now_us - b->at_us : 0;

	/* rate * dt tokens-in-millionths per microsecond: UNIT cancels. Past
	 * burst / rate seconds the bucket is full anyway (and the product
	 * stays far from overflowing). */
	if (dt >= (uint64_t)burst * UNIT / rate)
		return full;
	return b->tokens_u + rate * dt >= full ? full : b->tokens_u + rate * dt;
}

/* The key of the peer: IPv4 (mapped) whole, IPv6 by its /64; anything
 * else one shared all-ones key. */
static void addr_key(const char *addr, uint8_t key[16])
{
	struct in_addr v4;
	struct in6_addr v6;

	memset(key, 0, 16);
	if (inet_pton(AF_INET, addr, &v4) == 1) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &v4, 4);
	} else if (inet_pton(AF_INET6, addr, &v6) == 1) {
		memcpy(key, &v6, 16);
		if (!IN6_IS_ADDR_V4MAPPED(&v6))
			memset(key + 8, 0, 8);
	} else {
		memset(key, 0xff, 16);
	}
}

/* addr's entry, or a free one (unused, or refilled: the same as none),
 * or NULL when every entry is a limited address. */
static struct mcpx_review_addr *addr_slot(struct mcpx_review_limit *l, const uint8_t key[16],
                                          uint64_t now_us)
{
	struct mcpx_review_addr *spare = NULL;
	uint64_t full = l->o.addr_burst * UNIT;

	for (size_t i = 0; i < MCPX_REVIEW_ADDRS; i++) {
		struct mcpx_review_addr *a = &l->addrs[i];

		if (a->used && memcmp(a->key, key, 16) == 0)
			return a;
		if (!spare &&
		    (!a->used || level(&a->b, l->o.addr_rate, l->o.addr_burst, now_us) >= full))
			spare = a;
	}
	if (spare) {
		memcpy(spare->key, key, 16);
		spare->used = true;
		spare->b.tokens_u = full;
		spare->b.at_us = now_us;
	}
	return spare;
}

int mcpx_review_limit_take(struct mcpx_review_limit *l, const char *addr, uint64_t now_us)
{
	struct mcpx_review_addr *a = NULL;
	uint64_t have_a = 0, have_t;
	uint8_t key[16];

	if (addr) {
		addr_key(addr, key);
		a = addr_slot(l, key, now_us);
		if (!a)
			return -EAGAIN;
		have_a = level(&a->b, l->o.addr_rate, l->o.addr_burst, now_us);
		if (have_a < UNIT)
			return -EAGAIN;
	}
	have_t = level(&l->total, l->o.total_rate, l->o.total_burst, now_us);
	if (have_t < UNIT)
		return -EBUSY;
	if (a) {
		a->b.tokens_u = have_a - UNIT;
		a->b.at_us = now_us;
	}
	l->total.tokens_u = have_t - UNIT;
	l->total.at_us = now_us;
	return 0;
}
