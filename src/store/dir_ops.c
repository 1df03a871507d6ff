/*
 * dir_ops.c - the directory store's operations, each a short synchronous
 * sequence of dir_file.h steps run on a worker thread (store_dir.c).
 *
 * Reads take no lock (a rename is atomic); anything whose outcome depends
 * on what is there (a count or byte cap, a record's version, a lease's
 * owner) looks and changes under the caller directory's lock, which
 * replicas on a shared volume take too. A blob is written to its
 * temporary file before the lock is taken, so a 64 MiB write never holds
 * other writers of the same caller back; only the checks and the rename
 * happen under it.
 *
 * What it does not do: touch the loop or anything of the front's but the
 * op it was handed (its result and message).
 */
#include "dir_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dir_file.h"
#include "dir_lease.h"

/* A fresh record's version: the wall clock in microseconds, so a record
 * deleted and made again does not reuse a version a writer still holds. */
static uint64_t fresh_version(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u + 1;
}

static int fail_io(struct mcpx_store_op *op, int rc, const char *what)
{
	if (rc == -ENOSPC || rc == -EDQUOT)
		return mcpx_store_op_fail(op, -EIO, "the store's disk is full (%s)", what);
	if (rc == -ENOMEM)
		return mcpx_store_op_fail(op, rc, "out of memory");
	if (rc == -ETIMEDOUT)
		return mcpx_store_op_fail(op, rc, "%s: the caller's lock was held too long", what);
	return mcpx_store_op_fail(op, rc == -ENOENT ? -ENOENT : -EIO, "%s: %s", what,
	                          rc == -ENOENT ? "not found" : strerror(-rc));
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* Whether owner holds the lease name in cdir now. */
static bool lease_held_by(int cdir, const char *name, const char *owner, int64_t now)
{
	struct mcpx_dir_obj o;
	int sub = -1;
	bool held;

	if (mcpx_dir_open_sub(cdir, MCPX_DIR_LEASE, false, &sub) < 0)
		return false;
	held =
	    mcpx_dir_read(sub, name, MCPX_DIR_LEASE, true, MCPX_STORE_OWNER_MAX, &o, NULL) == 0 &&
	    o.expires_ms > now && strcmp(o.data, owner) == 0;
	free(o.data);
	close(sub);
	return held;
}

/* Counts the unexpired objects in sub other than skip, and their bytes. */
static int count_sub(int sub, enum mcpx_dir_type t, const char *skip, int64_t now, unsigned *count,
                     uint64_t *bytes)
{
	int fd = dup(sub);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	*count = 0;
	*bytes = 0;
	if (!d) {
		close_fd(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!mcpx_dir_name_ok(e->d_name) || (skip && strcmp(e->d_name, skip) == 0))
			continue;
		if (fstatat(sub, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    mcpx_dir_mtime_ms(&st) <= now)
			continue;
		(*count)++;
		*bytes += st.st_size > MCPX_DIR_HDR ? (uint64_t)st.st_size - MCPX_DIR_HDR : 0;
	}
	(void)t;
	closedir(d);
	return 0;
}

static int dir_get(int root, struct mcpx_store_op *op)
{
	struct mcpx_dir_obj o;
	int cdir = -1, sub = -1, fd = -1, rc;
	int64_t now = mcpx_store_now_ms();

	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, false, &cdir)) < 0 ||
	    (rc = mcpx_dir_open_sub(cdir, MCPX_DIR_BLOB, false, &sub)) < 0 ||
	    (rc = mcpx_dir_read(sub, op->key.name, MCPX_DIR_BLOB, true, op->max_blob_bytes, &o,
	                        &fd)) < 0) {
		fail_io(op, rc, "reading the blob");
		goto out;
	}
	if (o.expires_ms <= now) {
		free(o.data);
		rc = mcpx_store_op_fail(op, -ENOENT, "not found (expired)");
		goto out;
	}
	if (op->refresh) {
		int64_t exp = now + (int64_t)o.h.ttl_ms;

		/* Best effort: a blob whose refresh failed still reads. */
		if (mcpx_dir_set_expiry(fd, exp, false) == 0)
			o.expires_ms = exp;
	}
	op->res.data = o.data;
	op->res.len = (size_t)o.h.len;
	op->res.expires_ms = o.expires_ms;
	op->res.last_used_ms = o.expires_ms - (int64_t)o.h.ttl_ms;
	rc = 0;
