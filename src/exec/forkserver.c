/*
 * forkserver.c - the server's side of the fork server (forkserver.h).
 *
 * What it does: starts the zygote (mcp-exec-zygote serve) through the cold
 * path's setup (spawn.c: its own workdir, limits, Landlock ruleset and the
 * zygote variant of the seccomp filter), hands it once what every child must
 * enforce (the Landlock ABI and paths, and the run's compiled seccomp
 * program: computed here, by the code the cold path uses), and then, per
 * run, creates the run's workdir beneath the zygote's, its pipes and its
 * error pipe, computes its rlimits, sends one request with the child's ends
 * and an fd of its workdir attached (SCM_RIGHTS) and adopts the child it
 * gets back. The child's setup verdict comes on its error pipe, read here
 * exactly as a cold child's is. Once the zygote is ready its directory is
 * emptied and, on a root server, given to root; where a run could still
 * change it (the pod), it is guarded and put back before every fork and
 * every run (dirguard.c).
 *
 * The control channel is a SOCK_SEQPACKET socketpair carrying the
 * structures of zygote_proto.h; forkserver_wire.c sends the requests and
 * reads the answers, in order, on the loop when there is one, and bounds
 * each, so a wedged zygote costs a timeout, never a hung server.
 *
 * What it does not do: decide when forking is safe (executor.c), or run
 * anything itself: the child's setup is sandbox_child.c, in the zygote's
 * child (src/zygote/zygote.c).
 */
#include "forkserver.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirguard.h"
#include "fdutil.h"
#include "forkserver_wire.h"
#include "log.h"
#include "loop_guard.h"
#include "reap_later.h"
#include "warm.h"
#include "warm_child.h"
#include "workdir.h"
#include "zygote_proto.h"

#define ANSWER_TIMEOUT_MS MCPX_FS_ANSWER_TIMEOUT_MS

/* ---- start -------------------------------------------------------------- */

/* What every child enforces, sent once: the inputs of the run's Landlock
 * plan and the run's seccomp program, as the cold path uses them. */
static int send_init(struct mcpx_forkserver *fs)
{
	const struct mcpx_sandbox *sb = fs->sb;
	struct mcpx_zygote_init *init = calloc(1, sizeof(*init));
	size_t n = sb->layers.seccomp ? sb->filter.len : 0;
	int rc;

	if (!init)
		return -ENOMEM;
	if (n > MCPX_ZYGOTE_MAX_FILTER) {
		free(init);
		return -E2BIG;
	}
	init->landlock_abi = sb->layers.landlock ? sb->layers.landlock_abi : 0;
	init->n_filter = (uint32_t)n;
	snprintf(init->runtime_root, sizeof(init->runtime_root), "%s", sb->runtime_root);
	rc = mcpx_fs_send(fs, init, sizeof(*init), sb->filter.filter,
	                  n * sizeof(struct sock_filter), NULL, 0);
	free(init);
	return rc;
}

int mcpx_forkserver_start(const struct mcpx_sandbox *sb, const char *preload,
                          const struct mcpx_limits *lim, struct mcpx_forkserver **out,
                          struct mcpx_err *err)
{
	struct mcpx_forkserver *fs;
	struct mcpx_limits zl = *lim;
	int sv[2], rc;

