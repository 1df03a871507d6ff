/*
 * reap_later.h - ending a process nobody waits for, without waiting on the
 * loop: a prepared interpreter or bash that is discarded, a zygote that is
 * stopped, a child asked of a zygote and never taken.
 *
 * The process is killed at once; its pidfd is watched, and once it says
 * the process has exited it is reaped (for a child of a zygote, by asking
 * the zygote on its control socket: sandbox.h, mcpx_sandbox_reap_async)
 * and cleaned up (its workdir, its fds). Off the loop (tests, teardown) it
 * is all done before mcpx_reap_later returns, as mcpx_sandbox_cleanup does.
 * Not thread-safe: the loop's thread alone uses it.
 */
#ifndef MCPX_REAP_LATER_H
#define MCPX_REAP_LATER_H

#include "loop.h"
#include "sandbox.h"

/* Takes proc (reset here; the caller's copy is empty afterwards), kills it
 * and ends it as above. loop NULL, or a caller not serving the loop: ended
 * before this returns. A proc without a process is only cleaned up. */
void mcpx_reap_later(struct mcpx_loop *loop, struct mcpx_sandbox_proc *proc);

/* Ends, waiting for them, the processes still being ended (teardown, off
 * the loop). */
void mcpx_reap_later_flush(void);

/* The reaper whose context is reaper_ctx (a zygote's) is going away: the
 * processes it was to reap are reaped by the server instead. */
void mcpx_reap_later_orphan(const void *reaper_ctx);

/* How many are still being ended (tests). */
unsigned mcpx_reap_later_pending(void);

#endif