out:
	close_fd(fd);
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

/* The checks a put makes under the lock. */
static int put_checks(struct mcpx_store_op *op, int cdir, int sub, int64_t now)
{
	unsigned count;
	uint64_t bytes;
	int rc;

	if (op->owner[0] && !lease_held_by(cdir, op->key.name, op->owner, now))
		return mcpx_store_op_fail(op, -ENOLCK,
		                          "the lease on this name is not held any more");
	if (!op->max_count && !op->max_total_bytes)
		return 0;
	if ((rc = count_sub(sub, MCPX_DIR_BLOB, op->key.name, now, &count, &bytes)) < 0)
		return fail_io(op, rc, "counting the caller's blobs");
	if (op->max_count && count + 1 > op->max_count)
		return mcpx_store_op_fail(op, -EDQUOT, "the caller already has %u of kind %s",
		                          count, op->key.kind);
	if (op->max_total_bytes && bytes + op->len > op->max_total_bytes)
		return mcpx_store_op_fail(
		    op, -EDQUOT, "the caller's %s blobs would pass their byte cap", op->key.kind);
	return 0;
}

static int dir_put(int root, struct mcpx_store_op *op)
{
	struct mcpx_dir_hdr h = {MCPX_DIR_BLOB, op->ttl_ms, 0, op->len};
	int cdir = -1, sub = -1, lock = -1, rc;
	char tmp[32] = "";
	int64_t now = mcpx_store_now_ms();

	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, true, &cdir)) < 0 ||
	    (rc = mcpx_dir_open_sub(cdir, MCPX_DIR_BLOB, true, &sub)) < 0 ||
	    (rc = mcpx_dir_write_tmp(cdir, &h, op->data, now + (int64_t)op->ttl_ms, tmp)) < 0) {
		tmp[0] = '\0';
		fail_io(op, rc, "writing the blob");
		goto out;
	}
	/* The bytes are on disk: the memory is not needed any more. */
	free(op->data);
	op->data = NULL;
	if ((rc = mcpx_dir_lock(cdir, op->timeout_ms, &lock)) < 0) {
		fail_io(op, rc, "locking the caller's directory");
		goto out;
	}
	if ((rc = put_checks(op, cdir, sub, mcpx_store_now_ms())) < 0)
		goto out;
	if ((rc = mcpx_dir_commit(cdir, tmp, sub, op->key.name)) < 0) {
		fail_io(op, rc, "committing the blob");
		goto out;
	}
	tmp[0] = '\0';
	op->res.last_used_ms = now;
	op->res.expires_ms = now + (int64_t)op->ttl_ms;
out:
	if (tmp[0])
		unlinkat(cdir, tmp, 0);
	mcpx_dir_unlock(lock);
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

static int dir_delete(int root, struct mcpx_store_op *op)
{
	int cdir = -1, sub = -1, lock = -1, rc;
	struct stat st;
	int64_t now;

	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, false, &cdir)) < 0 ||
	    (rc = mcpx_dir_lock(cdir, op->timeout_ms, &lock)) < 0) {
		fail_io(op, rc, "deleting the blob");
		goto out;
	}
	now = mcpx_store_now_ms();
	if (op->owner[0] && !lease_held_by(cdir, op->key.name, op->owner, now)) {
		rc = mcpx_store_op_fail(op, -ENOLCK, "the lease on this name is not held any more");
		goto out;
	}
	if ((rc = mcpx_dir_open_sub(cdir, MCPX_DIR_BLOB, false, &sub)) < 0 ||
	    (fstatat(sub, op->key.name, &st, AT_SYMLINK_NOFOLLOW) < 0 && (rc = -errno)) ||
	    (unlinkat(sub, op->key.name, 0) < 0 && (rc = -errno)) ||
	    (fsync(sub) < 0 && (rc = -errno))) {
		fail_io(op, rc, "deleting the blob");
		goto out;
	}
	if (mcpx_dir_mtime_ms(&st) <= now)
		rc = mcpx_store_op_fail(op, -ENOENT, "not found (expired)");
out:
	mcpx_dir_unlock(lock);
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mcpx_store_entry *)a)->name,
	              ((const struct mcpx_store_entry *)b)->name);
}

