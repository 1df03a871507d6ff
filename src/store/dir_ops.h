/*
 * dir_ops.h - the directory store's operations on a worker thread
 * (dir_ops.c: blobs and records, and leases handed on to dir_lease.c).
 *
 * Each fills op->res (rc, data, ...) and op->err; none touches the loop.
 * root is the store directory's fd.
 */
#ifndef MCPX_DIR_OPS_H
#define MCPX_DIR_OPS_H

#include "store_backend.h"

void mcpx_dir_run(int root, struct mcpx_store_op *op);

#endif
