/*
 * zygote.c - the fork server's zygote (zygote.h): the other end of
 * forkserver.c, on the control socket described in zygote_proto.h.
 *
 * What it does: receives once what every child must enforce (the Landlock
 * ABI and paths, the run's compiled seccomp program), initialises and
 * preloads the interpreter (interp.c), refuses to fork if the preload
 * started threads, freezes the collector and says ready. Then, per request:
 * - fork: with the run's fds attached, forks a child, which runs the same
 *   setup as a cold run (sandbox_child.c: its own session, its workdir, its
 *   fds, the run's rlimits, no_new_privs, a nested Landlock ruleset and the
 *   run's seccomp filter stacked on the zygote's; before it only CPython's
 *   own after-fork work, still under the zygote's sandbox) and only then
 *   runs Python again (_mcpx_fresh), reports on its error
 *   pipe exactly as a cold child does, says ready and waits for its code.
 *   The answer is the pid, sent right after fork: the child's setup overlaps
 *   whatever the server does next.
 * - reap: waits for a run leader the server has finished with and answers
 *   its wait status and rusage.
 *
 * Which children it reaps, and when: a run leader (a pid it forked and
 * answered with) only when the server sends reap, so its zombie keeps its
 * pid and process group reserved while the server kills and sweeps the run.
 * Every other child, whoever made it (a run process that used CLONE_PARENT,
 * which seccomp refuses, or anything else that became its child), is killed
 * and reaped, blocking until it is gone, before each message is handled and
 * again right after a leader is reaped, so the answer to a reap is sent
 * only when no child is left but leaders the server has not released. The
 * list comes from /proc/self/task/<pid>/children (the zygote has one
 * thread); an unreaped child's pid cannot be reused between the listing and
 * the kill. Nothing of a run can thus hold a zombie, and with it a share of
 * RLIMIT_NPROC, beyond the run's own reaping.
 *
 * What it does not do: run user code, or decide anything the server did not
 * compute: the rlimits, the seccomp program and the Landlock paths all come
 * from the server, as for a cold run.
 */
#include <Python.h>

#include "zygote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interp.h"
#include "sandbox_child.h"
#include "zygote_proto.h"

/* A run with egress finds its channel there, and says so in its
 * environment, as a cold run does (sandbox.h). */
#define MCPX_STR2(x) #x
#define MCPX_STR(x) MCPX_STR2(x)
#define MCPX_CHANNEL_FD_STR MCPX_STR(MCPX_SANDBOX_CHANNEL_FD)

/* Run leaders not yet released by the server: the running run and the
 * child waiting for the next, and a few the server is still sweeping. */
#define MAX_LEADERS 64

struct zygote {
	pid_t self;
	char dir[4096]; /* its own workdir, where the environment points */
	struct mcpx_zygote_init init;
	struct sock_filter filter[MCPX_ZYGOTE_MAX_FILTER];
	struct sock_fprog prog;
	pid_t leaders[MAX_LEADERS];
	cpu_set_t cpus; /* where it may run; a run gets these back */
};

static void say(const char *msg)
{
	fprintf(stderr, "mcp-exec-zygote: %s\n", msg);
}

static bool is_leader(const struct zygote *z, pid_t pid)
{
	for (size_t i = 0; i < MAX_LEADERS; i++)
		if (z->leaders[i] == pid)
			return true;
	return false;
}

/* Replaces one entry equal to from with to; false when there is none. */
static bool swap_leader(struct zygote *z, pid_t from, pid_t to)
{
	for (size_t i = 0; i < MAX_LEADERS; i++) {
		if (z->leaders[i] == from) {
			z->leaders[i] = to;
			return true;
		}
	}
	return false;
}

/* Kills and reaps every child that is not a leader (see the file comment).
 * Rounds repeat while a full read may have left some out. */
static void reap_strays(const struct zygote *z)
{
	char path[64], buf[4096];
	bool again = true;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)z->self);
	for (int round = 0; again && round < 64; round++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		size_t found = 0;

		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return;
		buf[n] = '\0';
		for (char *p = buf, *end;; p = end) {
			long pid = strtol(p, &end, 10);

			if (end == p)
				break;
			if (pid <= 0 || is_leader(z, (pid_t)pid))
				continue;
			(void)kill((pid_t)pid, SIGKILL);
			while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
				;
			found++;
		}
		again = found && n == (ssize_t)sizeof(buf) - 1;
	}
}