/* Adds sub's object name to the op's list when it is unexpired. */
static int list_add(struct mcpx_store_op *op, int sub, enum mcpx_dir_type t, const char *name,
                    int64_t now, size_t *cap)
{
	struct mcpx_store_entry *e;
	struct mcpx_dir_obj o;

	if (mcpx_dir_read(sub, name, t, false, 0, &o, NULL) < 0 || o.expires_ms <= now)
		return 0; /* gone meanwhile, expired, or not ours */
	if (op->res.n_entries == MCPX_STORE_LIST_MAX)
		return mcpx_store_op_fail(op, -E2BIG, "more than %d entries", MCPX_STORE_LIST_MAX);
	if (op->res.n_entries == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct mcpx_store_entry *ne = realloc(op->res.entries, ncap * sizeof(*ne));

		if (!ne)
			return mcpx_store_op_fail(op, -ENOMEM, "out of memory");
		op->res.entries = ne;
		*cap = ncap;
	}
	e = &op->res.entries[op->res.n_entries++];
	memset(e, 0, sizeof(*e));
	/* mcpx_dir_name_ok bounded it to MCPX_STORE_NAME_MAX. */
	memcpy(e->name, name, strnlen(name, MCPX_STORE_NAME_MAX));
	e->bytes = o.h.len;
	e->expires_ms = o.expires_ms;
	e->last_used_ms = o.expires_ms - (int64_t)o.h.ttl_ms;
	e->version = t == MCPX_DIR_RECORD ? o.h.version : 0;
	return 0;
}

static int dir_list(int root, struct mcpx_store_op *op)
{
	enum mcpx_dir_type t =
	    op->what == MCPX_STORE_LIST_RECORDS ? MCPX_DIR_RECORD : MCPX_DIR_BLOB;
	int cdir = -1, sub = -1, fd, rc = 0;
	int64_t now = mcpx_store_now_ms();
	size_t cap = 0;
	struct dirent *e;
	DIR *d = NULL;

	/* A caller with nothing yet has an empty list. */
	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, false, &cdir)) < 0 ||
	    (rc = mcpx_dir_open_sub(cdir, t, false, &sub)) < 0) {
		rc = rc == -ENOENT ? 0 : fail_io(op, rc, "listing");
		goto out;
	}
	fd = dup(sub);
	if (fd < 0 || !(d = fdopendir(fd))) {
		close_fd(fd);
		rc = fail_io(op, -errno, "listing");
		goto out;
	}
	while ((e = readdir(d)) && rc == 0)
		if (mcpx_dir_name_ok(e->d_name))
			rc = list_add(op, sub, t, e->d_name, now, &cap);
	if (rc == 0 && op->res.n_entries)
		qsort(op->res.entries, op->res.n_entries, sizeof(*op->res.entries), entry_cmp);
out:
	if (d)
		closedir(d);
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

static int dir_record_get(int root, struct mcpx_store_op *op)
{
	struct mcpx_dir_obj o;
	int cdir = -1, sub = -1, rc;

	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, false, &cdir)) < 0 ||
	    (rc = mcpx_dir_open_sub(cdir, MCPX_DIR_RECORD, false, &sub)) < 0 ||
	    (rc = mcpx_dir_read(sub, op->key.name, MCPX_DIR_RECORD, true, MCPX_STORE_RECORD_MAX, &o,
	                        NULL)) < 0) {
		fail_io(op, rc, "reading the record");
		goto out;
	}
	if (o.expires_ms <= mcpx_store_now_ms()) {
		free(o.data);
		rc = mcpx_store_op_fail(op, -ENOENT, "not found (expired)");
		goto out;
	}
	op->res.data = o.data;
	op->res.len = (size_t)o.h.len;
	op->res.version = o.h.version;
	op->res.expires_ms = o.expires_ms;
	op->res.last_used_ms = o.expires_ms - (int64_t)o.h.ttl_ms;
out:
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

/* The version check of record_put and record_delete: 0 when the write may
 * go ahead; *cur gets the version found (0: none). */
static int record_check(struct mcpx_store_op *op, int sub, int64_t now, uint64_t *cur)
{
	struct mcpx_dir_obj o;
	int rc = mcpx_dir_read(sub, op->key.name, MCPX_DIR_RECORD, false, 0, &o, NULL);
	bool exists = rc == 0 && o.expires_ms > now;

	if (rc < 0 && rc != -ENOENT)
		return fail_io(op, rc, "reading the record");
	*cur = exists ? o.h.version : 0;
	op->res.version = *cur;
	if (op->expect_version == MCPX_STORE_ANY_VERSION)
		return 0;
	if (op->expect_version == 0)
		return exists ? mcpx_store_op_fail(op, -EEXIST, "the record exists") : 0;
	if (!exists)
		return mcpx_store_op_fail(op, -ENOENT, "not found");
	if (*cur != op->expect_version)
		return mcpx_store_op_fail(op, -ESTALE, "the record has another version");
	return 0;
}