	*out = NULL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return mcpx_err_set(err, ENOMEM, "fork server: out of memory");
	fs->sb = sb;
	fs->next.stdin_w = fs->next.stdout_r = fs->next.stderr_r = fs->next.errpipe_r = -1;
	fs->next.parent_fd = fs->next.channel = -1;
	mcpx_dirguards_init(&fs->guards);
	fs->guards.parent = sb->guards;
	mcpx_sandbox_proc_reset(&fs->zygote);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = mcpx_err_set(err, errno, "fork server: socketpair: %s", strerror(errno));
		free(fs);
		return rc;
	}
	fs->ctl = sv[0];
	/* The zygote lives across runs: no CPU limit of its own (each child
	 * sets the run's), no process budget (each child gets the run's). */
	zl.cpu_s = 0;
	zl.max_procs = 0;
	zl.channel = false;
	/* The preload stays under the run's memory limit (soft), but each
	 * child raises its own by what it inherits (mapped_size). */
	zl.as_hard_open = true;
	rc = mcpx_sandbox_spawn_zygote(sb, &zl, preload, sv[1], &fs->zygote, err);
	close(sv[1]);
	if (rc < 0) {
		close(fs->ctl);
		free(fs);
		return rc;
	}
	/* It reads nothing on stdin and writes nothing on stdout. */
	mcpx_close_fd(&fs->zygote.stdin_fd);
	mcpx_close_fd(&fs->zygote.stdout_fd);
	rc = send_init(fs);
	if (rc < 0) {
		mcpx_forkserver_stop(fs);
		return mcpx_err_set(err, -rc, "fork server: cannot send the zygote its setup");
	}
	*out = fs;
	return 0;
}

/* Once the zygote has preloaded, its directory holds nothing but the runs'
 * workdirs. What the preload left there (matplotlib's font cache, say) is
 * removed: it belongs to the run uid, and a run could change its metadata
 * or its contents' for a later run to see. A root server then gives the
 * directory to root, mode 0711 (runs still pass through it to their own
 * workdirs): no run can change it any more. In the pod, where the server
 * is the run uid and nothing can belong to anyone else, it is guarded
 * instead and put back before every fork and every run (dirguard.c). */
static int settle_zygote_dir(struct mcpx_forkserver *fs, struct mcpx_err *err)
{
	const char *dir = fs->zygote.workdir;
	int fd, rc;

	rc = mcpx_workdir_empty(dir);
	if (rc)
		return mcpx_err_set(err, -rc, "cannot empty the zygote's directory: %s",
		                    strerror(-rc));
	if (fs->sb->layers.uid_drop) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0711) < 0)
			rc = mcpx_err_set(err, errno,
			                  "cannot hand the zygote's directory to the "
			                  "server: %s",
			                  strerror(errno));
		if (fd >= 0)
			close(fd);
		if (rc)
			return rc;
	}
	return mcpx_dirguards_add(&fs->guards, dir, fs->sb->run_uid, err);
}

/* The zygote's address space once it has preloaded (the first field of
 * /proc/<pid>/statm, in pages), read once. A forked child starts with all
 * of it mapped, though it shares it with every other child: a cold run
 * starts with about 15 MiB, a child of a zygote that preloaded numpy and
 * matplotlib with ten times that. Its RLIMIT_AS is the run's memory limit
 * plus this, so that a warm run can allocate what a cold one can; the
 * run's whole-tree budget (run_budget.h) counts what it really uses and
 * stays the limit. 0 when it cannot be read (the run's limit alone). */
static unsigned long long mapped_size(pid_t pid)
{
	char path[64], buf[128];
	unsigned long long pages = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &pages) != 1)
		return 0;
	return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

bool mcpx_forkserver_alive(const struct mcpx_forkserver *fs)
{
	struct pollfd pfd = {.fd = fs->zygote.pidfd, .events = POLLIN};

	return fs->zygote.pidfd >= 0 && poll(&pfd, 1, 0) == 0;
}

pid_t mcpx_forkserver_pid(const struct mcpx_forkserver *fs)
{
	return fs->zygote.pid;
}

int mcpx_forkserver_poll(struct mcpx_forkserver *fs)
{
	struct mcpx_zygote_reply rep;
	struct mcpx_err err = {{0}};
	int rc;

	if (!fs->dead && !mcpx_forkserver_alive(fs))
		(void)mcpx_fs_mark_dead(fs, NULL, "the zygote exited");
	if (fs->dead)
		return -EPIPE;
	if (fs->ready)
		return 1;
	rc = mcpx_fs_recv(fs, &rep);
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0)
		return mcpx_fs_mark_dead(fs, NULL, "the zygote exited while preloading");
	if (rep.err || rep.pid != fs->zygote.pid)
		return mcpx_fs_mark_dead(fs, NULL, "unexpected message from the zygote");
	if (settle_zygote_dir(fs, &err) < 0) {
		mcpx_warn("fork server: %s", err.msg);
		return mcpx_fs_mark_dead(fs, NULL, "its directory could not be prepared");
	}
	fs->mapped = mapped_size(fs->zygote.pid);
	fs->ready = true;
	return 1;
}

