/*
 * test_forkserver.c - drives the fork server (the mcp-exec-zygote binary,
 * embedding /usr/bin/python3's libpython): a run forked from the zygote
 * enters its sandbox, gets its code and stdin, exits with its own status and
 * is reaped through the zygote; a child whose setup fails is reported
 * exactly as a cold spawn's failure; a child killed while still entering its
 * sandbox is reaped without hanging; a dead zygote turns into errors, never
 * into a hang; the zygote reaps every child it has that is not a run leader,
 * even one the run's filter let through CLONE_PARENT.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "forkserver.h"
#include "sandbox.h"
#include "warm.h"

#define PYTHON "/usr/bin/python3"

static const struct mcpx_limits limits = {
    .cpu_s = 20, .memory_mb = 1024, .max_procs = 64, .file_mb = 16, .open_files = 256};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static bool wait_ready(struct mcpx_forkserver *fs)
{
	long deadline = now_ms() + 60000;
	struct timespec ts = {0, 10000000};
	int r;

	while ((r = mcpx_forkserver_poll(fs)) == 0 && now_ms() < deadline)
		nanosleep(&ts, NULL);
	return r == 1;
}

/* Reads fd to EOF (it is O_NONBLOCK) within the deadline. */
static size_t read_all(int fd, char *buf, size_t cap, long deadline)
{
	size_t len = 0;

	while (now_ms() < deadline) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, buf + len, cap - 1 - len);
		if (n > 0) {
			len += (size_t)n;
			if (len >= cap - 1)
				break;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	buf[len] = '\0';
	return len;
}

/* A forked run; with channel, its end of a broker channel is fd 4, named
 * by MCPX_CHANNEL_FD, and carries bytes both ways. */
