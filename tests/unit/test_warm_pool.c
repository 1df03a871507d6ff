/*
 * test_warm_pool.c - the warm environment's lifecycle against the real
 * zygote binary and /usr/bin/python3: in fork-server mode the first zygote
 * is proven on the loop, not while the pool is created, and the next child is
 * forked while a run is going on and each run gets a fresh process; a run
 * whose child the zygote has not answered yet waits on the loop and is
 * woken once; in after-reap mode nothing is prepared while a run is going
 * on, and an
 * interpreter still preloading is not handed out; a zygote that keeps dying
 * degrades the pool to after-reap and runs still start (cold); stop leaves
 * no process behind.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "check.h"
#include "config.h"
#include "loop.h"
#include "sandbox.h"
#include "warm.h"
#include "warm_pool.h"

#define PYTHON "/usr/bin/python3"

struct spin {
	struct mcpx_loop *loop;
	struct mcpx_timer t;
	bool (*cond)(void *);
	void *arg;
	uint64_t deadline;
	bool done;
};

static void spin_cb(struct mcpx_timer *t)
{
	struct spin *s = t->arg;

	if ((s->cond && s->cond(s->arg)) || mcpx_now_us() >= s->deadline) {
		s->done = true;
		return;
	}
	mcpx_timer_start(s->loop, &s->t, 5000);
}

/* Serves the loop until cond holds (NULL: for ms) or ms pass. The loop's
 * own run/stop is one-shot, so this turns it by hand, pausing a
 * millisecond per turn. */
static void spin(struct mcpx_loop *loop, unsigned ms, bool (*cond)(void *), void *arg)
{
	struct spin s = {.loop = loop, .cond = cond, .arg = arg};

	s.deadline = mcpx_now_us() + (uint64_t)ms * 1000u;
	s.t.fn = spin_cb;
	s.t.arg = &s;
	mcpx_timer_start(loop, &s.t, 1000);
	while (!s.done) {
		struct timespec ts = {0, 1000000};

		(void)mcpx_loop_turn(loop);
		nanosleep(&ts, NULL);
	}
	mcpx_timer_cancel(&s.t);
}

static bool is_ready(void *arg)
{
	return mcpx_warm_pool_ready(arg);
}

static bool is_after_reap(void *arg)
{
	return mcpx_warm_pool_mode(arg) == MCPX_WARM_MODE_AFTER_REAP;
}

static void config(struct mcpx_config *cfg, enum mcpx_warm warm)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->warm = warm;
	snprintf(cfg->preload, sizeof(cfg->preload), "json");
	cfg->memory_mb = 1024;
	cfg->max_procs = 64;
	cfg->max_file_mb = 16;
	cfg->max_timeout_s = 30;
}

/* Runs code in a taken process as the executor would and returns its exit
 * status; out gets what it printed. */
static int run_in(const struct mcpx_sandbox *sb, struct mcpx_sandbox_proc *proc,
                  bool marker_pending, const char *code, char *out, size_t cap)
{
	struct mcpx_err err = {{0}};
	char hdr[64];
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), strlen(code), 10), len = 0;
	int status = -1;

	CHECK_INT(mcpx_sandbox_write_main(sb, proc, code, strlen(code), &err), 0);
	CHECK(write(proc->stdin_fd, hdr, hlen) == (ssize_t)hlen);
	CHECK(write(proc->stdin_fd, code, strlen(code)) == (ssize_t)strlen(code));
	close(proc->stdin_fd);
	proc->stdin_fd = -1;
	for (;;) {
		struct pollfd p = {proc->stdout_fd, POLLIN, 0};
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			break;
		n = read(proc->stdout_fd, out + len, cap - 1 - len);
		if (n <= 0 && !(n < 0 && errno == EAGAIN))
			break;
		if (n > 0)
			len += (size_t)n;
	}
	out[len] = '\0';
	/* The protocol's bytes come first: READY unless the pool read it,
	 * then TAKEN (warm.h). */
	if (marker_pending) {
		CHECK(len && out[0] == MCPX_WARM_READY);
		if (len)
			memmove(out, out + 1, len--);
	}
	CHECK(len && out[0] == MCPX_WARM_TAKEN);
	if (len)
		memmove(out, out + 1, len--);
	CHECK_INT(mcpx_sandbox_reap(proc, &status, NULL), 0);
	mcpx_sandbox_cleanup(proc);
	return status;
}

