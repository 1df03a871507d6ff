/*
 * run_disk_watch.h - tells a run's budget the moment the run writes a file:
 * inotify on its workdir tree and on /dev/shm (run_disk.c's reading then
 * runs at once instead of at the next tick of its timer).
 *
 * A run writes as fast as memory on a tmpfs workdir: 40 MiB in a few tens
 * of milliseconds, between two readings of a timer. The events (a file
 * created, written, closed after writing, moved in) wake the loop; the
 * watcher only says "something was written", never what or how much: the
 * reading measures. Events for files the run unlinked but holds open still
 * arrive (the watch on their directory reports them). In /dev/shm, which
 * the whole host shares (a pod's is the pod's), only entries owned by the
 * run's uid and group count.
 *
 * One inotify instance serves every run of the process (a watcher): closing
 * an instance waits for the kernel's SRCU grace period, 11-13 ms measured
 * here, which per run would have stalled the loop at every call's end;
 * adding and removing a watch costs about 14 us.
 *
 * What it does not see: writes into subdirectories of /dev/shm, memfds,
 * and directories beyond MCPX_DISK_WATCH_DIRS per run (or ones it may not
 * read): those are left to the timer's readings and to RLIMIT_FSIZE. The
 * watch is a hint, never the accounting. Not thread-safe (the loop's).
 */
#ifndef MCPX_RUN_DISK_WATCH_H
#define MCPX_RUN_DISK_WATCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "loop.h"

/* Directories watched per run (its workdir tree and its joined runs'). */
#define MCPX_DISK_WATCH_DIRS 64

struct mcpx_disk_watcher; /* the process's inotify instance */
struct mcpx_disk_watch;   /* one run's watches */

/* 0 and *out, or -errno (no inotify: the runs' timers still read). */
int mcpx_disk_watcher_new(struct mcpx_loop *loop, struct mcpx_disk_watcher **out);
/* Closes the instance; every run's watch must be closed first. NULL is
 * fine. */
void mcpx_disk_watcher_free(struct mcpx_disk_watcher *wr);

/* Watches dir's tree (and /dev/shm when shm, where only entries owned by
 * uid and gid count); fn(arg) runs on the loop, once per batch of events
 * that count. 0 and *out, or -ENOMEM. */
int mcpx_disk_watch_open(struct mcpx_disk_watcher *wr, const char *dir, bool shm, uid_t uid,
                         gid_t gid, void (*fn)(void *arg), void *arg, struct mcpx_disk_watch **out);

/* Watches dir's tree too (a joined run's workdir). */
void mcpx_disk_watch_add(struct mcpx_disk_watch *dw, const char *dir);

/* Removes the run's watches and frees dw; fn is not called again. NULL is
 * fine. */
void mcpx_disk_watch_close(struct mcpx_disk_watch *dw);

#endif
