/*
 * exit_watch.h - private to the sandbox module: a descriptor that polls
 * readable once a child of the server has exited.
 *
 * Where pidfd_open works it is the child's pidfd. Where it does not (gVisor,
 * Linux before 5.3, a runtime profile that denies it) it is an eventfd that
 * a thread of the server's own writes once waitid says the child exited;
 * the thread never reaps (WNOWAIT), and spawn.c and reaper.c settle it
 * before the child is reaped, so it never waits on a pid the kernel could
 * give to another process.
 */
#ifndef MCPX_SANDBOX_EXIT_WATCH_H
#define MCPX_SANDBOX_EXIT_WATCH_H

#include <stdbool.h>
#include <sys/types.h>

/* Whether pidfd_open works here (asked once, on the server's own pid). */
bool mcpx_exit_watch_pidfd(void);

/* Tests only: from now on, watch with threads even where pidfds work. */
void mcpx_exit_watch_use_threads(void);

/* A close-on-exec descriptor that polls readable (POLLIN) once pid, a child
 * of this process not yet reaped, has exited; it stays readable. The caller
 * owns it and may close it at any time. Returns the fd or -errno. */
int mcpx_exit_watch_open(pid_t pid);

/* Call before reaping pid, once it has exited (or was sent SIGKILL): waits
 * for pid's watcher thread, if it has one, to have let go of it. */
void mcpx_exit_watch_settle(pid_t pid);

/* pid was reaped by someone else: its watcher (if any) is let go without
 * waiting for it. */
void mcpx_exit_watch_forget(pid_t pid);

#endif
