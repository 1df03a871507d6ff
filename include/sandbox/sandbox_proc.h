/*
 * sandbox_proc.h - one sandboxed run's process once it is started: its
 * record (struct mcpx_sandbox_proc: pid, pidfds, pipes, workdir, who reaps
 * it) and what is done to it until nothing of it is left: a forked leader
 * adopted, its setup verdict read, killed, reaped (waiting or not), its
 * workdir opened, a probe's output drained, cleaned up.
 *
 * Starting a run needs the sandbox itself and is declared in sandbox.h,
 * which includes this file. The functions are spawn.c's, reaper.c's and
 * cleanup.c's; none of them needs more than the record.
 */
#ifndef MCPX_SANDBOX_PROC_H
#define MCPX_SANDBOX_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

struct mcpx_err;

/* Reaps a run leader that is not the server's child (one the fork server's
 * zygote forked): fills *status and *ru like wait4. Returns 0 or -errno. */
typedef int (*mcpx_reap_fn)(void *ctx, pid_t pid, int *status, struct rusage *ru);

/* The answer to an asynchronous reap: rc 0 with the leader's wait status
 * and rusage, or -errno (-EPIPE: its reaper is gone). */
typedef void (*mcpx_reaped_fn)(void *arg, int rc, int status, const struct rusage *ru);

/* Asks for the same reap without waiting for it: done(arg, ...) is called
 * once, later (from the loop), or before this returns when the answer can
 * be had without waiting. Returns 0, or -errno when nothing was asked (then
 * done is not called). */
typedef int (*mcpx_reap_async_fn)(void *ctx, pid_t pid, mcpx_reaped_fn done, void *arg);

struct mcpx_reap_ticket;

/* One running (or finished, not yet cleaned) sandboxed process. */
struct mcpx_sandbox_proc {
	pid_t pid;   /* also the process group and session id */
	int pidfd;   /* readable when the leader exits; -1 once handed over */
	int stdin_fd;  /* write end of the child's stdin; -1 if none */
	int stdout_fd; /* read ends; -1 once handed over */
	int stderr_fd;
	int channel_fd; /* the server's end of the run's broker channel; -1 if none */
	char workdir[4096];
	int parent_fd; /* O_PATH fd of the directory holding workdir; -1 if none */
	bool reaped;
	/* mcpx_sandbox_kill found the leader gone and no stray child of the
	 * server: nothing of the run is left to fork, so reap need not look
	 * for strays again. */
	bool nothing_left;
	/* A leader forked by the zygote: a pidfd kept for waiting (the server
	 * cannot waitid a grandchild) and who reaps it. NULL reaper: our child. */
	int exit_fd;
	mcpx_reap_fn reaper;
	void *reaper_ctx;
	/* The same reaper without waiting (NULL: reaping waits for reaper;
	 * see mcpx_sandbox_reap_async), and the reap asked for of it and not
	 * yet answered. */
	mcpx_reap_async_fn reaper_async;
	struct mcpx_reap_ticket *reaping;
	/* mcpx_sandbox_reap_async found processes of the run besides its
	 * leader: swept again once the leader is reaped. */
	bool strays;
	/* A forked leader handed over before its setup verdict arrived: the
	 * read end of its error pipe (mcpx_sandbox_setup_verdict), -1 once
	 * read or when there is none. Closed by cleanup. */
	int setup_fd;
	/* Set by spawn for cleanup: whose files to wipe from /dev/shm (owner
	 * and group), and since when (CLOCK_REALTIME_COARSE, compared with
	 * ctime). */
	uid_t run_uid;
	gid_t run_gid;
	struct timespec started;
};

/* Takes charge of a run leader the zygote forked: proc's fds and workdir
 * are already set; this opens the pidfds (race-free, the zygote reaps only
 * when reaper asks it to) and registers the leader for the sweep. Then
 * kill, reap and cleanup treat it like a spawned run. The caller then reads
 * the child's setup verdict (mcpx_sandbox_await_setup). */
int mcpx_sandbox_adopt(struct mcpx_sandbox_proc *proc, pid_t pid, mcpx_reap_fn reaper,
		       void *reaper_ctx, struct mcpx_err *err);

/* Waits, at most timeout_ms, for the verdict a child writes on its error
 * pipe (errpipe, the read end; closed here): 0 once the child closed it
 * without a word, else -errno with "sandbox setup failed at step <name>:
 * <error>" in err, as spawn reports it. */
