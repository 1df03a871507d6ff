/*
 * redis_records.c - the Redis store's records and leases (redis_records.h):
 * one EVAL each (redis_scripts.c), so the version check and the write, or
 * the owner check and the change, are one step for Redis.
 *
 * Versions travel as decimal strings ("any" and "0" mean what
 * MCPX_STORE_ANY_VERSION and create-only mean); a lease is a key holding
 * its owner with Redis's own expiry, so a lapsed lease is simply gone.
 */
#include "redis_records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_scripts.h"

static const char *const rec_keys[] = {"r:", "ri"};
static const char *const lease_key[] = {"l:"};

static void version_arg(char out[24], uint64_t v)
{
	if (v == MCPX_STORE_ANY_VERSION)
		snprintf(out, 24, "any");
	else
		snprintf(out, 24, "%llu", (unsigned long long)v);
}

void mcpx_redis_record_start(struct mcpx_redis_rop *r)
{
	struct mcpx_store_op *op = r->op;
	struct mcpx_redis_cmd c = {0};
	char ver[24], ttl[24], maxc[16], prefix[MCPX_STORE_NAME_MAX + 64];

	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)op->ttl_ms);
	version_arg(ver, op->expect_version);
	switch (op->code) {
	case MCPX_OP_RECORD_GET:
		mcpx_redis_eval(&c, op, mcpx_redis_record_get, rec_keys, 1);
		break;
	case MCPX_OP_RECORD_PUT:
		snprintf(maxc, sizeof(maxc), "%u", op->max_count);
		snprintf(prefix, sizeof(prefix), "mcpx:v1:{%s:%s}:r:", op->key.kind,
		         op->key.caller);
		mcpx_redis_eval(&c, op, mcpx_redis_record_put, rec_keys, 2);
		mcpx_redis_arg(&c, op->key.name, strlen(op->key.name));
		mcpx_redis_arg(&c, op->data, op->len);
		mcpx_redis_arg(&c, ver, strlen(ver));
		mcpx_redis_arg(&c, ttl, strlen(ttl));
		mcpx_redis_arg(&c, maxc, strlen(maxc));
		mcpx_redis_arg(&c, prefix, strlen(prefix));
		break;
	case MCPX_OP_RECORD_DELETE:
		mcpx_redis_eval(&c, op, mcpx_redis_record_delete, rec_keys, 2);
		mcpx_redis_arg(&c, op->key.name, strlen(op->key.name));
		mcpx_redis_arg(&c, ver, strlen(ver));
		break;
	case MCPX_OP_LEASE_ACQUIRE:
	case MCPX_OP_LEASE_RENEW:
		mcpx_redis_eval(&c, op,
		                op->code == MCPX_OP_LEASE_ACQUIRE ? mcpx_redis_lease_acquire
		                                                  : mcpx_redis_lease_renew,
		                lease_key, 1);
		mcpx_redis_arg(&c, op->owner, strlen(op->owner));
		mcpx_redis_arg(&c, ttl, strlen(ttl));
		break;
	case MCPX_OP_LEASE_RELEASE:
		mcpx_redis_eval(&c, op, mcpx_redis_lease_release, lease_key, 1);
		mcpx_redis_arg(&c, op->owner, strlen(op->owner));
		break;
	case MCPX_OP_LEASE_PEEK:
		mcpx_redis_eval(&c, op, mcpx_redis_lease_peek, lease_key, 1);
		break;
	default:
		r->done_sending = true;
		mcpx_store_op_fail(op, -EINVAL, "not an operation of this store");
		return;
	}
	r->done_sending = true;
	mcpx_redis_cmd_send(r, &c);
}