static void test_fork_mode(struct mcpx_loop *loop, const struct mcpx_sandbox *sb)
{
	struct mcpx_config cfg;
	struct mcpx_warm_pool *wp;
	struct mcpx_sandbox_proc a, b;
	struct mcpx_err err = {{0}};
	bool pending;
	uint64_t base;
	char out[256];
	int st;

	config(&cfg, MCPX_WARM_AUTO);
	if (mcpx_warm_mode_for(&cfg, sb) != MCPX_WARM_MODE_FORK) {
		printf("fork-server mode unavailable on this kernel: skipped\n");
		return;
	}
	wp = mcpx_warm_pool_new(loop, &cfg, sb, NULL);
	if (wp)
		mcpx_warm_pool_start(wp);
	CHECK(wp && mcpx_warm_pool_mode(wp) == MCPX_WARM_MODE_FORK);
	/* Creating the pool does not wait for the first zygote (the server
	 * answers protocol requests meanwhile): it is proven on the loop, and
	 * runs wait for it. */
	CHECK(wp && mcpx_warm_pool_starting(wp) && !mcpx_warm_pool_ready(wp));
	spin(loop, 30000, is_ready, wp);
	CHECK(!mcpx_warm_pool_starting(wp));
	/* The first child is asked for as soon as the zygote is proven. */
	CHECK(mcpx_warm_pool_ready(wp));
	CHECK_INT(mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err), 1);
	CHECK(a.pid > 0 && !mcpx_warm_pool_ready(wp));
	/* Nothing is forked beside a's run (it would compete with it); the
	 * next child is asked for once the run has ended. */
	mcpx_warm_pool_run_started(wp, a.pid, mcpx_now_us());
	spin(loop, 300, NULL, NULL);
	CHECK(!mcpx_warm_pool_ready(wp));
	st = run_in(sb, &a, pending, "import os; print('pid', os.getpid())", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strncmp(out, "pid ", 4) == 0);
	mcpx_warm_pool_run_ended(wp);
	spin(loop, 10000, is_ready, wp);
	CHECK(mcpx_warm_pool_ready(wp));
	/* The next run is another process. */
	CHECK_INT(mcpx_warm_pool_take(wp, &b, false, &pending, &base, &err), 1);
	CHECK(b.pid > 0 && b.pid != a.pid);
	st = run_in(sb, &b, pending, "raise SystemExit(4)", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4);
	/* A run that needs a broker channel (a function's) never gets a child
	 * prepared without one: it is discarded and the run starts cold. */
	mcpx_warm_pool_run_started(wp, b.pid, mcpx_now_us());
	mcpx_warm_pool_run_ended(wp);
	spin(loop, 10000, is_ready, wp);
	CHECK(mcpx_warm_pool_ready(wp));
	CHECK_INT(mcpx_warm_pool_take(wp, &a, true, &pending, &base, &err), 0);
	CHECK(!mcpx_warm_pool_ready(wp));
	mcpx_warm_pool_free(wp);
}

/* A fork-server pool whose zygote is proven (cfg: the caller's, which the
 * pool keeps using), or NULL where fork-server mode is unavailable or the
 * pool could not be made (a failed check). */
static struct mcpx_warm_pool *ready_fork_pool(struct mcpx_loop *loop, const struct mcpx_sandbox *sb,
                                              struct mcpx_config *cfg)
{
	struct mcpx_warm_pool *wp;

	config(cfg, MCPX_WARM_AUTO);
	if (mcpx_warm_mode_for(cfg, sb) != MCPX_WARM_MODE_FORK)
		return NULL;
	wp = mcpx_warm_pool_new(loop, cfg, sb, NULL);
	CHECK(wp != NULL);
	if (!wp)
		return NULL;
	mcpx_warm_pool_start(wp);
	spin(loop, 30000, is_ready, wp);
	return wp;
}

/* The one zygote among our children (its comm names it), or 0. */
static pid_t zygote_child(void)
{
	char path[96], buf[512], comm[64];
	pid_t found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	for (char *p = buf, *end; *p && !found; p = end) {
		long pid = strtol(p, &end, 10);
		FILE *c;

		if (end == p)
			break;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		c = fopen(path, "r");
		if (c && fgets(comm, sizeof(comm), c) && strncmp(comm, "mcp-exec-zygote", 15) == 0)
			found = (pid_t)pid;
		if (c)
			fclose(c);
	}
	return found;
}

static void wake_cb(void *arg)
{
	++*(int *)arg;
}

static bool is_woken(void *arg)
{
	return *(int *)arg > 0;
}

/* A run about to start while the zygote has not answered its child's fork
 * yet waits on the loop, not in the take: the pool watches the zygote's
 * control socket and wakes the caller once, when the answer has come. The
 * zygote is held stopped to make the answer late. */
