/*
 * store_backend.c - the front's half of store_backend.h: one store
 * operation's life, made, started with its deadline, finished by the
 * backend, told to its caller, freed.
 *
 * Every operation becomes a struct mcpx_store_op handed to the backend
 * (store_backend.h). The op lives until both the backend has finished with
 * it and the caller has been told (or cancelled); whichever comes last
 * frees it. A deadline that passes first tells the caller -ETIMEDOUT from
 * a result of its own, because the backend may still be writing the op's
 * (the directory store writes it on a worker thread). A lease acquired by
 * an op whose caller is gone is released here, through the leases' hooks
 * in struct mcpx_store (the leases sit above the ops: they make ops of
 * their own).
 *
 * What it does not do: check keys or arguments (store.c), keep leases
 * (store_lease.c), or touch the store itself (the backends, which call
 * mcpx_store_op_done, mcpx_store_op_fail and mcpx_store_now_ms here).
 */
#include "store_backend.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "store_internal.h"

#define DEFAULT_OP_TIMEOUT_MS 30000u

int64_t mcpx_store_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mcpx_store_op_fail(struct mcpx_store_op *op, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op->err.msg, sizeof(op->err.msg), fmt, ap);
	va_end(ap);
	op->res.rc = rc;
	return rc;
}

static void op_link(struct mcpx_store *s, struct mcpx_store_op *op)
{
	op->next = s->ops;
	if (s->ops)
		s->ops->prev = op;
	s->ops = op;
}

static void op_unlink(struct mcpx_store_op *op)
{
	struct mcpx_store *s = op->s;

	if (op->prev)
		op->prev->next = op->next;
	else
		s->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	op->prev = op->next = NULL;
}

static void op_timer_cb(struct mcpx_timer *t);

struct mcpx_store_op *mcpx_store_op_new(struct mcpx_store *s, enum mcpx_store_opcode code)
{
	struct mcpx_store_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->s = s;
	op->code = code;
	op->max_blob_bytes = s->cfg.max_blob_bytes;
	op->timer.fn = op_timer_cb;
	op->timer.arg = op;
	op_link(s, op);
	return op;
}

/* Frees op once the backend is done with it and the caller was told. */
void mcpx_store_op_maybe_free(struct mcpx_store_op *op)
{
	struct mcpx_store *s = op->s;

	if (!op->delivered || !op->backend_done)
		return;
	mcpx_timer_cancel(&op->timer);
	/* The caller is gone (deadline, cancel) but the store gave the lease:
	 * nobody would release it before it lapses, so release it now. */
	if (op->code == MCPX_OP_LEASE_ACQUIRE && op->res.rc == 0 && op->dropped && !s->freeing)
		s->lease_release_bg(s, &op->key, op->owner);
	op_unlink(op);
	free(op->res.data);
	free(op->res.entries);
	if (op->res.lease)
		s->lease_end(op->res.lease);
	free(op->data);
	free(op);
}

static const char *default_message(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return "the store did not answer in time";
	case -ENOTCONN:
		return "the store is unreachable";
	case -ESHUTDOWN:
		return "the store is shutting down";
	case -ENOMEM:
		return "out of memory";
	case -ENOENT:
		return "not found";
	default:
		return "the store failed";
	}
}

static const char *const op_names[MCPX_OP_COUNT] = {
    "get",           "put",           "delete",      "list",          "record_get", "record_put",
    "record_delete", "lease_acquire", "lease_renew", "lease_release", "lease_peek"};

static const char *outcome_of(int rc)
{
	switch (rc) {
	case 0:
		return "ok";
	case -ENOENT:
		return "not_found";
	case -EEXIST:
	case -ESTALE:
	case -EBUSY:
	case -ENOLCK:
		return "conflict";
	case -EFBIG:
	case -E2BIG:
		return "too_large";
	case -EDQUOT:
		return "quota";
	case -ETIMEDOUT:
		return "timeout";
	case -ENOTCONN:
		return "unavailable";
	case -ESHUTDOWN:
		return "shutdown";
	default:
		return "error";
	}
}

