/*
 * fs_view_probe.c - whether a run can have a private filesystem view here
 * (fs_view.c), judged by seeing it act.
 *
 * What it does: at start-up, where Landlock is absent, it makes a workdir
 * as a run gets one and, beside it in the workdir base, a token-like file
 * the run's uid can read, as it could read the mounted auth token. A
 * throwaway child then becomes a run as far as the view cares (its workdir,
 * the run uid when the server is root, no_new_privs), reads the token once
 * (or the probe would prove nothing), enters the view exactly as a run's
 * child does, and checks from inside: the token is gone (ENOENT), the
 * workdir is writable, the view's root cannot be written and nothing can
 * be unmounted. The child reports the failed step and errno through a
 * close-on-exec pipe; the file and the workdir are removed after.
 *
 * Why a probe and not a version check: the view needs unprivileged mounts
 * in a user namespace and pivot_root, which gVisor gained between its
 * 2022-12 and 2024-07 releases, and which Linux allows only where a tmpfs
 * of an unmapped namespace may hold new directories (it may not). Seeing
 * it work is the only answer that holds for a runtime not tried here.
 *
 * What it does not do: prove the real spawn path (the self-test runs its
 * probe through a real run, view included), or decide whether the server
 * starts without the view (sandbox.c and the caller do). The child makes
 * raw syscalls only: the server may already have threads.
 */
#include "fs_view.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workdir.h"

struct probe {
	char workdir[4200];
	char token[4200];
	bool drop_uid;
	uid_t uid;
	gid_t gid;
};

static _Noreturn void child_fail(int out, int step, int err)
{
	int code = (step << 16) | (err & 0xffff);

	(void)!write(out, &code, sizeof(code));
	_exit(1);
}

/* The throwaway child: a run's posture, the view, the checks. */
static _Noreturn void probe_child(const struct probe *p, int out)
{
	int fd, step = 0, rc;

	alarm(10);
	if (chdir(p->workdir) < 0)
		child_fail(out, MCPX_FSV_PROBE_SETUP, errno);
	if (p->drop_uid && (syscall(SYS_setgroups, 0, NULL) < 0 ||
	                    syscall(SYS_setresgid, p->gid, p->gid, p->gid) < 0 ||
	                    syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0))
		child_fail(out, MCPX_FSV_PROBE_SETUP, errno);
	fd = open(p->token, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		child_fail(out, MCPX_FSV_PROBE_VACUOUS, errno);
	close(fd);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(out, MCPX_FSV_PROBE_SETUP, errno);
	rc = mcpx_fs_view_enter(p->workdir, NULL, &step);
	if (rc < 0)
		child_fail(out, step, -rc);
	fd = open(p->token, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		child_fail(out, MCPX_FSV_PROBE_TOKEN, fd >= 0 ? EEXIST : errno);
	fd = open("probe", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		child_fail(out, MCPX_FSV_PROBE_WRITE, errno);
	close(fd);
	if (mkdir("/mcpx-probe", 0700) == 0 || umount2("/usr", MNT_DETACH) == 0 ||
	    umount2(p->workdir, MNT_DETACH) == 0)
		child_fail(out, MCPX_FSV_PROBE_ESCAPE, EEXIST);
	_exit(0);
}

/* The probe's files: a run's workdir in base and the token beside it,
 * readable by the run uid (the server's own file otherwise). */
static int make_files(struct probe *p, const char *base, int *parent_fd)
{
	static const char token[] = "mcpx-fs-view-probe-token\n";
	int fd, rc;

	rc = mcpx_workdir_create(base, p->drop_uid, p->uid, p->gid, p->workdir, sizeof(p->workdir),
	                         parent_fd);
	if (rc)
		return rc;
	if (snprintf(p->token, sizeof(p->token), "%s.token", p->workdir) >= (int)sizeof(p->token))
		return -ENAMETOOLONG;
	fd = open(p->token, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = write(fd, token, sizeof(token) - 1) == (ssize_t)(sizeof(token) - 1) ? 0 : -EIO;
	if (!rc && fchmod(fd, 0644) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Forks the child and reads its verdict: 0, or -errno with the step. */
static int run_child(const struct probe *p, int *step)
{
	int pfd[2], code = 0, st;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		probe_child(p, pfd[1]);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return -errno;
	}
	do
		n = read(pfd[0], &code, sizeof(code));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(code)) {
		*step = code >> 16;
		return -(code & 0xffff ? code & 0xffff : EIO);
	}
	*step = MCPX_FSV_PROBE_SETUP;
	return n == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int mcpx_fs_view_probe(const char *base, bool drop_uid, uid_t uid, gid_t gid, char *why,
                       size_t why_len)
{
	struct probe p = {.drop_uid = drop_uid, .uid = uid, .gid = gid};
	int parent_fd = -1, step = MCPX_FSV_PROBE_SETUP, rc;

	rc = make_files(&p, base, &parent_fd);
	if (!rc)
		rc = run_child(&p, &step);
	if (p.token[0])
		(void)unlink(p.token);
	if (p.workdir[0])
		(void)mcpx_workdir_remove_in(parent_fd, p.workdir);
	if (parent_fd >= 0)
		close(parent_fd);
	if (rc)
		snprintf(why, why_len, "%s: %s", mcpx_fs_view_step_name(step), strerror(-rc));
	else
		snprintf(why, why_len, "seen: a token beside the workdir was gone inside the view");
	return rc;
}
