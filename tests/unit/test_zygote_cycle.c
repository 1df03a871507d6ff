/*
 * test_zygote_cycle.c - the zygotes over time, against /usr/bin/python3:
 * the first one is proven by the probe run without blocking; after its
 * runs a successor is prepared while the old one still serves and takes
 * over, replacing a child asked for from the old one; a replaced zygote
 * lives until its last run is reaped; a run whose zygote dies is told
 * apart from one that kills itself; a dead zygote is replaced; a zygote
 * whose children fail the probe is never used.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "check.h"
#include "forkserver.h"
#include "sandbox.h"
#include "warm.h"
#include "zygote_cycle.h"

#define PYTHON "/usr/bin/python3"

static const struct mcpx_limits limits = {
    .cpu_s = 20, .memory_mb = 1024, .max_procs = 64, .file_mb = 16, .open_files = 256};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Polls (as the executor's timer would) until cond holds or a minute has
 * passed; returns the last poll's answer. */
#define POLL_UNTIL(z, cond)                                                                        \
	({                                                                                         \
		long deadline_ = now_ms() + 60000;                                                 \
		struct mcpx_err e_ = {{0}};                                                        \
		uint64_t next_;                                                                    \
		int r_ = mcpx_zygotes_poll((z), &next_, &e_);                                      \
		while (r_ >= 0 && !(cond) && now_ms() < deadline_) {                               \
			usleep(2000);                                                              \
			r_ = mcpx_zygotes_poll((z), &next_, &e_);                                  \
		}                                                                                  \
		if (r_ < 0)                                                                        \
			printf("poll: %s\n", e_.msg);                                              \
		r_;                                                                                \
	})

/* Hands a taken child its code the way the executor does and returns its
 * stdout (the protocol bytes included). */
static void run_code(const struct mcpx_sandbox *sb, struct mcpx_sandbox_proc *proc,
                     const char *code, char *out, size_t cap)
{
	struct mcpx_err err = {{0}};
	char hdr[64];
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), strlen(code), 10), len = 0;
	long deadline = now_ms() + 30000;

	CHECK_INT(mcpx_sandbox_write_main(sb, proc, code, strlen(code), &err), 0);
	CHECK(write(proc->stdin_fd, hdr, hlen) == (ssize_t)hlen);
	CHECK(write(proc->stdin_fd, code, strlen(code)) == (ssize_t)strlen(code));
	close(proc->stdin_fd);
	proc->stdin_fd = -1;
	while (now_ms() < deadline && len < cap - 1) {
		struct pollfd p = {proc->stdout_fd, POLLIN, 0};
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(proc->stdout_fd, out + len, cap - 1 - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0 || errno != EAGAIN)
			break;
	}
	out[len] = '\0';
}

/* One run from the zygotes: fork, take, run code; returns the wait status
 * and the child's idea of its parent (the zygote). */
static int one_run(const struct mcpx_sandbox *sb, struct mcpx_zygotes *z, const char *code,
                   long *ppid)
{
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	char out[4096];
	int status = -1;
	const char *p;

	CHECK_INT(mcpx_zygotes_fork(z, &limits, &err), 0);
	if (mcpx_zygotes_take(z, &proc, NULL, &err) != 0) {
		CHECK(!"a forked child was taken");
		*ppid = -1;
		return -1;
	}
	run_code(sb, &proc, code, out, sizeof(out));
	/* Ready byte, then the byte saying the whole code arrived. */
	CHECK(out[0] == MCPX_WARM_READY && out[1] == MCPX_WARM_TAKEN);
	p = strstr(out + 2, "ppid ");
	*ppid = p ? strtol(p + 5, NULL, 10) : -1;
	CHECK(!mcpx_zygotes_parent_gone(&proc));
	CHECK_INT(mcpx_sandbox_reap(&proc, &status, NULL), 0);
	mcpx_sandbox_cleanup(&proc);
	return status;
}

