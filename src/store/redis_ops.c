/*
 * redis_ops.c - the Redis store's puts, deletes and lists (redis_ops.h):
 * the commands each one sends and what its replies mean; gets
 * (redis_get.c) and records and leases (redis_records.c) are handed on.
 *
 * Every check-then-change is one EVAL (redis_scripts.c).
 */
#include "redis_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "redis_get.h"
#include "redis_records.h"
#include "redis_scripts.h"

#define UPLOAD_TTL_MS "600000"
#define INLINE_MAX (64u << 10)

/* Short names for the command builders (redis_rop.h) in the commands
 * below. */
#define arg mcpx_redis_arg
#define args mcpx_redis_args
#define argf mcpx_redis_argf
#define argk mcpx_redis_argk
#define eval mcpx_redis_eval_head

/* The trailer of r's blob: its TTL and its version. */
static void trailer(const struct mcpx_redis_rop *r, char out[MCPX_REDIS_TRAILER + 1])
{
	snprintf(out, MCPX_REDIS_TRAILER + 1, "MCPXB2%017llu%s\n",
	         (unsigned long long)r->op->ttl_ms, r->version);
}

/* Put: one EVAL up to one piece, else SET + SETRANGEs to an upload key
 * and the EVAL that renames it into place. */

static void put_commit_cmd(struct mcpx_redis_rop *r, struct mcpx_redis_cmd *c, char *nums)
{
	struct mcpx_store_op *op = r->op;

	eval(c, mcpx_redis_put_commit, 4);
	args(c, r->tmp);
	argk(c, op, "b:", op->key.name);
	argk(c, op, "bi", "");
	argk(c, op, "l:", op->key.name);
	args(c, op->key.name);
	snprintf(nums, 96, "%llu", (unsigned long long)op->ttl_ms);
	args(c, nums);
	snprintf(nums + 24, 72, "%u", op->max_count);
	args(c, nums + 24);
	snprintf(nums + 48, 48, "%llu", (unsigned long long)op->max_total_bytes);
	args(c, nums + 48);
	args(c, op->owner);
	argf(c, "mcpx:v1:{%s:%s}:b:", op->key.kind, op->key.caller);
	snprintf(nums + 72, 24, "%zu", op->len + MCPX_REDIS_TRAILER);
	args(c, nums + 72);
}

/* A blob of one piece: up to INLINE_MAX inside the commit script (one
 * command); above, a SET of the upload key and the commit, pipelined (one
 * round trip still), because a script's argument is copied through Lua,
 * which costs Redis 7.0 about 6 ms of its one thread per MiB. The commit
 * checks the upload's length, so a SET that failed fails it (-4). */
static void put_small(struct mcpx_redis_rop *r)
{
	struct mcpx_store_op *op = r->op;
	size_t n = op->len + MCPX_REDIS_TRAILER;
	char nums[96], *value = malloc(n + 1);
	struct mcpx_redis_cmd c = {0};

	r->done_sending = true;
	if (!value) {
		r->failed = true;
		mcpx_store_op_fail(op, -ENOMEM, "out of memory");
		return;
	}
	if (op->len)
		memcpy(value, op->data, op->len);
	trailer(r, value + op->len);
	if (op->len > INLINE_MAX) {
		args(&c, "SET");
		args(&c, r->tmp);
		arg(&c, value, n);
		args(&c, "PX");
		args(&c, UPLOAD_TTL_MS);
		if (mcpx_redis_cmd_send(r, &c) < 0)
			goto out;
		memset(&c, 0, sizeof(c));
		put_commit_cmd(r, &c, nums);
	} else {
		put_commit_cmd(r, &c, nums);
		arg(&c, value, n);
	}
	mcpx_redis_cmd_send(r, &c);
out:
	free(value);
}

/* Sends the upload's next commands while fewer than MCPX_REDIS_WINDOW are
 * in flight:
 * SET of the first chunk (with the upload key's TTL), one SETRANGE of the
 * trailer at the end, which sizes the string once (APPENDs would make Redis
 * grow it 64 times), then a SETRANGE per chunk; the commit only once every
 * reply came back fine, since a failed chunk would otherwise leave a hole of
 * zeros the length check cannot see. */
