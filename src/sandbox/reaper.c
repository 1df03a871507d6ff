/*
 * reaper.c - the end of a run's processes: kill the run, reap its leader
 * and every orphan it left, and count a uid's tasks for RLIMIT_NPROC.
 *
 * What it does: killing is by process group (the child called setsid and
 * seccomp keeps it there) plus a /proc sweep for anything re-parented to the
 * server (a child subreaper, mcpx_sandbox_init); reaping waits only for
 * pids it found itself. A registry of live run leaders, guarded by a mutex
 * held across fork, tells the sweep which children of the server are run
 * leaders (never touched by another run's sweep) and which are orphans.
 *
 * What it does not do: start runs (spawn.c forks through
 * mcpx_leaders_fork), remove their files (cleanup.c), or watch their fds
 * and wall-clock time (the executor).
 */
#include "reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_watch.h"
#include "loop_guard.h"
#include "procstat.h"
#include "sandbox.h"
#include "worker_threads.h"

/* Concurrent runs (and warm interpreters) the registry can track. */
#define MAX_LIVE_RUNS 256
/* Orphans handled per sweep round, and rounds per reap. */
#define MAX_ORPHANS 256
#define MAX_SWEEP_ROUNDS 64

/* The registry is the process's, not a struct mcpx_sandbox's: what it
 * describes, the children of this process, is the process's (the child
 * subreaper attribute, /proc/self/task/<tid>/children and the ppid a sweep
 * compares are per process). A sweep must know every run leader of the
 * process, whichever sandbox started it, or it would take another
 * sandbox's leader for a stray and kill it; and a fork must hold off every
 * sweep of the process until its leader is registered. So there is one
 * registry and one lock per process.
 *
 * registry_lock guards live_leaders. It is taken only in this file: by
 * mcpx_leaders_fork (across fork), mcpx_leaders_add and
 * mcpx_leaders_remove, by the sweep while it picks and kills what it found,
 * and by stray_children. It is never held while waiting for a process. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t live_leaders[MAX_LIVE_RUNS];

/* Caller holds registry_lock. */
static bool registry_has(pid_t pid)
{
	size_t i;

	for (i = 0; i < MAX_LIVE_RUNS; i++)
		if (live_leaders[i] == pid)
			return true;
	return false;
}

/* Caller holds registry_lock. */
static int registry_add(pid_t pid)
{
	size_t i;

	for (i = 0; i < MAX_LIVE_RUNS; i++) {
		if (live_leaders[i] == 0) {
			live_leaders[i] = pid;
			return 0;
		}
	}
	return -EAGAIN;
}

static bool registry_full(void)
{
	return !registry_has(0);
}

void mcpx_leaders_remove(pid_t pid)
{
	size_t i;

	pthread_mutex_lock(&registry_lock);
	for (i = 0; i < MAX_LIVE_RUNS; i++)
		if (live_leaders[i] == pid)
			live_leaders[i] = 0;
	pthread_mutex_unlock(&registry_lock);
}

int mcpx_leaders_add(pid_t pid)
{
	int rc;

	pthread_mutex_lock(&registry_lock);
	rc = registry_add(pid);
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

/* The registry lock is held across the fork so that no concurrent sweep
 * sees the new leader before it is registered.
 *
 * vfork, not fork: the child shares the server's memory until its execve,
 * so nothing is copied. fork copied the server's page tables and left every
 * page the server wrote afterwards to a copy-on-write fault: about 85 page
 * faults and 4 ms of server CPU per cold, bash or JavaScript run on the test
 * VM (docs/benchmarks.md). What makes sharing the memory safe here:
 * - this thread is suspended until the child has exec'd or exited; the
 *   child writes nothing of the server's but its own stack frames (below
 *   this thread's) and errno (this thread's, saved below);
 * - the child's setup (sandbox_child.c) is limited to async-signal-safe
 *   calls on tables its parent prepared (spawn.c's spawn_buf, used by
 *   nothing else), and changes credentials with raw syscalls: glibc's
 *   wrappers act on every thread in the thread list they read, the
 *   server's;
 * - every signal is blocked across the vfork, so no handler of the server
 *   runs in the child on the server's memory; the child sets every
 *   disposition to the default before it unblocks them (reset_signals);
 * - Landlock, seccomp, no_new_privs, rlimits, the session and the fd table
 *   belong to the child's own task and process, as after fork.
 * The other threads of the server run on meanwhile, as they did.
 * test_sandbox.c (test_server_untouched) checks the server after runs. */
pid_t mcpx_leaders_fork(void (*child)(const void *arg), const void *arg, struct mcpx_err *err)
{
	sigset_t all, old;
	pid_t pid;
	int saved;

	pthread_mutex_lock(&registry_lock);
	if (registry_full()) {
		pthread_mutex_unlock(&registry_lock);
		return mcpx_err_set(err, EAGAIN, "sandbox: too many live runs");
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0) {
		child(arg);
		_exit(127); /* not reached: child execs or exits */
	}
	saved = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid > 0)
		(void)registry_add(pid);
	pthread_mutex_unlock(&registry_lock);
	if (pid < 0)
		return mcpx_err_set(err, saved, "sandbox: vfork: %s", strerror(saved));
	return pid;
}

