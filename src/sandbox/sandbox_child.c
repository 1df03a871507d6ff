/*
 * sandbox_child.c - the child side of a sandboxed process: one straight-line
 * sequence from (v)fork to the interpreter.
 *
 * What it does: after the fork the child ties its life to its parent, resets
 * what it inherited (signals, fds), gets its own session and process group,
 * enters the workdir, drops root when started as root, lowers its limits,
 * sets no_new_privs, enforces Landlock (or, where it is absent, enters a
 * private filesystem view built from the same paths: fs_view.c) and installs
 * the seccomp filter, in that order, and only then reaches the interpreter. Each step is one small
 * function whose comment names the threat it stops. Any failure writes
 * (step << 16) | errno to the close-on-exec error pipe and exits with 127, so
 * the parent can tell "could not start" from "ran and failed" (as libuv's
 * uv__process_child_init does).
 *
 * Two callers run the same sequence (mcpx_sandbox_child_setup):
 * - a cold run, the fork server's zygote and an after-reap interpreter:
 *   forked by the server (spawn.c), then execve (mcpx_sandbox_child_exec);
 *   0 bytes on the pipe mean execve succeeded;
 * - a run forked by the zygote (src/zygote/zygote.c): the interpreter is
 *   already there, so the child continues in it and closes the pipe once it
 *   is ready for its code; 0 bytes then mean "sandboxed and ready".
 *
 * What it does not do: allocate, format, log or write any memory but its
 * own stack. The server is multithreaded, so between fork and execve only
 * async-signal-safe calls are allowed; and the server's child comes from
 * vfork, sharing the server's memory until execve (reaper.c,
 * mcpx_leaders_fork).
 * Every string and table was prepared by the parent (spawn.c, or the
 * zygote).
 * Seccomp goes last so it never filters the setup itself (bubblewrap does
 * the same).
 */
#include "sandbox_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_view.h"
#include "landlock.h"

/* clang-format off */
static const char *const step_names[] = {
	[MCPX_STEP_PDEATHSIG] = "pdeathsig",
	[MCPX_STEP_SIGNALS] = "signals",
	[MCPX_STEP_SETSID] = "setsid",
	[MCPX_STEP_CHDIR] = "chdir",
	[MCPX_STEP_FDS] = "fds",
	[MCPX_STEP_CLOSE_FDS] = "close_fds",
	[MCPX_STEP_OOM_SCORE] = "oom_score_adj",
	[MCPX_STEP_DROP_UID] = "drop_uid",
	[MCPX_STEP_VERIFY_UID] = "verify_uid",
	[MCPX_STEP_RLIMITS] = "rlimits",
	[MCPX_STEP_NO_NEW_PRIVS] = "no_new_privs",
	[MCPX_STEP_LANDLOCK] = "landlock",
	[MCPX_STEP_FS_VIEW] = "fs_view",
	[MCPX_STEP_SECCOMP] = "seccomp",
	[MCPX_STEP_EXECVE] = "execve",
	[MCPX_STEP_INTERPRETER] = "interpreter",
};
/* clang-format on */

const char *mcpx_sandbox_child_step_name(int step)
{
	if (step <= 0 || step >= (int)(sizeof(step_names) / sizeof(step_names[0])) ||
	    !step_names[step])
		return "unknown";
	return step_names[step];
}

/* Reports the failed step to the parent and exits without running atexit
 * handlers or flushing stdio buffers copied from the server. */
void mcpx_sandbox_child_fail(int errfd, int step, int err)
{
	int code = (step << 16) | (err & 0xffff);
	ssize_t n;

	do
		n = write(errfd, &code, sizeof(code));
	while (n < 0 && errno == EINTR);
	_exit(127);
}

/* Threat: the server dies (crash, OOM kill) and the run keeps going with
 * nobody to enforce its time limit. The getppid check closes the race where
 * the server died before the prctl. */
static int die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	return getppid() == parent ? 0 : -ESRCH;
}

