/*
 * store_redis.c - the Redis/Valkey store's backend (store_backend.h): ops
 * waiting for the connection, ops in flight, and their ends told on the
 * loop.
 *
 * An op submitted while the connection is down waits for it and kicks a
 * connection attempt; an attempt that fails fails the waiting ops at once
 * with -ENOTCONN (no op waits longer than one connect timeout for a store
 * that is down). Ops in flight when the connection goes get their replies
 * as NULL from hiredis and fail the same way. A watchdog drops a
 * connection on which some op has had no reply for its whole deadline (a
 * server that hangs rather than closes), so the next op reconnects rather
 * than waiting behind it.
 *
 * hiredis calls reply callbacks from inside its read handler; an op that
 * ends there is told to the front from a zero timer, so no caller's
 * callback (which may start or free anything) ever runs inside hiredis.
 *
 * Every 10 s the connection is asked for INFO memory and DBSIZE, for
 * /metrics' bytes stored and as a liveness check. A worker thread of its
 * own frees blobs' large buffers (redis_rop.c hands them over), which the
 * loop would take milliseconds to unmap.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "offload.h"
#include "redis_conn.h"
#include "redis_ops.h"

#define DEFAULT_CONNECT_MS 2000u
#define DEFAULT_PIECE (1u << 20)
#define PIECE_MIN (1u << 10)
#define PIECE_MAX (64u << 20)
#define REPLY_SLACK (64u << 10)
#define WATCHDOG_MS 500u
#define HEALTH_MS 10000u

struct rop_list {
	struct mcpx_redis_rop *head, *tail;
};

struct mcpx_redis_backend {
	struct mcpx_store_backend base;
	struct mcpx_redis_io io; /* the connection and the freeing worker the ops use */
	uint32_t op_timeout_ms;
	size_t piece;
	struct rop_list waiting, inflight, done;
	struct mcpx_timer done_timer, watchdog, health;
	bool health_pending;
	bool freeing;
};

static void list_add(struct rop_list *l, struct mcpx_redis_rop *r)
{
	r->next = NULL;
	r->prev = l->tail;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
}

static void list_del(struct rop_list *l, struct mcpx_redis_rop *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		l->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		l->tail = r->prev;
	r->prev = r->next = NULL;
}

/* Tells the front of every op in the done list. */
static void flush_done(struct mcpx_redis_backend *b)
{
	while (b->done.head) {
		struct mcpx_redis_rop *r = b->done.head;
		struct mcpx_store_op *op = r->op;

		list_del(&b->done, r);
		free(r);
		mcpx_store_op_done(op);
	}
}

static void done_cb(struct mcpx_timer *t)
{
	flush_done(t->arg);
}

/* r is over: off the in-flight list, told from the next loop turn. */
static void finish(struct mcpx_redis_rop *r, struct rop_list *from)
{
	struct mcpx_redis_backend *b = r->b;

	list_del(from, r);
	list_add(&b->done, r);
	if (!b->freeing)
		mcpx_timer_start(b->base.loop, &b->done_timer, 0);
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct mcpx_redis_rop *r = privdata;
	struct mcpx_redis_backend *b = r->b;

	(void)ac;
	r->got++;
	r->last_us = mcpx_now_us();
	if (!reply) {
		/* The connection went (or the store is being freed). */
		if (!r->failed)
			mcpx_store_op_fail(r->op, b->freeing ? -ESHUTDOWN : -ENOTCONN,
			                   b->freeing ? "the store is shutting down"
			                              : "the connection to the store was lost");
		r->failed = true;
		r->done_sending = true;
	} else if (!r->failed) {
		mcpx_redis_rop_reply(r, reply);
	}
	if (mcpx_redis_rop_over(r))
		finish(r, &b->inflight);
}

static void watchdog_cb(struct mcpx_timer *t)
{
	struct mcpx_redis_backend *b = t->arg;
	uint64_t now = mcpx_now_us(), limit = (uint64_t)b->op_timeout_ms * 1000u;

	for (struct mcpx_redis_rop *r = b->inflight.head; r; r = r->next)
		if (now - r->last_us > limit) {
			mcpx_redis_conn_drop(b->io.conn, "redis did not answer in time");
			break;
		}
	if (b->inflight.head)
		mcpx_timer_start(b->base.loop, &b->watchdog, WATCHDOG_MS * 1000u);
}

/* Sends r's commands; it is in flight, or over at once (not connected). */
static void dispatch(struct mcpx_redis_backend *b, struct mcpx_redis_rop *r)
{
	list_add(&b->inflight, r);
	mcpx_redis_rop_start(r);
	if (mcpx_redis_rop_over(r)) {
		finish(r, &b->inflight);
		return;
	}
	if (!b->watchdog.armed)
		mcpx_timer_start(b->base.loop, &b->watchdog, WATCHDOG_MS * 1000u);
}

static void redis_submit(struct mcpx_store_backend *base, struct mcpx_store_op *op)
{
	struct mcpx_redis_backend *b = (struct mcpx_redis_backend *)base;
	struct mcpx_redis_rop *r = calloc(1, sizeof(*r));

	if (!r) {
		mcpx_store_op_fail(op, -ENOMEM, "out of memory");
		mcpx_store_op_done(op);
		return;
	}
	r->op = op;
	r->b = b;
	r->io = &b->io;
	r->piece = b->piece;
	if (mcpx_redis_conn_ready(b->io.conn)) {
		dispatch(b, r);
		return;
	}
	list_add(&b->waiting, r);
	mcpx_redis_conn_kick(b->io.conn);
}