static void test_run(const struct mcpx_sandbox *sb, struct mcpx_forkserver *fs, bool channel)
{
	static const char code[] = "import os, sys\n"
	                           "fd = os.environ.get('MCPX_CHANNEL_FD')\n"
	                           "print('channel', fd, os.path.exists('/proc/self/fd/4'))\n"
	                           "if fd:\n"
	                           "    import socket\n"
	                           "    s = socket.socket(fileno=int(fd))\n"
	                           "    s.sendall(b'ping')\n"
	                           "    print('reply', s.recv(4).decode())\n"
	                           "st = open('/proc/self/status').read()\n"
	                           "print('filters', [l.split()[1] for l in st.splitlines() if "
	                           "l.startswith('Seccomp_filters:')][0])\n"
	                           "print('sid', os.getsid(0) == os.getpid())\n"
	                           "print('home', os.environ['HOME'] == os.getcwd())\n"
	                           "print('main', __name__, os.path.basename(__file__))\n"
	                           "print('flags', sys.flags.isolated, "
	                           "sys.flags.dont_write_bytecode, sys.flags.safe_path)\n"
	                           "print('exe', sys.executable)\n"
	                           "print('cpus', len(os.sched_getaffinity(0)))\n"
	                           "print('stdin', sys.stdin.read().strip())\n"
	                           "sys.exit(3)\n";
	struct mcpx_limits lim = limits;
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	char out[4096], hdr[64], marker = 1;
	struct rusage ru;
	size_t hlen;
	int status = -1;
	long deadline = now_ms() + 30000;

	lim.channel = channel;
	REQUIRE_INT(mcpx_forkserver_fork(fs, &lim, &err), 0);
	CHECK(mcpx_forkserver_pending(fs));
	REQUIRE_INT(mcpx_forkserver_take(fs, &proc, NULL, &err), 0);
	CHECK(!mcpx_forkserver_pending(fs));
	CHECK(proc.pid > 0 && proc.pidfd >= 0 && proc.workdir[0] == '/');
	CHECK(channel ? proc.channel_fd >= 0 : proc.channel_fd == -1);

	/* The child reports ready (one NUL byte) once it is sandboxed. */
	{
		struct pollfd p = {proc.stdout_fd, POLLIN, 0};

		CHECK(poll(&p, 1, 30000) == 1);
		CHECK(read(proc.stdout_fd, &marker, 1) == 1);
		CHECK_INT(marker, 0);
	}
	CHECK_INT(mcpx_sandbox_write_main(sb, &proc, code, strlen(code), &err), 0);
	hlen = mcpx_warm_header(hdr, sizeof(hdr), strlen(code), 10);
	CHECK_INT(hlen, MCPX_WARM_HEADER_LEN);
	CHECK(write(proc.stdin_fd, hdr, hlen) == (ssize_t)hlen);
	CHECK(write(proc.stdin_fd, code, strlen(code)) == (ssize_t)strlen(code));
	CHECK(write(proc.stdin_fd, "from-stdin\n", 11) == 11);
	close(proc.stdin_fd);
	proc.stdin_fd = -1;
	if (channel) {
		struct pollfd p = {proc.channel_fd, POLLIN, 0};
		char ping[8] = "";

		CHECK(poll(&p, 1, 30000) == 1);
		CHECK_INT(read(proc.channel_fd, ping, 4), 4);
		CHECK(memcmp(ping, "ping", 4) == 0);
		CHECK_INT(write(proc.channel_fd, "pong", 4), 4);
	}

	read_all(proc.stdout_fd, out, sizeof(out), deadline);
	/* Holding the whole code, the child says so before the program runs. */
	CHECK_INT(out[0], MCPX_WARM_TAKEN);
	printf("forked run said:\n%s", out + 1);
	CHECK(strstr(out + 1, channel ? "channel 4 True\n" : "channel None False\n") != NULL);
	if (channel)
		CHECK(strstr(out + 1, "reply pong\n") != NULL);
	if (sb->layers.seccomp)
		CHECK(strstr(out, "filters 2\n") != NULL);
	CHECK(strstr(out, "sid True\n") != NULL);
	CHECK(strstr(out, "home True\n") != NULL);
	CHECK(strstr(out, "main __main__ main.py\n") != NULL);
	/* The interpreter starts as a cold run's `python3 -I -u -B`. */
	CHECK(strstr(out, "flags 1 1 True\n") != NULL);
	CHECK(strstr(out, "exe " PYTHON "\n") != NULL);
	/* Pinned to one CPU while it prepared, the run has them all back. */
	{
		cpu_set_t mine;
		char want[32];

		CHECK(sched_getaffinity(0, sizeof(mine), &mine) == 0);
		snprintf(want, sizeof(want), "cpus %d\n", CPU_COUNT(&mine));
		CHECK(strstr(out, want) != NULL);
	}
	CHECK(strstr(out, "stdin from-stdin\n") != NULL);

	CHECK_INT(mcpx_sandbox_reap(&proc, &status, &ru), 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	CHECK(ru.ru_maxrss > 0);
	mcpx_sandbox_cleanup(&proc);
}

/* A setup step that fails in a forked child is reported as the same step
 * failing in a cold child: a descriptor limit below the fds the setup holds
 * makes the Landlock step (which opens its rules' paths) fail with EMFILE. */
static void test_setup_failure(const struct mcpx_sandbox *sb, struct mcpx_forkserver *fs)
{
	static const struct mcpx_limits tight = {
	    .cpu_s = 20, .memory_mb = 1024, .max_procs = 64, .file_mb = 16, .open_files = 2};
	struct mcpx_sandbox_proc proc;
	struct mcpx_err cold = {{0}}, forked = {{0}};
	bool setup_failed = false;

	if (!sb->layers.landlock)
		return;
	CHECK(mcpx_sandbox_spawn(sb, &tight, "pass", 4, &proc, &cold) < 0);
	CHECK_INT(mcpx_forkserver_fork(fs, &tight, &forked), 0);
	CHECK(mcpx_forkserver_take(fs, &proc, &setup_failed, &forked) < 0);
	printf("cold: %s\nforked: %s\n", cold.msg, forked.msg);
	CHECK(setup_failed);
	CHECK(strcmp(cold.msg, "sandbox setup failed at step landlock: Too many open files") == 0);
	CHECK(strcmp(forked.msg, cold.msg) == 0);
	CHECK(!mcpx_forkserver_pending(fs));
}

/* A child killed before it reached setsid: kill must reach it directly, and
 * reap must not wait forever. */
static void test_kill_early(struct mcpx_forkserver *fs)
{
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	struct rusage ru;
	char workdir[4096];
	struct stat st;
	int status = 0;

	CHECK_INT(mcpx_forkserver_fork(fs, &limits, &err), 0);
	CHECK_INT(mcpx_forkserver_take(fs, &proc, NULL, &err), 0);
	snprintf(workdir, sizeof(workdir), "%s", proc.workdir);
	mcpx_sandbox_kill(&proc);
	CHECK_INT(mcpx_sandbox_reap(&proc, &status, &ru), 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	mcpx_sandbox_cleanup(&proc);
	CHECK(stat(workdir, &st) < 0 && errno == ENOENT);
}

/* The one child of ours, once every run is gone: the zygote. */
static pid_t zygote_pid(void)
{
	char path[64], buf[256];
	pid_t zyg = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f))
		zyg = (pid_t)strtol(buf, NULL, 10);
	if (f)
		fclose(f);
	return zyg;
}

