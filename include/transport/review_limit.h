/*
 * review_limit.h - how many TokenReviews the server starts for peers it has
 * not authenticated yet: token buckets per client address and in total.
 *
 * Each review spends the pod's own API-server quota, so a peer that sends
 * fresh JWT-shaped values as fast as it can must not turn each into one.
 * A bucket holds at most its burst and refills at its rate; a review
 * starts only when both its address's bucket and the total one hold a
 * token, and then takes one from each (a refused request takes none).
 *
 * Addresses are grouped as one peer controls them: an IPv4 address (or an
 * IPv4-mapped IPv6 one) on its own, an IPv6 address by its /64, the
 * smallest block a site is given. The table of addresses is fixed: an
 * entry whose bucket has refilled is the same as no entry and is reused,
 * so a limited address is never forgotten to make room. Entries are only
 * made by reviews that start, at most the total rate, so with the
 * defaults at most total_burst + total_rate * addr_burst / addr_rate = 130
 * are ever partly empty; if the table is still full a new address is
 * refused (-EAGAIN), never let through unmetered.
 *
 * Pure: time is handed in, nothing is logged. Not thread-safe (the loop's).
 */
#ifndef MCPX_REVIEW_LIMIT_H
#define MCPX_REVIEW_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* The documented defaults (docs/security.md). */
#define MCPX_REVIEW_ADDR_RATE 5    /* reviews per second per address */
#define MCPX_REVIEW_ADDR_BURST 20  /* ... and at once */
#define MCPX_REVIEW_TOTAL_RATE 20  /* reviews per second in total */
#define MCPX_REVIEW_TOTAL_BURST 50 /* ... and at once */
#define MCPX_REVIEW_ADDRS 256      /* addresses remembered while refilling */

struct mcpx_review_limit_opts {
	unsigned addr_rate, addr_burst, total_rate, total_burst; /* 0: the default */
};

struct mcpx_review_bucket {
	uint64_t tokens_u; /* tokens in millionths, as of at_us */
	uint64_t at_us;
};

struct mcpx_review_addr {
	uint8_t key[16];
	bool used;
	struct mcpx_review_bucket b;
};

struct mcpx_review_limit {
	struct mcpx_review_limit_opts o;
	struct mcpx_review_bucket total;
	struct mcpx_review_addr addrs[MCPX_REVIEW_ADDRS];
};

/* Full buckets; o may be NULL (the defaults). */
void mcpx_review_limit_init(struct mcpx_review_limit *l, const struct mcpx_review_limit_opts *o,
                            uint64_t now_us);

/* May a review start now for a peer at addr (the address as text, as the
 * server got it: "192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1"; one that
 * does not parse shares one bucket with every other such)? NULL: no
 * address bucket (a review of a token already admitted). 0: yes, and both
 * buckets paid; -EAGAIN: the address is past its rate (or the table is
 * full of addresses that are); -EBUSY: past the total rate. */
int mcpx_review_limit_take(struct mcpx_review_limit *l, const char *addr, uint64_t now_us);

#endif
