/*
 * dir_ops.h - the directory store's operations on a worker thread
 * (dir_ops.c: blobs and records; dir_lease.c: leases; dir_sweep.c: expiry).
 *
 * Each fills op->res (rc, data, ...) and op->err; none touches the loop.
 * root is the store directory's fd.
 */
#ifndef MCPX_DIR_OPS_H
#define MCPX_DIR_OPS_H

#include <stdint.h>

#include "store_backend.h"

void mcpx_dir_run(int root, struct mcpx_store_op *op);
int mcpx_dir_lease_run(int root, struct mcpx_store_op *op);

/* What a sweep found. */
struct mcpx_dir_sweep_stats {
	uint64_t objects; /* unexpired blobs and records */
	uint64_t bytes;   /* their data */
	uint64_t removed; /* expired objects and stale temporary files removed */
	int rc;           /* 0, or the first error met (the sweep goes on) */
};

/* Removes what has expired under root (each caller's objects under its
 * lock, re-checked there) and temporary files older than an hour. */
void mcpx_dir_sweep(int root, struct mcpx_dir_sweep_stats *st);

#endif