static void record_get_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	redisReply *d = (redisReply *)mcpx_redis_elem_str(rep, 1);
	int64_t now = mcpx_store_now_ms(), left = mcpx_redis_elem_int(rep, 3);

	if (rep->elements == 0) {
		mcpx_store_op_fail(op, -ENOENT, "not found");
		return;
	}
	if (!d || rep->elements != 4 || d->len > MCPX_STORE_RECORD_MAX) {
		mcpx_store_op_fail(op, -EIO, "a record in the store is damaged");
		return;
	}
	op->res.version = (uint64_t)mcpx_redis_elem_int(rep, 0);
	op->res.len = d->len;
	op->res.data = d->str; /* hiredis's malloc'd buffer, taken */
	d->str = NULL;
	d->len = 0;
	op->res.expires_ms = left >= 0 ? now + left : INT64_MAX;
	op->res.last_used_ms = op->res.expires_ms - mcpx_redis_elem_int(rep, 2);
	op->res.rc = 0;
}

/* {code, version}: record_put and record_delete. */
static void record_change_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	int64_t code = mcpx_redis_elem_int(rep, 0), now = mcpx_store_now_ms();

	if (rep->elements != 2) {
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	op->res.version = (uint64_t)mcpx_redis_elem_int(rep, 1);
	switch (code) {
	case 0:
		op->res.rc = 0;
		if (op->code == MCPX_OP_RECORD_PUT) {
			op->res.last_used_ms = now;
			op->res.expires_ms = now + (int64_t)op->ttl_ms;
		}
		break;
	case -1:
		mcpx_store_op_fail(op, -EEXIST, "the record exists");
		break;
	case -2:
		mcpx_store_op_fail(op, -ENOENT, "not found");
		break;
	case -3:
		mcpx_store_op_fail(op, -ESTALE, "the record has another version");
		break;
	default:
		mcpx_store_op_fail(op, -EDQUOT, "the caller already has %u records of kind %s",
		                   op->max_count, op->key.kind);
	}
}

static void lease_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	struct mcpx_store_op *op = r->op;
	const redisReply *h;

	if (op->code == MCPX_OP_LEASE_RENEW || op->code == MCPX_OP_LEASE_RELEASE) {
		if (rep->type != REDIS_REPLY_INTEGER)
			mcpx_redis_fail_reply(r, rep);
		else if (rep->integer == 1)
			op->res.rc = 0;
		else
			mcpx_store_op_fail(op, -ENOLCK,
			                   "the lease is not held by this owner any more");
		return;
	}
	if (op->code == MCPX_OP_LEASE_ACQUIRE && mcpx_redis_elem_int(rep, 0) == 1) {
		op->res.rc = 0;
		return;
	}
	/* acquire refused: {0, holder, ms left}; peek: {holder, ms left}. */
	h = mcpx_redis_elem_str(rep, op->code == MCPX_OP_LEASE_ACQUIRE ? 1 : 0);
	if (!h) {
		mcpx_store_op_fail(op, -ENOENT, "nobody holds the lease");
		return;
	}
	snprintf(op->res.holder, sizeof(op->res.holder), "%.*s",
	         (int)(h->len < MCPX_STORE_OWNER_MAX ? h->len : MCPX_STORE_OWNER_MAX), h->str);
	op->res.holder_ms_left =
	    mcpx_redis_elem_int(rep, op->code == MCPX_OP_LEASE_ACQUIRE ? 2 : 1);
	if (op->code == MCPX_OP_LEASE_ACQUIRE)
		mcpx_store_op_fail(op, -EBUSY, "the lease is held by another owner");
	else
		op->res.rc = 0;
}

void mcpx_redis_record_reply(struct mcpx_redis_rop *r, redisReply *rep)
{
	bool want_array =
	    r->op->code != MCPX_OP_LEASE_RENEW && r->op->code != MCPX_OP_LEASE_RELEASE;

	if (rep->type == REDIS_REPLY_ERROR || (want_array && rep->type != REDIS_REPLY_ARRAY)) {
		mcpx_redis_fail_reply(r, rep);
		return;
	}
	switch (r->op->code) {
	case MCPX_OP_RECORD_GET:
		record_get_reply(r, rep);
		break;
	case MCPX_OP_RECORD_PUT:
	case MCPX_OP_RECORD_DELETE:
		record_change_reply(r, rep);
		break;
	default:
		lease_reply(r, rep);
	}
}
