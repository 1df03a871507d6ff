/*
 * test_loop_guard.c - what counts as the loop's thread waiting (loop_guard.h):
 * a wait inside a callback the loop's service runs is a violation (counted,
 * and fatal in a debug build); the same callbacks run synchronously at
 * teardown (a watch closed by an unwatch off the loop, a loop freed with a
 * watch still open) are off the loop, as their caller is, and may wait.
 *
 * The CI failure this guards against: at shutdown, the reap-later list was
 * flushed off the loop, but the watch's close callback still counted as the
 * loop's, and its reap through the zygote aborted the sanitizer build.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"
#include "loop_guard.h"

/* A wait of 20 ms on a pipe nobody writes: never ready at once. */
static int idle_pipe[2];

static void wait_a_little(void)
{
	struct pollfd pfd = {.fd = idle_pipe[0], .events = POLLIN};

	(void)mcpx_wait_poll(&pfd, 1, 20, "a pipe nobody writes (test)");
}

struct probe {
	struct mcpx_watch w;
	struct mcpx_timer t;
	struct mcpx_loop *loop;
	bool serving_at_close;
	int closed;
	bool unwatch_in_timer;
	bool wait_in_timer;
};

static void probe_cb(struct mcpx_watch *w, int events)
{
	struct probe *p = w->arg;

	if (events & MCPX_EV_CLOSED) {
		p->closed++;
		p->serving_at_close = mcpx_loop_guard_serving();
		if (!p->serving_at_close)
			wait_a_little();
	}
}

static void timer_cb(struct mcpx_timer *t)
{
	struct probe *p = t->arg;

	if (p->unwatch_in_timer)
		mcpx_loop_unwatch(&p->w);
	if (p->wait_in_timer)
		wait_a_little();
	mcpx_loop_stop(p->loop);
}

static int probe_start(struct probe *p, struct mcpx_loop *loop)
{
	int sv[2];

	memset(p, 0, sizeof(*p));
	p->loop = loop;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	close(sv[1]);
	p->w.fd = sv[0];
	p->w.fn = probe_cb;
	p->w.arg = p;
	p->t.fn = timer_cb;
	p->t.arg = p;
	return mcpx_loop_watch(loop, &p->w);
}

/* A probe whose timer (what it does there set by the caller) fires once on
 * the loop and stops it: returns what mcpx_loop_run returns. */
static int probe_run(struct probe *p)
{
	mcpx_timer_start(p->loop, &p->t, 1000);
	return mcpx_loop_run(p->loop);
}

/* A watch closed by an unwatch after the loop has stopped: its close
 * callback is off the loop and may wait. */
static void test_unwatch_off_the_loop(void)
{
	struct mcpx_loop *loop = mcpx_loop_new();
	struct probe p;
	uint64_t before = mcpx_loop_blocking_waits();

	CHECK(loop != NULL);
	CHECK_INT(probe_start(&p, loop), 0);
	CHECK_INT(probe_run(&p), 0);
	CHECK(!mcpx_loop_guard_serving());
	mcpx_loop_unwatch(&p.w);
	CHECK_INT(p.closed, 1);
	CHECK(!p.serving_at_close);
	CHECK(mcpx_loop_blocking_waits() == before);
	mcpx_loop_free(loop);
}

/* A watch still open when its loop is freed: closed by the context's
 * destruction, off the loop. */
static void test_free_with_a_watch_open(void)
{
	struct mcpx_loop *loop = mcpx_loop_new();
	struct probe p;
	uint64_t before = mcpx_loop_blocking_waits();

	CHECK(loop != NULL);
	CHECK_INT(probe_start(&p, loop), 0);
	CHECK_INT(probe_run(&p), 0);
	mcpx_loop_free(loop);
	CHECK_INT(p.closed, 1);
	CHECK(!p.serving_at_close);
	CHECK(mcpx_loop_blocking_waits() == before);
}

/* An unwatch inside a timer the loop runs: the close callback is the
 * loop's (it does not wait). */
static void test_unwatch_on_the_loop(void)
{
	struct mcpx_loop *loop = mcpx_loop_new();
	struct probe p;

	CHECK(loop != NULL);
	CHECK_INT(probe_start(&p, loop), 0);
	p.unwatch_in_timer = true;
	CHECK_INT(probe_run(&p), 0);
	CHECK_INT(p.closed, 1);
	CHECK(p.serving_at_close);
	mcpx_loop_free(loop);
}

/* A wait inside a timer the loop runs: counted, and in a debug build the
 * process aborts (in a child here). */
static void test_wait_on_the_loop(void)
{
	pid_t pid = fork();
	int st = 0;

	CHECK(pid >= 0);
	if (pid == 0) {
		struct mcpx_loop *loop = mcpx_loop_new();
		struct probe p;
		uint64_t before = mcpx_loop_blocking_waits();

		if (!loop || probe_start(&p, loop) < 0)
			_exit(2);
		p.wait_in_timer = true;
		(void)probe_run(&p);
		_exit(mcpx_loop_blocking_waits() == before + 1 ? 0 : 3);
	}
	CHECK_INT(waitpid(pid, &st, 0), pid);
#ifndef NDEBUG
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#else
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#endif
}

int main(void)
{
	CHECK_INT(pipe(idle_pipe), 0);
	test_unwatch_off_the_loop();
	test_free_with_a_watch_open();
	test_unwatch_on_the_loop();
	test_wait_on_the_loop();
	CHECK_DONE();
}