/* ---- fork and reap ------------------------------------------------------ */

static void drop_pending(struct mcpx_forkserver *fs)
{
	struct mcpx_fs_pending *p = &fs->next;

	mcpx_close_fd(&p->stdin_w);
	mcpx_close_fd(&p->stdout_r);
	mcpx_close_fd(&p->stderr_r);
	mcpx_close_fd(&p->errpipe_r);
	mcpx_close_fd(&p->channel);
	if (p->workdir[0])
		(void)mcpx_workdir_remove_in(p->parent_fd, p->workdir);
	mcpx_close_fd(&p->parent_fd);
	p->workdir[0] = '\0';
	p->drop = false;
	(void)mcpx_warm_state_end(&p->state, MCPX_WARM_CHILD_DISCARDED);
}

static void reaped_unused(void *arg, int rc, int status, const struct rusage *ru)
{
	(void)arg;
	(void)rc;
	(void)status;
	(void)ru;
}

/* A child nobody will run (not adopted): killed, and reaped by the zygote
 * without anyone waiting for the answer on the loop. */
static void end_unadopted(struct mcpx_forkserver *fs, pid_t pid)
{
	int st;
	struct rusage ru;

	(void)kill(pid, SIGKILL);
	if (fs->loop)
		(void)mcpx_fs_reap_async(fs, pid, reaped_unused, NULL);
	else
		(void)mcpx_fs_reap_sync(fs, pid, &st, &ru);
}

static void take_dropped(struct mcpx_forkserver *fs);

/* The zygote's answer to the pending fork (NULL: none will come). */
static void fork_answered(struct mcpx_forkserver *fs, const struct mcpx_zygote_reply *rep)
{
	struct mcpx_fs_pending *p = &fs->next;

	(void)mcpx_warm_state_to(&p->state, MCPX_WARM_CHILD_FORKED, "answered");
	p->pid = 0;
	if (!rep) {
		p->err = EPIPE;
	} else if (rep->err) {
		p->err = rep->err;
	} else if (rep->pid < 2) {
		p->err = -mcpx_fs_mark_dead(fs, NULL, "the zygote answered a bad pid");
	} else {
		p->pid = rep->pid;
		p->err = 0;
	}
	if (p->drop) {
		take_dropped(fs);
		return;
	}
	if (fs->on_answer)
		fs->on_answer(fs->on_answer_arg);
}

/* Reads the answer to the pending fork, waiting for it (bounded) if it has
 * not come: off the loop only (loop_guard.h); on the loop the watch has
 * read it by the time anyone takes the child (mcpx_forkserver_answered).
 * -ESHUTDOWN: fs was stopped meanwhile. */
static int settle(struct mcpx_forkserver *fs)
{
	if (fs->next.state != MCPX_WARM_CHILD_ASKED)
		return 0;
	return mcpx_fs_read_answers(fs, &fs->next.req);
}
/* The request for a child of lim in workdir. */
static void fork_request(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                         const char *workdir, struct mcpx_zygote_req *req)
{
	memset(req, 0, sizeof(*req));
	req->op = MCPX_ZOP_FORK;
	req->n_rlimits = (int32_t)mcpx_sandbox_rlimits(sb, lim, req->rlimits);
	snprintf(req->workdir, sizeof(req->workdir), "%s", workdir);
}

