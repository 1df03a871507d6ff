/*
 * redis_get.c - the Redis store's get (redis_ops.h): a blob read in pieces
 * of at most r->piece bytes, so that no reply hiredis parses and copies on
 * the loop is larger than one piece (hiredis 0.14 copies a finished reply
 * in one piece: a 64 MiB GET held the loop for 0.4 s).
 *
 * A read is a head (its length, its trailer, its TTL, refreshed or not,
 * and the first piece, in one EVAL: a blob of one piece is one round trip)
 * and then the other pieces, MCPX_REDIS_WINDOW in flight, in order, each
 * copied into one buffer of the blob's length. A put between two pieces
 * renames a new blob over the key; each piece is therefore read by a
 * script that returns it only while the key still ends in the head's
 * trailer, whose version is random and new with every put. A piece that
 * finds another version makes the read start again with a new head (once
 * the pieces still in flight are back), at most MAX_READS times in all;
 * so the blob a get returns is always one put's, whole, and never a mix.
 *
 * What it does not do: hold a lease (a get races a put only when its
 * caller did not hold the name's lease), or keep the old version for the
 * reader (Redis keeps one value per key).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_ops.h"

/* The first read and the restarts a read may make before it gives up. */
#define MAX_READS 4

static const char *const blob_key[] = {"b:"};

static void send_head(struct mcpx_redis_rop *r)
{
	struct mcpx_redis_cmd c = {0};
	char piece[24];

	snprintf(piece, sizeof(piece), "%zu", r->piece);
	mcpx_redis_eval(&c, r->op, mcpx_redis_get_head, blob_key, 1);
	mcpx_redis_arg(&c, r->op->refresh ? "1" : "0", 1);
	mcpx_redis_arg(&c, piece, strlen(piece));
	r->reads++;
	r->head_due = true;
	r->restarting = false;
	mcpx_redis_cmd_send(r, &c);
}

void mcpx_redis_get_start(struct mcpx_redis_rop *r)
{
	send_head(r);
}

/* Fails the read (what is in flight still comes back, and is ignored;
 * mcpx_redis_get_reply drops what was read). */
static void get_fail(struct mcpx_redis_rop *r, int rc, const char *msg)
{
	r->failed = true;
	r->done_sending = true;
	mcpx_store_op_fail(r->op, rc, "%s", msg);
}

/* Asks for the next pieces while fewer than MCPX_REDIS_WINDOW are in
 * flight. */
static void pump(struct mcpx_redis_rop *r)
{
	while (!r->done_sending && r->sent - r->got < MCPX_REDIS_WINDOW) {
		struct mcpx_redis_cmd c = {0};
		size_t n = r->total - r->off < r->piece ? r->total - r->off : r->piece;
		char first[24], last[24];

		snprintf(first, sizeof(first), "%zu", r->off);
		snprintf(last, sizeof(last), "%zu", r->off + n - 1);
		mcpx_redis_eval(&c, r->op, mcpx_redis_get_piece, blob_key, 1);
		mcpx_redis_arg(&c, r->trailer, MCPX_REDIS_TRAILER);
		mcpx_redis_arg(&c, first, strlen(first));
		mcpx_redis_arg(&c, last, strlen(last));
		r->off += n;
		if (r->off == r->total)
			r->done_sending = true;
		if (mcpx_redis_cmd_send(r, &c) < 0)
			return;
	}
}

/* The blob is whole: the result. */
static void finish(struct mcpx_redis_rop *r)
{
	struct mcpx_store_op *op = r->op;
	char digits[18];
	int64_t ttl, now = mcpx_store_now_ms();

	memcpy(digits, r->trailer + MCPX_REDIS_TRAILER_TTL, 17);
	digits[17] = '\0';
	ttl = (int64_t)strtoull(digits, NULL, 10);
	op->res.data[r->total] = '\0';
	op->res.len = r->total;
	op->res.expires_ms = now + (r->ms_left >= 0 ? r->ms_left : ttl);
	op->res.last_used_ms = op->res.expires_ms - ttl;
	op->res.rc = 0;
	r->done_sending = true;
}

/* Whether t is a trailer this store wrote: "MCPXB2", 17 digits, 16 hex
 * digits, "\n". */
static bool trailer_ok(const redisReply *t)
{
	const char *p = t->str;

	if (t->len != MCPX_REDIS_TRAILER || memcmp(p, "MCPXB2", 6) != 0 ||
	    p[MCPX_REDIS_TRAILER - 1] != '\n')
		return false;
	for (size_t i = MCPX_REDIS_TRAILER_TTL; i < MCPX_REDIS_TRAILER - 1; i++) {
		bool digit = p[i] >= '0' && p[i] <= '9', hex = p[i] >= 'a' && p[i] <= 'f';

		if (!digit && !(hex && i >= MCPX_REDIS_TRAILER_TTL + 17))
			return false;
	}
	return true;
}

/* {} (no such blob) or {length, trailer, ms left, first piece}. */
static void head_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	const redisReply *t = mcpx_redis_elem_str(rep, 1), *p = mcpx_redis_elem_str(rep, 3);
	int64_t len = mcpx_redis_elem_int(rep, 0);
	size_t first;

	r->head_due = false;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 0) {
		get_fail(r, -ENOENT, "not found");
		return;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 || !t || !p) {
		r->done_sending = true;
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	first = len >= MCPX_REDIS_TRAILER ? (size_t)len - MCPX_REDIS_TRAILER : 0;
	first = first < r->piece ? first : r->piece;
	if (len < MCPX_REDIS_TRAILER || !trailer_ok(t) ||
	    (uint64_t)len - MCPX_REDIS_TRAILER > op->max_blob_bytes || p->len != first) {
		get_fail(r, -EIO, "a blob in the store is damaged");
		return;
	}
	r->total = (size_t)len - MCPX_REDIS_TRAILER;
	memcpy(r->trailer, t->str, MCPX_REDIS_TRAILER);
	r->ms_left = mcpx_redis_elem_int(rep, 2);
	free(op->res.data);
	if (!(op->res.data = malloc(r->total + 1))) {
		get_fail(r, -ENOMEM, "out of memory");
		return;
	}
	if (first)
		memcpy(op->res.data, p->str, first);
	r->filled = r->off = first;
	if (r->filled == r->total)
		finish(r);
	else
		pump(r);
}

/* A piece of the version being read, or 0: the key holds another now. */
static void piece_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	size_t want = r->total - r->filled < r->piece ? r->total - r->filled : r->piece;

	if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) {
		if (r->reads >= MAX_READS) {
			get_fail(
			    r, -EAGAIN,
			    "the blob was replaced again and again while it was read; try again");
			return;
		}
		/* Read it again once what is in flight is back (ignored). */
		r->restarting = true;
		r->done_sending = false;
		return;
	}
	if (rep->type != REDIS_REPLY_STRING) {
		r->done_sending = true;
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	if (rep->len != want) {
		get_fail(r, -EIO, "a blob in the store is damaged");
		return;
	}
	memcpy(r->op->res.data + r->filled, rep->str, want);
	r->filled += want;
	if (r->filled == r->total)
		finish(r);
	else
		pump(r);
}

void mcpx_redis_get_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	if (r->head_due)
		head_reply(r, rep);
	else if (!r->restarting)
		piece_reply(r, rep);
	if (r->restarting && r->got == r->sent)
		send_head(r);
	if (r->failed) {
		/* A failed get hands back no bytes. */
		free(r->op->res.data);
		r->op->res.data = NULL;
	}
}
