/*
 * run_cleanup.h - removes what a finished run left on disk (its workdir
 * and its /dev/shm entries) on a worker thread, off the event loop.
 *
 * A run decides how much it leaves: 28 000 files took the loop 0.6-1.5 s
 * to remove, and every client waited meanwhile (issue 21 G). Here the
 * removal runs on the caller's worker thread (offload.h), and the loop is
 * told when it is over; a removal not finished when the worker is freed
 * (mcpx_offload_free) is finished then, on the freeing thread. The caller
 * keeps the next run from starting until then (executor.c): a run's
 * /dev/shm entries are found by owner, group and ctime, so a wipe still
 * under way when the next run starts could delete the next run's entries,
 * and the next run could read the last one's.
 *
 * Only a run whose processes are all gone (reaped, its group swept) is
 * taken: nothing of the run can add to the tree while it is removed.
 *
 * Ownership: what is taken from a proc (the path, the parent's fd) and the
 * task holding it are this module's: the fd is closed before done() is
 * called, the task freed after it. Not thread-safe: the loop's thread calls every function here,
 * and every done callback runs on it.
 */
#ifndef MCPX_RUN_CLEANUP_H
#define MCPX_RUN_CLEANUP_H

#include "sandbox.h"

struct mcpx_offload;

/* Called on the loop once a taken run's files are gone (or could not all be
 * removed: that is logged). */
typedef void (*mcpx_cleanup_done_fn)(void *arg);

/* Takes proc's workdir (and the fd of its parent) and its /dev/shm wipe
 * for removal on worker; proc keeps nothing of them, so a later
 * mcpx_sandbox_cleanup(proc) only closes its fds. run_id names the run in
 * the log. Returns 0 (done(arg) will be called once), -ENOENT when proc has
 * nothing to remove, -EBUSY when its leader is not reaped yet,
 * -ENAMETOOLONG or -ENOMEM; on an error proc is untouched (and
 * mcpx_sandbox_cleanup removes its files on the spot). */
int mcpx_run_cleanup_take(struct mcpx_offload *worker, struct mcpx_sandbox_proc *proc,
                          const char *run_id, mcpx_cleanup_done_fn done, void *arg);

#endif