/* Threat: dispositions and the mask survive execve; an inherited SIG_IGN
 * (the server ignores SIGPIPE) or a blocked SIGTERM/SIGXCPU would change how
 * the run reacts to limits and to the server's kill. A child of the zygote
 * keeps its dispositions: they are the ones a freshly initialised
 * interpreter sets (SIGINT raises KeyboardInterrupt, SIGPIPE and SIGXFSZ
 * ignored so writes fail with an exception), exactly what a cold run has by
 * the time its code starts, since the zygote itself began with this reset.
 * The server's vfork child starts with every signal blocked (reaper.c):
 * the dispositions are reset before the mask is cleared, so no handler of
 * the server ever runs in it. */
static int reset_signals(const struct mcpx_child_args *a)
{
	struct sigaction dfl = {0};
	sigset_t none;
	int sig;

	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	/* glibc refuses its internal real-time signals with EINVAL; those are
	 * never ignored, so the error is expected and harmless. */
	for (sig = 1; !a->keep_handlers && sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	return sigprocmask(SIG_SETMASK, &none, NULL) < 0 ? -errno : 0;
}

/* Threat: a run that shares the server's session or process group cannot be
 * killed as a unit. After setsid pgid == sid == pid, which is what the
 * parent's kill(-pid) relies on (seccomp then forbids leaving it). */
static int new_session(void)
{
	return setsid() < 0 ? -errno : 0;
}

/* Threat: relative paths resolving in the server's cwd, and files the run
 * creates being readable by others (umask 077). A child of the zygote enters
 * its workdir through the fd the server opened: a run executing meanwhile
 * cannot make this step fail by changing the directories above it. Before
 * the fds are rearranged, so that fd is still open; a root server's child
 * may enter the run uid's 0700 directory before dropping root. */
static int enter_workdir(const struct mcpx_child_args *a)
{
	if (a->workdir_fd >= 0 ? fchdir(a->workdir_fd) < 0 : chdir(a->workdir) < 0)
		return -errno;
	umask(077);
	return 0;
}

/* Threat: the run talking to the server through an inherited fd. Exactly
 * four fds survive: the stdin pipe, the two output pipes and the error pipe
 * (fd 3, closed by execve); fd 4 is kept for the one socket a process may
 * have: the zygote's control socket, or a run's channel to the egress
 * broker (which only answers requests its policy allows). The zygote's
 * binary, when it is what we exec, waits at fd 5 (close-on-exec: gone once
 * it runs). Everything is first copied above 5 so that a pipe that happens
 * to be fd 0..5 is not overwritten by another one. */
static int install_fds(const struct mcpx_child_args *a, int *errfd)
{
	int in, out, err, ep, ctl = -1, exe = -1;

	ep = fcntl(a->errpipe_fd, F_DUPFD_CLOEXEC, 6);
	if (ep < 0)
		return -errno;
	*errfd = ep;
	in = fcntl(a->stdin_fd, F_DUPFD_CLOEXEC, 6);
	out = fcntl(a->stdout_fd, F_DUPFD_CLOEXEC, 6);
	err = fcntl(a->stderr_fd, F_DUPFD_CLOEXEC, 6);
	if (in < 0 || out < 0 || err < 0)
		return -errno;
	if (a->control_fd >= 0 && (ctl = fcntl(a->control_fd, F_DUPFD_CLOEXEC, 6)) < 0)
		return -errno;
	if (a->exe_fd >= 0 && (exe = fcntl(a->exe_fd, F_DUPFD_CLOEXEC, 6)) < 0)
		return -errno;
	/* dup2 clears close-on-exec on 0, 1, 2 and 4; dup3 keeps it on 3 and 5. */
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		return -errno;
	if (ctl >= 0 && dup2(ctl, 4) < 0)
		return -errno;
	if (exe >= 0 && dup3(exe, MCPX_CHILD_EXE_FD, O_CLOEXEC) < 0)
		return -errno;
	if (dup3(ep, MCPX_CHILD_ERRPIPE_FD, O_CLOEXEC) < 0)
		return -errno;
	*errfd = MCPX_CHILD_ERRPIPE_FD;
	return 0;
}

/* Threat: any other fd of the server (listening socket, client connections,
 * other runs' pipes, the audit log) leaking into the run. Most are already
 * close-on-exec; this does not rely on every library getting that right. */
static int close_other_fds(const struct mcpx_child_args *a)
{
	unsigned first = a->exe_fd >= 0 ? 6U : a->control_fd >= 0 ? 5U : 4U;
	struct rlimit rl;
	long fd, max;

	/* Without a control socket, fd 4 is a leftover copy: not kept. */
	if (a->control_fd < 0 && first > 4)
		(void)close(4);

	/* INT_MAX, not ~0U: every fd is an int, and gVisor reads the bound as
	 * one (~0U is -1 there, below first: EINVAL). */
	if (syscall(__NR_close_range, first, (unsigned)INT_MAX, 0U) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	/* Kernels before 5.9: close one by one up to the fd limit. */
	max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1U << 20) ? (long)rl.rlim_cur
	                                                                     : (1L << 20);
	for (fd = first; fd < max; fd++)
		(void)close((int)fd);
	return 0;
}

/* Threat: a memory-hungry run making the kernel OOM killer pick the server.
 * Raising one's own score needs no privilege, but /proc/self/oom_score_adj
 * is root-owned while the process is non-dumpable: that is the case after a
 * uid drop (so this runs before it) and, in the pod, for the whole time
 * between fork and exec, because the server made itself non-dumpable. In
 * the pod the parent therefore writes the score after exec (spawn.c); we
 * do not make this copy of the server's memory dumpable to do it here. */
static int raise_oom_score(const struct mcpx_child_args *a)
{
	static const char val[] = "1000";
	ssize_t n;
	int fd, rc = 0;

	if (!a->drop_uid)
		return 0;
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, sizeof(val) - 1);
	if (n < 0)
		rc = -errno;
	else if (n != (ssize_t)(sizeof(val) - 1))
		rc = -EIO;
	close(fd);
	return rc;
}

