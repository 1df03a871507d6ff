/*
 * store_lease.c - leases taken, waited for and kept (store.h).
 *
 * A hold tries to acquire the lease; while another owner has it, the hold
 * polls: after 25 ms, doubling to at most 250 ms, never later than the
 * holder's lease would end, until its wait runs out. A release in this
 * store instance wakes the local holds waiting on that key at once; holders
 * on other replicas are only polled (there is no notification between
 * replicas, and the backends would need one of their own for it).
 *
 * A held lease is renewed every ttl/3. It is valid, as far as this replica
 * can know, until ttl after the start of the last renewal the store
 * accepted; a renewal refused (-ENOLCK: it lapsed or was taken) or no
 * renewal accepted before that point tells the holder it is lost.
 *
 * What it does not do: decide lease semantics in the store (the backends
 * acquire, renew and release with an owner check), or order waiters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_internal.h"

#define POLL_FIRST_MS 25u
#define POLL_MAX_MS 250u

struct mcpx_store_hold {
	struct mcpx_store *s;
	struct mcpx_store_op *op;      /* the caller's */
	struct mcpx_store_op *attempt; /* an acquire in flight */
	char owner[MCPX_STORE_OWNER_MAX + 1];
	uint32_t ttl_ms;
	bool one_try;
	uint64_t deadline_us;
	uint64_t attempt_us;
	uint32_t backoff_ms;
	int failed; /* an attempt could not be made: told from the timer */
	struct mcpx_timer retry;
	mcpx_store_lost_fn lost;
	void *lost_arg;
	struct mcpx_store_hold *prev, *next;
};

struct mcpx_store_lease {
	struct mcpx_store *s;
	struct mcpx_store_skey key;
	char owner[MCPX_STORE_OWNER_MAX + 1];
	uint32_t ttl_ms;
	uint64_t valid_until_us; /* monotonic */
	uint64_t renew_at_us;
	uint64_t renew_started_us;
	struct mcpx_store_op *renewing;
	struct mcpx_timer timer;
	mcpx_store_lost_fn lost;
	void *lost_arg;
	bool is_lost;
	struct mcpx_store_lease *prev, *next;
};

static void hold_unlink(struct mcpx_store_hold *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		h->s->holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
}

