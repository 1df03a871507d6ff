/*
 * redis_get.c - the Redis store's get (redis_get.h): a blob read in pieces
 * of at most r->piece bytes, so that no reply hiredis parses and copies on
 * the loop is larger than one piece (hiredis 0.14 copies a finished reply
 * in one piece: a 64 MiB GET held the loop for 0.4 s).
 *
 * A read is a head and then the other pieces, MCPX_REDIS_WINDOW in
 * flight, in order, each copied into one buffer of the blob's length. The
 * head is one transaction (MULTI ... EXEC: Redis runs it as one step) of
 * the key's length, its trailer, its TTL and its first piece, so a blob of
 * one piece is one round trip; a refreshing get sends the touch script
 * before it. A put between two pieces renames a new blob over the key;
 * each piece is therefore a transaction of the key's trailer and the
 * piece, and the trailer holds a version that is random and new with every
 * put. A piece whose trailer is not the head's makes the read start again
 * with a new head (once the pieces still in flight are back), at most
 * MAX_READS times in all; so the blob a get returns is always one put's,
 * whole, and never a mix.
 *
 * Transactions, not scripts: a script that returns a piece makes Redis 7.0
 * copy it through Lua, about 6 ms of the server's single thread per MiB
 * (for 0.2 ms as a GETRANGE), during which it serves no one else.
 *
 * What it does not do: hold a lease (a get races a put only when its
 * caller did not hold the name's lease), or keep the old version for the
 * reader (Redis keeps one value per key).
 */
#include "redis_get.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first read and the restarts a read may make before it gives up. */
#define MAX_READS 4
#define TRAILER_FROM "-40" /* GETRANGE's start of the trailer */

_Static_assert(MCPX_REDIS_TRAILER == 40, "TRAILER_FROM spells the trailer's length");

/* Sends one command of up to 4 arguments (NULL-terminated), the blob key
 * standing for "K"; 0 or -errno (the op is then failed). */
static int send_cmd(struct mcpx_redis_rop *r, const char *a0, const char *a1, const char *a2,
                    const char *a3)
{
	const char *in[4] = {a0, a1, a2, a3}, *argv[4];
	struct mcpx_redis_cmd c = {0};
	int n = 0;

	while (n < 4 && in[n]) {
		argv[n] = strcmp(in[n], "K") == 0 ? r->tmp : in[n];
		mcpx_redis_arg(&c, argv[n], strlen(argv[n]));
		n++;
	}
	return mcpx_redis_cmd_send(r, &c);
}

/* A transaction was cut after its MULTI (hiredis refused a command): the
 * connection would queue every later command of every op into it, so it
 * goes (and comes back). */
static void tx_broken(struct mcpx_redis_rop *r)
{
	mcpx_redis_drop(r, "a transaction could not be sent whole");
}

static void send_head(struct mcpx_redis_rop *r)
{
	char last[24];

	snprintf(last, sizeof(last), "%zu", r->piece - 1);
	r->reads++;
	r->head_due = true;
	r->restarting = false;
	r->pieces = 0;
	if (r->op->refresh) {
		struct mcpx_redis_cmd c = {0};
		static const char *const blob_key[] = {"b:"};

		mcpx_redis_eval(&c, r->op, mcpx_redis_touch, blob_key, 1);
		if (mcpx_redis_cmd_send(r, &c) < 0)
			return;
	}
	if (send_cmd(r, "MULTI", NULL, NULL, NULL) < 0)
		return;
	if (send_cmd(r, "STRLEN", "K", NULL, NULL) < 0 ||
	    send_cmd(r, "GETRANGE", "K", TRAILER_FROM, "-1") < 0 ||
	    send_cmd(r, "PTTL", "K", NULL, NULL) < 0 ||
	    send_cmd(r, "GETRANGE", "K", "0", last) < 0 ||
	    send_cmd(r, "EXEC", NULL, NULL, NULL) < 0)
		tx_broken(r);
}