/* Threat: run code with root's power over the host (started as root, in CI
 * or locally). Raw syscalls rather than glibc wrappers: the wrappers
 * act on every thread of the process they believe they run in, and the
 * server's vfork child reads the server's thread list. In the pod the server already runs as 65532
 * and cannot change uid, so this step is skipped. */
static int drop_uid(const struct mcpx_child_args *a)
{
	if (!a->drop_uid)
		return 0;
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		return -errno;
	if (syscall(SYS_setresgid, a->gid, a->gid, a->gid) < 0)
		return -errno;
	if (syscall(SYS_setresuid, a->uid, a->uid, a->uid) < 0)
		return -errno;
	/* Changing the euid cleared the parent-death signal; arm it again. */
	return die_with_parent(a->parent);
}

/* Threat: a drop that silently did not happen (securebits that keep
 * capabilities across setuid, a seccomp or LSM quirk). If we can become
 * root again, we stop. */
static int verify_uid(const struct mcpx_child_args *a)
{
	if (!a->drop_uid)
		return 0;
	if (getuid() != a->uid || geteuid() != a->uid || getgid() != a->gid || getegid() != a->gid)
		return -EPERM;
	if (syscall(SYS_setuid, 0) == 0 || syscall(SYS_setgid, 0) == 0)
		return -EPERM;
	return 0;
}

/* Threat: a run exhausting the machine: CPU (SIGXCPU, then SIGKILL one
 * second later at the hard limit), address space, file size, fds, processes,
 * core dumps, POSIX message queues and locked memory. */
static int set_rlimits(const struct mcpx_child_args *a)
{
	int i;

	for (i = 0; i < a->n_rlimits; i++)
		if (setrlimit(a->rlimits[i].resource, &a->rlimits[i].lim) < 0)
			return -errno;
	return 0;
}