static void on_ready(void *arg)
{
	struct mcpx_redis_backend *b = arg;

	while (b->waiting.head && mcpx_redis_conn_ready(b->io.conn)) {
		struct mcpx_redis_rop *r = b->waiting.head;

		list_del(&b->waiting, r);
		dispatch(b, r);
	}
}

static void on_down(void *arg, const char *why)
{
	struct mcpx_redis_backend *b = arg;

	while (b->waiting.head) {
		struct mcpx_redis_rop *r = b->waiting.head;

		mcpx_store_op_fail(r->op, -ENOTCONN, "the store is unreachable (%s)", why);
		finish(r, &b->waiting);
	}
}

/* INFO memory's used_memory and DBSIZE, for /metrics. */
static void health_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct mcpx_redis_backend *b = privdata;
	redisReply *r = reply;
	static uint64_t used;
	const char *p;

	(void)ac;
	if (!r || b->freeing) {
		b->health_pending = false;
		return;
	}
	if (r->type == REDIS_REPLY_STRING && (p = strstr(r->str, "used_memory:"))) {
		used = strtoull(p + 12, NULL, 10);
	} else if (r->type == REDIS_REPLY_INTEGER) {
		mcpx_metrics_store_stored("redis", (uint64_t)r->integer, used);
		b->health_pending = false;
	}
}

static void health_cb(struct mcpx_timer *t)
{
	struct mcpx_redis_backend *b = t->arg;
	const char *info[] = {"INFO", "memory"}, *dbsize[] = {"DBSIZE"};
	size_t info_len[] = {4, 6}, dbsize_len[] = {6};

	if (!b->health_pending && mcpx_redis_conn_ready(b->io.conn) &&
	    mcpx_redis_conn_command(b->io.conn, health_reply, b, 2, info, info_len) == 0 &&
	    mcpx_redis_conn_command(b->io.conn, health_reply, b, 1, dbsize, dbsize_len) == 0)
		b->health_pending = true;
	mcpx_timer_start(b->base.loop, &b->health, HEALTH_MS * 1000u);
}

static void redis_free(struct mcpx_store_backend *base)
{
	struct mcpx_redis_backend *b = (struct mcpx_redis_backend *)base;

	b->freeing = true;
	mcpx_timer_cancel(&b->watchdog);
	mcpx_timer_cancel(&b->health);
	mcpx_timer_cancel(&b->done_timer);
	/* In-flight ops get NULL replies in here. */
	mcpx_redis_conn_free(b->io.conn);
	while (b->waiting.head) {
		struct mcpx_redis_rop *r = b->waiting.head;

		mcpx_store_op_fail(r->op, -ESHUTDOWN, "the store is shutting down");
		finish(r, &b->waiting);
	}
	while (b->inflight.head) {
		/* hiredis owed them nothing more: still, tell them. */
		struct mcpx_redis_rop *r = b->inflight.head;

		mcpx_store_op_fail(r->op, -ESHUTDOWN, "the store is shutting down");
		finish(r, &b->inflight);
	}
	flush_done(b);
	mcpx_offload_free(b->io.freer);
	free(b);
}

static const struct mcpx_store_backend_ops redis_ops = {"redis", redis_submit, redis_free};

int mcpx_store_redis_open(struct mcpx_loop *loop, const struct mcpx_store_config *cfg,
                          struct mcpx_store_backend **out, struct mcpx_err *err)
{
	struct mcpx_redis_backend *b = calloc(1, sizeof(*b));
	struct mcpx_redis_conn_cbs cbs = {on_ready, on_down};
	int rc;

	if (!b)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	/* A Redis string holds at most 512 MiB (proto-max-bulk-len). */
	if (cfg->max_blob_bytes > (512u << 20) - 64) {
		free(b);
		return mcpx_err_set(err, EFBIG,
		                    "a Redis store holds workspaces of at most 511 MiB: lower "
		                    "MCP_EXEC_WORKSPACE_MAX_MB");
	}
	if (cfg->redis_piece_bytes &&
	    (cfg->redis_piece_bytes < PIECE_MIN || cfg->redis_piece_bytes > PIECE_MAX)) {
		free(b);
		return mcpx_err_set(err, EINVAL, "the Redis store's piece is 1 KiB to 64 MiB");
	}
	b->piece = cfg->redis_piece_bytes ? cfg->redis_piece_bytes : DEFAULT_PIECE;
	b->base.ops = &redis_ops;
	b->base.loop = loop;
	b->op_timeout_ms = cfg->op_timeout_ms ? cfg->op_timeout_ms : 30000u;
	b->io.on_reply = reply_cb;
	b->done_timer.fn = done_cb;
	b->watchdog.fn = watchdog_cb;
	b->health.fn = health_cb;
	b->done_timer.arg = b->watchdog.arg = b->health.arg = b;
	/* The largest reply asked for: a piece of a blob or a record (each
	 * with a few numbers beside it), or a list of at most
	 * MCPX_STORE_LIST_MAX + 1 short entries. */
	rc = mcpx_redis_conn_new(
	    loop, &cfg->spec,
	    cfg->connect_timeout_ms ? cfg->connect_timeout_ms : DEFAULT_CONNECT_MS,
	    (b->piece > MCPX_STORE_RECORD_MAX ? b->piece : MCPX_STORE_RECORD_MAX) + REPLY_SLACK,
	    &cbs, b, &b->io.conn, err);
	if (rc < 0) {
		free(b);
		return rc;
	}
	if (mcpx_offload_new(loop, &b->io.freer) < 0)
		b->io.freer = NULL; /* then the loop frees them, slower */
	mcpx_timer_start(loop, &b->health, 1000u * 1000u);
	*out = &b->base;
	return 0;
}