/* The child's ends, in the order of zygote_proto.h (-1 where absent): its
 * stdin, stdout, stderr, error pipe, workdir (set by the caller) and, with
 * a channel, its end of the broker channel. The server's ends go into p;
 * those the loop watches are O_NONBLOCK. Returns 0 or -errno. */
static int make_ends(struct mcpx_fs_pending *p, bool channel, int child[MCPX_ZFD_MAX])
{
	int fds[2], ch[2] = {-1, -1};

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	child[MCPX_ZFD_STDIN] = fds[0];
	p->stdin_w = fds[1];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	child[MCPX_ZFD_STDOUT] = fds[1];
	p->stdout_r = fds[0];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	child[MCPX_ZFD_STDERR] = fds[1];
	p->stderr_r = fds[0];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	child[MCPX_ZFD_ERRPIPE] = fds[1];
	p->errpipe_r = fds[0];
	if (channel && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch) < 0)
		return -errno;
	child[MCPX_ZFD_CHANNEL] = ch[1];
	p->channel = ch[0];
	if (mcpx_set_nonblock(p->stdin_w) || mcpx_set_nonblock(p->stdout_r) ||
	    mcpx_set_nonblock(p->stderr_r) || (p->channel >= 0 && mcpx_set_nonblock(p->channel)))
		return -errno;
	return 0;
}

/* The pending fork's workdir, beneath the zygote's directory, which is put
 * back first (the running run may have changed it, and the server needs it
 * as it made it). Returns an fd of the new workdir for the child, which
 * enters it through that fd rather than its path: the run executing now
 * cannot make the child's setup fail by changing the directories above it.
 * Returns the fd or -errno. */
static int pending_workdir(struct mcpx_forkserver *fs, struct mcpx_err *err)
{
	const struct mcpx_sandbox *sb = fs->sb;
	struct mcpx_fs_pending *p = &fs->next;
	int rc, wd;

	rc = mcpx_dirguards_repair(&fs->guards, err);
	if (rc)
		return rc;
	rc = mcpx_workdir_create(fs->zygote.workdir, sb->layers.uid_drop, sb->run_uid, sb->run_gid,
	                         p->workdir, sizeof(p->workdir), &p->parent_fd);
	if (rc) {
		p->workdir[0] = '\0';
		return mcpx_err_set(err, -rc, "fork server: cannot create a workdir: %s",
		                    strerror(-rc));
	}
	wd = openat(p->parent_fd, strrchr(p->workdir, '/') + 1,
	            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd < 0)
		return mcpx_err_set(err, errno, "fork server: cannot open the workdir: %s",
		                    strerror(errno));
	return wd;
}

int mcpx_forkserver_fork(struct mcpx_forkserver *fs, const struct mcpx_limits *lim,
                         struct mcpx_err *err)
{
	struct mcpx_fs_pending *p = &fs->next;
	int child[MCPX_ZFD_MAX] = {-1, -1, -1, -1, -1, -1};
	struct mcpx_limits child_lim;
	struct mcpx_zygote_req req;
	int rc;

	if (fs->dead)
		return mcpx_err_set(err, EPIPE, "fork server: the zygote is gone");
	if (!fs->ready)
		return mcpx_err_set(err, EAGAIN, "fork server: the zygote is still preloading");
	if (p->state != MCPX_WARM_CHILD_NONE)
		return mcpx_err_set(err, EBUSY, "fork server: a fork is already pending");
	memset(p, 0, sizeof(*p));
	p->stdin_w = p->stdout_r = p->stderr_r = p->errpipe_r = p->parent_fd = p->channel = -1;
	p->state = MCPX_WARM_CHILD_NONE;
	(void)mcpx_warm_state_to(&p->state, MCPX_WARM_CHILD_ASKED, "fork asked");
	p->lim = *lim;
	rc = pending_workdir(fs, err);
	if (rc < 0)
		goto out;
	child[MCPX_ZFD_WORKDIR] = rc;
	rc = make_ends(p, lim->channel, child);
	if (rc < 0) {
		rc = mcpx_err_set(err, -rc, "fork server: pipes: %s", strerror(-rc));
		goto out;
	}
	child_lim = *lim;
	child_lim.as_inherited = fs->mapped;
	fork_request(fs->sb, &child_lim, p->workdir, &req);
	req.flags = lim->channel ? MCPX_ZREQ_CHANNEL : 0;
	rc = mcpx_fs_send(fs, &req, sizeof(req), NULL, 0, child,
	                  lim->channel ? MCPX_ZFD_CHANNEL + 1 : MCPX_ZFD_CHANNEL);
	if (rc < 0) {
		rc = mcpx_fs_mark_dead(fs, err, "cannot reach the zygote");
	} else {
		p->req.op = MCPX_ZOP_FORK;
		p->req.on_answer = fork_answered;
		mcpx_fs_enqueue(fs, &p->req);
	}
out:
	for (int i = 0; i < MCPX_ZFD_MAX; i++)
		mcpx_close_fd(&child[i]);
	if (rc < 0)
		drop_pending(fs);
	return rc;
}