/* Only the forking thread survives a fork: if the preload started threads,
 * a child could inherit a lock one of them held. */
static size_t thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int send_reply(const struct mcpx_zygote_reply *rep)
{
	ssize_t n;

	do
		n = send(MCPX_ZYGOTE_CTL_FD, rep, sizeof(*rep), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*rep) ? 0 : -1;
}

/* The init message: the structure, then the filter's instructions. */
static int recv_init(struct zygote *z)
{
	struct iovec iov[2] = {{&z->init, sizeof(z->init)}, {z->filter, sizeof(z->filter)}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n;

	do
		n = recvmsg(MCPX_ZYGOTE_CTL_FD, &mh, 0);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)sizeof(z->init) || (mh.msg_flags & MSG_TRUNC) ||
	    z->init.n_filter > MCPX_ZYGOTE_MAX_FILTER ||
	    (size_t)n != sizeof(z->init) + z->init.n_filter * sizeof(struct sock_filter))
		return -1;
	z->init.runtime_root[sizeof(z->init.runtime_root) - 1] = '\0';
	z->prog.len = (unsigned short)z->init.n_filter;
	z->prog.filter = z->filter;
	return 0;
}

/* One request and the fds attached to it (close-on-exec until a child
 * installs them). Returns the message's size, 0 when the server closed the
 * socket, -1 on error; *bad when fds or bytes were cut off. */