static void test_wait_for_answer(struct mcpx_loop *loop, const struct mcpx_sandbox *sb)
{
	struct mcpx_config cfg;
	struct mcpx_warm_pool *wp;
	struct mcpx_sandbox_proc a;
	struct mcpx_err err = {{0}};
	bool pending;
	uint64_t base;
	char out[256];
	int woken = 0, st;
	pid_t zyg;

	wp = ready_fork_pool(loop, sb, &cfg);
	if (!wp)
		return;
	CHECK(mcpx_warm_pool_ready(wp));
	CHECK_INT(mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err), 1);
	mcpx_warm_pool_run_started(wp, a.pid, mcpx_now_us());
	st = run_in(sb, &a, pending, "print(1)", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	zyg = zygote_child();
	CHECK(zyg > 0);
	if (zyg <= 0)
		return;
	CHECK(kill(zyg, SIGSTOP) == 0);
	mcpx_warm_pool_run_ended(wp);
	spin(loop, 10000, is_ready, wp);
	CHECK(mcpx_warm_pool_ready(wp));
	/* Asked for, not answered: the start waits, and nothing wakes it. */
	CHECK(mcpx_warm_pool_wait(wp, wake_cb, &woken));
	CHECK(mcpx_warm_pool_wait(wp, wake_cb, &woken));
	spin(loop, 200, NULL, NULL);
	CHECK_INT(woken, 0);
	CHECK(kill(zyg, SIGCONT) == 0);
	spin(loop, 10000, is_woken, &woken);
	CHECK_INT(woken, 1);
	/* Answered: the run starts now, with the child asked for. */
	CHECK(!mcpx_warm_pool_wait(wp, wake_cb, &woken));
	CHECK_INT(mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err), 1);
	st = run_in(sb, &a, pending, "raise SystemExit(5)", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	spin(loop, 50, NULL, NULL);
	CHECK_INT(woken, 1);
	mcpx_warm_pool_free(wp);
}

/* Calls that come back to back get their successor prepared beside their
 * run (each would otherwise wait for the whole preparation); a call that
 * comes alone does not (the child would compete with its run). */
static void test_back_to_back(struct mcpx_loop *loop, const struct mcpx_sandbox *sb)
{
	struct mcpx_config cfg;
	struct mcpx_warm_pool *wp;
	struct mcpx_sandbox_proc a, b, c;
	struct mcpx_err err = {{0}};
	struct timespec gap = {0, 40000000};
	bool pending;
	uint64_t base, arrived;
	char out[256];
	int st;

	wp = ready_fork_pool(loop, sb, &cfg);
	if (!wp)
		return;
	CHECK_INT(mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err), 1);
	st = run_in(sb, &a, pending, "print(1)", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	mcpx_warm_pool_run_ended(wp);
	/* The next call arrives at once: its run takes the child asked for
	 * after a's, and the one after it is asked for beside it. */
	arrived = mcpx_now_us();
	spin(loop, 10000, is_ready, wp);
	CHECK_INT(mcpx_warm_pool_take(wp, &b, false, &pending, &base, &err), 1);
	CHECK(!mcpx_warm_pool_ready(wp));
	mcpx_warm_pool_run_started(wp, b.pid, arrived);
	spin(loop, 10000, is_ready, wp);
	CHECK(mcpx_warm_pool_ready(wp));
	st = run_in(sb, &b, pending, "raise SystemExit(6)", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 6);
	mcpx_warm_pool_run_ended(wp);
	/* A call that comes 40 ms after the last run ended: nothing beside. */
	nanosleep(&gap, NULL);
	arrived = mcpx_now_us();
	CHECK_INT(mcpx_warm_pool_take(wp, &c, false, &pending, &base, &err), 1);
	CHECK(c.pid != b.pid);
	mcpx_warm_pool_run_started(wp, c.pid, arrived);
	spin(loop, 300, NULL, NULL);
	CHECK(!mcpx_warm_pool_ready(wp));
	st = run_in(sb, &c, pending, "print(2)", out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	mcpx_warm_pool_run_ended(wp);
	mcpx_warm_pool_free(wp);
}

static void test_after_reap(struct mcpx_loop *loop, const struct mcpx_sandbox *sb)
{
	struct mcpx_config cfg;
	struct mcpx_warm_pool *wp;
	struct mcpx_sandbox_proc a;
	struct mcpx_err err = {{0}};
	bool pending;
	uint64_t base;
	char out[256];
	int st;

	config(&cfg, MCPX_WARM_AFTER_REAP);
	wp = mcpx_warm_pool_new(loop, &cfg, sb, NULL);
	if (wp)
		mcpx_warm_pool_start(wp);
	CHECK(wp && mcpx_warm_pool_mode(wp) == MCPX_WARM_MODE_AFTER_REAP);
	CHECK(mcpx_warm_pool_ready(wp));
	/* Still preloading at once: not handed out, the run starts cold. */
	CHECK_INT(mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err), 0);
	CHECK(!mcpx_warm_pool_ready(wp));
	/* A run ended and the next started at once (cold): the interpreter
	 * due after the first may not be started beside the second. */
	mcpx_warm_pool_run_ended(wp);
	mcpx_warm_pool_run_started(wp, 1, mcpx_now_us());
	spin(loop, 300, NULL, NULL);
	CHECK(!mcpx_warm_pool_ready(wp));
	mcpx_warm_pool_run_ended(wp);
	spin(loop, 10000, is_ready, wp);
	CHECK(mcpx_warm_pool_ready(wp));
	/* Once it has preloaded (its ready byte), it is handed out. */
	{
		struct timespec ts = {0, 20000000};

		for (int i = 0; i < 500; i++) {
			st = mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err);
			if (st != 0)
				break;
			mcpx_warm_pool_run_ended(wp);
			spin(loop, 10000, is_ready, wp);
			nanosleep(&ts, NULL);
			ts.tv_nsec = ts.tv_nsec < 400000000 ? ts.tv_nsec * 2 : ts.tv_nsec;
		}
	}
	CHECK_INT(st, 1);
	CHECK(!pending);
	if (st == 1) {
		st = run_in(sb, &a, pending, "import sys; print('json' in sys.modules)", out,
		            sizeof(out));
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_STR(out, "True\n");
	}
	mcpx_warm_pool_free(wp);
}

