/*
 * test_exit_watch.c - exit_watch.c with and without pidfds: the descriptor
 * is not readable while the child lives and becomes readable once it has
 * exited; the watcher thread never reaps (the exit status is still there
 * for waitpid after settle); closing the descriptor early is harmless; a
 * child killed before anyone polled is seen too; and many children at once
 * each get their own. Also seccomp_probe.c: on this kernel a filter acts,
 * stacks, and some kill action ends what it should.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "exit_watch.h"
#include "seccomp_probe.h"

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* A child that exits with code once it reads a byte from the pipe. */
static pid_t child_waiting(int *wfd, int code)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) < 0)
			_exit(99);
		_exit(code);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

static void test_one(const char *mode)
{
	int wfd = -1, st = 0, fd;
	pid_t pid = child_waiting(&wfd, 7);

	printf("%s: a child that exits 7\n", mode);
	REQUIRE(pid > 0);
	fd = mcpx_exit_watch_open(pid);
	REQUIRE(fd >= 0);
	CHECK(!readable(fd, 100)); /* alive: not readable */
	CHECK(write(wfd, "x", 1) == 1);
	CHECK(readable(fd, 10000));
	CHECK(readable(fd, 0)); /* and it stays readable */
	mcpx_exit_watch_settle(pid);
	/* Nobody reaped it: the status is still ours. */
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7);
	close(fd);
	close(wfd);
}

static void test_killed_and_closed(const char *mode)
{
	int wfd = -1, st = 0, fd;
	pid_t pid = child_waiting(&wfd, 0);

	printf("%s: killed before anyone polled; a descriptor closed early\n", mode);
	REQUIRE(pid > 0);
	fd = mcpx_exit_watch_open(pid);
	REQUIRE(fd >= 0);
	close(fd); /* the watcher keeps its own */
	CHECK(kill(pid, SIGKILL) == 0);
	mcpx_exit_watch_settle(pid);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(wfd);
}

static void test_many(const char *mode)
{
	enum { N = 20 };
	int wfd[N], fd[N], st;
	pid_t pid[N];

	printf("%s: %d children at once, each ends on its own\n", mode, N);
	for (int i = 0; i < N; i++) {
		pid[i] = child_waiting(&wfd[i], i);
		REQUIRE(pid[i] > 0);
		fd[i] = mcpx_exit_watch_open(pid[i]);
		REQUIRE(fd[i] >= 0);
	}
	for (int i = 0; i < N; i += 2)
		CHECK(write(wfd[i], "x", 1) == 1);
	for (int i = 0; i < N; i++)
		CHECK(readable(fd[i], i % 2 ? 50 : 10000) == (i % 2 == 0));
	for (int i = 1; i < N; i += 2)
		CHECK(write(wfd[i], "x", 1) == 1);
	for (int i = 0; i < N; i++) {
		CHECK(readable(fd[i], 10000));
		mcpx_exit_watch_settle(pid[i]);
		CHECK(waitpid(pid[i], &st, 0) == pid[i] && WEXITSTATUS(st) == i);
		close(fd[i]);
		close(wfd[i]);
	}
}

static void test_seccomp_probe(void)
{
	struct mcpx_seccomp_support s;

	mcpx_seccomp_probe(&s);
	printf("seccomp probe: filter=%d stacks=%d kill=%s action_query=%d\n", s.filter, s.stacks,
	       mcpx_seccomp_kill_name(s.kill), s.action_query);
	/* The machines this runs on filter; gVisor kills threads only. */
	CHECK(s.filter && s.stacks);
	CHECK(s.kill == MCPX_SECCOMP_KILL_PROCESS || s.kill == MCPX_SECCOMP_KILL_THREAD);
	/* The probe's children are all reaped. */
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

int main(void)
{
	const char *mode = mcpx_exit_watch_pidfd() ? "pidfd" : "threads (no pidfds here)";

	test_seccomp_probe();
	test_one(mode);
	test_killed_and_closed(mode);
	test_many(mode);
	if (mcpx_exit_watch_pidfd()) {
		mcpx_exit_watch_use_threads();
		test_one("threads");
		test_killed_and_closed("threads");
		test_many("threads");
	}
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? 1 : 0;
}