/* The zygote's children as listed by the kernel ("" when it has none). */
static void children_of(pid_t pid, char *buf, size_t len)
{
	char path[80];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	f = fopen(path, "r");
	if (f && !fgets(buf, (int)len, f))
		buf[0] = '\0';
	if (f)
		fclose(f);
}

/* Runs code in a forked child and reaps it (the code gets no stdin). */
static void run_forked(const struct mcpx_sandbox *sb, struct mcpx_forkserver *fs, const char *code,
                       char *out, size_t outlen)
{
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	char hdr[64], marker = 1;
	struct rusage ru;
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), strlen(code), 10);
	struct pollfd p;
	int status;

	out[0] = '\0';
	REQUIRE_INT(mcpx_forkserver_fork(fs, &limits, &err), 0);
	REQUIRE_INT(mcpx_forkserver_take(fs, &proc, NULL, &err), 0);
	p.fd = proc.stdout_fd;
	p.events = POLLIN;
	CHECK(poll(&p, 1, 30000) == 1 && read(proc.stdout_fd, &marker, 1) == 1 && marker == 0);
	CHECK_INT(mcpx_sandbox_write_main(sb, &proc, code, strlen(code), &err), 0);
	CHECK(write(proc.stdin_fd, hdr, hlen) == (ssize_t)hlen);
	CHECK(write(proc.stdin_fd, code, strlen(code)) == (ssize_t)strlen(code));
	close(proc.stdin_fd);
	proc.stdin_fd = -1;
	read_all(proc.stdout_fd, out, outlen, now_ms() + 30000);
	/* The child's "taken" byte comes before the program's output. */
	CHECK_INT(out[0], MCPX_WARM_TAKEN);
	if (out[0] == MCPX_WARM_TAKEN)
		memmove(out, out + 1, strlen(out));
	CHECK_INT(mcpx_sandbox_reap(&proc, &status, &ru), 0);
	mcpx_sandbox_cleanup(&proc);
}

/* Filters that let everything through (CLONE_PARENT included) stand in for
 * a broken or bypassed rule: a run then makes two children of the zygote,
 * one that exits at once and one that sleeps. After the run is reaped the
 * zygote must have no child left: both were killed and reaped by it. */
static void test_reaps_strays(const struct mcpx_sandbox *sb, const char *preload)
{
	static struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct mcpx_sandbox *open_sb = malloc(sizeof(*open_sb));
	struct mcpx_forkserver *fs = NULL;
	struct mcpx_err err = {{0}};
	char code[1024], out[4096], kids[256];
	pid_t zyg;

	printf("the zygote reaps children a run made with CLONE_PARENT\n");
	memcpy(open_sb, sb, sizeof(*open_sb));
	open_sb->filter.len = 1;
	open_sb->filter.filter = &allow;
	open_sb->zygote_filter.len = 1;
	open_sb->zygote_filter.filter = &allow;
	CHECK_INT(mcpx_forkserver_start(open_sb, preload, &limits, &fs, &err), 0);
	CHECK(wait_ready(fs));
	zyg = zygote_pid();
	CHECK(zyg > 0);
	snprintf(code, sizeof(code),
	         "import ctypes, os, time\n"
	         "libc = ctypes.CDLL(None, use_errno=True)\n"
	         "made = []\n"
	         "for sleep in (0, 60):\n"
	         "    r = libc.syscall(ctypes.c_long(%ld), ctypes.c_long(0x8011), 0, 0, 0, 0)\n"
	         "    if r == 0:\n"
	         "        time.sleep(sleep)\n"
	         "        os._exit(0)\n"
	         "    made.append(r)\n"
	         "ppids = [open('/proc/%%d/stat' %% p).read().rsplit(')', 1)[1].split()[1] for p "
	         "in made]\n"
	         "print('made', len([p for p in made if p > 0]), 'zygote-children', "
	         "ppids.count(str(os.getppid())))\n",
	         (long)SYS_clone);
	run_forked(open_sb, fs, code, out, sizeof(out));
	printf("  run said: %s", out);
	CHECK(strstr(out, "made 2 zygote-children 2\n") != NULL);
	children_of(zyg, kids, sizeof(kids));
	printf("  zygote's children after the reap: \"%s\"\n", kids);
	CHECK_STR(kids, "");
	mcpx_forkserver_stop(fs);
	free(open_sb);
}

