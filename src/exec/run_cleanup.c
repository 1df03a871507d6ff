/*
 * run_cleanup.c - a finished run's workdir and /dev/shm entries, removed
 * on a worker thread (run_cleanup.h).
 *
 * What it does: moves the paths and the parent fd out of the run's
 * sandbox_proc into a task, removes them on the offload worker with the
 * same functions the loop used (workdir.h: never following a symlink),
 * and logs and tells the caller on the loop when that is over.
 *
 * What it does not do: kill or reap (the run must be reaped before it is
 * taken), decide when the next run may start (executor.c), or log from the
 * worker (the log is the loop's).
 */
#include "run_cleanup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdutil.h"
#include "log.h"
#include "offload.h"
#include "workdir.h"

struct cleanup_task {
	struct mcpx_offload_task task; /* first: the task is the struct */
	char workdir[PATH_MAX];
	int parent_fd;
	uid_t run_uid;
	gid_t run_gid;
	struct timespec started; /* tv_sec 0: no /dev/shm wipe */
	char run_id[32];
	int workdir_rc, shm_rc;
	mcpx_cleanup_done_fn done;
	void *arg;
};

/* The removal itself: on the worker, or on the loop's thread when the
 * worker is going away. Touches the task only. */
static void remove_files(struct cleanup_task *t)
{
	if (t->workdir[0])
		t->workdir_rc = mcpx_workdir_remove_in(t->parent_fd, t->workdir);
	if (t->started.tv_sec)
		t->shm_rc =
		    mcpx_workdir_wipe_owned_since("/dev/shm", t->run_uid, t->run_gid, &t->started);
}

static void work(struct mcpx_offload_task *ot)
{
	remove_files((struct cleanup_task *)ot);
}

static void done(struct mcpx_offload_task *ot)
{
	struct cleanup_task *t = (struct cleanup_task *)ot;

	if (ot->cancelled)
		remove_files(t);
	if (t->workdir_rc)
		mcpx_warn("sandbox: cannot remove workdir %s: %s", t->workdir,
		          strerror(-t->workdir_rc));
	if (t->shm_rc)
		mcpx_warn("sandbox: cannot wipe /dev/shm: %s", strerror(-t->shm_rc));
	mcpx_debug("run %s: cleanup finished (%s)", t->run_id, t->workdir);
	mcpx_close_fd(&t->parent_fd);
	t->done(t->arg);
	free(t);
}

int mcpx_run_cleanup_take(struct mcpx_offload *worker, struct mcpx_sandbox_proc *proc,
                          const char *run_id, mcpx_cleanup_done_fn fn, void *arg)
{
	struct cleanup_task *t;

	if (!proc->workdir[0] && !proc->started.tv_sec)
		return -ENOENT;
	/* A process of the run still alive could add to the tree while it is
	 * removed, or find it half gone: the synchronous path kills first. */
	if (proc->pid > 0 && !proc->reaped)
		return -EBUSY;
	if (strlen(proc->workdir) >= sizeof(t->workdir))
		return -ENAMETOOLONG;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->task.work = work;
	t->task.done = done;
	strcpy(t->workdir, proc->workdir);
	t->parent_fd = proc->parent_fd;
	t->run_uid = proc->run_uid;
	t->run_gid = proc->run_gid;
	t->started = proc->started;
	snprintf(t->run_id, sizeof(t->run_id), "%s", run_id ? run_id : "");
	t->done = fn;
	t->arg = arg;
	proc->workdir[0] = '\0';
	proc->parent_fd = -1;
	proc->started.tv_sec = 0;
	mcpx_debug("run %s: cleanup started (%s)", t->run_id, t->workdir);
	mcpx_offload_submit(worker, &t->task);
	return 0;
}