/* ---- /proc scanning ---------------------------------------------------- */

static int live_member(const struct mcpx_procstat *ps, void *arg)
{
	pid_t pgid = *(pid_t *)arg;

	return ps->pgrp == pgid && ps->state != 'Z' && ps->state != 'X';
}

static bool group_has_live_member(pid_t pgid)
{
	return mcpx_procstat_scan(live_member, &pgid) > 0;
}

struct orphan_scan {
	pid_t pgid;     /* the run's group */
	pid_t self;     /* getpid() of the server */
	bool kill_only; /* kill: members of the group even if not our children */
	pid_t pids[MAX_ORPHANS];
	size_t n;
};

/* A child of ours that is neither a run leader nor in a live run's group can
 * only be a process that escaped a run (setsid, when seccomp is missing) and
 * was re-parented to us; the design says this module is the only one that
 * forks. Caller holds registry_lock. */
static bool is_stray_child(const struct mcpx_procstat *ps, pid_t self)
{
	return ps->ppid == self && !registry_has(ps->pid) && !registry_has(ps->pgrp);
}

static int collect_orphan(const struct mcpx_procstat *ps, void *arg)
{
	struct orphan_scan *s = arg;
	bool ours;

	if (ps->pid == s->pgid)
		return 0; /* the leader is handled by wait4 */
	if (ps->pgrp == s->pgid)
		ours = s->kill_only ? ps->state != 'Z' : ps->ppid == s->self;
	else
		ours = is_stray_child(ps, s->self) && (s->kill_only ? ps->state != 'Z' : true);
	if (ours && s->n < MAX_ORPHANS)
		s->pids[s->n++] = ps->pid;
	return 0;
}

/* Adds what a reaped process used to the run's account: its CPU (the leader's
 * wait4 does not include it, as the leader never waited for it) and the
 * larger peak. */
static void add_rusage(struct rusage *acc, const struct rusage *r)
{
	acc->ru_utime.tv_sec += r->ru_utime.tv_sec;
	acc->ru_utime.tv_usec += r->ru_utime.tv_usec;
	acc->ru_stime.tv_sec += r->ru_stime.tv_sec;
	acc->ru_stime.tv_usec += r->ru_stime.tv_usec;
	acc->ru_utime.tv_sec += acc->ru_utime.tv_usec / 1000000;
	acc->ru_utime.tv_usec %= 1000000;
	acc->ru_stime.tv_sec += acc->ru_stime.tv_usec / 1000000;
	acc->ru_stime.tv_usec %= 1000000;
	if (r->ru_maxrss > acc->ru_maxrss)
		acc->ru_maxrss = r->ru_maxrss;
}

/* Kills (and with acc, reaps and accounts) the run's remaining processes.
 * The decision is made under registry_lock so a leader being forked right
 * now is never mistaken for a stray. Returns how many were found. */
static size_t sweep(pid_t pgid, struct rusage *acc)
{
	struct orphan_scan s = {.pgid = pgid, .self = getpid(), .kill_only = !acc};
	struct rusage r;
	size_t i;

	pthread_mutex_lock(&registry_lock);
	(void)mcpx_procstat_scan(collect_orphan, &s);
	for (i = 0; i < s.n; i++)
		(void)kill(s.pids[i], SIGKILL);
	pthread_mutex_unlock(&registry_lock);
	for (i = 0; acc && i < s.n; i++) {
		pid_t got;

		memset(&r, 0, sizeof(r));
		while ((got = wait4(s.pids[i], NULL, 0, &r)) < 0 && errno == EINTR)
			;
		if (got == s.pids[i])
			add_rusage(acc, &r);
	}
	return s.n;
}