static int dir_record_put(int root, struct mcpx_store_op *op)
{
	struct mcpx_dir_hdr h = {MCPX_DIR_RECORD, op->ttl_ms, 0, op->len};
	int cdir = -1, sub = -1, lock = -1, rc;
	char tmp[32] = "";
	uint64_t cur, bytes;
	unsigned count;
	int64_t now;

	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, true, &cdir)) < 0 ||
	    (rc = mcpx_dir_open_sub(cdir, MCPX_DIR_RECORD, true, &sub)) < 0 ||
	    (rc = mcpx_dir_lock(cdir, op->timeout_ms, &lock)) < 0) {
		fail_io(op, rc, "writing the record");
		goto out;
	}
	now = mcpx_store_now_ms();
	if ((rc = record_check(op, sub, now, &cur)) < 0)
		goto out;
	if (!cur && op->max_count) {
		if ((rc = count_sub(sub, MCPX_DIR_RECORD, op->key.name, now, &count, &bytes)) < 0) {
			fail_io(op, rc, "counting the caller's records");
			goto out;
		}
		if (count >= op->max_count) {
			rc = mcpx_store_op_fail(op, -EDQUOT,
			                        "the caller already has %u records of kind %s",
			                        count, op->key.kind);
			goto out;
		}
	}
	h.version = cur ? cur + 1 : fresh_version();
	if ((rc = mcpx_dir_write_tmp(cdir, &h, op->data, now + (int64_t)op->ttl_ms, tmp)) < 0 ||
	    (rc = mcpx_dir_commit(cdir, tmp, sub, op->key.name)) < 0) {
		fail_io(op, rc, "writing the record");
		goto out;
	}
	tmp[0] = '\0';
	op->res.version = h.version;
	op->res.last_used_ms = now;
	op->res.expires_ms = now + (int64_t)op->ttl_ms;
out:
	if (tmp[0])
		unlinkat(cdir, tmp, 0);
	mcpx_dir_unlock(lock);
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

static int dir_record_delete(int root, struct mcpx_store_op *op)
{
	int cdir = -1, sub = -1, lock = -1, rc;
	uint64_t cur;

	if ((rc = mcpx_dir_open_caller(root, op->key.kind, op->key.caller, false, &cdir)) < 0 ||
	    (rc = mcpx_dir_open_sub(cdir, MCPX_DIR_RECORD, false, &sub)) < 0 ||
	    (rc = mcpx_dir_lock(cdir, op->timeout_ms, &lock)) < 0) {
		fail_io(op, rc, "deleting the record");
		goto out;
	}
	if ((rc = record_check(op, sub, mcpx_store_now_ms(), &cur)) < 0)
		goto out;
	if (!cur) {
		rc = mcpx_store_op_fail(op, -ENOENT, "not found");
		goto out;
	}
	if ((unlinkat(sub, op->key.name, 0) < 0 && (rc = -errno)) ||
	    (fsync(sub) < 0 && (rc = -errno)))
		fail_io(op, rc, "deleting the record");
out:
	mcpx_dir_unlock(lock);
	close_fd(sub);
	close_fd(cdir);
	return rc;
}

void mcpx_dir_run(int root, struct mcpx_store_op *op)
{
	int rc;

	switch (op->code) {
	case MCPX_OP_GET:
		rc = dir_get(root, op);
		break;
	case MCPX_OP_PUT:
		rc = dir_put(root, op);
		break;
	case MCPX_OP_DELETE:
		rc = dir_delete(root, op);
		break;
	case MCPX_OP_LIST:
		rc = dir_list(root, op);
		break;
	case MCPX_OP_RECORD_GET:
		rc = dir_record_get(root, op);
		break;
	case MCPX_OP_RECORD_PUT:
		rc = dir_record_put(root, op);
		break;
	case MCPX_OP_RECORD_DELETE:
		rc = dir_record_delete(root, op);
		break;
	default:
		rc = mcpx_dir_lease_run(root, op);
		break;
	}
	op->res.rc = rc < 0 ? rc : 0;
}