static void put_pump(struct mcpx_redis_rop *r)
{
	struct mcpx_store_op *op = r->op;

	while (!r->done_sending && r->sent - r->got < MCPX_REDIS_WINDOW) {
		struct mcpx_redis_cmd c = {0};
		char tr[MCPX_REDIS_TRAILER + 1], off[24], nums[96];
		size_t n = op->len - r->off < r->piece ? op->len - r->off : r->piece;

		if (r->off == op->len) {
			if (r->got < r->sent || r->failed)
				return; /* the commit waits for every chunk's reply */
			put_commit_cmd(r, &c, nums);
			r->done_sending = true;
			mcpx_redis_cmd_send(r, &c);
			/* hiredis copied every chunk. */
			mcpx_redis_free_blob(r, op->data, op->len);
			op->data = NULL;
			return;
		}
		if (r->off == 0) {
			args(&c, "SET");
			args(&c, r->tmp);
			arg(&c, op->data, n);
			args(&c, "PX");
			args(&c, UPLOAD_TTL_MS);
			if (mcpx_redis_cmd_send(r, &c) < 0)
				return;
			memset(&c, 0, sizeof(c));
			trailer(r, tr);
			snprintf(off, sizeof(off), "%zu", op->len);
			args(&c, "SETRANGE");
			args(&c, r->tmp);
			args(&c, off);
			arg(&c, tr, MCPX_REDIS_TRAILER);
		} else {
			snprintf(off, sizeof(off), "%zu", r->off);
			args(&c, "SETRANGE");
			args(&c, r->tmp);
			args(&c, off);
			arg(&c, op->data + r->off, n);
		}
		r->off += n;
		if (mcpx_redis_cmd_send(r, &c) < 0)
			return;
	}
}

/* A put's random id names its upload key and is the new blob's version,
 * which a reader compares piece by piece (redis_get.c): without one, a
 * put could not be told from the next. */
static void put_start(struct mcpx_redis_rop *r)
{
	struct mcpx_store_op *op = r->op;
	unsigned char rnd[MCPX_REDIS_VERSION_LEN / 2];

	if (mcpx_random(rnd, sizeof(rnd)) < 0) {
		r->failed = true;
		r->done_sending = true;
		mcpx_store_op_fail(op, -EIO, "no random bytes for the blob's version");
		return;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(r->version + 2 * i, 3, "%02x", rnd[i]);
	snprintf(r->tmp, sizeof(r->tmp), "mcpx:v1:{%s:%s}:t:%s:%s", op->key.kind, op->key.caller,
	         op->key.name, r->version);
	if (op->len <= r->piece)
		put_small(r);
	else
		put_pump(r);
}

static void put_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	int64_t now = mcpx_store_now_ms();

	if (rep->type == REDIS_REPLY_ERROR) {
		mcpx_redis_fail_reply(r, rep);
		if (!r->done_sending) {
			/* Stop the upload; its key goes (or expires). */
			struct mcpx_redis_cmd c = {0};

			r->done_sending = true;
			args(&c, "DEL");
			args(&c, r->tmp);
			mcpx_redis_cmd_send(r, &c);
		}
		return;
	}
	if (!r->done_sending) {
		put_pump(r);
		return;
	}
	if (r->got < r->sent || r->failed)
		return; /* an upload step; the commit's reply is the last */
	switch (rep->type == REDIS_REPLY_INTEGER ? rep->integer : -99) {
	case 0:
		op->res.rc = 0;
		op->res.last_used_ms = now;
		op->res.expires_ms = now + (int64_t)op->ttl_ms;
		break;
	case -1:
		mcpx_store_op_fail(op, -ENOLCK, "the lease on this name is not held any more");
		break;
	case -2:
		mcpx_store_op_fail(op, -EDQUOT, "the caller already has %u of kind %s",
		                   op->max_count, op->key.kind);
		break;
	case -3:
		mcpx_store_op_fail(op, -EDQUOT, "the caller's %s blobs would pass their byte cap",
		                   op->key.kind);
		break;
	case -4:
		mcpx_store_op_fail(op, -EIO, "the upload to the store was interrupted");
		break;
	default:
		mcpx_redis_fail_reply(r, rep);
	}
}

/* Delete and list. */