static void test_renewal(const struct mcpx_sandbox *sb, const char *boot)
{
	struct mcpx_zygote_policy pol = {.max_runs = 2};
	struct mcpx_limits asked = limits;
	struct mcpx_sandbox_proc held;
	struct mcpx_zygotes *z = NULL;
	struct mcpx_err err = {{0}};
	pid_t first, second;
	long ppid = 0;
	int st;

	asked.open_files = 200;
	REQUIRE_INT(mcpx_zygotes_new(sb, boot, &limits, &pol, &z, &err), 0);
	/* Proven by the probe, one non-blocking step per poll. */
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != 0), 1);
	first = mcpx_zygotes_pid(z);
	CHECK(first > 0);
	st = one_run(sb, z, "import os; print('ppid', os.getppid())", &ppid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_INT(ppid, first);
	/* The second run is the last of its share; keep it alive across the
	 * switch to see the old zygote outlive the switch for it. */
	CHECK_INT(mcpx_zygotes_fork(z, &limits, &err), 0);
	REQUIRE_INT(mcpx_zygotes_take(z, &held, NULL, &err), 0);
	/* A child asked for from the old zygote before the switch (with limits
	 * of its own, which its replacement must keep)... */
	CHECK_INT(mcpx_zygotes_fork(z, &asked, &err), 0);
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != first), 1);
	second = mcpx_zygotes_pid(z);
	CHECK(second > 0 && second != first);
	CHECK(mcpx_zygotes_pending(z));
	/* ...is replaced by one of the new zygote's. */
	{
		struct mcpx_sandbox_proc proc;
		char out[4096];
		const char *p;

		REQUIRE_INT(mcpx_zygotes_take(z, &proc, NULL, &err), 0);
		run_code(sb, &proc,
		         "import os, resource\nprint('ppid', os.getppid())\n"
		         "print('nofile', resource.getrlimit(resource.RLIMIT_NOFILE)[0])",
		         out, sizeof(out));
		p = strstr(out + 2, "ppid ");
		CHECK(p && strtol(p + 5, NULL, 10) == second);
		CHECK(strstr(out + 2, "nofile 200\n") != NULL);
		CHECK_INT(mcpx_sandbox_reap(&proc, &st, NULL), 0);
		mcpx_sandbox_cleanup(&proc);
	}
	/* The old zygote lives while its run does, and goes after its reap. */
	CHECK(kill(first, 0) == 0);
	run_code(sb, &held, "print('done')", (char[256]){0}, 256);
	CHECK_INT(mcpx_sandbox_reap(&held, &st, NULL), 0);
	mcpx_sandbox_cleanup(&held);
	(void)POLL_UNTIL(z, kill(first, 0) != 0);
	CHECK(kill(first, 0) != 0);
	mcpx_zygotes_free(z);
	CHECK(kill(second, 0) != 0);
}

/* A zygote due for renewal while runs keep executing is not replaced yet
 * (its successor's preload would compete with them): it is once no run has
 * executed for a moment, or anyway at twice its bound of runs. */
static void test_renewal_when_idle(const struct mcpx_sandbox *sb, const char *boot)
{
	struct mcpx_zygote_policy pol = {.max_runs = 1};
	struct mcpx_zygotes *z = NULL;
	struct mcpx_err err = {{0}};
	uint64_t next = 0;
	pid_t first, second;
	long ppid = 0;

	CHECK_INT(mcpx_zygotes_new(sb, boot, &limits, &pol, &z, &err), 0);
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != 0), 1);
	first = mcpx_zygotes_pid(z);
	/* One run: due, but a run executes (busy), so nothing starts. */
	mcpx_zygotes_busy(z, true);
	(void)one_run(sb, z, "import os; print('ppid', os.getppid())", &ppid);
	CHECK_INT(ppid, first);
	CHECK_INT(mcpx_zygotes_poll(z, &next, &err), 1);
	CHECK(next > 0);
	usleep(300000);
	CHECK_INT(mcpx_zygotes_poll(z, &next, &err), 1);
	CHECK(mcpx_zygotes_pid(z) == first);
	/* Twice the bound: replaced even while busy. */
	(void)one_run(sb, z, "pass", &ppid);
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != first), 1);
	second = mcpx_zygotes_pid(z);
	CHECK(second > 0 && second != first);
	/* Due again after one run of its own: replaced once idle (no run for
	 * 100 ms), not before. */
	(void)one_run(sb, z, "pass", &ppid);
	CHECK_INT(mcpx_zygotes_poll(z, &next, &err), 1);
	CHECK(mcpx_zygotes_pid(z) == second);
	mcpx_zygotes_busy(z, false);
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != second), 1);
	CHECK(mcpx_zygotes_pid(z) != second && mcpx_zygotes_pid(z) > 0);
	mcpx_zygotes_free(z);
}