/* Hands the pending fork's fds and workdir to proc. */
static void hand_over(struct mcpx_fs_pending *p, struct mcpx_sandbox_proc *proc)
{
	memcpy(proc->workdir, p->workdir, sizeof(proc->workdir));
	proc->parent_fd = p->parent_fd;
	proc->stdin_fd = p->stdin_w;
	proc->stdout_fd = p->stdout_r;
	proc->stderr_fd = p->stderr_r;
	proc->channel_fd = p->channel;
	p->stdin_w = p->stdout_r = p->stderr_r = p->parent_fd = p->channel = -1;
	p->workdir[0] = '\0';
	(void)mcpx_warm_state_end(&p->state, MCPX_WARM_CHILD_TAKEN);
}

/* End of file on the error pipe also comes from a child that crashed
 * before its verdict (a cold child's execve leaves no such gap): the
 * leader's pidfd tells the two apart. */
static bool child_died(const struct mcpx_sandbox_proc *proc)
{
	struct pollfd pfd = {.fd = proc->exit_fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

/* Reads the taken child's setup verdict from errpipe (closed here),
 * waiting at most timeout_ms; a child that failed is cleaned up. */
static int verdict(struct mcpx_sandbox_proc *proc, int errpipe, int timeout_ms, bool *setup_failed,
                   struct mcpx_err *err)
{
	int rc = mcpx_sandbox_await_setup(errpipe, timeout_ms, err);

	if (rc == 0 && child_died(proc))
		rc = mcpx_err_set(err, ECHILD,
		                  "sandbox setup failed: the child died before it "
		                  "was ready");
	if (rc < 0) {
		if (setup_failed)
			*setup_failed = true;
		mcpx_sandbox_cleanup(proc);
	}
	return rc;
}

/* Adopts the answered pending fork into proc (as take_now says). */
static int adopt_pending(struct mcpx_forkserver *fs, struct mcpx_sandbox_proc *proc,
                         bool *setup_failed, struct mcpx_err *err)
{
	struct mcpx_fs_pending *p = &fs->next;
	struct pollfd pfd;
	int errpipe, rc;

	if (!p->pid) {
		rc = mcpx_err_set(err, p->err ? p->err : EIO, "fork server: the fork failed: %s",
		                  strerror(p->err ? p->err : EIO));
		drop_pending(fs);
		return rc;
	}
	proc->run_uid = fs->sb->run_uid;
	proc->run_gid = fs->sb->run_gid;
	/* The run before this one is gone by now: what it changed above the
	 * workdir is put back before this run's code arrives. */
	rc = mcpx_dirguards_repair(&fs->guards, err);
	if (!rc)
		rc = mcpx_sandbox_adopt(proc, p->pid, mcpx_fs_reap_sync, fs, err);
	if (rc < 0) {
		/* Cannot supervise it: end it before anything runs. */
		end_unadopted(fs, p->pid);
		drop_pending(fs);
		return rc;
	}
	proc->reaper_async = mcpx_fs_reap_async;
	errpipe = p->errpipe_r;
	p->errpipe_r = -1;
	hand_over(p, proc);
	/* The child's own word on its setup, as a cold child's: end of file
	 * once it is sandboxed and ready, or the step that failed. Still
	 * entering its sandbox, it is handed over with the pipe: it reads its
	 * code only once sandboxed, and says ready (MCPX_WARM_READY) only
	 * after closing the pipe, so a child that ends without that byte has
	 * its verdict there (mcpx_sandbox_setup_verdict). */
	pfd.fd = errpipe;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 0) == 0) {
		proc->setup_fd = errpipe;
		return 0;
	}
	return verdict(proc, errpipe, 0, setup_failed, err);
}

