/*
 * jsonschema_budget.c - the CPU-time budget of one validation: a deadline
 * on this thread's CPU clock (the monotonic clock where there is none),
 * read only every few checks, and once spent, spent for good. The
 * validator's walk (jsonschema_validate.c) and a pattern's match
 * (jsonschema_pattern.c, through PCRE2's callouts) both spend it.
 *
 * It stops nothing itself: the callers look and give up.
 */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "jsonschema_internal.h"

/* How often (in checks) the CPU clock is actually read. */
#define BUDGET_STRIDE 64

void mcpx_schema_budget_start(struct schema_budget *b, unsigned ms)
{
	memset(b, 0, sizeof(*b));
	b->clock = CLOCK_THREAD_CPUTIME_ID;
	if (clock_gettime(b->clock, &b->deadline) != 0) {
		b->clock = CLOCK_MONOTONIC;
		clock_gettime(b->clock, &b->deadline);
	}
	b->deadline.tv_sec += ms / 1000;
	b->deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (b->deadline.tv_nsec >= 1000000000L) {
		b->deadline.tv_sec++;
		b->deadline.tv_nsec -= 1000000000L;
	}
}

bool mcpx_schema_budget_over(struct schema_budget *b)
{
	struct timespec now;

	if (b->expired || ++b->ticks % BUDGET_STRIDE != 0)
		return b->expired;
	if (clock_gettime(b->clock, &now) != 0 || now.tv_sec > b->deadline.tv_sec ||
	    (now.tv_sec == b->deadline.tv_sec && now.tv_nsec >= b->deadline.tv_nsec))
		b->expired = true;
	return b->expired;
}