static void test_death(const struct mcpx_sandbox *sb, const char *boot)
{
	struct mcpx_zygote_policy pol = {0};
	struct mcpx_sandbox_proc proc;
	struct mcpx_zygotes *z = NULL;
	struct mcpx_err err = {{0}};
	pid_t zyg;
	long ppid;
	int st = 0;

	REQUIRE_INT(mcpx_zygotes_new(sb, boot, &limits, &pol, &z, &err), 0);
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != 0), 1);
	zyg = mcpx_zygotes_pid(z);
	/* A run that kills itself: its zygote lives on. */
	st = one_run(sb, z, "import os; os.kill(os.getpid(), 9)", &ppid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* A run whose zygote is killed: it dies too (parent-death signal), and
	 * that is visible before its reap. */
	CHECK_INT(mcpx_zygotes_fork(z, &limits, &err), 0);
	REQUIRE_INT(mcpx_zygotes_take(z, &proc, NULL, &err), 0);
	{
		static const char code[] =
		    "print('running', flush=True)\nimport time\ntime.sleep(60)\n";
		struct pollfd p = {proc.stdout_fd, POLLIN, 0};
		char hdr[64], got[64];
		size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), strlen(code), 10), len = 0;

		CHECK_INT(mcpx_sandbox_write_main(sb, &proc, code, strlen(code), &err), 0);
		CHECK(write(proc.stdin_fd, hdr, hlen) == (ssize_t)hlen);
		CHECK(write(proc.stdin_fd, code, strlen(code)) == (ssize_t)strlen(code));
		/* Ready, taken, "running": the program is running now. */
		while (len < 10 && poll(&p, 1, 30000) == 1) {
			ssize_t n = read(proc.stdout_fd, got + len, sizeof(got) - len);

			if (n <= 0)
				break;
			len += (size_t)n;
		}
		CHECK(len >= 10 && !memcmp(got + 2, "running\n", 8));
		CHECK(kill(zyg, SIGKILL) == 0);
		p.fd = proc.pidfd;
		CHECK(poll(&p, 1, 30000) == 1);
	}
	CHECK(mcpx_zygotes_parent_gone(&proc));
	CHECK_INT(mcpx_sandbox_reap(&proc, &st, NULL), 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	mcpx_sandbox_cleanup(&proc);
	/* The next poll notices, and a successor takes over. */
	CHECK_INT(POLL_UNTIL(z, mcpx_zygotes_pid(z) != 0 && mcpx_zygotes_pid(z) != zyg), 1);
	CHECK(mcpx_zygotes_pid(z) != zyg);
	st = one_run(sb, z, "import os; print('ppid', os.getppid())", &ppid);
	CHECK_INT(ppid, mcpx_zygotes_pid(z));
	mcpx_zygotes_free(z);
}

/* A zygote whose children fail their sandbox entry fails the probe: the
 * caller is told (-EPERM), no run is ever forked from it. The children's
 * seccomp program is one the kernel refuses (a load beyond seccomp_data),
 * so their setup fails at its seccomp step. */
static void test_unproven(const struct mcpx_sandbox *sb, const char *preload)
{
	static struct sock_filter bad[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4096),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct mcpx_sandbox *broken = malloc(sizeof(*broken));
	struct mcpx_zygote_policy pol = {0};
	struct mcpx_zygotes *z = NULL;
	struct mcpx_err err = {{0}};

	if (!broken || !sb->layers.seccomp) {
		free(broken);
		return;
	}
	*broken = *sb;
	broken->filter.len = 2;
	broken->filter.filter = bad;
	CHECK_INT(mcpx_zygotes_new(broken, preload, &limits, &pol, &z, &err), 0);
	CHECK_INT(POLL_UNTIL(z, 0), -EPERM);
	CHECK_INT(mcpx_zygotes_pid(z), 0);
	CHECK(mcpx_zygotes_fork(z, &limits, &err) < 0);
	mcpx_zygotes_free(z);
	free(broken);
}

int main(void)
{
	struct mcpx_sandbox *sb = malloc(sizeof(*sb));
	struct mcpx_err err = {{0}};
	char base[] = "/tmp/mcpx-zctest-XXXXXX";
	const char *boot = "json";

	if (!mkdtemp(base) || chmod(base, 0711) < 0) {
		perror("mkdtemp");
		return 1;
	}
	if (mcpx_sandbox_init(sb, PYTHON, base, &err)) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	if (!sb->layers.landlock_scope) {
		/* Fork mode is only used with Landlock's scope; the cycle itself
		 * does not depend on it, so it is tested anyway. */
		printf("note: no Landlock scope here\n");
	}
	if (mcpx_sandbox_use_zygote(sb, MCPX_TEST_ZYGOTE, &err)) {
		fprintf(stderr, "zygote: %s\n", err.msg);
		return 1;
	}
	test_renewal(sb, boot);
	test_renewal_when_idle(sb, boot);
	test_death(sb, boot);
	test_unproven(sb, boot);
	mcpx_sandbox_free(sb);
	free(sb);
	rmdir(base);
	CHECK_DONE();
}
