/*
 * exit_watch.c - learn that a child exited, with or without pidfds.
 *
 * What it does: hands the executor (through spawn.c) one descriptor per run
 * leader that polls readable once the leader has exited, so the event loop
 * learns of the exit without ever blocking. That is the leader's pidfd
 * where pidfd_open works. Where it answers ENOSYS or EPERM (gVisor has no
 * pidfds; Linux gained them in 5.3; a runtime profile may deny them) it is
 * an eventfd, and a small thread of the server blocks in
 * waitid(P_PID, leader, WEXITED | WNOWAIT), writes the eventfd once the
 * leader has exited, and ends. WNOWAIT leaves the zombie: reaping stays
 * with reaper.c, which waits for this thread (mcpx_exit_watch_settle)
 * before its wait4, so the thread never waits on a pid the kernel could
 * have given to another process, and nothing here ever waits for a pid that
 * is not a leader this server forked.
 *
 * Why a thread per leader and not SIGCHLD: a signal handler or signalfd
 * would change the signal disposition or mask of the whole server (and of
 * every library thread in it), and would still have to look at each leader
 * with waitid; a thread costs one clone per run and touches nothing else.
 * The thread has every signal blocked and a small stack. It is a task of
 * the server's uid while the run lives: RLIMIT_NPROC's count (reaper.c) may
 * see it, which can only make a run's process budget one smaller.
 *
 * What it does not do: watch a process that is not the server's child (the
 * fork server's children need real pidfds: forkserver.c adopts them with
 * pidfd_open, and without pidfds the fork server is not used), or reap.
 */
#include "exit_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Leaders watched at once; the reaper's registry holds as many. */
#define MAX_WATCHED 256
#define WATCHER_STACK (64 * 1024)

/* 0: not asked yet, 1: pidfds work, -1: they do not. */
static atomic_int pidfd_state;

/* The watcher threads not yet settled, guarded by lock (never held while
 * joining one). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t pid;
	pthread_t thread;
} watched[MAX_WATCHED];

struct watch_arg {
	pid_t pid;
	int efd;
};

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

bool mcpx_exit_watch_pidfd(void)
{
	int state = atomic_load(&pidfd_state);

	if (state == 0) {
		int fd = pidfd_open(getpid());

		state = fd >= 0 ? 1 : -1;
		if (fd >= 0)
			close(fd);
		atomic_store(&pidfd_state, state);
	}
	return state > 0;
}

void mcpx_exit_watch_use_threads(void)
{
	atomic_store(&pidfd_state, -1);
}

static void *watch(void *p)
{
	struct watch_arg a = *(struct watch_arg *)p;
	uint64_t one = 1;
	siginfo_t si;

	free(p);
	/* ECHILD (reaped elsewhere, which reaper.c never lets happen) ends the
	 * wait as well: the leader is gone either way. */
	while (waitid(P_PID, (id_t)a.pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	while (write(a.efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	close(a.efd);
	return NULL;
}

/* Frees slots of threads that have ended but were never settled (a leader
 * forgotten after someone else reaped it). Caller holds lock. */
static int free_slot(void)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < MAX_WATCHED; i++) {
			if (!watched[i].pid)
				return (int)i;
			if (pass && pthread_tryjoin_np(watched[i].thread, NULL) == 0) {
				watched[i].pid = 0;
				return (int)i;
			}
		}
	return -1;
}

/* Starts the watcher of pid on efd (which it takes). Returns 0 or -errno. */
static int start_watcher(pid_t pid, int efd)
{
	struct watch_arg *a = malloc(sizeof(*a));
	sigset_t all, old;
	pthread_attr_t attr;
	int slot, rc;

	if (!a)
		return -ENOMEM;
	a->pid = pid;
	a->efd = efd;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WATCHER_STACK);
	/* The thread inherits this mask: no signal of the server's is ever
	 * delivered to it. */
	sigfillset(&all);
	pthread_mutex_lock(&lock);
	slot = free_slot();
	if (slot < 0) {
		rc = EAGAIN;
	} else {
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&watched[slot].thread, &attr, watch, a);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc == 0)
			watched[slot].pid = pid;
	}
	pthread_mutex_unlock(&lock);
	pthread_attr_destroy(&attr);
	if (rc) {
		free(a);
		return -rc;
	}
	return 0;
}

int mcpx_exit_watch_open(pid_t pid)
{
	int efd, fd, rc;

	if (mcpx_exit_watch_pidfd()) {
		fd = pidfd_open(pid);
		return fd >= 0 ? fd : -errno;
	}
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	/* The caller's copy: closing it never touches the watcher's. */
	fd = fcntl(efd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		close(efd);
		return rc;
	}
	rc = start_watcher(pid, efd);
	if (rc) {
		close(efd);
		close(fd);
		return rc;
	}
	return fd;
}

/* Takes pid's thread out of the table; false when it has none. */
static bool take(pid_t pid, pthread_t *t)
{
	bool found = false;

	if (pid <= 0)
		return false;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_WATCHED && !found; i++) {
		if (watched[i].pid == pid) {
			*t = watched[i].thread;
			watched[i].pid = 0;
			found = true;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}

void mcpx_exit_watch_settle(pid_t pid)
{
	pthread_t t;

	/* The leader has exited and is not reaped: the thread's waitid has
	 * returned or returns at once, so this join is short. */
	if (take(pid, &t))
		pthread_join(t, NULL);
}

void mcpx_exit_watch_forget(pid_t pid)
{
	pthread_t t;

	if (take(pid, &t))
		pthread_detach(t);
}