static void lease_unlink(struct mcpx_store_lease *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		l->s->leases = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

static bool same_key(const struct mcpx_store_skey *a, const struct mcpx_store_skey *b)
{
	return strcmp(a->caller, b->caller) == 0 && strcmp(a->kind, b->kind) == 0 &&
	       strcmp(a->name, b->name) == 0;
}

/* Renewals. */

static void lease_schedule(struct mcpx_store_lease *l);

static void lease_tell_lost(struct mcpx_store_lease *l, int reason)
{
	if (l->is_lost)
		return;
	l->is_lost = true;
	mcpx_timer_cancel(&l->timer);
	if (l->renewing) {
		mcpx_store_op_cancel(l->renewing);
		l->renewing = NULL;
	}
	mcpx_warn("store: a lease of kind %s was lost (%s)", l->key.kind,
	          reason == -ENOLCK ? "it lapsed or was taken" : "the store did not renew it");
	/* Last: the holder may end the lease from inside. */
	if (l->lost)
		l->lost(l->lost_arg, l, reason);
}

static void renew_cb(struct mcpx_store_op *op, struct mcpx_store_result *res)
{
	struct mcpx_store_lease *l = op->internal_arg;
	uint64_t now = mcpx_now_us();

	l->renewing = NULL;
	if (res->rc == -ENOLCK) {
		lease_tell_lost(l, -ENOLCK);
		return;
	}
	if (res->rc == 0) {
		l->valid_until_us = l->renew_started_us + (uint64_t)l->ttl_ms * 1000u;
		l->renew_at_us = l->renew_started_us + (uint64_t)l->ttl_ms * 1000u / 3;
	} else {
		/* The store is down or slow: try again soon, while the
		 * lease may still be ours. */
		l->renew_at_us = now + (uint64_t)l->ttl_ms * 1000u / 10;
	}
	lease_schedule(l);
}

static void lease_tick(struct mcpx_timer *t)
{
	struct mcpx_store_lease *l = t->arg;
	uint64_t now = mcpx_now_us();
	struct mcpx_store_op *op;

	if (now >= l->valid_until_us) {
		lease_tell_lost(l, -ETIMEDOUT);
		return;
	}
	if (!l->renewing && now >= l->renew_at_us) {
		op = mcpx_store_op_internal(l->s, MCPX_OP_LEASE_RENEW, &l->key, renew_cb, l);
		if (op) {
			snprintf(op->owner, sizeof(op->owner), "%s", l->owner);
			op->ttl_ms = l->ttl_ms;
			l->renewing = op;
			l->renew_started_us = now;
			mcpx_store_op_start(op);
		} else {
			l->renew_at_us = now + (uint64_t)l->ttl_ms * 1000u / 10;
		}
	}
	lease_schedule(l);
}

static void lease_schedule(struct mcpx_store_lease *l)
{
	uint64_t now = mcpx_now_us();
	uint64_t at = l->valid_until_us;

	if (!l->renewing && l->renew_at_us < at)
		at = l->renew_at_us;
	mcpx_timer_start(l->s->loop, &l->timer, at > now ? at - now : 0);
}

const char *mcpx_store_lease_owner(const struct mcpx_store_lease *l)
{
	return l->owner;
}

static void release_cb(struct mcpx_store_op *op, struct mcpx_store_result *res)
{
	if (res->rc < 0 && res->rc != -ENOLCK && res->rc != -ESHUTDOWN)
		mcpx_warn("store: releasing a lease of kind %s failed (%s); it lapses by itself",
		          op->key.kind, res->error ? res->error : "?");
	if (!op->s->freeing)
		mcpx_store_holds_wake(op->s, &op->key);
}

void mcpx_store_lease_release_bg(struct mcpx_store *s, const struct mcpx_store_skey *key,
                                 const char *owner)
{
	struct mcpx_store_op *op =
	    mcpx_store_op_internal(s, MCPX_OP_LEASE_RELEASE, key, release_cb, NULL);

	if (!op) {
		mcpx_warn("store: out of memory releasing a lease; it lapses by itself");
		return;
	}
	snprintf(op->owner, sizeof(op->owner), "%s", owner);
	mcpx_store_op_start(op);
}

void mcpx_store_lease_end(struct mcpx_store_lease *l)
{
	struct mcpx_store *s;

	if (!l)
		return;
	s = l->s;
	lease_unlink(l);
	mcpx_timer_cancel(&l->timer);
	if (l->renewing)
		mcpx_store_op_cancel(l->renewing);
	if (!s->freeing)
		mcpx_store_lease_release_bg(s, &l->key, l->owner);
	free(l);
}

/* Holds. */

static void hold_finish(struct mcpx_store_hold *h, struct mcpx_store_result *res)
{
	struct mcpx_store_op *op = h->op;

	mcpx_timer_cancel(&h->retry);
	hold_unlink(h);
	free(h);
	mcpx_store_hold_deliver(op, res);
}

static struct mcpx_store_lease *lease_new(struct mcpx_store_hold *h)
{
	struct mcpx_store_lease *l = calloc(1, sizeof(*l));
	struct mcpx_store *s = h->s;

	if (!l)
		return NULL;
	l->s = s;
	l->key = h->op->key;
	memcpy(l->owner, h->owner, sizeof(l->owner));
	l->ttl_ms = h->ttl_ms;
	l->valid_until_us = h->attempt_us + (uint64_t)h->ttl_ms * 1000u;
	l->renew_at_us = h->attempt_us + (uint64_t)h->ttl_ms * 1000u / 3;
	l->lost = h->lost;
	l->lost_arg = h->lost_arg;
	l->timer.fn = lease_tick;
	l->timer.arg = l;
	l->next = s->leases;
	if (s->leases)
		s->leases->prev = l;
	s->leases = l;
	lease_schedule(l);
	return l;
}

static void hold_try(struct mcpx_store_hold *h);

static void attempt_cb(struct mcpx_store_op *op, struct mcpx_store_result *res)
{
	struct mcpx_store_hold *h = op->internal_arg;
	struct mcpx_store_result r;
	uint64_t now = mcpx_now_us(), delay;

	h->attempt = NULL;
	memset(&r, 0, sizeof(r));
	if (res->rc == 0) {
		if (!(r.lease = lease_new(h))) {
			mcpx_store_lease_release_bg(h->s, &op->key, h->owner);
			r.rc = -ENOMEM;
		}
		hold_finish(h, &r);
		return;
	}
	if (res->rc != -EBUSY || h->one_try || now >= h->deadline_us) {
		r.rc = res->rc == -EBUSY && !h->one_try ? -ETIMEDOUT : res->rc;
		r.error = r.rc == -ETIMEDOUT && res->rc == -EBUSY
		              ? "the lease is still held by another owner"
		              : res->error;
		memcpy(r.holder, res->holder, sizeof(r.holder));
		r.holder_ms_left = res->holder_ms_left;
		hold_finish(h, &r);
		return;
	}
	delay = h->backoff_ms;
	if (res->holder_ms_left >= 0 && (uint64_t)res->holder_ms_left + 1 < delay)
		delay = (uint64_t)res->holder_ms_left + 1;
	delay *= 1000u;
	if (now + delay > h->deadline_us)
		delay = h->deadline_us - now;
	h->backoff_ms = h->backoff_ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : h->backoff_ms * 2;
	mcpx_timer_start(h->s->loop, &h->retry, delay);
}

static void hold_try(struct mcpx_store_hold *h)
{
	struct mcpx_store_op *op =
	    mcpx_store_op_internal(h->s, MCPX_OP_LEASE_ACQUIRE, &h->op->key, attempt_cb, h);

	if (!op) {
		/* Told from the timer: never inside the caller's own call. */
		h->failed = -ENOMEM;
		mcpx_timer_start(h->s->loop, &h->retry, 0);
		return;
	}
	snprintf(op->owner, sizeof(op->owner), "%s", h->owner);
	op->ttl_ms = h->ttl_ms;
	h->attempt = op;
	h->attempt_us = mcpx_now_us();
	mcpx_store_op_start(op);
}

static void retry_cb(struct mcpx_timer *t)
{
	struct mcpx_store_hold *h = t->arg;
	struct mcpx_store_result r;

	if (h->failed) {
		memset(&r, 0, sizeof(r));
		r.rc = h->failed;
		hold_finish(h, &r);
	} else if (!h->attempt) {
		hold_try(h);
	}
}

int mcpx_store_hold_start(struct mcpx_store *s, struct mcpx_store_op *op, const char *owner,
                          uint32_t ttl_ms, uint32_t wait_ms, mcpx_store_lost_fn lost,
                          void *lost_arg)
{
	struct mcpx_store_hold *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->s = s;
	h->op = op;
	if (owner)
		snprintf(h->owner, sizeof(h->owner), "%s", owner);
	else
		snprintf(h->owner, sizeof(h->owner), "%s:%llu", s->instance_id,
		         (unsigned long long)++s->owner_seq);
	h->ttl_ms = ttl_ms;
	h->one_try = wait_ms == 0;
	h->deadline_us = mcpx_now_us() + (uint64_t)wait_ms * 1000u;
	h->backoff_ms = POLL_FIRST_MS;
	h->retry.fn = retry_cb;
	h->retry.arg = h;
	h->lost = lost;
	h->lost_arg = lost_arg;
	op->backend_private = h;
	h->next = s->holds;
	if (s->holds)
		s->holds->prev = h;
	s->holds = h;
	hold_try(h);
	return 0;
}

void mcpx_store_hold_cancel(struct mcpx_store_op *op)
{
	struct mcpx_store_hold *h = op->backend_private;

	if (!h)
		return;
	/* An acquire in flight that succeeds is released by the front. */
	if (h->attempt)
		mcpx_store_op_cancel(h->attempt);
	mcpx_timer_cancel(&h->retry);
	hold_unlink(h);
	free(h);
	op->backend_private = NULL;
}

void mcpx_store_holds_wake(struct mcpx_store *s, const struct mcpx_store_skey *key)
{
	for (struct mcpx_store_hold *h = s->holds; h; h = h->next)
		if (!h->attempt && same_key(&h->op->key, key))
			mcpx_timer_start(s->loop, &h->retry, 0);
}

void mcpx_store_leases_shutdown(struct mcpx_store *s)
{
	struct mcpx_store_result r;

	memset(&r, 0, sizeof(r));
	r.rc = -ESHUTDOWN;
	r.error = "the store is shutting down";
	while (s->holds) {
		struct mcpx_store_hold *h = s->holds;

		if (h->attempt)
			mcpx_store_op_cancel(h->attempt);
		h->attempt = NULL;
		hold_finish(h, &r);
	}
	while (s->leases) {
		struct mcpx_store_lease *l = s->leases;

		lease_unlink(l);
		mcpx_timer_cancel(&l->timer);
		if (l->renewing)
			mcpx_store_op_cancel(l->renewing);
		free(l);
	}
}
