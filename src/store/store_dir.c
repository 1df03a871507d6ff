/*
 * store_dir.c - the directory store's backend (store_backend.h): two worker
 * threads and a sweep timer around dir_ops.h and dir_sweep.h.
 *
 * Blob reads, writes and listings go to one worker ("bulk") and records and
 * leases to another ("small"), so a lease renewal or a task's status never
 * waits behind a 64 MiB fsync. Each worker runs its ops in order. The
 * sweep (expiry, bytes stored) runs on the bulk worker every
 * sweep_interval_ms.
 *
 * Opening makes the directory (0700, parents too) when missing, refuses a
 * v1/ beneath it that another user owns or that others may enter, and
 * proves it writable, so a read-only or foreign volume is a start-up error
 * rather than a failed save later.
 *
 * What it does not do: decide whether runs can read the directory (the app
 * asks the sandbox), or survive a worker stuck in the kernel (an NFS server
 * gone for good): ops then fail at their deadline, and freeing the store
 * waits for the worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_file.h"
#include "dir_ops.h"
#include "dir_sweep.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"

#define DEFAULT_SWEEP_MS 60000u
#define FIRST_SWEEP_MS 1000u

struct sweep_task {
	struct mcpx_offload_task t;
	struct dir_backend *b;
	struct mcpx_dir_sweep_stats st;
};

struct dir_backend {
	struct mcpx_store_backend base;
	int root;
	struct mcpx_offload *bulk, *small;
	struct mcpx_timer sweep_timer;
	uint32_t sweep_ms;
	bool sweeping;
	struct sweep_task sweep;
};

struct dir_task {
	struct mcpx_offload_task t;
	struct mcpx_store_op *op;
	int root;
};

static void task_work(struct mcpx_offload_task *t)
{
	struct dir_task *dt = (struct dir_task *)t;

	mcpx_dir_run(dt->root, dt->op);
}

static void task_done(struct mcpx_offload_task *t)
{
	struct dir_task *dt = (struct dir_task *)t;
	struct mcpx_store_op *op = dt->op;

	if (t->cancelled)
		mcpx_store_op_fail(op, -ESHUTDOWN, "the store is shutting down");
	free(dt);
	mcpx_store_op_done(op);
}

static void dir_submit(struct mcpx_store_backend *base, struct mcpx_store_op *op)
{
	struct dir_backend *b = (struct dir_backend *)base;
	struct dir_task *dt = calloc(1, sizeof(*dt));
	bool bulk = op->code == MCPX_OP_GET || op->code == MCPX_OP_PUT || op->code == MCPX_OP_LIST;

	if (!dt) {
		mcpx_store_op_fail(op, -ENOMEM, "out of memory");
		mcpx_store_op_done(op);
		return;
	}
	dt->t.work = task_work;
	dt->t.done = task_done;
	dt->op = op;
	dt->root = b->root;
	mcpx_offload_submit(bulk ? b->bulk : b->small, &dt->t);
}

static void sweep_work(struct mcpx_offload_task *t)
{
	struct sweep_task *st = (struct sweep_task *)t;

	mcpx_dir_sweep(st->b->root, &st->st);
}

static void sweep_done(struct mcpx_offload_task *t)
{
	struct sweep_task *st = (struct sweep_task *)t;
	struct dir_backend *b = st->b;

	b->sweeping = false;
	if (t->cancelled)
		return;
	if (st->st.rc < 0)
		mcpx_warn("store: the directory sweep met an error (%s)", strerror(-st->st.rc));
	if (st->st.removed)
		mcpx_debug("store: the directory sweep removed %llu expired objects",
		           (unsigned long long)st->st.removed);
	mcpx_metrics_store_stored("dir", st->st.objects, st->st.bytes);
	mcpx_timer_start(b->base.loop, &b->sweep_timer, (uint64_t)b->sweep_ms * 1000u);
}

static void sweep_timer_cb(struct mcpx_timer *t)
{
	struct dir_backend *b = t->arg;

	if (b->sweeping)
		return;
	b->sweeping = true;
	memset(&b->sweep.st, 0, sizeof(b->sweep.st));
	mcpx_offload_submit(b->bulk, &b->sweep.t);
}

static void dir_free(struct mcpx_store_backend *base)
{
	struct dir_backend *b = (struct dir_backend *)base;

	mcpx_timer_cancel(&b->sweep_timer);
	/* Each finishes its running op and fails the queued ones. */
	mcpx_offload_free(b->bulk);
	mcpx_offload_free(b->small);
	if (b->root >= 0)
		close(b->root);
	free(b);
}

