/*
 * dir_lease.c - the directory store's leases: one small file per lease
 * holding its owner, whose mtime is the moment it lapses (dir_file.h).
 *
 * Acquiring, renewing and releasing look at the file and change it under
 * the caller directory's lock, so two replicas on one volume cannot both
 * take a lease; a renewal only moves the mtime on (and syncs it). A lease
 * whose holder died is not removed: it is simply past its time, and the
 * next acquirer replaces it. Peeking reads without the lock.
 */
#include "dir_lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dir_file.h"

struct lease_ctx {
	int cdir, sub, lock, fd;
	struct mcpx_dir_obj cur; /* the lease file found (data: its owner) */
	bool live;               /* found and not lapsed */
	int64_t now;
};

static void ctx_close(struct lease_ctx *c)
{
	free(c->cur.data);
	if (c->fd >= 0)
		close(c->fd);
	mcpx_dir_unlock(c->lock);
	if (c->sub >= 0)
		close(c->sub);
	if (c->cdir >= 0)
		close(c->cdir);
}

/* Opens (making them for an acquire) the caller's lease directory, takes
 * the lock unless peeking, and reads the lease. */
static int ctx_open(int root, struct mcpx_store_op *op, bool create, bool lock, struct lease_ctx *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->cdir = c->sub = c->lock = c->fd = -1;
	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, create, &c->cdir)) < 0 ||
	    (lock && (rc = mcpx_dir_lock(c->cdir, op->timeout_ms, &c->lock)) < 0) ||
	    (rc = mcpx_dir_open_sub(c->cdir, MCPX_DIR_LEASE, create, &c->sub)) < 0)
		return rc;
	c->now = mcpx_store_now_ms();
	rc = mcpx_dir_read(c->sub, op->key.name, MCPX_DIR_LEASE, true, MCPX_STORE_OWNER_MAX,
	                   &c->cur, &c->fd);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	c->live = c->cur.expires_ms > c->now;
	return 0;
}

static int io_error(struct mcpx_store_op *op, int rc)
{
	if (rc == -ENOSPC || rc == -EDQUOT)
		return mcpx_store_op_fail(op, -EIO, "the store's disk is full (lease)");
	if (rc == -ETIMEDOUT)
		return mcpx_store_op_fail(op, rc, "lease: the caller's lock was held too long");
	return mcpx_store_op_fail(op, -EIO, "lease: %s", strerror(-rc));
}

static void tell_holder(struct mcpx_store_op *op, const struct lease_ctx *c)
{
	snprintf(op->res.holder, sizeof(op->res.holder), "%s", c->cur.data ? c->cur.data : "");
	op->res.holder_ms_left = c->cur.expires_ms - c->now;
}

static int lease_acquire(int root, struct mcpx_store_op *op)
{
	struct mcpx_dir_hdr h = {MCPX_DIR_LEASE, op->ttl_ms, 0, strlen(op->owner)};
	struct lease_ctx c;
	char tmp[32];
	int rc = ctx_open(root, op, true, true, &c);

	if (rc < 0) {
		io_error(op, rc);
		goto out;
	}
	if (c.live && strcmp(c.cur.data, op->owner) != 0) {
		tell_holder(op, &c);
		rc = mcpx_store_op_fail(op, -EBUSY, "the lease is held by another owner");
		goto out;
	}
	if ((rc = mcpx_dir_write_tmp(c.cdir, &h, op->owner, c.now + (int64_t)op->ttl_ms, tmp)) < 0)
		goto fail;
	if ((rc = mcpx_dir_commit(c.cdir, tmp, c.sub, op->key.name)) < 0) {
		unlinkat(c.cdir, tmp, 0);
		goto fail;
	}
	goto out;
fail:
	io_error(op, rc);
out:
	ctx_close(&c);
	return rc;
}

/* Renew and release: only the live lease of this owner. */
static int lease_change(int root, struct mcpx_store_op *op)
{
	struct lease_ctx c;
	int rc = ctx_open(root, op, false, true, &c);

	if (rc == -ENOENT || (rc == 0 && (!c.live || strcmp(c.cur.data, op->owner) != 0))) {
		rc =
		    mcpx_store_op_fail(op, -ENOLCK, "the lease is not held by this owner any more");
		goto out;
	}
	if (rc < 0) {
		io_error(op, rc);
		goto out;
	}
	if (op->code == MCPX_OP_LEASE_RENEW)
		rc = mcpx_dir_set_expiry(c.fd, c.now + (int64_t)op->ttl_ms, true);
	else if (unlinkat(c.sub, op->key.name, 0) < 0 || fsync(c.sub) < 0)
		rc = -errno;
	if (rc < 0)
		io_error(op, rc);
out:
	ctx_close(&c);
	return rc;
}

static int lease_peek(int root, struct mcpx_store_op *op)
{
	struct lease_ctx c;
	int rc = ctx_open(root, op, false, false, &c);

	if (rc == -ENOENT || (rc == 0 && !c.live)) {
		rc = mcpx_store_op_fail(op, -ENOENT, "nobody holds the lease");
		goto out;
	}
	if (rc < 0) {
		io_error(op, rc);
		goto out;
	}
	tell_holder(op, &c);
out:
	ctx_close(&c);
	return rc;
}

int mcpx_dir_lease_run(int root, struct mcpx_store_op *op)
{
	switch (op->code) {
	case MCPX_OP_LEASE_ACQUIRE:
		return lease_acquire(root, op);
	case MCPX_OP_LEASE_RENEW:
	case MCPX_OP_LEASE_RELEASE:
		return lease_change(root, op);
	case MCPX_OP_LEASE_PEEK:
		return lease_peek(root, op);
	default:
		return mcpx_store_op_fail(op, -EINVAL, "not an operation of this store");
	}
}
