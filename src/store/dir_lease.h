/*
 * dir_lease.h - the directory store's lease operations (dir_lease.c), run
 * on a worker thread for dir_ops.c like its other operations: each fills
 * op->res and op->err; root is the store directory's fd.
 */
#ifndef MCPX_DIR_LEASE_H
#define MCPX_DIR_LEASE_H

#include "store_backend.h"

int mcpx_dir_lease_run(int root, struct mcpx_store_op *op);

#endif