void mcpx_redis_get_start(struct mcpx_redis_rop *r)
{
	struct mcpx_store_op *op = r->op;

	snprintf(r->tmp, sizeof(r->tmp), "mcpx:v1:{%s:%s}:b:%s", op->key.kind, op->key.caller,
	         op->key.name);
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
	while (!r->done_sending && r->pieces < MCPX_REDIS_WINDOW) {
		size_t n = r->total - r->off < r->piece ? r->total - r->off : r->piece;
		char first[24], last[24];

		snprintf(first, sizeof(first), "%zu", r->off);
		snprintf(last, sizeof(last), "%zu", r->off + n - 1);
		r->off += n;
		r->pieces++;
		if (r->off == r->total)
			r->done_sending = true;
		if (send_cmd(r, "MULTI", NULL, NULL, NULL) < 0)
			return;
		if (send_cmd(r, "GETRANGE", "K", TRAILER_FROM, "-1") < 0 ||
		    send_cmd(r, "GETRANGE", "K", first, last) < 0 ||
		    send_cmd(r, "EXEC", NULL, NULL, NULL) < 0) {
			tx_broken(r);
			return;
		}
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

/* The head's EXEC: {length (trailer included; 0: no such blob), trailer,
 * ms left, the first min(length, piece) bytes}. */
static void head_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	const redisReply *t = mcpx_redis_elem_str(rep, 1), *p = mcpx_redis_elem_str(rep, 3);
	int64_t len = mcpx_redis_elem_int(rep, 0);
	size_t first;

	r->head_due = false;
	if (rep->elements != 4 || !t || !p) {
		r->done_sending = true;
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	if (len == 0) {
		get_fail(r, -ENOENT, "not found");
		return;
	}
	first = len >= MCPX_REDIS_TRAILER ? (size_t)len - MCPX_REDIS_TRAILER : 0;
	first = first < r->piece ? first : r->piece;
	if (len < MCPX_REDIS_TRAILER || !trailer_ok(t) ||
	    (uint64_t)len - MCPX_REDIS_TRAILER > op->max_blob_bytes || p->len < first) {
		get_fail(r, -EIO, "a blob in the store is damaged");
		return;
	}
	mcpx_redis_free_blob(r, op->res.data, r->total); /* a read before a restart */
	op->res.data = NULL;
	r->total = (size_t)len - MCPX_REDIS_TRAILER;
	memcpy(r->trailer, t->str, MCPX_REDIS_TRAILER);
	r->ms_left = mcpx_redis_elem_int(rep, 2);
	if (first == r->total) {
		/* One piece: hiredis's buffer (len + 1 bytes) is taken, not
		 * copied; what follows the blob is its trailer. */
		op->res.data = rep->element[3]->str;
		rep->element[3]->str = NULL;
		rep->element[3]->len = 0;
	} else if (!(op->res.data = malloc(r->total + 1))) {
		get_fail(r, -ENOMEM, "out of memory");
		return;
	} else {
		memcpy(op->res.data, p->str, first);
	}
	r->filled = r->off = first;
	if (r->filled == r->total)
		finish(r);
	else
		pump(r);
}

/* A piece's EXEC: {the key's trailer now, the piece}. */
static void piece_reply(struct mcpx_redis_rop *r, const redisReply *rep)
{
	const redisReply *t = mcpx_redis_elem_str(rep, 0), *p = mcpx_redis_elem_str(rep, 1);
	size_t want = r->total - r->filled < r->piece ? r->total - r->filled : r->piece;

	r->pieces--;
	if (rep->elements != 2 || !t || !p) {
		r->done_sending = true;
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	if (t->len != MCPX_REDIS_TRAILER || memcmp(t->str, r->trailer, MCPX_REDIS_TRAILER) != 0) {
		/* Another version now (or none): read it again once what is in
		 * flight is back (and ignored). */
		if (r->reads >= MAX_READS) {
			get_fail(
			    r, -EAGAIN,
			    "the blob was replaced again and again while it was read; try again");
			return;
		}
		r->restarting = true;
		r->done_sending = false;
		return;
	}
	if (p->len != want) {
		get_fail(r, -EIO, "a blob in the store is damaged");
		return;
	}
	memcpy(r->op->res.data + r->filled, p->str, want);
	r->filled += want;
	if (r->filled == r->total)
		finish(r);
	else
		pump(r);
}

void mcpx_redis_get_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	/* MULTI's OK, each command's QUEUED, the touch script's TTL: only
	 * EXEC's array carries anything; an error anywhere fails the read. */
	if (rep->type == REDIS_REPLY_ERROR) {
		r->done_sending = true;
		mcpx_redis_fail_reply(r, rep);
	} else if (rep->type == REDIS_REPLY_ARRAY && !r->restarting) {
		if (r->head_due)
			head_reply(r, rep);
		else
			piece_reply(r, rep);
	} else if (rep->type != REDIS_REPLY_ARRAY && rep->type != REDIS_REPLY_STATUS &&
	           rep->type != REDIS_REPLY_INTEGER) {
		r->done_sending = true;
		mcpx_redis_fail_reply(r, rep);
	}
	if (r->restarting && !r->failed && r->got == r->sent)
		send_head(r);
	if (r->failed) {
		/* A failed get hands back no bytes. */
		mcpx_redis_free_blob(r, r->op->res.data, r->total);
		r->op->res.data = NULL;
	}
}