/* The answer to a fork nobody will take has come: the child is adopted
 * only to be ended (mcpx_forkserver_end_proc). */
static void take_dropped(struct mcpx_forkserver *fs)
{
	struct mcpx_sandbox_proc proc;

	mcpx_sandbox_proc_reset(&proc);
	if (adopt_pending(fs, &proc, NULL, NULL) == 0)
		mcpx_reap_later(fs->loop, &proc);
}

int mcpx_forkserver_take_now(struct mcpx_forkserver *fs, struct mcpx_sandbox_proc *proc,
                             bool *setup_failed, struct mcpx_err *err)
{
	mcpx_sandbox_proc_reset(proc);
	if (fs->next.state == MCPX_WARM_CHILD_NONE || fs->next.drop)
		return mcpx_err_set(err, ENOENT, "fork server: no fork was asked for");
	if (settle(fs) < 0)
		return mcpx_err_set(err, EPIPE, "fork server: stopped");
	return adopt_pending(fs, proc, setup_failed, err);
}

void mcpx_forkserver_drop(struct mcpx_forkserver *fs)
{
	struct mcpx_fs_pending *p = &fs->next;
	struct mcpx_sandbox_proc proc;

	if (p->state == MCPX_WARM_CHILD_NONE || p->drop)
		return;
	/* Still waiting for its answer on the loop: ended when it comes. */
	if (p->state == MCPX_WARM_CHILD_ASKED && fs->loop && !fs->dead) {
		p->drop = true;
		return;
	}
	if (mcpx_forkserver_take_now(fs, &proc, NULL, NULL) == 0)
		mcpx_reap_later(fs->loop, &proc);
}

int mcpx_forkserver_take(struct mcpx_forkserver *fs, struct mcpx_sandbox_proc *proc,
                         bool *setup_failed, struct mcpx_err *err)
{
	int errpipe, rc = mcpx_forkserver_take_now(fs, proc, setup_failed, err);

	if (rc < 0 || proc->setup_fd < 0)
		return rc;
	errpipe = proc->setup_fd;
	proc->setup_fd = -1;
	return verdict(proc, errpipe, ANSWER_TIMEOUT_MS, setup_failed, err);
}

bool mcpx_forkserver_pending(const struct mcpx_forkserver *fs)
{
	return fs && fs->next.state != MCPX_WARM_CHILD_NONE;
}

const struct mcpx_limits *mcpx_forkserver_pending_limits(const struct mcpx_forkserver *fs)
{
	return fs->next.state != MCPX_WARM_CHILD_NONE ? &fs->next.lim : NULL;
}

bool mcpx_forkserver_answered(struct mcpx_forkserver *fs)
{
	struct pollfd pfd = {.fd = fs->ctl, .events = POLLIN};

	if (fs->next.state != MCPX_WARM_CHILD_ASKED || fs->dead)
		return true;
	/* On the loop the watch reads it, and the state says so. */
	if (fs->loop)
		return false;
	return poll(&pfd, 1, 0) != 0;
}

int mcpx_forkserver_reap(struct mcpx_forkserver *fs, pid_t pid, int *status, struct rusage *ru)
{
	return mcpx_fs_reap_sync(fs, pid, status, ru);
}