static void delete_start(struct mcpx_redis_rop *r)
{
	struct mcpx_redis_cmd c = {0};

	eval(&c, mcpx_redis_delete, 3);
	argk(&c, r->op, "b:", r->op->key.name);
	argk(&c, r->op, "bi", "");
	argk(&c, r->op, "l:", r->op->key.name);
	args(&c, r->op->key.name);
	args(&c, r->op->owner);
	r->done_sending = true;
	mcpx_redis_cmd_send(r, &c);
}

static void delete_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	if (rep->type != REDIS_REPLY_INTEGER)
		mcpx_redis_fail_reply(r, rep);
	else if (rep->integer == 1)
		r->op->res.rc = 0;
	else if (rep->integer == 0)
		mcpx_store_op_fail(r->op, -ENOENT, "not found");
	else
		mcpx_store_op_fail(r->op, -ENOLCK, "the lease on this name is not held any more");
}

static void list_start(struct mcpx_redis_rop *r)
{
	bool rec = r->op->what == MCPX_STORE_LIST_RECORDS;
	struct mcpx_redis_cmd c = {0};

	eval(&c, rec ? mcpx_redis_list_records : mcpx_redis_list_blobs, 1);
	argk(&c, r->op, rec ? "ri" : "bi", "");
	argf(&c, "mcpx:v1:{%s:%s}:%s", r->op->key.kind, r->op->key.caller, rec ? "r:" : "b:");
	/* One more than a list may hold, so that too many is still seen. */
	argf(&c, "%d", MCPX_STORE_LIST_MAX + 1);
	r->done_sending = true;
	mcpx_redis_cmd_send(r, &c);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mcpx_store_entry *)a)->name,
	              ((const struct mcpx_store_entry *)b)->name);
}

static void list_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	size_t step = op->what == MCPX_STORE_LIST_RECORDS ? 5 : 4, n;
	int64_t now = mcpx_store_now_ms();

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements % step) {
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	n = rep->elements / step;
	if (n > MCPX_STORE_LIST_MAX) {
		mcpx_store_op_fail(op, -E2BIG, "more than %d entries", MCPX_STORE_LIST_MAX);
		return;
	}
	if (n && !(op->res.entries = calloc(n, sizeof(*op->res.entries)))) {
		mcpx_store_op_fail(op, -ENOMEM, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct mcpx_store_entry *e = &op->res.entries[op->res.n_entries];
		const redisReply *name = mcpx_redis_elem_str(rep, i * step);
		int64_t left = mcpx_redis_elem_int(rep, i * step + 2);

		if (!name || name->len > MCPX_STORE_NAME_MAX || left == -2)
			continue;
		memcpy(e->name, name->str, name->len);
		e->bytes = (uint64_t)mcpx_redis_elem_int(rep, i * step + 1);
		e->expires_ms = left >= 0 ? now + left : INT64_MAX;
		e->last_used_ms = e->expires_ms - mcpx_redis_elem_int(rep, i * step + 3);
		e->version = step == 5 ? (uint64_t)mcpx_redis_elem_int(rep, i * step + 4) : 0;
		op->res.n_entries++;
	}
	if (op->res.n_entries)
		qsort(op->res.entries, op->res.n_entries, sizeof(*op->res.entries), entry_cmp);
	op->res.rc = 0;
}

void mcpx_redis_rop_start(struct mcpx_redis_rop *r)
{
	switch (r->op->code) {
	case MCPX_OP_GET:
		mcpx_redis_get_start(r);
		break;
	case MCPX_OP_PUT:
		put_start(r);
		break;
	case MCPX_OP_DELETE:
		delete_start(r);
		break;
	case MCPX_OP_LIST:
		list_start(r);
		break;
	default:
		mcpx_redis_record_start(r);
		break;
	}
}

void mcpx_redis_rop_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	switch (r->op->code) {
	case MCPX_OP_GET:
		mcpx_redis_get_reply(r, rep);
		break;
	case MCPX_OP_PUT:
		put_reply(r, rep);
		break;
	case MCPX_OP_DELETE:
		delete_reply(r, rep);
		break;
	case MCPX_OP_LIST:
		list_reply(r, rep);
		break;
	default:
		mcpx_redis_record_reply(r, rep);
		break;
	}
}
