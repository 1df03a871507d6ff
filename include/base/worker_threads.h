/*
 * worker_threads.h - the server's threads that never fork.
 *
 * The reaper (reaper.c) asks after every run whether the server has a child
 * that is not a registered run leader, reading /proc/self/task/<tid>/children
 * for each of the server's threads: a process a thread forks is that
 * thread's child, and an orphan the server adopts as subreaper becomes the
 * thread group leader's. A worker thread that never forks (offload.c's)
 * can have neither, so it says so here when it starts and the reaper skips
 * it: one open, read and close less per worker and run. A thread not listed
 * (the loop's, libcurl's resolvers, any new one) is read as before.
 *
 * A thread that enters must never fork, vfork, clone a process or
 * posix_spawn: a child of it would be missed by that check.
 */
#ifndef MCPX_WORKER_THREADS_H
#define MCPX_WORKER_THREADS_H

#include <stdbool.h>
#include <sys/types.h>

/* The calling thread starts (or stops) being a worker that never forks.
 * Past MCPX_WORKER_THREADS_MAX workers, a thread is simply not listed. */
#define MCPX_WORKER_THREADS_MAX 32
void mcpx_worker_thread_enter(void);
void mcpx_worker_thread_leave(void);

/* True when tid is a worker listed by mcpx_worker_thread_enter. */
bool mcpx_worker_thread_is(pid_t tid);

#endif
