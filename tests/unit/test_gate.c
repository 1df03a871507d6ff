/*
 * test_gate.c - the prepared bash's gate (gate.c): the line sets the CPU
 * and address-space limits soft before hard, in bash's units, with
 * "unlimited" for no limit, then unsets BASH_ENV, and a short buffer is
 * refused; the gate is not reached until a reader waits in open(2); once
 * reached, the line released through it is what the reader reads, followed
 * by end of file; and a real bash, held by BASH_ENV, runs the line and then
 * its script with the limits lowered and no BASH_ENV.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gate.h"

static void test_line(void)
{
	struct mcpx_rlimit rl[] = {
	    {RLIMIT_CORE, {0, 0}},
	    {RLIMIT_AS, {256ull << 20, 256ull << 20}},
	    {RLIMIT_CPU, {7, 8}},
	    {RLIMIT_NPROC, {40, 40}},
	};
	struct mcpx_rlimit open_as[] = {{RLIMIT_AS, {RLIM_INFINITY, RLIM_INFINITY}}};
	char buf[160];

	CHECK(mcpx_gate_line(buf, sizeof(buf), rl, 4) > 0);
	CHECK_STR(buf, "ulimit -S -t 7 -v 262144 && ulimit -H -t 8 -v 262144 && unset BASH_ENV || "
	               "kill -KILL $$\n");
	CHECK(mcpx_gate_line(buf, sizeof(buf), open_as, 1) > 0);
	CHECK_STR(buf, "ulimit -S -v unlimited && ulimit -H -v unlimited && unset BASH_ENV || kill "
	               "-KILL $$\n");
	/* Neither limit: no bare `ulimit`, which would print one. */
	CHECK(mcpx_gate_line(buf, sizeof(buf), rl, 1) > 0);
	CHECK_STR(buf, "unset BASH_ENV || kill -KILL $$\n");
	CHECK_INT(mcpx_gate_line(buf, 20, rl, 4), -ENAMETOOLONG);
}

static void wait_reached(const char *dir, int *fd)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	CHECK(dfd >= 0);
	for (int i = 0; i < 2000; i++) {
		int rc = mcpx_gate_reached(dfd, fd);
		if (rc != 0) {
			CHECK_INT(rc, 1);
			close(dfd);
			return;
		}
		usleep(1000);
	}
	close(dfd);
	CHECK(!"the reader never reached the gate");
}

/* A plain reader: the gate opens only once it waits in open(2), and what
 * is released is all it reads. */
static void test_reached_and_released(const char *dir)
{
	char path[512], got[64] = "";
	int fd = -1, p[2];
	pid_t pid;

	CHECK_INT(mcpx_gate_create(dir, false, 0, 0), 0);
	CHECK_INT(mcpx_gate_create(dir, false, 0, 0), -EEXIST);
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK_INT(mcpx_gate_reached(dfd, &fd), 0);
	CHECK_INT(fd, -1);
	close(dfd);
	snprintf(path, sizeof(path), "%s/%s", dir, MCPX_GATE_NAME);
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		char buf[64];
		ssize_t n, off = 0;
		int g = open(path, O_RDONLY);

		while (g >= 0 && (n = read(g, buf + off, sizeof(buf) - 1 - (size_t)off)) > 0)
			off += n;
		(void)!write(p[1], buf, (size_t)off);
		_exit(g < 0);
	}
	close(p[1]);
	wait_reached(dir, &fd);
	CHECK_INT(mcpx_gate_unlink(dir), 0);
	CHECK_INT(mcpx_gate_release(&fd, "abc\n", 4), 0);
	CHECK_INT(fd, -1);
	CHECK_INT(read(p[0], got, sizeof(got) - 1), 4);
	CHECK_STR(got, "abc\n");
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A real bash held by BASH_ENV: the line lowers its limits and unsets
 * the variable before the script runs. */
static void test_bash(const char *dir)
{
	struct mcpx_rlimit rl[] = {{RLIMIT_CPU, {7, 8}}, {RLIMIT_AS, {512ull << 20, 512ull << 20}}};
	char line[160], out[256] = "", script[512];
	int fd = -1, p[2], st, len;
	ssize_t n, off = 0;
	pid_t pid;
	FILE *f;

	if (access("/usr/bin/bash", X_OK) != 0) {
		fprintf(stderr, "test_gate: no /usr/bin/bash, bash part skipped\n");
		return;
	}
	snprintf(script, sizeof(script), "%s/main.sh", dir);
	CHECK((f = fopen(script, "w")) != NULL);
	if (!f)
		return;
	fputs("echo \"$0 ${BASH_ENV-unset} $(ulimit -S -t)/$(ulimit -H -t) $(ulimit -v)\"\n", f);
	fclose(f);
	CHECK_INT(mcpx_gate_create(dir, false, 0, 0), 0);
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		char *argv[] = {"bash", "--noprofile", "--norc", "main.sh", NULL};
		char *envp[] = {"PATH=/usr/bin:/bin", MCPX_GATE_ENV, NULL};

		dup2(p[1], 1);
		if (chdir(dir) == 0)
			execve("/usr/bin/bash", argv, envp);
		_exit(127);
	}
	close(p[1]);
	wait_reached(dir, &fd);
	CHECK_INT(mcpx_gate_unlink(dir), 0);
	len = mcpx_gate_line(line, sizeof(line), rl, 2);
	CHECK(len > 0);
	CHECK_INT(mcpx_gate_release(&fd, line, (size_t)len), 0);
	while ((n = read(p[0], out + off, sizeof(out) - 1 - (size_t)off)) > 0)
		off += n;
	close(p[0]);
	CHECK_STR(out, "main.sh unset 7/8 524288\n");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(script);
}

/* A bash gone before its release: the write fails, it does not hang. */
static void test_gone(const char *dir)
{
	int fd = -1, st;
	pid_t pid;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, MCPX_GATE_NAME);
	CHECK_INT(mcpx_gate_create(dir, false, 0, 0), 0);
	pid = fork();
	if (pid == 0) {
		int g = open(path, O_RDONLY);
		pause();
		_exit(g < 0);
	}
	wait_reached(dir, &fd);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK_INT(mcpx_gate_release(&fd, "x\n", 2), -EPIPE);
	CHECK_INT(fd, -1);
	CHECK_INT(mcpx_gate_unlink(dir), 0);
}

int main(void)
{
	char dir[] = "/tmp/test_gate.XXXXXX";

	signal(SIGPIPE, SIG_IGN);
	test_line();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_reached_and_released(dir);
	test_bash(dir);
	test_gone(dir);
	rmdir(dir);
	CHECK_DONE();
}