/* Counts op's outcome rc; a get's or put's bytes when it succeeded. */
static void op_metrics(const struct mcpx_store_op *op, int rc, size_t got)
{
	double secs = (double)(mcpx_now_us() - op->started_us) / 1e6;
	uint64_t bytes = 0;

	if (op->code >= MCPX_OP_COUNT || !op->started_us)
		return;
	if (rc == 0)
		bytes = op->code == MCPX_OP_GET ? got : op->code == MCPX_OP_PUT ? op->len : 0;
	mcpx_metrics_store_op(op->s->backend->ops->type, op_names[op->code], outcome_of(rc), secs,
	                      bytes);
}

/* Tells the caller op's own result. */
static void deliver(struct mcpx_store_op *op)
{
	op->delivered = true;
	if (op->res.rc < 0)
		op->res.error = op->err.msg[0] ? op->err.msg : default_message(op->res.rc);
	op_metrics(op, op->res.rc, op->res.len);
	if (op->internal)
		op->internal(op, &op->res);
	else if (op->cb)
		op->cb(op->arg, &op->res);
	mcpx_store_op_maybe_free(op);
}

/* Tells the caller rc without touching op->res, which the backend may be
 * writing still. */
static void deliver_other(struct mcpx_store_op *op, int rc, const char *msg)
{
	struct mcpx_store_result r;

	memset(&r, 0, sizeof(r));
	r.rc = rc;
	r.error = msg;
	op->delivered = true;
	op->dropped = true;
	op_metrics(op, rc, 0);
	if (op->internal)
		op->internal(op, &r);
	else if (op->cb)
		op->cb(op->arg, &r);
	mcpx_store_op_maybe_free(op);
}

static void op_timer_cb(struct mcpx_timer *t)
{
	struct mcpx_store_op *op = t->arg;

	if (op->delivered)
		return;
	if (op->backend_done)
		deliver(op);
	else
		deliver_other(op, -ETIMEDOUT, "the store did not answer in time");
}

void mcpx_store_op_done(struct mcpx_store_op *op)
{
	op->backend_done = true;
	if (op->delivered) {
		mcpx_store_op_maybe_free(op);
		return;
	}
	mcpx_timer_cancel(&op->timer);
	if (op->in_submit && !op->s->freeing) {
		/* Callbacks never run inside the call that started them. */
		mcpx_timer_start(op->s->loop, &op->timer, 0);
		return;
	}
	deliver(op);
}

void mcpx_store_op_start(struct mcpx_store_op *op)
{
	struct mcpx_store *s = op->s;
	uint32_t ms = s->cfg.op_timeout_ms ? s->cfg.op_timeout_ms : DEFAULT_OP_TIMEOUT_MS;

	op->started_us = mcpx_now_us();
	op->timeout_ms = ms;
	mcpx_timer_start(s->loop, &op->timer, (uint64_t)ms * 1000u);
	op->in_submit = true;
	s->backend->ops->submit(s->backend, op);
	op->in_submit = false;
}

struct mcpx_store_op *mcpx_store_op_internal(
    struct mcpx_store *s, enum mcpx_store_opcode code, const struct mcpx_store_skey *key,
    void (*fn)(struct mcpx_store_op *op, struct mcpx_store_result *res), void *arg)
{
	struct mcpx_store_op *op = mcpx_store_op_new(s, code);

	if (!op)
		return NULL;
	op->key = *key;
	op->internal = fn;
	op->internal_arg = arg;
	return op;
}

void mcpx_store_hold_deliver(struct mcpx_store_op *op, struct mcpx_store_result *res)
{
	op->delivered = true;
	op->backend_done = true;
	op->res = *res;
	if (op->res.rc < 0 && !op->res.error)
		op->res.error = default_message(op->res.rc);
	op->cb(op->arg, &op->res);
	mcpx_store_op_maybe_free(op);
}

void mcpx_store_op_cancel(struct mcpx_store_op *op)
{
	if (!op || op->delivered)
		return;
	op->delivered = true;
	op->dropped = true;
	mcpx_timer_cancel(&op->timer);
	mcpx_store_op_maybe_free(op);
}

void mcpx_store_ops_shutdown(struct mcpx_store *s)
{
	while (s->ops) {
		struct mcpx_store_op *op = s->ops;

		if (!op->backend_done) {
			/* A backend must finish every op in free(); one that did
			 * not is a bug, but the caller is told all the same. */
			mcpx_store_op_fail(op, -ESHUTDOWN, "the store is shutting down");
			op->backend_done = true;
		}
		if (op->delivered)
			mcpx_store_op_maybe_free(op);
		else
			deliver(op);
	}
}