static const struct mcpx_store_backend_ops dir_ops = {"dir", dir_submit, dir_free};

/* mkdir -p, each missing part 0700. */
static int make_path(const char *path)
{
	char p[4096];
	size_t n = strlen(path);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -errno;
		p[i] = i < n ? '/' : '\0';
	}
	return 0;
}

/* v1/ is ours, private, and takes a file. */
static int check_v1(int root, struct mcpx_err *err)
{
	struct stat st;
	int v1, fd;

	if (mkdirat(root, "v1", 0700) < 0 && errno != EEXIST)
		return mcpx_err_set(err, errno, "the store directory is not writable (%s)",
		                    strerror(errno));
	v1 = openat(root, "v1", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v1 < 0 || fstat(v1, &st) < 0) {
		int e = errno;

		if (v1 >= 0)
			close(v1);
		return mcpx_err_set(err, e, "the store directory's v1/ cannot be opened (%s)",
		                    strerror(e));
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(v1);
		return mcpx_err_set(err, EPERM,
		                    "the store directory's v1/ must belong to this user and be "
		                    "closed to others (chmod 700)");
	}
	fd = openat(v1, ".probe", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;

		close(v1);
		return mcpx_err_set(err, e, "the store directory is not writable (%s)",
		                    strerror(e));
	}
	close(fd);
	unlinkat(v1, ".probe", 0);
	close(v1);
	return 0;
}

int mcpx_store_dir_open(struct mcpx_loop *loop, const struct mcpx_store_config *cfg,
                        struct mcpx_store_backend **out, struct mcpx_err *err)
{
	struct dir_backend *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	b->root = -1;
	if ((rc = make_path(cfg->spec.dir)) < 0) {
		rc = mcpx_err_set(err, -rc, "the store directory cannot be made (%s)",
		                  strerror(-rc));
		goto fail;
	}
	b->root = open(cfg->spec.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->root < 0) {
		rc = mcpx_err_set(err, errno, "the store directory cannot be opened (%s)",
		                  strerror(errno));
		goto fail;
	}
	if ((rc = check_v1(b->root, err)) < 0)
		goto fail;
	if ((rc = mcpx_offload_new(loop, &b->bulk)) < 0 ||
	    (rc = mcpx_offload_new(loop, &b->small)) < 0) {
		mcpx_err_set(err, -rc, "the store's worker threads cannot start");
		goto fail;
	}
	b->base.ops = &dir_ops;
	b->base.loop = loop;
	b->sweep_ms = cfg->sweep_interval_ms ? cfg->sweep_interval_ms : DEFAULT_SWEEP_MS;
	b->sweep.b = b;
	b->sweep.t.work = sweep_work;
	b->sweep.t.done = sweep_done;
	b->sweep_timer.fn = sweep_timer_cb;
	b->sweep_timer.arg = b;
	mcpx_timer_start(loop, &b->sweep_timer,
	                 (uint64_t)(b->sweep_ms < FIRST_SWEEP_MS ? b->sweep_ms : FIRST_SWEEP_MS) *
	                     1000u);
	*out = &b->base;
	return 0;
fail:
	mcpx_offload_free(b->bulk);
	if (b->root >= 0)
		close(b->root);
	free(b);
	return rc;
}
