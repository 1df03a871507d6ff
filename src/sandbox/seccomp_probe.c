/*
 * seccomp_probe.c - judge seccomp by installing filters and watching them act.
 *
 * What it does: forks throwaway children, one per question, each of which
 * installs a tiny classic-BPF filter on a harmless syscall and then makes
 * that call; the wait status says what the filter did. The questions: does
 * an ERRNO answer reach the caller (the deny-list works), does a second
 * filter stack on the first (a fork-server child stacks the run's filter on
 * the zygote's), and which of the kill actions ends what it should: a
 * process kill must end every thread (the probe has two), a thread kill the
 * caller, a trap must raise SIGSYS. seccomp_policy.c then kills foreign ABIs
 * with the strongest action seen to act.
 *
 * Why not ask the kernel: SECCOMP_GET_ACTION_AVAIL is a query that a valid
 * implementation may lack. gVisor has none, yet its filters deny with EPERM
 * exactly as Linux's do; and there a process kill ends only the calling
 * thread, which the query would not have said either.
 *
 * What it does not do: decide whether the server may start (the caller's
 * judgement), or prove the real policy (the start-up self-test runs the
 * compiled filter in a real run). The children run raw syscalls only: the
 * server may have threads, and a forked child of a threaded process may
 * call nothing that takes a lock.
 */
#include "seccomp_probe.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The filtered calls: neither has a side effect nor can fail by itself, so
 * -1 with PROBE_ERRNO can only come from a filter. */
#define PROBE_NR SYS_getppid
#define PROBE_NR2 SYS_getpgid
#define PROBE_ERRNO ENOTUNIQ

/* What a probe child says with its exit code. */
enum probe_exit {
	PX_ACTED = 0,        /* the ERRNO answer(s) arrived */
	PX_NO_FILTER = 10,   /* no_new_privs or the filter could not be installed */
	PX_NOT_STOPPED = 11, /* the filtered call ran as if nothing was installed */
	PX_SURVIVED = 12,    /* a process kill ended only the calling thread */
	PX_NO_THREAD = 13,   /* the second thread could not be made */
	PX_WRONG = 14,       /* some other answer */
};

static int install(unsigned nr, uint32_t action)
{
	/* No architecture check: the child makes native calls only. */
	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, action),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* 0 when the call came back with the filter's errno. */
static int answered(long nr)
{
	long r = syscall(nr, 0);

	if (r != -1)
		return PX_NOT_STOPPED;
	return errno == PROBE_ERRNO ? PX_ACTED : PX_WRONG;
}

/* The second thread of the process-kill probe: the filtered call, and if
 * it comes back, the end of this thread alone. */
static volatile int thread_returned;

static int second_thread(void *arg)
{
	(void)arg;
	(void)syscall(PROBE_NR);
	thread_returned = 1;
	syscall(SYS_exit, 0);
	return 0;
}

/* The probe child: a clean start (no core file, SIGSYS fatal and
 * deliverable, a backstop alarm), then one question. Never returns. */
static _Noreturn void child(int question)
{
	static char stack[16384] __attribute__((aligned(16)));
	static volatile int tid_word;
	struct rlimit no_core = {0, 0};
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	struct timespec wait = {2, 0};
	sigset_t none;
	int t;

	(void)setrlimit(RLIMIT_CORE, &no_core);
	(void)sigaction(SIGSYS, &dfl, NULL);
	(void)sigaction(SIGALRM, &dfl, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	alarm(5);
	switch (question) {
	case 0: /* ERRNO */
		if (install(PROBE_NR, SECCOMP_RET_ERRNO | PROBE_ERRNO) < 0)
			_exit(PX_NO_FILTER);
		_exit(answered(PROBE_NR));
	case 1: /* two stacked filters, both acting */
		if (install(PROBE_NR, SECCOMP_RET_ERRNO | PROBE_ERRNO) < 0 ||
		    install(PROBE_NR2, SECCOMP_RET_ERRNO | PROBE_ERRNO) < 0)
			_exit(PX_NO_FILTER);
		t = answered(PROBE_NR);
		_exit(t ? t : answered(PROBE_NR2));
	case 2: /* process kill, called from a second thread */
		if (install(PROBE_NR, SECCOMP_RET_KILL_PROCESS) < 0)
			_exit(PX_NO_FILTER);
		tid_word = 1;
		t = clone(second_thread, stack + sizeof(stack),
		          CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		              CLONE_SYSVSEM | CLONE_CHILD_CLEARTID,
		          NULL, NULL, NULL, &tid_word);
		if (t < 0)
			_exit(PX_NO_THREAD);
		/* The kernel clears tid_word and wakes us when that thread
		 * ends: killed alone, or done with a call that came back. */
		while (tid_word)
			(void)syscall(SYS_futex, &tid_word, FUTEX_WAIT, 1, &wait, NULL, 0);
		_exit(thread_returned ? PX_NOT_STOPPED : PX_SURVIVED);
	case 3: /* thread kill, single-threaded */
		if (install(PROBE_NR, SECCOMP_RET_KILL_THREAD) < 0)
			_exit(PX_NO_FILTER);
		(void)syscall(PROBE_NR);
		_exit(PX_NOT_STOPPED);
	default: /* trap */
		if (install(PROBE_NR, SECCOMP_RET_TRAP) < 0)
			_exit(PX_NO_FILTER);
		(void)syscall(PROBE_NR);
		_exit(PX_NOT_STOPPED);
	}
}

/* Forks one probe and returns its wait status, or -1 when no child could
 * be made or waited for. */
static int ask(int question)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		child(question);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

static bool exited_acted(int st)
{
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == PX_ACTED;
}

static bool died_of_sigsys(int st)
{
	return st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
}

void mcpx_seccomp_probe(struct mcpx_seccomp_support *out)
{
	uint32_t act = SECCOMP_RET_KILL_PROCESS;

	out->filter = false;
	out->stacks = false;
	out->kill = MCPX_SECCOMP_KILL_NONE;
	out->action_query = false;
	/* PR_GET_SECCOMP fails with EINVAL when CONFIG_SECCOMP is off. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
		return;
	out->action_query = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0;
	out->filter = exited_acted(ask(0));
	if (!out->filter)
		return;
	out->stacks = exited_acted(ask(1));
	if (died_of_sigsys(ask(2)))
		out->kill = MCPX_SECCOMP_KILL_PROCESS;
	else if (died_of_sigsys(ask(3)))
		out->kill = MCPX_SECCOMP_KILL_THREAD;
	else if (died_of_sigsys(ask(4)))
		out->kill = MCPX_SECCOMP_KILL_TRAP;
}

const char *mcpx_seccomp_kill_name(enum mcpx_seccomp_kill k)
{
	switch (k) {
	case MCPX_SECCOMP_KILL_PROCESS:
		return "kill-process";
	case MCPX_SECCOMP_KILL_THREAD:
		return "kill-thread";
	case MCPX_SECCOMP_KILL_TRAP:
		return "trap";
	default:
		return "none";
	}
}
