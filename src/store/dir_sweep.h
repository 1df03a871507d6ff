/*
 * dir_sweep.h - the directory store's expiry (dir_sweep.c), run on a
 * worker thread on store_dir.c's timer; root is the store directory's fd.
 */
#ifndef MCPX_DIR_SWEEP_H
#define MCPX_DIR_SWEEP_H

#include <stdint.h>

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