int mcpx_forkserver_reap_async(struct mcpx_forkserver *fs, pid_t pid, mcpx_reaped_fn done,
                               void *arg)
{
	return mcpx_fs_reap_async(fs, pid, done, arg);
}

/* ---- self-test ---------------------------------------------------------- */

/* Hands a forked child the probe the way the executor hands it a run: wait
 * for its ready byte, main.py, then header, code and stdin; the byte that
 * says it has the whole code is taken off its output here. */
static int feed_probe(void *ctx, struct mcpx_sandbox_proc *proc, const char *code, size_t code_len,
                      const char *input, size_t input_len, struct mcpx_err *err)
{
	struct mcpx_forkserver *fs = ctx;
	unsigned markers = MCPX_WARM_MARKERS_ALL;
	char hdr[64];
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), code_len, 10);
	int rc;

	if (mcpx_warm_marker_read(proc->stdout_fd, &markers, ANSWER_TIMEOUT_MS) < 0)
		return mcpx_err_set(err, EPERM,
		                    "fork server self-test: the child never became ready");
	rc = mcpx_sandbox_write_main(fs->sb, proc, code, code_len, err);
	if (rc)
		return rc;
	/* Header, probe and its input fit the pipe buffer together. */
	if (!hlen || write(proc->stdin_fd, hdr, hlen) != (ssize_t)hlen ||
	    write(proc->stdin_fd, code, code_len) != (ssize_t)code_len ||
	    write(proc->stdin_fd, input, input_len) != (ssize_t)input_len)
		return mcpx_err_set(err, EIO, "fork server self-test: cannot feed the probe");
	if (mcpx_warm_marker_read(proc->stdout_fd, &markers, ANSWER_TIMEOUT_MS) < 0)
		return mcpx_err_set(err, EPERM,
		                    "fork server self-test: the child did not take the probe");
	return 0;
}

int mcpx_forkserver_selftest(struct mcpx_forkserver *fs, struct mcpx_err *err)
{
	static const struct mcpx_limits lim = {
	    .cpu_s = 10, .memory_mb = 512, .max_procs = 16, .file_mb = 1, .open_files = 64};
	struct mcpx_sandbox_proc proc;
	int rc;

	rc = mcpx_forkserver_fork(fs, &lim, err);
	if (!rc)
		rc = mcpx_forkserver_take(fs, &proc, NULL, err);
	if (!rc)
		rc = mcpx_sandbox_selftest_in(fs->sb, &proc, feed_probe, fs, err);
	return rc;
}

void mcpx_forkserver_stop(struct mcpx_forkserver *fs)
{
	struct mcpx_fs_pending *p;

	if (!fs || fs->stopped || fs->stopping)
		return;
	fs->stopping = true;
	p = &fs->next;
	/* Off the loop the answers still due are waited for (bounded), so
	 * that a pending fork is ended and every reap asked is done by the
	 * zygote itself. On the loop they are not: a fork not answered yet
	 * gets no answer, its child dies with the zygote (its parent-death
	 * signal) and comes back to the server as a stray, which the next
	 * sweep reaps. */
	if (fs->tail && !mcpx_loop_guard_serving())
		(void)mcpx_fs_read_answers(fs, fs->tail);
	fs->on_answer = NULL;
	mcpx_fs_fail_all(fs);
	/* A child nobody will use, answered: adopted only to be ended. */
	if (p->state == MCPX_WARM_CHILD_FORKED && !p->drop)
		mcpx_forkserver_drop(fs);
	if (p->state != MCPX_WARM_CHILD_NONE)
		drop_pending(fs);
	/* EOF on the control socket ends the zygote's loop; the kill covers a
	 * zygote that is not listening. */
	mcpx_close_fd(&fs->ctl);
	mcpx_reap_later_orphan(fs);
	mcpx_reap_later(fs->loop, &fs->zygote);
	mcpx_dirguards_close(&fs->guards);
	mcpx_fs_release(fs);
}
