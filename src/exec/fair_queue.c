/*
 * fair_queue.c - per-caller accounting for the execution queue
 * (fair_queue.h).
 *
 * A flat array of callers, searched linearly: it holds the callers with a
 * run waiting or a bucket still refilling, a few dozen in practice; a
 * caller with neither is dropped when the array would otherwise grow.
 */
#include "fair_queue.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "caller.h"

struct share {
	char caller[MCPX_CALLER_MAX];
	size_t queued;
	uint64_t last_served;
	/* Token bucket: tokens as of bucket_us, for a rate of rpm, in units
	 * of RUN_U per run, so that refilling is exact integer arithmetic
	 * (rpm units per microsecond). rpm 0: no bucket yet. */
	uint64_t tokens_u;
	uint64_t bucket_us;
	unsigned rpm;
};

struct mcpx_fair {
	struct share *v;
	size_t n, cap;
	uint64_t clock; /* bumped per run served */
};

#define MINUTE_US 60000000ull
#define RUN_U MINUTE_US /* one run: a minute's worth of microseconds */

struct mcpx_fair *mcpx_fair_new(void)
{
	return calloc(1, sizeof(struct mcpx_fair));
}

void mcpx_fair_free(struct mcpx_fair *f)
{
	if (!f)
		return;
	free(f->v);
	free(f);
}

static struct share *find(const struct mcpx_fair *f, const char *caller)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->v[i].caller, caller) == 0)
			return &f->v[i];
	return NULL;
}

/* Tokens of s refilled up to now: rpm runs a minute, at most rpm held. */
static void refill(struct share *s, uint64_t now_us)
{
	uint64_t full = (uint64_t)s->rpm * RUN_U;

	if (now_us > s->bucket_us) {
		/* rpm runs a minute is rpm units a microsecond; past a minute
		 * the bucket is full anyway (and the product stays small). */
		uint64_t dt = now_us - s->bucket_us;
		uint64_t add = (dt < MINUTE_US ? dt : MINUTE_US) * s->rpm;

		s->tokens_u = s->tokens_u + add >= full ? full : s->tokens_u + add;
	}
	if (s->tokens_u > full)
		s->tokens_u = full;
	s->bucket_us = now_us;
}

/* Whether s can be forgotten: nothing queued and its bucket full again. */
static bool idle(struct share *s, uint64_t now_us)
{
	if (s->queued)
		return false;
	if (!s->rpm)
		return true;
	refill(s, now_us);
	return s->tokens_u >= (uint64_t)s->rpm * RUN_U;
}

static struct share *find_or_add(struct mcpx_fair *f, const char *caller, uint64_t now_us)
{
	struct share *s = find(f, caller);
	size_t kept = 0;

	if (s)
		return s;
	if (f->n == f->cap) {
		for (size_t i = 0; i < f->n; i++)
			if (!idle(&f->v[i], now_us))
				f->v[kept++] = f->v[i];
		f->n = kept;
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct share *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		f->v = v;
		f->cap = cap;
	}
	s = &f->v[f->n++];
	memset(s, 0, sizeof(*s));
	strncpy(s->caller, caller, sizeof(s->caller) - 1);
	return s;
}

int mcpx_fair_admit(struct mcpx_fair *f, const char *caller, unsigned max_queued,
                    unsigned runs_per_minute, uint64_t now_us, unsigned *retry_after_s)
{
	struct share *s = find_or_add(f, caller ? caller : "", now_us);

	if (!s)
		return -ENOMEM;
	if (max_queued && s->queued >= max_queued)
		return -EBUSY;
	if (!runs_per_minute) {
		s->rpm = 0;
		return 0;
	}
	if (s->rpm != runs_per_minute) {
		/* A new rate (a policy reload, or the first run): the bucket
		 * starts full, as a new caller's does. */
		s->rpm = runs_per_minute;
		s->tokens_u = (uint64_t)runs_per_minute * RUN_U;
		s->bucket_us = now_us;
	}
	refill(s, now_us);
	if (s->tokens_u < RUN_U) {
		uint64_t need_us = (RUN_U - s->tokens_u + s->rpm - 1) / s->rpm;

		*retry_after_s = (unsigned)((need_us + 999999u) / 1000000u);
		if (*retry_after_s == 0)
			*retry_after_s = 1;
		return -EAGAIN;
	}
	s->tokens_u -= RUN_U;
	return 0;
}

void mcpx_fair_enter(struct mcpx_fair *f, const char *caller)
{
	struct share *s = find(f, caller ? caller : "");

	if (s)
		s->queued++;
}

void mcpx_fair_leave(struct mcpx_fair *f, const char *caller)
{
	struct share *s = find(f, caller ? caller : "");

	if (s && s->queued)
		s->queued--;
}

uint64_t mcpx_fair_last_served(const struct mcpx_fair *f, const char *caller)
{
	const struct share *s = find(f, caller ? caller : "");

	return s ? s->last_served : 0;
}

void mcpx_fair_served(struct mcpx_fair *f, const char *caller)
{
	struct share *s = find(f, caller ? caller : "");

	if (s)
		s->last_served = ++f->clock;
}

size_t mcpx_fair_queued(const struct mcpx_fair *f, const char *caller)
{
	const struct share *s = find(f, caller ? caller : "");

	return s ? s->queued : 0;
}