/* Threat: gaining privileges through a setuid binary (or file capabilities)
 * at exec. It is also what lets an unprivileged process install Landlock and
 * seccomp. */
static int no_new_privs(void)
{
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

/* Threat: writes outside the workdir (planting files for the next run or the
 * server), TCP, and signals or abstract sockets aimed outside the run. The
 * workdir is the current directory by now. A zygote's child adds a ruleset
 * to the zygote's: Landlock layers intersect, so both apply. */
static int enforce_landlock(const struct mcpx_child_args *a)
{
	struct mcpx_landlock_exe exe = {.path = a->exec_path, .fd = MCPX_CHILD_EXE_FD};

	if (a->landlock_abi <= 0)
		return 0;
	return mcpx_landlock_apply(a->landlock_abi, ".", a->runtime_root,
	                           a->exe_fd >= 0 ? &exe : NULL);
}

/* Threat, where Landlock is absent (gVisor): reading the token file, other
 * mounted secrets and other runs' files, and writing outside the workdir
 * what outlives the run. The run gets a filesystem of its own holding only
 * what Landlock would have granted (fs_view.c); seccomp, next, denies every
 * call that could undo it. The new user namespace may have cleared the
 * parent-death signal, as a change of credentials does: armed again. */
static int enter_fs_view(const struct mcpx_child_args *a)
{
	int step, rc;

	if (!a->fs_view)
		return 0;
	rc = mcpx_fs_view_enter(a->workdir, a->runtime_root, &step);
	return rc < 0 ? rc : die_with_parent(a->parent);
}

/* Threat: the syscalls in seccomp_policy.c (network, namespaces, ptrace,
 * escaping the process group, signalling the server, foreign ABIs). Last,
 * so the filter constrains the run and not our own setup. A zygote's child
 * stacks the run's filter on the zygote's variant (which lacks the setsid
 * denial): from here on both apply. */
static int install_seccomp(const struct mcpx_child_args *a)
{
	if (!a->filter)
		return 0;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, a->filter) < 0)
		return -errno;
	return 0;
}

#define STEP(id, call)                                                                             \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ < 0)                                                                       \
			mcpx_sandbox_child_fail(errfd, (id), -rc_);                                \
	} while (0)

void mcpx_sandbox_child_setup(const struct mcpx_child_args *a)
{
	int errfd = a->errpipe_fd;

	STEP(MCPX_STEP_PDEATHSIG, die_with_parent(a->parent));
	STEP(MCPX_STEP_SIGNALS, reset_signals(a));
	STEP(MCPX_STEP_SETSID, new_session());
	STEP(MCPX_STEP_CHDIR, enter_workdir(a));
	STEP(MCPX_STEP_FDS, install_fds(a, &errfd));
	STEP(MCPX_STEP_CLOSE_FDS, close_other_fds(a));
	STEP(MCPX_STEP_OOM_SCORE, raise_oom_score(a));
	STEP(MCPX_STEP_DROP_UID, drop_uid(a));
	STEP(MCPX_STEP_VERIFY_UID, verify_uid(a));
	STEP(MCPX_STEP_RLIMITS, set_rlimits(a));
	STEP(MCPX_STEP_NO_NEW_PRIVS, no_new_privs());
	STEP(MCPX_STEP_LANDLOCK, enforce_landlock(a));
	STEP(MCPX_STEP_FS_VIEW, enter_fs_view(a));
	STEP(MCPX_STEP_SECCOMP, install_seccomp(a));
}

void mcpx_sandbox_child_exec(const struct mcpx_child_args *a)
{
	mcpx_sandbox_child_setup(a);
	if (a->exe_fd >= 0)
		syscall(SYS_execveat, MCPX_CHILD_EXE_FD, "", a->argv, a->envp, AT_EMPTY_PATH);
	else
		execve(a->exec_path, a->argv, a->envp);
	mcpx_sandbox_child_fail(MCPX_CHILD_ERRPIPE_FD, MCPX_STEP_EXECVE, errno);
}