static ssize_t recv_req(struct mcpx_zygote_req *req, int *fds, int *nfds, bool *bad)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(MCPX_ZFD_MAX * sizeof(int))];
	} ctrl;
	struct iovec iov = {req, sizeof(*req)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	ssize_t n;

	mh.msg_control = ctrl.buf;
	mh.msg_controllen = sizeof(ctrl.buf);
	*nfds = 0;
	do
		n = recvmsg(MCPX_ZYGOTE_CTL_FD, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (*nfds < MCPX_ZFD_MAX)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	*bad = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n != (ssize_t)sizeof(*req);
	return n;
}

/* Everything the child's setup needs, prepared before fork. The rlimits are
 * the server's (mcpx_sandbox_rlimits), never above the zygote's own hard
 * limits: unprivileged, the child can only lower them. */
static void child_args(const struct zygote *z, struct mcpx_zygote_req *req, const int *fds,
                       struct mcpx_child_args *a)
{
	memset(a, 0, sizeof(*a));
	a->parent = z->self;
	a->stdin_fd = fds[MCPX_ZFD_STDIN];
	a->stdout_fd = fds[MCPX_ZFD_STDOUT];
	a->stderr_fd = fds[MCPX_ZFD_STDERR];
	a->errpipe_fd = fds[MCPX_ZFD_ERRPIPE];
	a->workdir_fd = fds[MCPX_ZFD_WORKDIR];
	a->control_fd = req->flags & MCPX_ZREQ_CHANNEL ? fds[MCPX_ZFD_CHANNEL] : -1;
	a->keep_handlers = true;
	req->workdir[sizeof(req->workdir) - 1] = '\0';
	a->workdir = req->workdir;
	for (int i = 0; i < req->n_rlimits; i++) {
		struct mcpx_rlimit r = req->rlimits[i];
		struct rlimit cur;

		if (getrlimit(r.resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
			if (r.lim.rlim_max > cur.rlim_max)
				r.lim.rlim_max = cur.rlim_max;
			if (r.lim.rlim_cur > r.lim.rlim_max)
				r.lim.rlim_cur = r.lim.rlim_max;
		}
		a->rlimits[a->n_rlimits++] = r;
	}
	a->landlock_abi = z->init.landlock_abi;
	a->runtime_root = z->init.runtime_root[0] ? z->init.runtime_root : NULL;
	a->exe_fd = -1;
	a->filter = z->prog.len ? &z->prog : NULL;
}

/* A forked child writes to hundreds of pages it shares with the zygote, and
 * each first write is a copy-on-write fault that flushes the page from the
 * TLB of every CPU the child's memory was used on: on a VM, an interrupt to
 * another virtual CPU that may not even be running. Kept on one CPU while it
 * prepares, the flushes stay local (measured: 27 -> 15 ms of CPU per run,
 * docs/benchmarks.md); the run gets the zygote's CPUs back when its code
 * arrives (interp.c), so its own processes may use them all. */
static void pin_to_this_cpu(void)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	if (cpu < 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	(void)sched_setaffinity(0, sizeof(one), &one);
}

/* The child: the interpreter's own after-fork work first, as os.fork()
 * does it (CPython wants it before anything else; the hooks preloaded
 * modules registered, such as matplotlib dropping its cached fonts, must
 * run while the fds they hold are still open), then the cold path's setup,
 * then the interpreter. Never returns. */
__attribute__((noreturn)) static void run_child(const struct zygote *z,
                                                const struct mcpx_child_args *a)
{
	pin_to_this_cpu();
	mcpx_interp_forked();
	mcpx_sandbox_child_setup(a);
	if (mcpx_interp_fresh(z->dir, a->workdir,
	                      a->control_fd >= 0 ? MCPX_SANDBOX_CHANNEL_ENV : NULL,
	                      MCPX_CHANNEL_FD_STR) < 0)
		mcpx_sandbox_child_fail(MCPX_CHILD_ERRPIPE_FD, MCPX_STEP_INTERPRETER, EIO);
	/* Sandboxed and ready: the server reads end-of-file, as after a cold
	 * child's execve. */
	close(MCPX_CHILD_ERRPIPE_FD);
	mcpx_interp_run(a->workdir, &z->cpus);
}

static void handle_fork(struct zygote *z, struct mcpx_zygote_req *req, const int *fds, int nfds)
{
	struct mcpx_zygote_reply rep = {0};
	struct mcpx_child_args a;
	int want = MCPX_ZFD_WORKDIR + 1 + (req->flags & MCPX_ZREQ_CHANNEL ? 1 : 0);
	pid_t pid;

	if (nfds != want || req->n_rlimits < 0 || req->n_rlimits > MCPX_MAX_RLIMITS) {
		rep.err = EINVAL;
	} else if (!is_leader(z, 0)) {
		rep.err = EAGAIN;
	} else {
		child_args(z, req, fds, &a);
		PyOS_BeforeFork();
		pid = fork();
		if (pid == 0)
			run_child(z, &a);
		rep.err = pid < 0 ? errno : 0;
		PyOS_AfterFork_Parent();
		if (pid > 0) {
			rep.pid = pid;
			(void)swap_leader(z, 0, pid);
		}
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	(void)send_reply(&rep);
}

static void handle_reap(struct zygote *z, const struct mcpx_zygote_req *req)
{
	struct mcpx_zygote_reply rep = {0};
	int st = 0;

	if (req->pid <= 0 || !is_leader(z, req->pid)) {
		rep.err = ECHILD;
	} else {
		while (wait4(req->pid, &st, 0, &rep.ru) < 0 && errno == EINTR)
			;
		rep.status = st;
		(void)swap_leader(z, req->pid, 0);
	}
	reap_strays(z);
	(void)send_reply(&rep);
}

static int serve_loop(struct zygote *z)
{
	struct mcpx_zygote_req req;
	int fds[MCPX_ZFD_MAX], nfds;
	bool bad = false;

	for (;;) {
		ssize_t n = recv_req(&req, fds, &nfds, &bad);

		if (n == 0)
			return 0; /* the server is done with us */
		if (n < 0)
			return 1;
		reap_strays(z);
		if (!bad && req.op == MCPX_ZOP_FORK) {
			handle_fork(z, &req, fds, nfds);
			continue;
		}
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (!bad && req.op == MCPX_ZOP_REAP) {
			handle_reap(z, &req);
		} else {
			struct mcpx_zygote_reply rep = {.err = EINVAL};

			(void)send_reply(&rep);
		}
	}
}

int mcpx_zygote_serve(const char *python, const char *preload_csv)
{
	static struct zygote z;
	struct mcpx_zygote_reply ready = {0};

	z.self = getpid();
	if (sched_getaffinity(0, sizeof(z.cpus), &z.cpus) < 0) {
		say("cannot read its CPU affinity");
		return 1;
	}
	if (!getcwd(z.dir, sizeof(z.dir)) || recv_init(&z) < 0) {
		say("no usable set-up from the server");
		return 1;
	}
	if (mcpx_interp_start(python, preload_csv) < 0)
		return 1;
	if (thread_count() > 1) {
		say("the preload started threads; a zygote cannot fork safely");
		return 3;
	}
	if (mcpx_interp_freeze() < 0)
		return 1;
	ready.pid = z.self;
	if (send_reply(&ready) < 0)
		return 1;
	return serve_loop(&z);
}
