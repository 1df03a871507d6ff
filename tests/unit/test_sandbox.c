/*
 * test_sandbox.c - drives the real sandbox API with /usr/bin/python3: output,
 * exit codes, the scrubbed environment, workdir removal, and escape probes
 * that print what they got. The Python probes live in tests/probes/.
 *
 * Expectations follow the layers the kernel offers (sb.layers): where a layer
 * is absent, the probe result is reported as SKIP instead of failing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sandbox.h"

#define PYTHON "/usr/bin/python3"
#define SECRET_NAME "MCPX_TEST_SECRET_TOKEN"
#define SECRET_VALUE "hunter2-must-not-leak"

static char probes_dir[PATH_MAX];
/* The language run_code starts its code in (test_languages switches it). */
static enum mcpx_lang run_lang = MCPX_LANG_PYTHON;
static char base_dir[PATH_MAX];

struct run {
	int spawn_rc;
	struct mcpx_err err;
	int status;
	struct rusage ru;
	pid_t pid;
	bool timed_out;
	char workdir[4096];
	char out[1 << 16];
	size_t out_len;
	char errout[1 << 16];
	size_t err_len;
};

static const struct mcpx_limits default_limits = {
    .cpu_s = 20, .memory_mb = 1024, .max_procs = 64, .file_mb = 16, .open_files = 256};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static char *load_probe(const char *name, size_t *len)
{
	char path[PATH_MAX + 64];
	char *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", probes_dir, name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open probe %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void drain(int *fd, char *buf, size_t *len, size_t cap, bool *eof)
{
	char scratch[4096];
	ssize_t r;

	for (;;) {
		if (*len < cap - 1)
			r = read(*fd, buf + *len, cap - 1 - *len);
		else
			r = read(*fd, scratch, sizeof(scratch));
		if (r > 0) {
			if (*len < cap - 1)
				*len += (size_t)r;
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(*fd);
			*fd = -1;
			*eof = true;
		}
		buf[*len] = '\0';
		return;
	}
}

/* Spawns code, feeds input, collects output until the leader exited and the
 * pipes reached EOF (or 300 ms after the exit, when a background process
 * keeps them open), kills on timeout, then reaps and cleans up like the
 * executor will. */
static void run_code(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim, const char *code,
                     size_t len, const char *input, long timeout_ms, struct run *r)
{
	struct mcpx_sandbox_proc proc;
	bool out_eof = false, err_eof = false, exited = false;
	long deadline = now_ms() + timeout_ms, exit_at = 0;

	memset(r, 0, sizeof(*r));
	r->spawn_rc = mcpx_sandbox_spawn_lang(sb, lim, run_lang, code, len, NULL, &proc, &r->err);
	if (r->spawn_rc)
		return;
	r->pid = proc.pid;
	snprintf(r->workdir, sizeof(r->workdir), "%s", proc.workdir);
	if (input && input[0])
		CHECK(write(proc.stdin_fd, input, strlen(input)) == (ssize_t)strlen(input));
	close(proc.stdin_fd);
	proc.stdin_fd = -1;

	for (;;) {
		struct pollfd pfd[3] = {{proc.stdout_fd, POLLIN, 0},
		                        {proc.stderr_fd, POLLIN, 0},
		                        {exited ? -1 : proc.pidfd, POLLIN, 0}};
		long now = now_ms();

		if (exited && out_eof && err_eof)
			break;
		if (exited && now - exit_at > 300)
			break;
		if (now >= deadline) {
			r->timed_out = true;
			mcpx_sandbox_kill(&proc);
			break;
		}
		if (poll(pfd, 3, 50) < 0)
			continue;
		if (pfd[0].revents)
			drain(&proc.stdout_fd, r->out, &r->out_len, sizeof(r->out), &out_eof);
		if (pfd[1].revents)
			drain(&proc.stderr_fd, r->errout, &r->err_len, sizeof(r->errout), &err_eof);
		if (pfd[2].revents & POLLIN) {
			exited = true;
			exit_at = now_ms();
		}
	}
	CHECK_INT(mcpx_sandbox_reap(&proc, &r->status, &r->ru), 0);
	mcpx_sandbox_cleanup(&proc);
	CHECK(proc.stdout_fd == -1 && proc.stderr_fd == -1 && proc.pidfd == -1);
}

static void run_probe(const struct mcpx_sandbox *sb, const struct mcpx_limits *lim,
                      const char *probe, const char *input, long timeout_ms, struct run *r)
{
	size_t len;
	char *code = load_probe(probe, &len);

	run_code(sb, lim, code, len, input, timeout_ms, r);
	free(code);
	if (r->spawn_rc)
		fprintf(stderr, "%s: spawn failed: %s\n", probe, r->err.msg);
}

/* The value of "key=value" in the run's stdout, or "(missing)". Rotates
 * through a few buffers so one printf can show several values. */
static const char *val(const struct run *r, const char *key)
{
	static char bufs[8][512];
	static unsigned next;
	char *v = bufs[next++ % 8];
	size_t klen = strlen(key);
	const char *p = r->out;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);

		if (l > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t n =
			    l - klen - 1 < sizeof(bufs[0]) - 1 ? l - klen - 1 : sizeof(bufs[0]) - 1;

			memcpy(v, p + klen + 1, n);
			v[n] = '\0';
			return v;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return "(missing)";
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Prints what the probe got; checks it when the layer is active. */
static void expect_probe(const struct run *r, const char *name, const char *want, bool active,
                         const char *layer)
{
	const char *got = val(r, name);

	if (!active) {
		printf("  %-22s %-28s SKIP (%s not active)\n", name, got, layer);
		return;
	}
	printf("  %-22s %-28s want %s [%s]\n", name, got, want, layer);
	if (!starts_with(got, want)) {
		fprintf(stderr, "probe %s: got %s, want %s (layer %s)\n", name, got, want, layer);
		check_failures++;
	}
}

static bool path_exists(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0;
}

/* True if some process is still in process group pgid. */
static bool group_alive(pid_t pgid)
{
	struct dirent *de;
	bool found = false;
	DIR *d = opendir("/proc");

	while (d && (de = readdir(d))) {
		char path[300], buf[512], *p;
		long pgrp;
		char state;
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
		    sscanf(p + 1, " %c %*d %ld", &state, &pgrp) == 2 && pgrp == pgid) {
			fprintf(stderr, "  still alive in group %d: %s state %c\n", (int)pgid,
			        de->d_name, state);
			found = true;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* The self-test must notice a layer that claims to be active but is not:
 * an allow-everything filter posing as seccomp, Landlock with no ruleset. */
static void test_selftest_detects(const struct mcpx_sandbox *sb)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct mcpx_sandbox *fake = malloc(sizeof(*fake));
	struct mcpx_err err = {{0}};
	int rc;

	printf("self-test detects broken layers\n");
	if (sb->layers.seccomp) {
		memcpy(fake, sb, sizeof(*fake));
		fake->filter.len = 1;
		fake->filter.filter = &allow;
		rc = mcpx_sandbox_selftest(fake, &err);
		printf("  allow-all filter as seccomp: rc=%d %s\n", rc, err.msg);
		CHECK_INT(rc, -EPERM);
		CHECK(strstr(err.msg, "seccomp") != NULL);
	} else {
		printf("  seccomp: SKIP (not active)\n");
	}
	if (sb->layers.seccomp) {
		/* Filters that deny sockets but lack, in turn, the SysV IPC, the
		 * CLONE_PARENT and the scheduling rules: each gap is named. */
		static const char *const gap[] = {"seccomp-sysv-ipc", "seccomp-clone-parent",
						   "seccomp-sched"};
		struct sock_filter prog[16];
		int v;

		for (v = 0; v < 3; v++) {
			unsigned short n = 0;

			prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
			prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
								 SYS_socket, 0, 1);
			prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
								 SECCOMP_RET_ERRNO | EPERM);
			if (v >= 1) {
				prog[n++] = (struct sock_filter)BPF_JUMP(
				    BPF_JMP | BPF_JEQ | BPF_K, SYS_shmget, 0, 1);
				prog[n++] = (struct sock_filter)BPF_STMT(
				    BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
			}
			if (v >= 2) {
				/* clone's flags are the low half of args[0]. */
				prog[n++] = (struct sock_filter)BPF_JUMP(
				    BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3);
				prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 16);
				prog[n++] = (struct sock_filter)BPF_JUMP(
				    BPF_JMP | BPF_JSET | BPF_K, CLONE_PARENT, 0, 1);
				prog[n++] = (struct sock_filter)BPF_STMT(
				    BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
			}
			prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
			memcpy(fake, sb, sizeof(*fake));
			fake->filter.len = n;
			fake->filter.filter = prog;
			rc = mcpx_sandbox_selftest(fake, &err);
			printf("  filter without the %s rule: rc=%d %s\n", gap[v], rc, err.msg);
			CHECK_INT(rc, -EPERM);
			CHECK(strstr(err.msg, gap[v]) != NULL);
		}
	}
	if (sb->layers.landlock) {
		memcpy(fake, sb, sizeof(*fake));
		fake->layers.landlock_abi = 0; /* claimed active, never applied */
		rc = mcpx_sandbox_selftest(fake, &err);
		printf("  landlock never applied: rc=%d %s\n", rc, err.msg);
		CHECK_INT(rc, -EPERM);
		CHECK(strstr(err.msg, "landlock") != NULL);
	} else {
		printf("  landlock: SKIP (not active)\n");
	}
	free(fake);
}

static void test_basic(const struct mcpx_sandbox *sb)
{
	static const char code[] = "import sys\n"
	                           "data = sys.stdin.read()\n"
	                           "print('out:' + data)\n"
	                           "print('err-line', file=sys.stderr)\n"
	                           "sys.exit(3)\n";
	struct run *r = malloc(sizeof(*r));

	printf("basic run\n");
	run_code(sb, &default_limits, code, sizeof(code) - 1, "hello-stdin", 20000, r);
	CHECK_INT(r->spawn_rc, 0);
	CHECK_STR(r->out, "out:hello-stdin\n");
	CHECK_STR(r->errout, "err-line\n");
	CHECK(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 3);
	printf("  stdout=%s  exit=%d workdir=%s removed=%d\n", r->out, WEXITSTATUS(r->status),
	       r->workdir, !path_exists(r->workdir));
	CHECK(r->workdir[0] == '/');
	CHECK(!path_exists(r->workdir));
	free(r);
}

/* The server's child comes from vfork and shares the server's memory until
 * its execve (sandbox.c, fork_child): whatever it sets up must stay its
 * own. After runs, the server's dispositions, signal mask and credentials,
 * and a sibling thread's credentials, are what they were. */
static int sibling_pipe[2] = {-1, -1};

static void *sibling(void *arg)
{
	char c;

	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	while (read(sibling_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void on_usr2(int sig)
{
	(void)sig;
}

static void uid_line(pid_t tid, char *out, size_t len)
{
	char path[64], line[256];
	FILE *f;

	snprintf(out, len, "?");
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Uid:", 4) == 0 || strncmp(line, "Gid:", 4) == 0)
			snprintf(out + strlen(out), len - strlen(out), "%s", line);
	fclose(f);
}

static void test_server_untouched(const struct mcpx_sandbox *sb)
{
	static const char code[] = "print('ran')\n";
	struct sigaction usr2 = {0}, got;
	struct run *r = malloc(sizeof(*r));
	sigset_t mask;
	pthread_t th;
	pid_t tid = 0;
	char before[256], after[256], tbefore[256], tafter[256];
	uid_t uid = getuid(), euid = geteuid();

	printf("the server is untouched by its runs' setup\n");
	usr2.sa_handler = on_usr2;
	sigemptyset(&usr2.sa_mask);
	CHECK(sigaction(SIGUSR2, &usr2, NULL) == 0);
	CHECK(pipe(sibling_pipe) == 0);
	CHECK(pthread_create(&th, NULL, sibling, &tid) == 0);
	while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST))
		sched_yield();
	uid_line((pid_t)syscall(SYS_gettid), before, sizeof(before));
	uid_line(tid, tbefore, sizeof(tbefore));
	for (int i = 0; i < 3; i++) {
		run_code(sb, &default_limits, code, sizeof(code) - 1, "", 20000, r);
		CHECK_INT(r->spawn_rc, 0);
		CHECK_STR(r->out, "ran\n");
	}
	CHECK(sigaction(SIGUSR2, NULL, &got) == 0 && got.sa_handler == on_usr2);
	CHECK(sigaction(SIGTERM, NULL, &got) == 0 && got.sa_handler == SIG_IGN);
	CHECK(pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0 && sigismember(&mask, SIGUSR1) &&
	      !sigismember(&mask, SIGUSR2));
	CHECK(getuid() == uid && geteuid() == euid);
	uid_line((pid_t)syscall(SYS_gettid), after, sizeof(after));
	uid_line(tid, tafter, sizeof(tafter));
	CHECK_STR(after, before);
	CHECK_STR(tafter, tbefore);
	CHECK(write(sibling_pipe[1], "x", 1) == 1);
	pthread_join(th, NULL);
	close(sibling_pipe[0]);
	close(sibling_pipe[1]);
	signal(SIGUSR2, SIG_DFL);
	free(r);
}

/* With lim->channel the run finds its end of a socketpair at fd 4, named
 * by MCPX_CHANNEL_FD; without it there is neither the variable nor fd 4. */
static void test_channel(const struct mcpx_sandbox *sb)
{
	static const char code[] = "import os, socket\n"
				   "fd = os.environ.get('MCPX_CHANNEL_FD')\n"
				   "print('env=%s' % fd)\n"
				   "try:\n"
				   "    os.fstat(4)\n"
				   "    print('fd4=open')\n"
				   "except OSError:\n"
				   "    print('fd4=closed')\n"
				   "if fd:\n"
				   "    s = socket.socket(fileno=int(fd))\n"
				   "    s.sendall(b'ping')\n"
				   "    print('reply=' + s.recv(16).decode())\n";
	struct mcpx_limits lim = default_limits;
	struct mcpx_sandbox_proc proc;
	struct run *r = malloc(sizeof(*r));
	struct pollfd pfd;
	char buf[16] = "";
	ssize_t n = -1;
	bool eof = false;

	printf("broker channel\n");
	run_code(sb, &default_limits, code, sizeof(code) - 1, "", 20000, r);
	CHECK_STR(val(r, "env"), "None");
	CHECK_STR(val(r, "fd4"), "closed");

	lim.channel = true;
	CHECK_INT(mcpx_sandbox_spawn(sb, &lim, code, sizeof(code) - 1, &proc, &r->err), 0);
	CHECK(proc.channel_fd >= 0);
	CHECK(fcntl(proc.channel_fd, F_GETFL) & O_NONBLOCK);
	CHECK(fcntl(proc.channel_fd, F_GETFD) & FD_CLOEXEC);
	pfd.fd = proc.channel_fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 20000) == 1)
		n = read(proc.channel_fd, buf, 4);
	CHECK_INT(n, 4);
	CHECK(memcmp(buf, "ping", 4) == 0);
	CHECK_INT(write(proc.channel_fd, "pong", 4), 4);
	memset(r, 0, sizeof(*r));
	while (!eof) {
		pfd.fd = proc.stdout_fd;
		if (poll(&pfd, 1, 20000) != 1)
			break;
		drain(&proc.stdout_fd, r->out, &r->out_len, sizeof(r->out), &eof);
	}
	CHECK_STR(val(r, "env"), "4");
	CHECK_STR(val(r, "fd4"), "open");
	CHECK_STR(val(r, "reply"), "pong");
	CHECK_INT(mcpx_sandbox_reap(&proc, &r->status, NULL), 0);
	mcpx_sandbox_cleanup(&proc);
	CHECK_INT(proc.channel_fd, -1);
	free(r);
}

static void test_env(const struct mcpx_sandbox *sb)
{
	static const char code[] =
	    "import os\n"
	    "for k, v in sorted(os.environ.items()):\n"
	    "    print('%s=%s' % (k, v))\n"
	    "print('uid=%d' % os.getuid())\n"
	    "print('groups=%d' % len(os.getgroups()))\n"
	    "print('cwd=' + os.getcwd())\n"
	    "import resource as r, signal\n"
	    "print('fds=' + ','.join(sorted(os.listdir('/proc/self/fd'), key=int)))\n"
	    "print('oom=' + open('/proc/self/oom_score_adj').read().strip())\n"
	    "print('sigterm_default=%d' % (signal.getsignal(signal.SIGTERM) == "
	    "signal.SIG_DFL))\n"
	    /* From the calls themselves, not /proc/self/status: gVisor's has
	     * no NoNewPrivs or SigBlk line. */
	    "import ctypes\n"
	    "libc = ctypes.CDLL(None)\n"
	    "print('NoNewPrivs=%d' % libc.prctl(39, 0, 0, 0, 0))\n"
	    "print('Seccomp=%d' % libc.prctl(21, 0, 0, 0, 0))\n"
	    "print('SigBlk=%d' % len(signal.pthread_sigmask(signal.SIG_BLOCK, [])))\n"
	    "for n in ('CORE', 'CPU', 'AS', 'FSIZE', 'NOFILE', 'NPROC', 'MSGQUEUE', "
	    "'MEMLOCK'):\n"
	    "    print('rlimit_%s=%d,%d' % ((n,) + r.getrlimit(getattr(r, 'RLIMIT_' + "
	    "n))))\n";
	struct run *r = malloc(sizeof(*r));
	char want[16384], uid[32];

	printf("environment\n");
	run_code(sb, &default_limits, code, sizeof(code) - 1, NULL, 20000, r);
	CHECK_INT(r->spawn_rc, 0);
	snprintf(want, sizeof(want),
	         "HOME=%s\nLANG=C.UTF-8\nMALLOC_ARENA_MAX=2\nMKL_NUM_THREADS=1\n"
	         "MPLBACKEND=Agg\nMPLCONFIGDIR=%s\nOMP_NUM_THREADS=1\n"
	         "OPENBLAS_NUM_THREADS=1\nPATH=/usr/bin:/bin\nPYTHONIOENCODING=utf-8\n"
	         "TMPDIR=%s\n",
	         r->workdir, r->workdir, r->workdir);
	CHECK(starts_with(r->out, want));
	CHECK(!strstr(r->out, SECRET_NAME) && !strstr(r->out, SECRET_VALUE));
	CHECK_STR(val(r, "cwd"), r->workdir);
	/* fd 3 is the directory listdir itself opened: nothing leaked. */
	CHECK_STR(val(r, "fds"), "0,1,2,3");
	CHECK_STR(val(r, "oom"), "1000");
	CHECK_STR(val(r, "sigterm_default"), "1");
	CHECK_STR(val(r, "SigBlk"), "0");
	CHECK_STR(val(r, "NoNewPrivs"), "1");
	CHECK_STR(val(r, "Seccomp"), sb->layers.seccomp ? "2" : "0");
	CHECK_STR(val(r, "rlimit_CORE"), "0,0");
	CHECK_STR(val(r, "rlimit_CPU"), "20,21");
	CHECK_STR(val(r, "rlimit_AS"), "1073741824,1073741824");
	CHECK_STR(val(r, "rlimit_FSIZE"), "16777216,16777216");
	CHECK_STR(val(r, "rlimit_NOFILE"), "256,256");
	/* gVisor refuses to set it (sandbox.c); seccomp denies mq_* there. */
	if (sb->layers.msgqueue_limit)
		CHECK_STR(val(r, "rlimit_MSGQUEUE"), "0,0");
	CHECK_STR(val(r, "rlimit_MEMLOCK"), "0,0");
	CHECK(atoi(val(r, "rlimit_NPROC")) >= 64);
	printf("%s  secret visible: %s\n", r->out, strstr(r->out, SECRET_VALUE) ? "YES" : "no");
	if (sb->layers.uid_drop) {
		snprintf(uid, sizeof(uid), "%d", MCPX_SANDBOX_UID);
		CHECK_STR(val(r, "uid"), uid);
		CHECK_STR(val(r, "groups"), "0");
	}
	free(r);
}

/* The child can only lower limits: a limit above the server's own hard
 * limit is capped to it (checked in a forked process, so the test's own
 * limits stay). */
static void test_rlimit_caps(const struct mcpx_sandbox *sb)
{
	struct mcpx_limits lim = default_limits;
	struct mcpx_rlimit rl[MCPX_MAX_RLIMITS];
	int status = -1;
	pid_t pid;

	printf("rlimits are capped at the server's hard limits\n");
	pid = fork();
	if (pid == 0) {
		struct rlimit low = {100, 100};
		size_t n, i;
		int ok = 0;

		if (setrlimit(RLIMIT_NOFILE, &low) < 0)
			_exit(2);
		lim.open_files = 256;
		n = mcpx_sandbox_rlimits(sb, &lim, rl);
		for (i = 0; i < n; i++)
			if (rl[i].resource == RLIMIT_NOFILE)
				ok = rl[i].lim.rlim_cur == 100 && rl[i].lim.rlim_max == 100;
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	printf("  RLIMIT_NOFILE 256 under a hard limit of 100: %s\n",
	       WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "capped to 100" : "NOT capped");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_spawn_failure(const struct mcpx_sandbox *sb)
{
	struct mcpx_sandbox *bad = malloc(sizeof(*bad));
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	int rc, before = 0, after = 0;
	struct dirent *de;
	DIR *d;

	printf("spawn failure is reported with its step\n");
	memcpy(bad, sb, sizeof(*bad));
	snprintf(bad->python, sizeof(bad->python), "/nonexistent/python3");
	d = opendir(base_dir);
	while (d && (de = readdir(d)))
		before++;
	if (d)
		closedir(d);
	rc = mcpx_sandbox_spawn(bad, &default_limits, "print(1)", 8, &proc, &err);
	printf("  rc=%d err=\"%s\"\n", rc, err.msg);
	CHECK_INT(rc, -ENOENT);
	CHECK(strstr(err.msg, "step execve") != NULL);
	CHECK_INT(proc.pid, -1);
	d = opendir(base_dir);
	while (d && (de = readdir(d)))
		after++;
	if (d)
		closedir(d);
	CHECK_INT(after, before); /* the workdir was removed again */
	free(bad);
}

static void check_escape(const struct mcpx_sandbox *sb, const struct run *r, bool seccomp)
{
	const struct mcpx_sandbox_layers *l = &sb->layers;
	bool ll = l->landlock;

	CHECK_INT(r->spawn_rc, 0);
	CHECK_STR(val(r, "done"), "1");
	expect_probe(r, "sock_inet", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sock_inet6", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sock_netlink", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sock_unix", "ok", true, "allowed");
	expect_probe(r, "socketpair_unix", "ok", true, "allowed");
	expect_probe(r, "tcp_bind", seccomp ? "errno:1:" : "errno:13:", seccomp || l->landlock_net,
	             seccomp ? "seccomp" : "landlock-net");
	expect_probe(r, "tcp_connect",
	             seccomp ? "errno:1:" : "errno:13:", seccomp || l->landlock_net,
	             seccomp ? "seccomp" : "landlock-net");
	expect_probe(r, "write_tmp", "errno:13:", ll, "landlock");
	expect_probe(r, "mkdir_tmp", "errno:13:", ll, "landlock");
	expect_probe(r, "write_dev_shm", "ok", true, "allowed");
	expect_probe(r, "write_workdir", "ok", true, "allowed");
	/* errno:13 where dumpable or the uid keeps the file closed; under
	 * gVisor, which serves it to all, errno:0 (only zeros: sandbox.c). */
	expect_probe(r, "read_server_environ",
		     sb->runtime == MCPX_RUNTIME_GVISOR ? "errno:0:" : "errno:13:",
		     l->dumpable_off || l->uid_drop || ll || l->environ_hidden,
		     "dumpable/uid/landlock/zeroed");
	expect_probe(r, "kill_server", "errno:1:", seccomp || l->landlock_scope || l->uid_drop,
	             "seccomp/scope/uid");
	expect_probe(r, "kill_server_group", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "kill_all", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "kill_all_raw32", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "setsid", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "setpgid", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "ptrace_attach", "errno:1:", seccomp || l->uid_drop, "seccomp/uid");
	expect_probe(r, "ptrace_traceme", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "unshare_user", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "unshare_net", "errno:1:", seccomp || l->uid_drop, "seccomp/uid");
	expect_probe(r, "clone_newnet", "errno:1:", seccomp || l->uid_drop, "seccomp/uid");
	expect_probe(r, "setns", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "mount", "errno:1:", seccomp || l->uid_drop, "seccomp/uid");
	expect_probe(r, "io_uring_setup", "errno:38:", seccomp, "seccomp");
	expect_probe(r, "clone3", "errno:38:", seccomp, "seccomp");
	expect_probe(r, "keyctl", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "bpf", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "perf_event_open", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "userfaultfd", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "personality_query", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "pidfd_open_server", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "process_vm_readv", "errno:1:", seccomp || l->uid_drop || l->dumpable_off,
	             "seccomp/uid/dumpable");
	expect_probe(r, "kcmp", "errno:1:", seccomp || l->uid_drop, "seccomp/uid");
	expect_probe(r, "prlimit_server", "errno:1:", seccomp || l->uid_drop, "seccomp/uid");
	expect_probe(r, "setpriority_user", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "tiocsti", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "clone_parent", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sysv_shmget", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sysv_msgget", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sysv_semget", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "mq_open", seccomp ? "errno:1:" : "errno:24:", true,
		     seccomp ? "seccomp" : "rlimit-msgqueue");
	expect_probe(r, "sched_setaffinity_other", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sched_setscheduler_other", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sched_setparam_other", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "setpriority_other", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "ioprio_set_other", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "prlimit_other", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "ptrace_child", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sched_setaffinity_own_pid", "errno:1:", seccomp, "seccomp");
	expect_probe(r, "sched_setaffinity_self", "ok", true, "allowed");
	expect_probe(r, "setpriority_self", "ok", true, "allowed");
	expect_probe(r, "prlimit_self", "ok", true, "allowed");
}

static void test_escape(const struct mcpx_sandbox *sb)
{
	struct run *r = malloc(sizeof(*r));
	struct mcpx_sandbox *alone;
	char input[32];

	snprintf(input, sizeof(input), "%d\n", (int)sb->server_pid);
	printf("escape probes, all layers\n");
	run_probe(sb, &default_limits, "escape.py", input, 60000, r);
	check_escape(sb, r, sb->layers.seccomp);
	if (r->err_len)
		printf("  stderr: %s\n", r->errout);

	/* Landlock must hold on its own, not only behind seccomp. */
	if (sb->layers.landlock) {
		alone = malloc(sizeof(*alone));
		memcpy(alone, sb, sizeof(*alone));
		alone->layers.seccomp = false;
		printf("escape probes, seccomp off (Landlock, uid and rlimits alone)\n");
		run_probe(alone, &default_limits, "escape.py", input, 60000, r);
		check_escape(alone, r, false);
		free(alone);
	} else {
		printf("escape probes without seccomp: SKIP (no Landlock)\n");
	}
	free(r);
}

static void test_pgroup(const struct mcpx_sandbox *sb, const char *mode)
{
	struct run *r = malloc(sizeof(*r));
	char input[16];
	pid_t g;

	printf("double-forked grandchild, leader %s\n", mode);
	snprintf(input, sizeof(input), "%s\n", mode);
	run_probe(sb, &default_limits, "pgroup.py", input, !strcmp(mode, "stay") ? 3000 : 20000, r);
	CHECK_INT(r->spawn_rc, 0);
	g = (pid_t)atoi(val(r, "grandchild"));
	printf("  grandchild=%d setsid=%s timed_out=%d alive_after_reap=%d group_alive=%d\n",
	       (int)g, val(r, "grandchild_setsid"), r->timed_out, g > 0 && kill(g, 0) == 0,
	       group_alive(r->pid));
	CHECK(g > 0);
	CHECK(g > 0 && kill(g, 0) < 0 && errno == ESRCH);
	CHECK(!group_alive(r->pid));
	if (sb->layers.seccomp)
		CHECK_STR(val(r, "grandchild_setsid"), "errno:1");
	CHECK_INT(r->timed_out, !strcmp(mode, "stay"));
	free(r);
}

static void test_forkbomb(const struct mcpx_sandbox *sb)
{
	struct mcpx_limits lim = default_limits;
	struct run *r = malloc(sizeof(*r));

	lim.max_procs = 20;
	printf("fork bomb, max_procs=%u\n", lim.max_procs);
	run_probe(sb, &lim, "forkbomb.py", NULL, 30000, r);
	CHECK_INT(r->spawn_rc, 0);
	/* The limit is the uid's task count at spawn plus the budget; other
	 * processes of the uid (parallel tests) move it, so compare with it. */
	printf("  forks=%s stop=%s nproc_limit=%s group_alive_after_reap=%d\n", val(r, "forks"),
	       val(r, "stop"), val(r, "nproc_limit"), group_alive(r->pid));
	CHECK(atoi(val(r, "forks")) < atoi(val(r, "nproc_limit")));
	CHECK(atoi(val(r, "nproc_limit")) >= (int)lim.max_procs);
	CHECK_STR(val(r, "stop"), "errno:11");
	CHECK(!group_alive(r->pid));
	free(r);
}

static void test_membomb(const struct mcpx_sandbox *sb)
{
	struct mcpx_limits lim = default_limits;
	struct run *r = malloc(sizeof(*r));

	lim.memory_mb = 256;
	printf("memory bomb, memory_mb=%lu\n", lim.memory_mb);
	run_probe(sb, &lim, "membomb.py", NULL, 30000, r);
	CHECK_INT(r->spawn_rc, 0);
	printf("  big=%s loop=%s after %s MiB, exit=0x%x maxrss=%ld KiB\n", val(r, "big"),
	       val(r, "loop"), val(r, "loop_mib"), (unsigned)r->status, r->ru.ru_maxrss);
	CHECK_STR(val(r, "big"), "MemoryError");
	CHECK_STR(val(r, "loop"), "MemoryError");
	CHECK(atoi(val(r, "loop_mib")) < 256);
	free(r);
}

static void test_filler(const struct mcpx_sandbox *sb)
{
	struct mcpx_limits lim = default_limits;
	struct run *r = malloc(sizeof(*r));

	lim.file_mb = 1;
	printf("file filler, file_mb=%lu\n", lim.file_mb);
	run_probe(sb, &lim, "filler.py", NULL, 30000, r);
	CHECK_INT(r->spawn_rc, 0);
	printf("  fill=%s written=%s KiB\n", val(r, "fill"), val(r, "written_kib"));
	CHECK_STR(val(r, "fill"), "errno:27");
	CHECK(atoi(val(r, "written_kib")) <= 1024);
	free(r);
}

static void test_compat(const struct mcpx_sandbox *sb)
{
	struct run *r = malloc(sizeof(*r));

	printf("compatibility: numpy, multiprocessing.Pool(2), threads, subprocess, matplotlib\n");
	run_probe(sb, &default_limits, "compat.py", NULL, 90000, r);
	CHECK_INT(r->spawn_rc, 0);
	printf("  numpy=%s pool=%s threads=%s subprocess=%s matplotlib=%s exit=0x%x\n",
	       val(r, "numpy"), val(r, "pool"), val(r, "threads"), val(r, "subprocess"),
	       val(r, "matplotlib"), (unsigned)r->status);
	CHECK_STR(val(r, "numpy"), "8.0");
	CHECK_STR(val(r, "pool"), "285");
	CHECK_STR(val(r, "threads"), "285");
	CHECK_STR(val(r, "subprocess"), "0");
	CHECK_STR(val(r, "matplotlib"), "ok");
	CHECK(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	if (r->err_len)
		printf("  stderr: %s\n", r->errout);
	free(r);
}

/* gVisor 2022-12 has no i386 table: int 0x80 runs the native table, with
 * the native architecture in seccomp_data, so the filter's own rules judge
 * it (newer gVisor kills it). Then a call the filter denies must be
 * denied through int 0x80 too. */
static void foreign_abi_native(const struct mcpx_sandbox *sb, const char *mode, struct run *r)
{
	printf("  [gVisor] %s reaches the native table through the filter; a denied call:\n",
	       mode);
	CHECK(strcmp(mode, "i386") == 0);
	run_probe(sb, &default_limits, "foreign_abi.py", "int80-socket\n", 20000, r);
	CHECK_INT(r->spawn_rc, 0);
	printf("  int80-socket with seccomp: %s %d, stdout \"%s\"\n",
	       WIFSIGNALED(r->status) ? "killed by signal" : "exit",
	       WIFSIGNALED(r->status) ? WTERMSIG(r->status) : WEXITSTATUS(r->status), r->out);
	CHECK((WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGSYS) ||
	      strcmp(r->out, "int80-socket=returned:-1\n") == 0);
}

/* A syscall through a foreign ABI must be killed by seccomp (SIGSYS). The
 * probe first runs without seccomp: a kernel without IA32 emulation turns
 * int 0x80 into SIGSEGV before seccomp ever sees it, and then there is
 * nothing to test. */
static void test_foreign_abi(const struct mcpx_sandbox *sb, const char *mode)
{
	struct mcpx_sandbox *plain = malloc(sizeof(*plain));
	struct run *r = malloc(sizeof(*r));
	char input[16];
	int base_status;

	snprintf(input, sizeof(input), "%s\n", mode);
	memcpy(plain, sb, sizeof(*plain));
	plain->layers.seccomp = false;
	run_probe(plain, &default_limits, "foreign_abi.py", input, 20000, r);
	CHECK_INT(r->spawn_rc, 0);
	base_status = r->status;
	printf("  %s without seccomp: %s%d, stdout \"%.60s\"\n", mode,
	       WIFSIGNALED(base_status) ? "signal " : "exit ",
	       WIFSIGNALED(base_status) ? WTERMSIG(base_status) : WEXITSTATUS(base_status), r->out);
	if (!sb->layers.seccomp || WIFSIGNALED(base_status)) {
		printf("  %s with seccomp: SKIP (%s)\n", mode,
		       sb->layers.seccomp ? "ABI not reachable on this kernel" : "no seccomp");
		goto out;
	}
	run_probe(sb, &default_limits, "foreign_abi.py", input, 20000, r);
	CHECK_INT(r->spawn_rc, 0);
	printf("  %s with seccomp: %s %d, stdout \"%s\"\n", mode,
	       WIFSIGNALED(r->status) ? "killed by signal" : "exit",
	       WIFSIGNALED(r->status) ? WTERMSIG(r->status) : WEXITSTATUS(r->status), r->out);
	if (sb->runtime == MCPX_RUNTIME_GVISOR && !WIFSIGNALED(r->status))
		foreign_abi_native(sb, mode, r);
	else
		CHECK(WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGSYS);
out:
	free(plain);
	free(r);
}

static void test_leftovers(const struct mcpx_sandbox *sb)
{
	struct run *r = malloc(sizeof(*r));
	char victim_dir[PATH_MAX], victim_file[PATH_MAX + 16], input[2 * PATH_MAX + 32];
	char shm[PATH_MAX];
	int fd;

	printf("cleanup of hostile leftovers\n");
	snprintf(victim_dir, sizeof(victim_dir), "/tmp/mcpx-victim-XXXXXX");
	CHECK(mkdtemp(victim_dir) != NULL);
	snprintf(victim_file, sizeof(victim_file), "%s/precious", victim_dir);
	fd = open(victim_file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(input, sizeof(input), "%s\n%s\n", victim_file, victim_dir);
	run_probe(sb, &default_limits, "leftovers.py", input, 30000, r);
	CHECK_INT(r->spawn_rc, 0);
	CHECK_STR(val(r, "made"), "1");
	snprintf(shm, sizeof(shm), "/dev/shm/%s", val(r, "shm"));
	printf("  workdir removed=%d victim intact=%d %s removed=%d\n", !path_exists(r->workdir),
	       path_exists(victim_file), shm, !path_exists(shm));
	CHECK(!path_exists(r->workdir));
	CHECK(path_exists(victim_file));
	CHECK(!path_exists(shm));
	unlink(victim_file);
	rmdir(victim_dir);
	free(r);
}

/* The lines of /proc/self/status and /proc/self/limits that show the
 * sandbox (seccomp mode, no_new_privs, ids, every rlimit), as each
 * language's own process reads them: bash with builtins only, so /proc/self
 * is bash itself. */
static const char *const self_probe[MCPX_LANG_COUNT] = {
	[MCPX_LANG_PYTHON] = "import os\n"
			     "for f in ('/proc/self/status', '/proc/self/limits'):\n"
			     "    if not os.path.exists(f):\n"
			     "        print('no ' + f)\n"
			     "        continue\n"
			     "    for l in open(f):\n"
			     "        if l.startswith(('Seccomp:', 'NoNewPrivs:', 'Uid:', 'Gid:', "
			     "'Groups:', 'Max ')): print(' '.join(l.split()))\n",
	[MCPX_LANG_BASH] = "for f in /proc/self/status /proc/self/limits; do\n"
			   "  [ -e $f ] || { echo no $f; continue; }\n"
			   "  while read -r l; do case $l in Seccomp:*|NoNewPrivs:*|Uid:*|Gid:*|"
			   "Groups:*|Max\\ *) echo $l;; esac; done < $f\ndone\n",
	[MCPX_LANG_JAVASCRIPT] =
		"import fs from 'node:fs';\n"
		"for (const f of ['/proc/self/status', '/proc/self/limits']) {\n"
		"  if (!fs.existsSync(f)) { console.log('no ' + f); continue; }\n"
		"  for (const l of fs.readFileSync(f, 'utf8').split('\\n'))\n"
		"    if (/^(Seccomp|NoNewPrivs|Uid|Gid|Groups):|^Max /.test(l))\n"
		"      console.log(l.split(/\\s+/).filter(Boolean).join(' '));\n"
		"}\n",
};

/* Bash and JavaScript run through the same child setup as Python: the same
 * seccomp mode, no_new_privs, uid, groups and rlimits (a JavaScript run's
 * address space larger by MCPX_NODE_AS_HEADROOM_MB, language.h). */
static void test_languages(const struct mcpx_sandbox *sb_in)
{
	struct mcpx_sandbox *sb = malloc(sizeof(*sb));
	struct mcpx_limits lim = default_limits;
	struct mcpx_proc_want {
		char text[4096];
	} *got = calloc(MCPX_LANG_COUNT, sizeof(*got));
	struct mcpx_sandbox_proc proc;
	struct mcpx_err err = {{0}};
	struct run *r = malloc(sizeof(*r));
	char want_as[128];

	memcpy(sb, sb_in, sizeof(*sb));
	CHECK(mcpx_sandbox_spawn_lang(sb, &lim, MCPX_LANG_BASH, "true", 4, NULL, &proc, &err) ==
	      -ENOEXEC);
	CHECK(strstr(err.msg, "bash is not available") != NULL);
	lim.memory_mb = 512;
	if (mcpx_sandbox_find_languages(sb, "auto", &lim, &err) < 0) {
		fprintf(stderr, "find_languages: %s\n", err.msg);
		check_failures++;
		goto out;
	}
	for (int l = 0; l < MCPX_LANG_COUNT; l++) {
		if (!sb->langs.rt[l].available) {
			/* A runtime that is installed must also start in the
			 * sandbox (Node under RLIMIT_AS, say). */
			static const char *const installed[MCPX_LANG_COUNT] = {
				PYTHON, "/usr/bin/bash", "/usr/bin/node"};

			printf("%s language %s: %s\n", access(installed[l], X_OK) ? "SKIP" : "FAIL",
			       mcpx_lang_name(l), sb->langs.rt[l].why);
			if (!access(installed[l], X_OK))
				check_failures++;
			continue;
		}
		run_lang = (enum mcpx_lang)l;
		run_code(sb, &lim, self_probe[l], strlen(self_probe[l]), NULL, 20000, r);
		run_lang = MCPX_LANG_PYTHON;
		CHECK_INT(r->spawn_rc, 0);
		CHECK(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
		snprintf(got[l].text, sizeof(got[l].text), "%.4000s", r->out);
		printf("language %s %s:\n%s", mcpx_lang_name(l), sb->langs.rt[l].version, r->out);
		/* RLIMIT_NPROC is the uid's task count now plus the budget:
		 * other processes of the uid move it between two runs. */
		for (char *p = strstr(got[l].text, "Max processes "); p && *p != '\n'; p++)
			if (*p >= '0' && *p <= '9')
				*p = 'N';
	}
	CHECK(strstr(got[MCPX_LANG_PYTHON].text, "Seccomp: 2\n") != NULL);
	/* gVisor's status has no NoNewPrivs line (test_env reads prctl). */
	if (sb->runtime != MCPX_RUNTIME_GVISOR)
		CHECK(strstr(got[MCPX_LANG_PYTHON].text, "NoNewPrivs: 1\n") != NULL);
	if (sb->langs.rt[MCPX_LANG_BASH].available)
		CHECK_STR(got[MCPX_LANG_BASH].text, got[MCPX_LANG_PYTHON].text);
	/* gVisor 2022-12 has no /proc/self/limits: the languages still agree
	 * on the rest; test_env reads the limits through getrlimit. */
	if (strstr(got[MCPX_LANG_PYTHON].text, "no /proc/self/limits\n"))
		printf("  [gVisor] no /proc/self/limits: the limits lines are not compared\n");
	else if (sb->langs.rt[MCPX_LANG_JAVASCRIPT].available) {
		char *js = got[MCPX_LANG_JAVASCRIPT].text, *py = got[MCPX_LANG_PYTHON].text;
		char *as_js = strstr(js, "Max address space "), *as_py = strstr(py, "Max address space ");

		/* Identical but for the address space line. */
		snprintf(want_as, sizeof(want_as), "Max address space %llu %llu bytes\n",
			 (512ULL + MCPX_NODE_AS_HEADROOM_MB) << 20,
			 (512ULL + MCPX_NODE_AS_HEADROOM_MB) << 20);
		CHECK(as_js && strncmp(as_js, want_as, strlen(want_as)) == 0);
		CHECK(as_py && strncmp(as_py, "Max address space 536870912 536870912 bytes\n",
				       44) == 0);
		if (as_js && as_py) {
			*as_js = *as_py = '\0';
			CHECK_STR(js, py);
			CHECK_STR(strchr(as_js + 1, '\n'), strchr(as_py + 1, '\n'));
		}
	}
out:
	free(r);
	free(got);
	free(sb);
}

int main(void)
{
	struct mcpx_sandbox *sb = malloc(sizeof(*sb));
	struct mcpx_err err = {{0}};
	char desc[256], *slash;
	sigset_t blocked;
	int rc, leak_fd;

	/* tests/unit/test_sandbox.c -> tests/probes */
	snprintf(probes_dir, sizeof(probes_dir), "%s", __FILE__);
	slash = strrchr(probes_dir, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(probes_dir, '/');
	if (slash)
		snprintf(slash, sizeof(probes_dir) - (size_t)(slash - probes_dir), "/probes");

	/* A secret in the server's environment must never reach a run. */
	setenv(SECRET_NAME, SECRET_VALUE, 1);
	/* What a real server leaves behind: an inheritable fd, an ignored
	 * signal, a blocked one. None of it may reach a run. */
	leak_fd = open("/etc/hostname", O_RDONLY);
	signal(SIGTERM, SIG_IGN);
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR1);
	sigprocmask(SIG_BLOCK, &blocked, NULL);

	snprintf(base_dir, sizeof(base_dir), "/tmp/mcpx-sbtest-XXXXXX");
	if (!mkdtemp(base_dir) || chmod(base_dir, 0711) < 0) {
		perror("mkdtemp");
		return 1;
	}
	rc = mcpx_sandbox_init(sb, PYTHON, base_dir, &err);
	if (rc) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	mcpx_sandbox_describe(sb, desc, sizeof(desc));
	printf("layers: %s\n", desc);

	rc = mcpx_sandbox_selftest(sb, &err);
	printf("selftest: rc=%d %s\n", rc, rc ? err.msg : "all active layers hold");
	CHECK_INT(rc, 0);

	test_selftest_detects(sb);
	test_basic(sb);
	test_server_untouched(sb);
	test_channel(sb);
	test_env(sb);
	test_rlimit_caps(sb);
	test_spawn_failure(sb);
	test_escape(sb);
	test_pgroup(sb, "exit");
	test_pgroup(sb, "stay");
	test_forkbomb(sb);
	test_membomb(sb);
	test_filler(sb);
	test_compat(sb);
	printf("foreign ABIs\n");
	test_foreign_abi(sb, "x32");
	test_foreign_abi(sb, "i386");
	test_leftovers(sb);
	test_languages(sb);

	mcpx_sandbox_free(sb);
	free(sb);
	if (leak_fd >= 0)
		close(leak_fd);
	CHECK(rmdir(base_dir) == 0); /* every workdir is gone */
	CHECK_DONE();
}
