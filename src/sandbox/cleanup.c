/*
 * cleanup.c - what is left of a run once it ends: its output (drained by a
 * start-up probe), its workdir and what it put in /dev/shm.
 *
 * What it does: removes the workdir without following symlinks, through
 * the directory that holds it (workdir.c), wipes the run's own files from
 * /dev/shm (its uid and group, created since its spawn) and closes every fd
 * the server still holds for the run. A run that was not reaped yet is
 * killed and reaped first (reaper.c), so nothing of it outlives cleanup.
 *
 * What it does not do: decide when (the executor, warm pool and fork server
 * call it), remove a large tree off the event loop (run_cleanup.c takes the
 * workdir and the wipe from proc first, then this only closes fds), or
 * measure what the run used (run_usage.c).
 */
#include "sandbox.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "workdir.h"

int mcpx_sandbox_workdir_open(const struct mcpx_sandbox_proc *proc)
{
	if (!proc->workdir[0])
		return -ENOENT;
	return mcpx_workdir_open_in(proc->parent_fd, proc->workdir);
}

size_t mcpx_sandbox_drain(struct mcpx_sandbox_proc *proc, char *out, size_t outlen, char *errbuf,
                          size_t errlen, long timeout_ms)
{
	struct timespec now;
	long deadline;
	int *fds[2] = {&proc->stdout_fd, &proc->stderr_fd};
	char *bufs[2] = {out, errbuf};
	size_t caps[2] = {outlen - 1, errbuf ? errlen - 1 : 0}, used[2] = {0, 0};
	char scratch[4096];
	int open_fds = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	deadline = now.tv_sec * 1000L + now.tv_nsec / 1000000L + timeout_ms;
	open_fds = (*fds[0] >= 0) + (*fds[1] >= 0);
	while (open_fds > 0) {
		struct pollfd pfd[2] = {{*fds[0], POLLIN, 0}, {*fds[1], POLLIN, 0}};

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec * 1000L + now.tv_nsec / 1000000L >= deadline)
			break;
		if (poll(pfd, 2, 200) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (used[i] < caps[i])
				r = read(pfd[i].fd, bufs[i] + used[i], caps[i] - used[i]);
			else
				r = read(pfd[i].fd, scratch, sizeof(scratch));
			if (r > 0 && used[i] < caps[i])
				used[i] += (size_t)r;
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				mcpx_close_fd(fds[i]);
				open_fds--;
			}
		}
	}
	out[used[0]] = '\0';
	if (errbuf)
		errbuf[used[1]] = '\0';
	return used[0];
}

void mcpx_sandbox_cleanup(struct mcpx_sandbox_proc *proc)
{
	int rc;

	if (!proc)
		return;
	/* A reap asked and not answered: the reaper still reaps the leader. */
	mcpx_sandbox_reap_forget(proc);
	if (proc->pid > 0 && !proc->reaped) {
		mcpx_sandbox_kill(proc);
		(void)mcpx_sandbox_reap(proc, NULL, NULL);
	}
	mcpx_close_fd(&proc->stdin_fd);
	mcpx_close_fd(&proc->stdout_fd);
	mcpx_close_fd(&proc->stderr_fd);
	mcpx_close_fd(&proc->channel_fd);
	mcpx_close_fd(&proc->pidfd);
	mcpx_close_fd(&proc->exit_fd);
	mcpx_close_fd(&proc->setup_fd);
	if (proc->workdir[0]) {
		rc = mcpx_workdir_remove_in(proc->parent_fd, proc->workdir);
		if (rc)
			mcpx_warn("sandbox: cannot remove workdir %s: %s", proc->workdir,
			          strerror(-rc));
		proc->workdir[0] = '\0';
	}
	mcpx_close_fd(&proc->parent_fd);
	if (proc->started.tv_sec) {
		rc = mcpx_workdir_wipe_owned_since("/dev/shm", proc->run_uid, proc->run_gid,
		                                   &proc->started);
		if (rc)
			mcpx_warn("sandbox: cannot wipe /dev/shm: %s", strerror(-rc));
		proc->started.tv_sec = 0;
	}
}