int mcpx_sandbox_await_setup(int errpipe, int timeout_ms, struct mcpx_err *err);

/* The verdict of a leader handed over with proc->setup_fd (see above),
 * without waiting: 0 when its setup succeeded or nothing was said (its pipe
 * closed, or still open: call it once the leader has exited), else -errno
 * with "sandbox setup failed at step <name>: <error>" in err. Closes
 * setup_fd. */
int mcpx_sandbox_setup_verdict(struct mcpx_sandbox_proc *proc, struct mcpx_err *err);

/* Empties proc (every fd -1, no pid), as spawn does before it starts. */
void mcpx_sandbox_proc_reset(struct mcpx_sandbox_proc *proc);

/* Kills every process of the run: the process group (repeated until empty,
 * while the unreaped leader keeps the pgid reserved) and any descendant that
 * was re-parented to the server. Safe to call more than once. */
void mcpx_sandbox_kill(struct mcpx_sandbox_proc *proc);

/* Reaps the leader (call after it exited or was killed; it blocks until then)
 * and any orphans of the run. Fills *status (the leader's) and *ru (either may
 * be NULL): the leader's rusage, which includes the children it waited for,
 * plus the CPU of every orphan reaped here (processes of the run whose parent
 * died before waiting for them), and the largest peak RSS among them.
 * Between the leader's exit and its reaping the group is swept with SIGKILL,
 * so a background process left by a run that exited normally ends here too.
 * Never waits for pids it did not find itself (no waitpid(-1)). Returns 0,
 * or -ECHILD when there is nothing to reap. */
int mcpx_sandbox_reap(struct mcpx_sandbox_proc *proc, int *status, struct rusage *ru);

/* The same reap for a leader that has exited (its pidfd said so), without
 * waiting on the calling thread: the group is killed and swept now, the
 * leader's status is asked of its reaper_async (the zygote's answer comes
 * on the loop), and done(arg, rc, status, ru) is called once with what
 * mcpx_sandbox_reap returns and fills. A leader the server forked itself,
 * or one without reaper_async, is reaped before this returns (done
 * included). proc must stay where it is until done. Returns 0, or -errno
 * (then done is not called): -EAGAIN when the leader has not exited yet,
 * -ECHILD when there is nothing to reap. */
int mcpx_sandbox_reap_async(struct mcpx_sandbox_proc *proc, mcpx_reaped_fn done, void *arg);

/* Gives up waiting for a reap asked with mcpx_sandbox_reap_async (its
 * done is never called): the reaper still reaps the leader, the server
 * counts it reaped (teardown). No-op when none is under way. */
void mcpx_sandbox_reap_forget(struct mcpx_sandbox_proc *proc);

/* Opens the run's workdir (O_PATH, the caller closes it) through the fd of
 * its parent, so a run that took the permissions off a directory above it
 * cannot keep the server from reading what it left. Returns the fd or
 * -errno. */
int mcpx_sandbox_workdir_open(const struct mcpx_sandbox_proc *proc);

/* A start-up probe's output (the self-test's, a language's proof): reads
 * proc's stdout into out and stderr into errbuf (NULL: read and dropped),
 * each cut at its size and NUL-terminated, until both end or timeout_ms
 * has passed; closes both. Returns the stdout bytes kept. Blocks: for
 * start-up only, never on the loop while it serves. */
size_t mcpx_sandbox_drain(struct mcpx_sandbox_proc *proc, char *out, size_t outlen,
                          char *errbuf, size_t errlen, long timeout_ms);


/* Removes the workdir (never following symlinks, relative to the directory
 * that holds it, whose owner bits it gives back first when the server owns
 * it) and closes remaining fds.
 * Also removes what the run left in /dev/shm: entries owned by the run uid
 * and group (the group is this server's own when started as root,
 * MCPX_SANDBOX_GID_BASE) whose ctime is at or after the spawn. For a
 * nested run (a function called by a running run of the same server, one
 * uid and group) that can include its caller's shared-memory segments made
 * meanwhile; multiprocessing
 * locks are not affected (SemLock unlinks its name at once). If the leader was
 * not reaped yet, it kills and reaps the run first, so nothing of the run
 * outlives its cleanup. */
void mcpx_sandbox_cleanup(struct mcpx_sandbox_proc *proc);

#endif