/* The server is a child subreaper, so once a run's leader has exited, every
 * process of the run still alive has an ancestor among the server's own
 * children. If the server has no child besides registered run leaders (and
 * warm interpreters), the run left nothing behind, and the /proc scans below
 * are not needed. /proc/self/task/<tid>/children is read for each thread
 * but the workers that never fork (worker_threads.h): a run's leader is
 * forked by the loop's thread, and an orphan the server adopts becomes the
 * thread group leader's child. Caller holds registry_lock. Errs towards
 * "yes" when it cannot tell. */
static bool has_unregistered_children(void)
{
	char path[300], buf[4096];
	struct dirent *de;
	bool found = false;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return true;
	while (!found && (de = readdir(d))) {
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (mcpx_worker_thread_is((pid_t)strtol(de->d_name, NULL, 10)))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			found = true;
			break;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0 || n == (ssize_t)sizeof(buf) - 1) {
			found = true;
			break;
		}
		buf[n] = '\0';
		for (char *p = buf, *end; *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (!registry_has((pid_t)pid))
				found = true;
		}
	}
	closedir(d);
	return found;
}

/* SIGKILLs the group until no live member is left. Only valid while the
 * leader is unreaped: its zombie keeps the pgid from being reused. A fork
 * racing with the kill is aborted by the kernel, so this converges quickly;
 * the loop is bounded for processes stuck in uninterruptible sleep. */
static void kill_group(pid_t pgid)
{
	struct timespec ts = {0, 1000000};
	int i;

	for (i = 0; i < 100; i++) {
		if (kill(-pgid, SIGKILL) < 0 && errno == ESRCH)
			return;
		if (!group_has_live_member(pgid))
			return;
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 32000000)
			ts.tv_nsec *= 2;
	}
}

/* ---- the uid's task count (RLIMIT_NPROC) --------------------------------- */

/* RLIMIT_NPROC counts every task (thread) of the real uid, in the pod
 * including the server's threads and other containers' processes of 65532.
 * The budget is therefore added to what the uid has right now, leaving out
 * the process group skip_pgrp (a run that will be gone before the new run's
 * code starts). */
struct task_count {
	uid_t uid;
	pid_t skip_pgrp;
	unsigned long total;
};

/* One process's status file: its threads count if it is the uid's. */
static void count_status(const char *st, void *arg)
{
	struct task_count *c = arg;
	const char *u = strstr(st, "\nUid:"), *t = strstr(st, "\nThreads:"),
	           *g = strstr(st, "\nNSpgid:");

	if (c->skip_pgrp > 0 && g && strtol(g + 8, NULL, 10) == c->skip_pgrp)
		return;
	if (u && t && strtoul(u + 5, NULL, 10) == c->uid)
		c->total += strtoul(t + 9, NULL, 10);
}

static unsigned long count_uid_tasks(uid_t uid, pid_t skip_pgrp)
{
	struct task_count c = {uid, skip_pgrp, 0};

	(void)mcpx_proc_each_file("/proc", "status", count_status, &c);
	return c.total;
}

/* The scan reads every process's status file (half a millisecond on a
 * busy machine, on the path of every run), so it is repeated at most once
 * per second. What it counts is everything but runs (the server, the zygote,
 * other processes of the uid), which changes rarely: the budget may be off by
 * what those started or ended within that second. */
#define TASK_COUNT_TTL_MS 1000

/* The last count, kept by each server (struct mcpx_sandbox) for its run
 * uid. Spawning threads and the fork server ask for it at once, hence the
 * lock; it is held across the scan so that one scan serves them all. */
struct mcpx_reaper {
	pthread_mutex_t lock; /* guards the fields below */
	unsigned long count;
	uid_t count_uid;
	uint64_t count_ms; /* 0: never counted */
};

struct mcpx_reaper *mcpx_reaper_new(void)
{
	struct mcpx_reaper *r = calloc(1, sizeof(*r));

	if (r)
		pthread_mutex_init(&r->lock, NULL);
	return r;
}

void mcpx_reaper_free(struct mcpx_reaper *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r);
}

