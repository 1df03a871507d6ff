/*
 * reap_later.c - a process ended without waiting on the loop
 * (reap_later.h).
 *
 * Each one goes: killed; its exit watched on a dup of its pidfd (the kept
 * one of an adopted child of a zygote); reaped when that says it exited,
 * through its reaper's answer on the loop when it has one; cleaned up
 * (mcpx_sandbox_cleanup: workdir, /dev/shm, fds); freed. They are kept in
 * one list, so that teardown can end what is left, waiting for it.
 *
 * What it does not do: decide what is ended (the warm pool, the prepared
 * bash, the fork server), or keep anything of the process (no status is
 * reported).
 */
#include "reap_later.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "loop_guard.h"

struct later {
	struct later *next, **prev;
	struct mcpx_sandbox_proc proc;
	struct mcpx_watch exit;
	bool watching;
	bool flushing; /* the watch ended by flush: reap waiting, off the loop */
};

static struct later *all;

static void unlink_later(struct later *l)
{
	*l->prev = l->next;
	if (l->next)
		l->next->prev = l->prev;
}

static void finish(struct later *l)
{
	mcpx_sandbox_cleanup(&l->proc);
	unlink_later(l);
	free(l);
}

static void reaped(void *arg, int rc, int status, const struct rusage *ru)
{
	(void)rc;
	(void)status;
	(void)ru;
	finish(arg);
}

static void exit_cb(struct mcpx_watch *w, int events)
{
	struct later *l = w->arg;

	if (!(events & MCPX_EV_CLOSED)) {
		mcpx_loop_unwatch(w);
		return;
	}
	l->watching = false;
	if (l->flushing || mcpx_sandbox_reap_async(&l->proc, reaped, l) < 0)
		finish(l); /* cleanup reaps it, waiting: off the loop only */
}

void mcpx_reap_later(struct mcpx_loop *loop, struct mcpx_sandbox_proc *proc)
{
	struct later *l;
	int fd = proc->reaper ? proc->exit_fd : proc->pidfd;

	if (proc->pid <= 0 || proc->reaped || !loop || !mcpx_loop_guard_serving() || fd < 0 ||
	    !(l = calloc(1, sizeof(*l)))) {
		mcpx_sandbox_cleanup(proc);
		mcpx_sandbox_proc_reset(proc);
		return;
	}
	mcpx_sandbox_kill(proc);
	l->proc = *proc;
	mcpx_sandbox_proc_reset(proc);
	l->next = all;
	l->prev = &all;
	if (all)
		all->prev = &l->next;
	all = l;
	/* The loop closes what it watches: a duplicate, so the proc's own
	 * pidfd stays for the reap. */
	l->exit.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	l->exit.fn = exit_cb;
	l->exit.arg = l;
	if (l->exit.fd < 0 || mcpx_loop_watch(loop, &l->exit) < 0) {
		if (l->exit.fd >= 0)
			close(l->exit.fd);
		mcpx_warn("could not watch a process being ended (pid %d); it is reaped at "
		          "teardown",
		          (int)l->proc.pid);
		return;
	}
	l->watching = true;
}

void mcpx_reap_later_flush(void)
{
	while (all) {
		struct later *l = all;

		l->flushing = true;
		/* Off the loop's callbacks the watch ends at once, and exit_cb
		 * finishes l, waiting for the reap. */
		if (l->watching)
			mcpx_loop_unwatch(&l->exit);
		if (all != l)
			continue;
		if (l->watching)
			break; /* inside the watch's own callback: not off the loop */
		/* Waiting for its reaper's answer (cleanup forgets it), or
		 * never watched. */
		finish(l);
	}
}

void mcpx_reap_later_orphan(const void *reaper_ctx)
{
	for (struct later *l = all; l; l = l->next) {
		if (l->proc.reaper_ctx != reaper_ctx || !reaper_ctx)
			continue;
		/* Its zygote is going: the leader comes back to the server (its
		 * subreaper), which reaps it itself. A reap already asked is
		 * failed by the zygote's fork server. */
		l->proc.reaper = NULL;
		l->proc.reaper_async = NULL;
		l->proc.reaper_ctx = NULL;
	}
}

unsigned mcpx_reap_later_pending(void)
{
	unsigned n = 0;

	for (const struct later *l = all; l; l = l->next)
		n++;
	return n;
}