/* A ready fork server: runs with and without a channel, setup failures,
 * an early kill, CLONE_PARENT refused, a pending fork cleaned up by stop. */
static void test_ready(const struct mcpx_sandbox *sb, const char *preload)
{
	struct mcpx_forkserver *fs = NULL;
	struct mcpx_err err = {{0}};
	int rc;

	REQUIRE_INT(mcpx_forkserver_start(sb, preload, &limits, &fs, &err), 0);
	REQUIRE(fs != NULL);
	/* Before the zygote is ready nothing can be forked. */
	if (mcpx_forkserver_poll(fs) == 0)
		CHECK_INT(mcpx_forkserver_fork(fs, &limits, &err), -EAGAIN);
	if (!wait_ready(fs)) {
		CHECK(!"the zygote became ready");
		mcpx_forkserver_stop(fs);
		return;
	}
	/* The start-up probe holds in a forked child too. */
	rc = mcpx_forkserver_selftest(fs, &err);
	printf("fork server self-test: %s\n", rc ? err.msg : "passed");
	CHECK_INT(rc, 0);
	test_run(sb, fs, false);
	test_run(sb, fs, true);
	test_setup_failure(sb, fs);
	test_kill_early(fs);
	{
		char code[1024], out[4096];

		/* With the real filters CLONE_PARENT is refused in a forked run. */
		snprintf(code, sizeof(code),
		         "import ctypes\n"
		         "libc = ctypes.CDLL(None, use_errno=True)\n"
		         "r = libc.syscall(ctypes.c_long(%ld), ctypes.c_long(0x8011), 0, 0, 0, 0)\n"
		         "print('clone_parent', r, ctypes.get_errno())\n",
		         (long)SYS_clone);
		run_forked(sb, fs, code, out, sizeof(out));
		printf("CLONE_PARENT in a forked run: %s", out);
		if (sb->layers.seccomp)
			CHECK_STR(out, "clone_parent -1 1\n");
	}

	/* A pending fork is cleaned up by stop. */
	CHECK_INT(mcpx_forkserver_fork(fs, &limits, &err), 0);
	CHECK_INT(mcpx_forkserver_fork(fs, &limits, &err), -EBUSY);
	mcpx_forkserver_stop(fs);
}

/* A zygote that died: errors, not hangs. */
static void test_zygote_died(const struct mcpx_sandbox *sb, const char *preload)
{
	struct mcpx_forkserver *fs = NULL;
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	int rc;

	REQUIRE_INT(mcpx_forkserver_start(sb, preload, &limits, &fs, &err), 0);
	if (!wait_ready(fs)) {
		CHECK(!"the zygote became ready");
		mcpx_forkserver_stop(fs);
		return;
	}
	{
		pid_t zyg = zygote_pid();

		CHECK(zyg > 0);
		if (zyg > 0)
			kill(zyg, SIGKILL);
	}
	{
		struct timespec ts = {0, 200000000};

		nanosleep(&ts, NULL);
	}
	rc = mcpx_forkserver_fork(fs, &limits, &err);
	if (rc == 0)
		rc = mcpx_forkserver_take(fs, &proc, NULL, &err);
	CHECK(rc < 0);
	printf("after the zygote died: %s\n", err.msg);
	CHECK_INT(mcpx_forkserver_poll(fs), -EPIPE);
	mcpx_forkserver_stop(fs);
}

int main(void)
{
	struct mcpx_sandbox *sb = malloc(sizeof(*sb));
	struct mcpx_err err = {{0}};
	char base[] = "/tmp/mcpx-fstest-XXXXXX";
	const char *preload = "json";
	int rc;

	if (!mkdtemp(base) || chmod(base, 0711) < 0) {
		perror("mkdtemp");
		return 1;
	}
	rc = mcpx_sandbox_init(sb, PYTHON, base, &err);
	if (rc) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	rc = mcpx_sandbox_use_zygote(sb, MCPX_TEST_ZYGOTE, &err);
	if (rc) {
		fprintf(stderr, "zygote: %s\n", err.msg);
		return 1;
	}

	test_ready(sb, preload);
	test_reaps_strays(sb, preload);
	test_zygote_died(sb, preload);
	mcpx_sandbox_free(sb);
	free(sb);
	rmdir(base);
	CHECK_DONE();
}