unsigned long mcpx_reaper_uid_tasks(struct mcpx_reaper *r, uid_t uid, pid_t skip_pgrp)
{
	struct timespec ts;
	uint64_t now;
	unsigned long n;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + 1;
	pthread_mutex_lock(&r->lock);
	if (!r->count_ms || r->count_uid != uid || now - r->count_ms >= TASK_COUNT_TTL_MS) {
		r->count = count_uid_tasks(uid, skip_pgrp);
		r->count_uid = uid;
		r->count_ms = now;
	}
	n = r->count;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* ---- kill and reap ------------------------------------------------------ */

static bool stray_children(void)
{
	bool found;

	pthread_mutex_lock(&registry_lock);
	found = has_unregistered_children();
	pthread_mutex_unlock(&registry_lock);
	return found;
}

/* Waits (timeout_ms -1: as long as it takes) until the leader has exited,
 * leaving the zombie. An adopted leader is the zygote's child, so its pidfd
 * is polled instead; our own child is waited for on its pidfd too when it
 * has one, so that the wait goes through loop_guard.h (a leader that has
 * exited is no wait). Returns 0, -ETIMEDOUT, or -errno. */
static int wait_leader(const struct mcpx_sandbox_proc *proc, int timeout_ms)
{
	int fd = proc->reaper ? proc->exit_fd : proc->pidfd;
	siginfo_t si;
	int rc;

	if (fd >= 0 || proc->reaper) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		rc = mcpx_wait_poll(&pfd, 1, timeout_ms, "a run's leader to exit");
		if (rc <= 0 || proc->reaper)
			return rc > 0 ? 0 : rc == 0 ? -ETIMEDOUT : -errno;
	} else if (timeout_ms != 0) {
		/* No pidfd to poll: a check, then the wait the guard counts. */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)proc->pid, &si, WEXITED | WNOWAIT | WNOHANG) == 0 &&
		    si.si_pid == proc->pid)
			return 0;
		mcpx_wait_blocks("a run's leader to exit");
	}
	memset(&si, 0, sizeof(si));
	while ((rc = waitid(P_PID, (id_t)proc->pid, &si,
	                    WEXITED | WNOWAIT | (timeout_ms == 0 ? WNOHANG : 0))) < 0 &&
	       errno == EINTR)
		;
	if (rc < 0)
		return -errno;
	return si.si_pid == proc->pid ? 0 : -ETIMEDOUT;
}

/* True once the leader has exited (a zombie waiting to be reaped). */
static bool leader_gone(const struct mcpx_sandbox_proc *proc)
{
	return wait_leader(proc, 0) == 0;
}

void mcpx_sandbox_kill(struct mcpx_sandbox_proc *proc)
{
	/* After the leader is reaped its pgid may be reused by an unrelated
	 * process, so nothing is sent by pgid after that; reap has already
	 * swept the run by then. */
	if (!proc || proc->pid <= 0 || proc->reaped)
		return;
	/* One group kill reaches every process of the run: setsid and
	 * setpgid are denied, and a fork racing with it is aborted. */
	(void)kill(-proc->pid, SIGKILL);
	/* And the leader itself: a forked child still entering its sandbox
	 * has not called setsid yet, so its group does not exist (it has
	 * started nothing either). An unreaped pid cannot be reused. */
	(void)kill(proc->pid, SIGKILL);
	if (leader_gone(proc) && !stray_children()) {
		proc->nothing_left = true;
		return; /* nothing of the run is left: skip the /proc scans */
	}
	kill_group(proc->pid);
	(void)sweep(proc->pid, NULL);
}

/* The first half of a reap, once the leader has exited: everything else of
 * the run is killed while the zombie still holds its process group. */
static void reap_begin(struct mcpx_sandbox_proc *proc)
{
	(void)kill(-proc->pid, SIGKILL);
	/* Once kill found nothing left, nothing can have been started since
	 * (a process of the run would have been needed): one scan per run. */
	proc->strays = !proc->nothing_left && stray_children();
	if (proc->strays)
		kill_group(proc->pid);
}

/* A reaper that failed (the zygote is gone): the zombie came back to the
 * server, its subreaper. wait for it there, never for long: it has exited. */
static int reap_returned(struct mcpx_sandbox_proc *proc, int *st, struct rusage *r)
{
	int rc;

	while ((rc = wait4(proc->pid, st, WNOHANG, r)) < 0 && errno == EINTR)
		;
	if (rc == proc->pid)
		return 0;
	*st = SIGKILL; /* unknown: reported as killed */
	return -ECHILD;
}

/* The second half: the leader is reaped (st, r: what its reaper said), the
 * orphans the kill left are reaped and counted. */
static void reap_end(struct mcpx_sandbox_proc *proc, int st, struct rusage *r, int *status,
                     struct rusage *ru)
{
	struct rusage orphans = {0};
	int round;