/* A zygote that exits at once, every time: fork mode is given up after
 * three failures and runs go on (after-reap, then cold). */
static void test_degrade(struct mcpx_loop *loop, const struct mcpx_sandbox *sb)
{
	struct mcpx_sandbox *bad = malloc(sizeof(*bad));
	struct mcpx_config cfg;
	struct mcpx_warm_pool *wp;
	struct mcpx_sandbox_proc a;
	struct mcpx_err err = {{0}};
	bool pending;
	uint64_t base;

	config(&cfg, MCPX_WARM_AUTO);
	if (mcpx_warm_mode_for(&cfg, sb) != MCPX_WARM_MODE_FORK) {
		free(bad);
		return;
	}
	*bad = *sb;
	/* The binary is executed through its descriptor (sandbox.h). */
	snprintf(bad->zygote, sizeof(bad->zygote), "/bin/false");
	bad->zygote_fd = open("/bin/false", O_PATH | O_CLOEXEC);
	CHECK(bad->zygote_fd >= 0);
	wp = mcpx_warm_pool_new(loop, &cfg, bad, NULL);
	if (wp)
		mcpx_warm_pool_start(wp);
	spin(loop, 10000, is_after_reap, wp);
	CHECK(mcpx_warm_pool_mode(wp) == MCPX_WARM_MODE_AFTER_REAP);
	/* Runs no longer wait for a zygote that will not come. */
	CHECK(!mcpx_warm_pool_starting(wp));
	CHECK(mcpx_warm_pool_take(wp, &a, false, &pending, &base, &err) == 0);
	mcpx_warm_pool_free(wp);
	close(bad->zygote_fd);
	free(bad);
}

/* Nothing the pool started outlives it. */
static void test_nothing_left(void)
{
	char path[64], buf[256] = {0};
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	CHECK_STR(buf, "");
}

int main(void)
{
	struct mcpx_sandbox *sb = malloc(sizeof(*sb));
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_err err = {{0}};
	char base[] = "/tmp/mcpx-wptest-XXXXXX";

	if (!sb || !loop || !mkdtemp(base) || chmod(base, 0711) < 0) {
		perror("setup");
		return 1;
	}
	if (mcpx_sandbox_init(sb, PYTHON, base, &err) < 0 ||
	    mcpx_sandbox_use_zygote(sb, MCPX_TEST_ZYGOTE, &err) < 0) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	printf("%.1f s: test_fork_mode\n", (double)mcpx_now_us() / 1e6);
	fflush(stdout);
	test_fork_mode(loop, sb);
	printf("%.1f s: test_wait_for_answer\n", (double)mcpx_now_us() / 1e6);
	fflush(stdout);
	test_wait_for_answer(loop, sb);
	printf("%.1f s: test_back_to_back\n", (double)mcpx_now_us() / 1e6);
	test_back_to_back(loop, sb);
	printf("%.1f s: test_after_reap\n", (double)mcpx_now_us() / 1e6);
	fflush(stdout);
	test_after_reap(loop, sb);
	printf("%.1f s: test_degrade\n", (double)mcpx_now_us() / 1e6);
	fflush(stdout);
	test_degrade(loop, sb);
	test_nothing_left();
	mcpx_loop_free(loop);
	mcpx_sandbox_free(sb);
	free(sb);
	rmdir(base);
	CHECK_DONE();
}