	proc->reaped = true;
	mcpx_leaders_remove(proc->pid);
	/* Killed members became zombies re-parented to us (subreaper); each
	 * round also catches the children of strays killed in the one before. */
	for (round = 0; proc->strays && round < MAX_SWEEP_ROUNDS; round++)
		if (sweep(proc->pid, &orphans) == 0)
			break;
	add_rusage(r, &orphans);
	if (status)
		*status = st;
	if (ru)
		*ru = *r;
}

int mcpx_sandbox_reap(struct mcpx_sandbox_proc *proc, int *status, struct rusage *ru)
{
	struct rusage r = {0};
	int st = 0, rc;

	if (!proc || proc->pid <= 0 || proc->reaped)
		return -ECHILD;
	if (proc->reaping)
		return -EBUSY; /* mcpx_sandbox_reap_async's answer is on its way */
	/* Wait for the exit but leave the zombie: it holds the pgid while
	 * the group is swept. */
	rc = wait_leader(proc, -1);
	if (rc < 0) {
		/* Someone else reaped it (a waitpid(-1) elsewhere): the pgid
		 * is no longer ours to signal. */
		if (rc == -ECHILD) {
			proc->reaped = true;
			mcpx_exit_watch_forget(proc->pid);
			mcpx_leaders_remove(proc->pid);
		}
		return rc;
	}
	reap_begin(proc);
	if (proc->reaper) {
		if (proc->reaper(proc->reaper_ctx, proc->pid, &st, &r) < 0) {
			memset(&r, 0, sizeof(r));
			(void)reap_returned(proc, &st, &r);
		}
	} else {
		/* Its exit watcher, where it has one, lets go of the pid
		 * before the pid can be reused. */
		mcpx_exit_watch_settle(proc->pid);
		while (wait4(proc->pid, &st, 0, &r) < 0)
			if (errno != EINTR)
				return -errno;
	}
	reap_end(proc, st, &r, status, ru);
	return 0;
}

/* A reap asked of an asynchronous reaper: who waits for its answer (NULL
 * once forgotten). Freed when the answer comes. */
struct mcpx_reap_ticket {
	struct mcpx_sandbox_proc *proc;
	mcpx_reaped_fn done;
	void *arg;
};

static void reaped(void *arg, int rc, int st, const struct rusage *ru)
{
	struct mcpx_reap_ticket *t = arg;
	struct mcpx_sandbox_proc *proc = t->proc;
	struct rusage r = {0}, out;
	int status;

	if (!proc) {
		free(t); /* forgotten: the leader is someone else's business now */
		return;
	}
	proc->reaping = NULL;
	if (rc == 0 && ru)
		r = *ru;
	if (rc < 0)
		(void)reap_returned(proc, &st, &r);
	reap_end(proc, st, &r, &status, &out);
	t->done(t->arg, 0, status, &out);
	free(t);
}

int mcpx_sandbox_reap_async(struct mcpx_sandbox_proc *proc, mcpx_reaped_fn done, void *arg)
{
	struct mcpx_reap_ticket *t;
	struct rusage r;
	int st = 0, rc;

	if (!proc || proc->pid <= 0 || proc->reaped || proc->reaping)
		return -ECHILD;
	rc = wait_leader(proc, 0);
	if (rc == -ETIMEDOUT)
		return -EAGAIN;
	if (rc < 0 || !proc->reaper_async) {
		/* Our own child, or nothing to wait for: at once. */
		rc = mcpx_sandbox_reap(proc, &st, &r);
		if (rc < 0)
			return rc;
		done(arg, 0, st, &r);
		return 0;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	reap_begin(proc);
	t->proc = proc;
	t->done = done;
	t->arg = arg;
	proc->reaping = t;
	rc = proc->reaper_async(proc->reaper_ctx, proc->pid, reaped, t);
	if (rc < 0) {
		/* Not asked: the zombie may have come back already. */
		proc->reaping = NULL;
		free(t);
		memset(&r, 0, sizeof(r));
		(void)reap_returned(proc, &st, &r);
		reap_end(proc, st, &r, &st, &r);
		done(arg, 0, st, &r);
	}
	return 0;
}

void mcpx_sandbox_reap_forget(struct mcpx_sandbox_proc *proc)
{
	if (!proc || !proc->reaping)
		return;
	proc->reaping->proc = NULL;
	proc->reaping = NULL;
	proc->reaped = true;
	mcpx_leaders_remove(proc->pid);
}
